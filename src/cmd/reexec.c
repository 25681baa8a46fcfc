/* reexec.c — execv("/proc/self/exe") with one more environment variable (reexec.h), and the
 * two settings that need it: OpenMP's wait policy and OpenBLAS's core type. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "cmd/reexec.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/trace.h"
#include "run/gemm_blas.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <link.h>
#endif

static char **g_argv;

void fp4_reexec_set_argv(char **argv) { g_argv = argv; }

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
/* dl_iterate_phdr visits the main program first: its PT_INTERP (the dynamic loader), if any. */
static int main_interp(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_INTERP)
            *(const char **)data = (const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return 1; /* the main program only */
}

/* Whether execv("/proc/self/exe", argv) would run this program again: not when it was started
 * through its loader (ld.so fp4diag ...), where /proc/self/exe is the loader, which would take
 * argv[1] for the program to load; not under valgrind, where /proc/self/exe is valgrind's tool
 * (run natively it refuses: "You cannot run ... directly", exit 1) while readlink, which valgrind
 * answers with the client's path, names this program: the two must be the same file (a deleted
 * or replaced executable reads "... (deleted)" or another file: no second start either). */
static bool self_exe_is_us(void)
{
    struct stat se, si, sl;
    char link[4096];
    if (stat("/proc/self/exe", &se) != 0) return false;
    const ssize_t n = readlink("/proc/self/exe", link, sizeof link - 1);
    if (n <= 0) return false;
    link[n] = '\0';
    if (stat(link, &sl) != 0 || sl.st_dev != se.st_dev || sl.st_ino != se.st_ino) return false;
    const char *interp = NULL;
    dl_iterate_phdr(main_interp, &interp);
    if (interp && stat(interp, &si) == 0 && si.st_dev == se.st_dev && si.st_ino == se.st_ino)
        return false;
    return true;
}
#endif

void fp4_reexec_with(char **argv, const char *var, const char *value)
{
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
    if (!argv) argv = g_argv;
    if (!argv || !self_exe_is_us() || setenv(var, value, 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv(var); /* exec failed: carry on as we were */
#else
    (void)argv, (void)var, (void)value;
#endif
}

/* Bytes in a file, or in the regular files of a directory (not its subdirectories). */
static int64_t input_bytes(const char *path)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return 0;
    if (S_ISREG(sb.st_mode)) return (int64_t)sb.st_size;
    if (!S_ISDIR(sb.st_mode)) return 0;
    DIR *d = opendir(path);
    if (!d) return 0;
    int64_t total = 0;
    char p[4096];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p) continue;
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) total += (int64_t)sb.st_size;
    }
    closedir(d);
    return total;
}

/* Inputs smaller than this are not worth the second process start (see reexec.h). */
#define OMP_WAIT_REEXEC_BYTES ((int64_t)128 << 20)

void fp4_omp_wait_default(const char *input, int threads)
{
    if (threads < 2 || getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    /* started by mpirun (world.c's test): MPI_Init has run, no exec now */
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK")) return;
    if (input_bytes(input) < OMP_WAIT_REEXEC_BYTES) return;
    fp4_trace("re-exec with OMP_WAIT_POLICY=passive");
    fp4_reexec_with(NULL, "OMP_WAIT_POLICY", "passive");
}

void fp4_reexec_openblas_core(char **argv)
{
    const char *want = fp4_dgemm_openblas_core_wanted();
    if (want) fp4_reexec_with(argv, "OPENBLAS_CORETYPE", want); /* returns if not done */
}
