/* output.c — the one place a report is written (SPEC §9): -o checked before the run reads
 * anything (not an input nor a file an input reads, not a directory, writable), then a regular file replaced whole
 * (temporary file + fsync + rename) or a pipe/terminal/character device written directly. */
#include "report/output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/trace.h"

#include "report/cleanup.h"
#include "io/source.h"

typedef enum out_kind { OUT_NONE = 0, OUT_NEW, OUT_REGULAR, OUT_DIRECT } out_kind;

/* What fp4_output_prepare found for the one -o of this process. */
static struct {
    out_kind kind;
    char *path;   /* as given */
    char *target; /* OUT_REGULAR: the file itself (symlinks resolved); OUT_NEW: path */
    mode_t mode;  /* of the new or replaced file */
    int fd;       /* OUT_DIRECT: kept open since prepare */
} prepared = {OUT_NONE, NULL, NULL, 0, -1};

static int announce_verbosity;

/* The option the path was given with, as messages name it: "-o", "--emit-exclude". */
static const char *opt_name = "-o";

void fp4_output_set_verbosity(int verbosity) { announce_verbosity = verbosity; }

/* "fp4diag: wrote PATH (N bytes)" on stderr (fp4_output_set_verbosity). */
static void announce(const char *path, size_t len)
{
    if (announce_verbosity < 0 || (announce_verbosity == 0 && !isatty(STDERR_FILENO))) return;
    char *shown = fp4_text_escape(path, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    fprintf(stderr, "fp4diag: wrote %s (%zu bytes)\n", shown ? shown : path, len);
    free(shown);
}

void fp4_output_forget(void)
{
    if (prepared.fd >= 0) close(prepared.fd);
    free(prepared.path);
    free(prepared.target);
    prepared.kind = OUT_NONE;
    prepared.path = prepared.target = NULL;
    prepared.fd = -1;
}

static bool under_proc(const char *p) { return !strcmp(p, "/proc") || !strncmp(p, "/proc/", 6); }

/* The directory part of `path` ("." when it has none), malloc'd; NULL when out of memory. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* The directory that will hold the temporary file: exists, is a directory, writable. */
static fp4_status dir_check(const char *display, const char *file, bool is_new)
{
    char *dir = dir_of(file);
    if (!dir) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = FP4_OK;
    struct stat db;
    char *real = NULL;
    if (stat(dir, &db) != 0)
        st = fp4_error(FP4_ERR_INPUT, "%s %s: directory %s: %s", opt_name, display, dir,
                       errno == ENOENT ? "does not exist" : strerror(errno));
    else if (!S_ISDIR(db.st_mode))
        st = fp4_error(FP4_ERR_INPUT, "%s %s: %s is not a directory", opt_name, display, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        st = fp4_error(FP4_ERR_INPUT, "%s %s: cannot write in directory %s: %s", opt_name, display, dir,
                       strerror(errno));
    else if (is_new && (real = realpath(dir, NULL)) != NULL &&
             (under_proc(real) || !strcmp(real, "/dev")))
        st = fp4_error(FP4_ERR_INPUT, "%s %s: %s is not a place for a new report file", opt_name, display,
                       real);
    free(real);
    free(dir);
    return st;
}

/* Open a FIFO or character device for writing without blocking (a FIFO with no reader is
 * ENXIO), then make writes blocking again. Never O_APPEND, O_CREAT or O_TRUNC. */
static fp4_status open_direct(const char *path, bool fifo, int *fd)
{
    *fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (*fd < 0) {
        if (fifo && errno == ENXIO)
            return fp4_error(FP4_ERR_INPUT, "%s %s: a FIFO with no reader (start the reader "
                                            "first, or write to a file)",
                             opt_name, path);
        return fp4_error(FP4_ERR_INPUT, "%s %s: cannot open: %s", opt_name, path, strerror(errno));
    }
    int fl = fcntl(*fd, F_GETFL);
    if (fl < 0 || fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        fp4_status st = fp4_error(FP4_ERR_INPUT, "%s %s: %s", opt_name, path, strerror(errno));
        close(*fd);
        *fd = -1;
        return st;
    }
    return FP4_OK;
}

/* FP4_ERR_USAGE when the existing -o (path, stat sb) is the input, or a file reading it reads:
 * an entry of an input directory, a shard named by a safetensors index (fp4_source_input_files). */
static fp4_status not_an_input(const char *path, const struct stat *sb, const char *input)
{
    char **files = NULL;
    int n = 0;
    FP4_TRY(fp4_source_input_files(input, &files, &n));
    fp4_status st = FP4_OK;
    for (int k = 0; k < n && st == FP4_OK; k++) {
        struct stat ib;
        if (stat(files[k], &ib) != 0 || ib.st_dev != sb->st_dev || ib.st_ino != sb->st_ino)
            continue;
        if (k == 0)
            st = fp4_error(FP4_ERR_USAGE, "%s %s is the input %s: the report would overwrite it; "
                                          "choose another output file",
                           opt_name, path, input);
        else
            st = fp4_error(FP4_ERR_USAGE, "%s %s is %s, read as part of the input %s: the "
                                          "report would overwrite it; choose another output file",
                           opt_name, path, files[k], input);
    }
    fp4_source_files_free(files, n);
    return st;
}

/* fp4_output_prepare and fp4_output_check: `keep` false checks only (a FIFO or device is not
 * opened, nothing is kept, the prepared output is left alone). */
static fp4_status prepare(const char *path, const char *const *inputs, int ninputs, bool keep)
{
    if (keep) fp4_output_forget();
    if (!path || !strcmp(path, "-")) return FP4_OK;
    const bool is_o = !strcmp(opt_name, "-o");
    out_kind kind = OUT_NONE;
    char *target = NULL;
    mode_t mode = 0;
    int fd = -1;
    fp4_status st = FP4_OK;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int err = errno;
        struct stat lb;
        if (err != ENOENT)
            return fp4_error(FP4_ERR_INPUT, "%s %s: %s", opt_name, path, strerror(err));
        if (lstat(path, &lb) == 0)
            return fp4_error(FP4_ERR_INPUT, "%s %s: dangling symbolic link", opt_name, path);
        FP4_TRY(dir_check(path, path, true));
        mode_t um = umask(0);
        umask(um);
        kind = OUT_NEW;
        mode = 0666 & ~um;
        target = strdup(path);
        if (!target) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    } else {
        for (int i = 0; i < ninputs; i++)
            if (inputs[i]) FP4_TRY(not_an_input(path, &sb, inputs[i]));
        if (S_ISDIR(sb.st_mode))
            return fp4_error(FP4_ERR_INPUT, "%s %s: is a directory; give a file name%s%s%s",
                             opt_name, path, is_o ? " (-o " : "", is_o ? path : "",
                             is_o ? "/report.json)" : "");
        if (S_ISREG(sb.st_mode)) {
            target = realpath(path, NULL);
            if (!target) return fp4_error(FP4_ERR_INPUT, "%s %s: %s", opt_name, path, strerror(errno));
            if (under_proc(target))
                st = fp4_error(FP4_ERR_INPUT, "%s %s: %s is under /proc, not a place for a "
                                              "report",
                               opt_name, path, target);
            else if (!(sb.st_mode & 0222) || access(path, W_OK) != 0)
                st = fp4_error(FP4_ERR_INPUT, "%s %s: the file is read-only; not replaced "
                                              "(make it writable or choose another file)",
                               opt_name, path);
            else st = dir_check(path, target, false);
            if (st != FP4_OK) {
                free(target);
                return st;
            }
            kind = OUT_REGULAR;
            mode = sb.st_mode & 07777;
        } else if (S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode)) {
            if (!keep) return FP4_OK; /* opened when written: a reader may come */
            FP4_TRY(open_direct(path, S_ISFIFO(sb.st_mode), &fd));
            kind = OUT_DIRECT;
        } else {
            return fp4_error(FP4_ERR_USAGE, "%s %s: not a regular file, pipe or character "
                                            "device",
                             opt_name, path);
        }
    }
    if (!keep) {
        free(target);
        return FP4_OK;
    }
    prepared.path = strdup(path);
    if (!prepared.path) {
        if (fd >= 0) close(fd);
        free(target);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    prepared.kind = kind;
    prepared.target = target;
    prepared.mode = mode;
    prepared.fd = fd;
    return FP4_OK;
}

fp4_status fp4_output_prepare(const char *path, const char *const *inputs, int ninputs)
{
    opt_name = "-o";
    return prepare(path, inputs, ninputs, true);
}

fp4_status fp4_output_check(const char *option, const char *path, const char *const *inputs,
                            int ninputs)
{
    opt_name = option;
    fp4_status st = prepare(path, inputs, ninputs, false);
    opt_name = "-o";
    return st;
}

static fp4_status write_all(int fd, const char *path, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, text, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return fp4_error(FP4_ERR_INPUT, "%s: write error: %s", path, strerror(errno));
        }
        text += w;
        len -= (size_t)w;
    }
    return FP4_OK;
}

/* Temporary file beside `target`, fsync, rename over it (never over anything but a regular
 * file: a device node put there since prepare is left alone). */
static fp4_status write_replace(const char *target, const char *display, const char *text,
                                size_t len, mode_t mode)
{
    size_t n = strlen(target);
    char *tmp = malloc(n + 32);
    if (!tmp) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    snprintf(tmp, n + 32, "%.*s.%s.tmpXXXXXX", (int)dirlen, target,
             slash ? slash + 1 : target);
    int fd = fp4_cleanup_mkstemp(tmp); /* created and registered with signals blocked */
    if (fd < 0) {
        fp4_status st = fp4_error(FP4_ERR_INPUT, "%s: cannot create: %s", display,
                                  strerror(errno));
        free(tmp);
        return st;
    }
    fp4_status st = write_all(fd, display, text, len);
    if (st == FP4_OK && fchmod(fd, mode) != 0)
        st = fp4_error(FP4_ERR_INPUT, "%s: chmod: %s", display, strerror(errno));
    if (st == FP4_OK && fsync(fd) != 0)
        st = fp4_error(FP4_ERR_INPUT, "%s: write error: %s", display, strerror(errno));
    if (close(fd) != 0 && st == FP4_OK)
        st = fp4_error(FP4_ERR_INPUT, "%s: write error: %s", display, strerror(errno));
    struct stat lb;
    if (st == FP4_OK && lstat(target, &lb) == 0 && !S_ISREG(lb.st_mode))
        st = fp4_error(FP4_ERR_INPUT, "%s: no longer a regular file; not replaced", display);
    if (st == FP4_OK && rename(tmp, target) != 0)
        st = fp4_error(FP4_ERR_INPUT, "%s: cannot replace: %s", display, strerror(errno));
    if (st != FP4_OK) unlink(tmp);
    fp4_cleanup_unregister();
    free(tmp);
    return st;
}

static fp4_status write_path(const char *path, const char *text, size_t len);

fp4_status fp4_output_write(const char *path, const char *text, size_t len)
{
    return fp4_output_write_as("-o", path, text, len);
}

fp4_status fp4_output_write_as(const char *option, const char *path, const char *text,
                               size_t len)
{
    opt_name = option;
    fp4_status st = write_path(path, text, len);
    opt_name = "-o";
    return st;
}

static fp4_status write_path(const char *path, const char *text, size_t len)
{
    if (!path || !strcmp(path, "-")) {
        size_t w = fwrite(text, 1, len, stdout);
        if (w != len || fflush(stdout) != 0 || ferror(stdout))
            return fp4_error(FP4_ERR_INPUT, "stdout: write error: %s", strerror(errno));
        fp4_trace("report written: %zu bytes", len);
        return FP4_OK;
    }
    if (prepared.kind == OUT_NONE || strcmp(prepared.path, path))
        FP4_TRY(prepare(path, NULL, 0, true));
    fp4_status st;
    if (prepared.kind == OUT_DIRECT) {
        st = write_all(prepared.fd, path, text, len);
        if (close(prepared.fd) != 0 && st == FP4_OK)
            st = fp4_error(FP4_ERR_INPUT, "%s: write error: %s", path, strerror(errno));
        prepared.fd = -1;
    } else {
        st = write_replace(prepared.target, path, text, len, prepared.mode);
    }
    fp4_output_forget();
    fp4_trace("report written: %zu bytes", len);
    if (st == FP4_OK) announce(path, len);
    return st;
}
