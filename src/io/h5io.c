/* io/h5io.c — every HDF5 call of fp4diag, and the HDF5 tensor source: open, walk and describe
 * datasets, and read them (whole or in slabs along one dimension) into fp32 through HDF5's own
 * type conversion or as stored words (SPEC §8). Errors become FP4_ERR_INPUT values with
 * "FILE: DSET: why"; HDF5 stays silent. */
#include "io/h5io.h"

#include "io/chunked.h"
#include "io/pario.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

struct fp4_h5file {
    hid_t fid;
    char *name;
    char *root;       /* real directory of the file: pointers are followed only inside it */
    int64_t open_size; /* the file's size when opened: a read after it shrank is an error */
    hid_t lapl;       /* link access: external links checked by h5io_elink_cb */
    hid_t lapl_dset;  /* dataset access for reading: the same, and external and virtual
                         files resolved against the file's own directory (${ORIGIN}) */
    char elink_why[160]; /* why h5io_elink_cb refused the latest external link */
    char *cur_path; /* the dataset kept open between slab reads, and its description */
    hid_t cur_dset;
    fp4_tensor_desc cur_info;
    /* the direct chunked path (io/chunked.c) for the dataset kept open, or NULL */
    fp4_chunked *cur_chunked;
    fp4_chunk_ref *cur_refs; /* the stored chunks of the slab being read */
    int64_t cur_refs_cap;
    uint64_t cur_base;       /* HDF5's base address (the userblock): chunk addresses add it */
    int cfd;                 /* the file for direct reads (-1: not open, -2: cannot be) */
    int64_t cfsize;
    int64_t cur_direct; /* file offset of the kept dataset's contiguous data read directly, or -1 */
    /* never-written storage of the dataset kept open (h5src_zero_fill), along zf_dim */
    int zf_state;            /* H5IO_ZF_* */
    int zf_dim;
    int64_t *zf_bands;       /* sorted chunk indices along zf_dim holding a stored chunk */
    int64_t zf_nbands;
    int64_t cur_lib_chunk;   /* bytes of one decoded chunk of the dataset kept open, when it
                                is chunked (HDF5 decodes it when io/chunked.c does not) */
};

enum { H5IO_ZF_UNKNOWN = 0, H5IO_ZF_NONE, H5IO_ZF_ALL, H5IO_ZF_BANDS };

/* Chunk cache for the dataset kept open: enough for a row of large chunks, and bounded. */
#define H5IO_CHUNK_CACHE_BYTES ((size_t)16 << 20)
#define H5IO_CHUNK_CACHE_SLOTS 12421

static bool h5io_verbose;
static bool h5io_ready;
/* A thread-safe HDF5 (Debian's is) keeps the error-printing setting per thread: a thread that
 * calls in (the driver's reader thread) applies the current setting once per change. */
static int h5io_verbose_gen = 1;
static _Thread_local int h5io_thread_gen;

static void h5io_apply_verbose(void)
{
    if (h5io_verbose)
        H5Eset_auto2(H5E_DEFAULT, (H5E_auto2_t)H5Eprint2, stderr);
    else
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    h5io_thread_gen = h5io_verbose_gen;
}

static void h5io_init(void)
{
    if (!h5io_ready) {
        h5io_ready = true;
        H5open();
    }
    if (h5io_thread_gen != h5io_verbose_gen) h5io_apply_verbose();
}

void fp4_h5_set_verbose(bool verbose)
{
    h5io_verbose = verbose;
    h5io_ready = true;
    H5open();
    h5io_verbose_gen++;
    h5io_apply_verbose();
}

/* The innermost message of HDF5's error stack ("truncated file: eof = 1024, ...", "unable to
 * lock file, errno = 11, ..."), as one line in buf; "" when the stack is empty. HDF5 records
 * the stack even though it does not print it. */
typedef struct h5io_why_buf {
    char *buf;
    size_t cap;
} h5io_why_buf;

static herr_t h5io_why_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    h5io_why_buf *w = data;
    if (n != 0 || !e->desc) return 0;
    snprintf(w->buf, w->cap, "%s", e->desc);
    for (char *p = w->buf; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    return 0;
}

static const char *h5io_why(char *buf, size_t cap)
{
    buf[0] = '\0';
    h5io_why_buf w = {buf, cap};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5io_why_cb, &w);
    return buf;
}

static char *h5io_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* "/x/y" from "x/y", "/x/y/" or "/x/y"; "/" stays "/". */
static char *h5io_normpath(const char *p)
{
    size_t n = strlen(p);
    char *d = malloc(n + 2);
    if (!d) return NULL;
    size_t k = 0;
    if (p[0] != '/') d[k++] = '/';
    memcpy(d + k, p, n + 1);
    k += n;
    while (k > 1 && d[k - 1] == '/') d[--k] = '\0';
    return d;
}

static char *h5io_dirname(const char *path);
static herr_t h5io_elink_cb(const char *parent_file, const char *parent_group,
                            const char *child_file, const char *child_object,
                            unsigned *acc_flags, hid_t fapl, void *op_data);

/* A directory given as the input: "FILE: is a directory of HDF5 files (a.h5, b.h5 and 3 more):
 * give one of them" when it holds .h5/.hdf5 files, else the plain refusal. */
static fp4_status dir_refusal(const char *file)
{
    char names[256] = "";
    size_t len = 0;
    int n = 0, shown = 0;
    DIR *d = opendir(file);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || (strcmp(dot, ".h5") != 0 && strcmp(dot, ".hdf5") != 0)) continue;
        n++;
        if (shown < 3 && len + strlen(e->d_name) + 3 < sizeof names) {
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", shown ? ", " : "",
                                    e->d_name);
            shown++;
        }
    }
    if (d) closedir(d);
    if (n == 0)
        return fp4_error(FP4_ERR_INPUT,
                         "%s: is a directory, not an " FP4_INPUT_FORMATS " checkpoint", file);
    char *shownames = fp4_text_escape(names, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    char more[32] = "";
    if (n > shown) snprintf(more, sizeof more, " and %d more", n - shown);
    fp4_status st = fp4_error(FP4_ERR_INPUT,
                              "%s: is a directory of HDF5 files (%s%s): give one file at a time",
                              file, shownames ? shownames : names, more);
    free(shownames);
    return st;
}

/* Whether the regular file starts (after white space) like a JSON report of fp4diag. */
static bool is_fp4diag_json(const char *file)
{
    char buf[4097];
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    size_t i = strspn(buf, " \t\r\n");
    return buf[i] == '{' && strstr(buf, "\"schema\"") && strstr(buf, "\"fp4diag.");
}

fp4_status fp4_h5_open(const char *file, fp4_h5file **out)
{
    *out = NULL;
    h5io_init();
    struct stat st;
    if (stat(file, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return fp4_error(FP4_ERR_INPUT, "%s: no such file", file);
        if (errno == EACCES) return fp4_error(FP4_ERR_INPUT, "%s: permission denied", file);
        return fp4_error(FP4_ERR_INPUT, "%s: %s", file, strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) return dir_refusal(file);
    if (!S_ISREG(st.st_mode))
        return fp4_error(FP4_ERR_INPUT, "%s: not a regular file, not an " FP4_INPUT_FORMATS " file",
                         file);
    struct stat sb;
    const char *oerr;
    int fd = fp4_open_regular(file, &sb, &oerr); /* never blocks (a FIFO swapped in meanwhile) */
    if (fd < 0) {
        if (errno == EACCES) return fp4_error(FP4_ERR_INPUT, "%s: permission denied", file);
        return fp4_error(FP4_ERR_INPUT, "%s: %s", file, oerr);
    }
    close(fd);
#if H5_VERSION_GE(1, 12, 0)
    htri_t ok = H5Fis_accessible(file, H5P_DEFAULT);
#else
    htri_t ok = H5Fis_hdf5(file);
#endif
    if (ok <= 0 && is_fp4diag_json(file))
        return fp4_error(FP4_ERR_INPUT, "%s: is an fp4diag report (JSON), not a checkpoint: "
                                        "compare two reports with 'fp4diag compare BASE.json "
                                        "NEW.json'",
                         file);
    if (ok <= 0) return fp4_error(FP4_ERR_INPUT, "%s: not an " FP4_INPUT_FORMATS " file", file);
    hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (fid < 0) {
        char why[160];
        if (!h5io_why(why, sizeof why)[0]) snprintf(why, sizeof why, "corrupt or truncated");
        return fp4_error(FP4_ERR_INPUT, "%s: cannot open the HDF5 file: %s", file, why);
    }
    fp4_h5file *f = calloc(1, sizeof *f);
    if (!f || !(f->name = h5io_strdup(file))) {
        free(f);
        H5Fclose(fid);
        return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", file);
    }
    f->fid = fid;
    f->open_size = (int64_t)st.st_size;
    char *real = realpath(file, NULL);
    f->root = real ? h5io_dirname(real) : NULL;
    free(real);
    f->lapl = H5Pcreate(H5P_LINK_ACCESS);
    f->lapl_dset = H5Pcreate(H5P_DATASET_ACCESS);
    if (!f->root || f->lapl < 0 || f->lapl_dset < 0 ||
        H5Pset_elink_cb(f->lapl, h5io_elink_cb, f) < 0 ||
        H5Pset_elink_cb(f->lapl_dset, h5io_elink_cb, f) < 0 ||
        H5Pset_efile_prefix(f->lapl_dset, "${ORIGIN}") < 0 ||
        H5Pset_virtual_prefix(f->lapl_dset, "${ORIGIN}") < 0 ||
        H5Pset_chunk_cache(f->lapl_dset, H5IO_CHUNK_CACHE_SLOTS, H5IO_CHUNK_CACHE_BYTES, 0.75) < 0) {
        fp4_h5_close(f);
        return fp4_error(FP4_ERR_INTERNAL, "%s: cannot set up HDF5 access properties", file);
    }
    f->cur_dset = -1;
    f->cfd = -1;
    f->cur_direct = -1;
    *out = f;
    return FP4_OK;
}

static void h5io_drop_current(fp4_h5file *f)
{
    if (f->cur_dset >= 0) H5Dclose(f->cur_dset);
    f->cur_dset = -1;
    free(f->cur_path);
    f->cur_path = NULL;
    fp4_tensor_desc_free(&f->cur_info);
    free(f->cur_chunked);
    f->cur_chunked = NULL;
    f->cur_direct = -1;
    free(f->zf_bands);
    f->zf_bands = NULL;
    f->zf_nbands = 0;
    f->zf_state = H5IO_ZF_UNKNOWN;
    f->cur_lib_chunk = 0;
}

void fp4_h5_close(fp4_h5file *f)
{
    if (!f) return;
    h5io_drop_current(f);
    if (f->lapl > 0) H5Pclose(f->lapl);
    if (f->lapl_dset > 0) H5Pclose(f->lapl_dset);
    H5Fclose(f->fid);
    if (f->cfd >= 0) close(f->cfd);
    free(f->cur_refs);
    free(f->root);
    free(f->name);
    free(f);
}

const char *fp4_h5_filename(const fp4_h5file *f) { return f ? f->name : ""; }

/* --- what a dataset points at: virtual-dataset sources, external raw files, external links --
 * Each is followed only to a regular file (never a device or a FIFO: no hang, no foreign
 * bytes), resolved against the pointing file's own directory as HDF5 resolves it, and only
 * inside the directory tree of the file named on the command line unless --allow-external.
 * Virtual datasets are read only when every source exists and the mapping has no cycle; all
 * of it is checked before anything is read (a verdict is the dataset's `problem`). */

static bool h5io_allow_external;

void fp4_h5_set_allow_external(bool allow) { h5io_allow_external = allow; }

/* Directory part of a path (malloc'd): "a/b.h5" -> "a", "b.h5" -> ".", "/b.h5" -> "/". */
static char *h5io_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return h5io_strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) memcpy(d, path, n), d[n] = '\0';
    return d;
}

/* dir + "/" + name (malloc'd). */
static char *h5io_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) snprintf(p, a + b + 2, "%s%s%s", dir, a && dir[a - 1] == '/' ? "" : "/", name);
    return p;
}

/* Whether the real path p lies in the tree of the real directory root. */
static bool h5io_inside(const char *p, const char *root)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return true;
    return strncmp(p, root, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

/* The last component of a path, for short messages. */
static const char *h5io_base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

/* Check the file at `cand` as the target of a pointer: it must be a regular file, inside
 * f->root (unless --allow-external), at least `need` bytes long (-1: no need), and, when
 * hdf5, start with the HDF5 signature. "" in why when it may be followed. */
static void h5io_check_file(const fp4_h5file *f, const char *shown, const char *cand, bool hdf5,
                            int64_t need, char *why, size_t cap)
{
    why[0] = '\0';
    struct stat sb;
    if (stat(cand, &sb) != 0) {
        snprintf(why, cap, "%s: %s", shown, errno == ENOENT ? "missing" : strerror(errno));
        return;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(why, cap, "%s is not a regular file (a device, FIFO or directory is never read)",
                 shown);
        return;
    }
    char *real = realpath(cand, NULL);
    if (!real) {
        snprintf(why, cap, "%s: %s", shown, strerror(errno));
        return;
    }
    if (!h5io_allow_external && f->root && !h5io_inside(real, f->root))
        snprintf(why, cap, "%s is outside the file's directory (--allow-external follows it)",
                 shown);
    free(real);
    if (why[0]) return;
    if (need >= 0 && (int64_t)sb.st_size < need) {
        snprintf(why, cap, "%s holds %lld bytes, fewer than the %lld it should", shown,
                 (long long)sb.st_size, (long long)need);
        return;
    }
    if (hdf5) {
        unsigned char sig[8] = {0};
        int fd = open(cand, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ssize_t k = fd >= 0 ? read(fd, sig, sizeof sig) : -1;
        if (fd >= 0) close(fd);
        if (k != 8 || memcmp(sig, "\211HDF\r\n\032\n", 8) != 0)
            snprintf(why, cap, "%s is not an HDF5 file", shown);
    }
}

/* Resolve `name` as HDF5 does for a virtual-dataset source or an external link of the file
 * in directory `dir`: an absolute name as it is; a relative one under each directory of the
 * prefix variable `env` (':'-separated), then `dir`, then the working directory; the first
 * that exists is the one HDF5 opens. Returns that candidate (malloc'd) or NULL when none
 * exists (then *missing) or out of memory. */
static char *h5io_resolve(const char *dir, const char *name, const char *env, bool *missing)
{
    struct stat sb;
    *missing = false;
    if (name[0] == '/') {
        if (stat(name, &sb) == 0) return h5io_strdup(name);
        *missing = true;
        return NULL;
    }
    const char *pre = env ? getenv(env) : NULL;
    if (pre && pre[0]) {
        char *all = h5io_strdup(pre);
        if (!all) return NULL;
        for (char *save = NULL, *d = strtok_r(all, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            char *c = h5io_join(d, name);
            if (c && stat(c, &sb) == 0) {
                free(all);
                return c;
            }
            free(c);
        }
        free(all);
    }
    char *c = h5io_join(dir, name);
    if (c && stat(c, &sb) == 0) return c;
    free(c);
    if (stat(name, &sb) == 0) return h5io_strdup(name);
    *missing = true;
    return NULL;
}

/* The name of the file holding object `obj` (malloc'd; NULL when unknown). */
static char *h5io_file_of(hid_t obj)
{
    ssize_t n = H5Fget_name(obj, NULL, 0);
    if (n <= 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (s && H5Fget_name(obj, s, (size_t)n + 1) < 0) {
        free(s);
        s = NULL;
    }
    return s;
}

/* The path of object `obj` in its file (malloc'd; NULL when unknown). */
static char *h5io_obj_name(hid_t obj)
{
    ssize_t n = H5Iget_name(obj, NULL, 0);
    if (n <= 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (s && H5Iget_name(obj, s, (size_t)n + 1) < 0) {
        free(s);
        s = NULL;
    }
    return s;
}

/* The file HDF5 opens for external raw-storage entry `name` of a file in directory `dir`
 * (H5D__build_file_prefix, H5_combine_path): an absolute name as it is; else under the
 * environment's HDF5_EXTFILE_PREFIX, which HDF5 puts before the access property's "${ORIGIN}"
 * set in fp4_h5_open (so a check of dir/name alone would pass a name HDF5 then reads
 * elsewhere), "${ORIGIN}" at its start standing for dir; "." leaves the name relative to the
 * working directory. malloc'd; NULL when out of memory. */
static char *h5io_efile_path(const char *dir, const char *name)
{
    static const char origin[] = "${ORIGIN}";
    if (name[0] == '/') return h5io_strdup(name);
    const char *pre = getenv("HDF5_EXTFILE_PREFIX");
    if (!pre || !pre[0]) pre = origin;
    if (strcmp(pre, ".") == 0) return h5io_strdup(name);
    if (strncmp(pre, origin, sizeof origin - 1) != 0) return h5io_join(pre, name);
    const char *rest = pre + sizeof origin - 1;
    char *base = h5io_join(dir, rest); /* HDF5's origin ends with '/' */
    char *c = base ? h5io_join(base, name) : NULL;
    free(base);
    return c;
}

/* External raw storage (H5Pset_external) of a dataset of `bytes` bytes in file `file`: each
 * piece a regular file inside the tree, long enough for its part (a short file is not
 * padded with zeros), sizes checked against overflow. */
static void h5io_check_external(const fp4_h5file *f, const char *file, hid_t dcpl, int64_t bytes,
                                char *why, size_t cap)
{
    why[0] = '\0';
    int n = H5Pget_external_count(dcpl);
    if (n <= 0) return;
    char *dir = h5io_dirname(file);
    int64_t left = bytes < 0 ? 0 : bytes;
    for (int i = 0; i < n && !why[0] && dir; i++) {
        char name[4096] = "";
        off_t off = 0;
        hsize_t size = 0;
        if (H5Pget_external(dcpl, (unsigned)i, sizeof name, name, &off, &size) < 0) {
            snprintf(why, cap, "external storage entry %d cannot be read", i);
            break;
        }
        name[sizeof name - 1] = '\0';
        const int64_t take = size == H5F_UNLIMITED || size > (hsize_t)left ? left : (int64_t)size;
        int64_t need;
        if (off < 0 || __builtin_add_overflow((int64_t)off, take, &need)) {
            snprintf(why, cap, "external file %s: offset and size overflow", h5io_base(name));
            break;
        }
        char *cand = h5io_efile_path(dir, name);
        if (!cand) break;
        char shown[96];
        snprintf(shown, sizeof shown, "external file %s", h5io_base(name));
        h5io_check_file(f, shown, cand, false, take > 0 ? need : -1, why, cap);
        free(cand);
        left -= take;
    }
    if (!why[0] && left > 0)
        snprintf(why, cap, "external storage holds %lld bytes fewer than the dataset",
                 (long long)left);
    free(dir);
}

/* A source met while checking a virtual dataset: file identity and dataset name. */
typedef struct h5io_vds_seen {
    dev_t dev;
    ino_t ino;
    char *dset;
} h5io_vds_seen;

#define H5IO_VDS_DEPTH 8

/* Check virtual dataset `dset` (name `path`) of file `file`: every source a regular HDF5 file
 * inside the tree that exists, and no chain of sources coming back to a dataset already on
 * the way (itself, two mapping each other); nested virtual sources are checked the same way,
 * H5IO_VDS_DEPTH levels at most. */
static void h5io_check_vds(const fp4_h5file *f, const char *file, hid_t dset, const char *path,
                           h5io_vds_seen *seen, int depth, char *why, size_t cap)
{
    why[0] = '\0';
    struct stat me;
    if (stat(file, &me) != 0) {
        snprintf(why, cap, "virtual dataset: %s: %s", h5io_base(file), strerror(errno));
        return;
    }
    for (int i = 0; i < depth; i++)
        if (seen[i].dev == me.st_dev && seen[i].ino == me.st_ino && !strcmp(seen[i].dset, path)) {
            snprintf(why, cap, "virtual dataset: its sources lead back to %s (a cycle)", path);
            return;
        }
    if (depth >= H5IO_VDS_DEPTH) {
        snprintf(why, cap, "virtual dataset: sources nested deeper than %d levels", H5IO_VDS_DEPTH);
        return;
    }
    seen[depth] = (h5io_vds_seen){me.st_dev, me.st_ino, (char *)path};
    hid_t dcpl = H5Dget_create_plist(dset);
    size_t n = 0;
    if (dcpl < 0 || H5Pget_virtual_count(dcpl, &n) < 0) {
        snprintf(why, cap, "virtual dataset: its mapping cannot be read");
        if (dcpl >= 0) H5Pclose(dcpl);
        return;
    }
    char *dir = h5io_dirname(file);
    for (size_t i = 0; i < n && !why[0] && dir; i++) {
        ssize_t fl = H5Pget_virtual_filename(dcpl, i, NULL, 0);
        ssize_t dl = H5Pget_virtual_dsetname(dcpl, i, NULL, 0);
        char *sf = fl >= 0 ? malloc((size_t)fl + 1) : NULL;
        char *sd = dl >= 0 ? malloc((size_t)dl + 1) : NULL;
        if (!sf || !sd || H5Pget_virtual_filename(dcpl, i, sf, (size_t)fl + 1) < 0 ||
            H5Pget_virtual_dsetname(dcpl, i, sd, (size_t)dl + 1) < 0) {
            snprintf(why, cap, "virtual dataset: source %zu cannot be read", i);
        } else {
            char *src = NULL;
            bool missing = false;
            if (!strcmp(sf, ".")) src = h5io_strdup(file);
            else src = h5io_resolve(dir, sf, "HDF5_VDS_PREFIX", &missing);
            char shown[96];
            snprintf(shown, sizeof shown, "virtual dataset source %s", h5io_base(sf));
            if (missing) snprintf(why, cap, "%s is missing", shown);
            else if (src) h5io_check_file(f, shown, src, true, -1, why, cap);
            if (src && !why[0]) {
                /* the source dataset: missing, or itself virtual (checked in turn) */
                /* names in the mapping are from the source file's root group */
                hid_t sfid = strcmp(sf, ".") ? H5Fopen(src, H5F_ACC_RDONLY, H5P_DEFAULT)
                                             : H5Iget_file_id(dset);
                hid_t loc = sfid;
                hid_t sdid = -1;
                if (loc >= 0 && H5Lexists(loc, sd, f->lapl) > 0)
                    sdid = H5Dopen2(loc, sd, f->lapl_dset); /* as every dataset is opened */
                if (sdid < 0) {
                    snprintf(why, cap, "%s: dataset %s is missing", shown, sd);
                } else {
                    hid_t sp = H5Dget_create_plist(sdid);
                    if (sp >= 0 && H5Pget_layout(sp) == H5D_VIRTUAL) {
                        char *sname = h5io_file_of(sdid), *spath = h5io_obj_name(sdid);
                        h5io_check_vds(f, sname ? sname : src, sdid, spath ? spath : sd, seen,
                                       depth + 1, why, cap);
                        free(spath);
                        free(sname);
                    }
                    if (sp >= 0) H5Pclose(sp);
                    H5Dclose(sdid);
                }
                if (sfid >= 0) H5Fclose(sfid);
            }
            free(src);
        }
        free(sf);
        free(sd);
    }
    free(dir);
    H5Pclose(dcpl);
}

/* HDF5 calls this before it follows an external link: follow it only to a regular HDF5 file
 * inside the tree (see above). */
static herr_t h5io_elink_cb(const char *parent_file, const char *parent_group,
                            const char *child_file, const char *child_object,
                            unsigned *acc_flags, hid_t fapl, void *op_data)
{
    const fp4_h5file *f = op_data;
    char *dir = h5io_dirname(parent_file);
    bool missing = false;
    char *cand = dir ? h5io_resolve(dir, child_file, "HDF5_EXT_PREFIX", &missing) : NULL;
    char why[sizeof f->elink_why];
    why[0] = '\0';
    char shown[96];
    snprintf(shown, sizeof shown, "external link target %s", h5io_base(child_file));
    if (missing) snprintf(why, sizeof why, "%s is missing", shown);
    else if (!cand) snprintf(why, sizeof why, "%s: out of memory", shown);
    else h5io_check_file(f, shown, cand, true, -1, why, sizeof why);
    free(cand);
    free(dir);
    if (!why[0]) return 0;
    snprintf(((fp4_h5file *)f)->elink_why, sizeof f->elink_why, "%s", why);
    return -1;
}

/* --- describing a dataset ---------------------------------------------------------------- */

static const char *h5io_class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_TIME: return "time";
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "vlen";
    case H5T_ARRAY: return "array";
    default: return "unknown";
    }
}

/* Name the float type: the IEEE layouts and bf16 by name, anything else float(1,e,m,bias).
 * Sets *exact when every value widens to fp32 exactly. */
static void h5io_float_name(hid_t t, char *name, size_t cap, bool *exact)
{
    size_t size = H5Tget_size(t), spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize);
    size_t bias = H5Tget_ebias(t);
    size_t prec = H5Tget_precision(t);
    int off = H5Tget_offset(t);
    H5T_norm_t norm = H5Tget_norm(t);
    bool plain = prec == size * 8 && off == 0 && mpos == 0 && epos == msize &&
                 spos == epos + esize && spos == prec - 1 && norm == H5T_NORM_IMPLIED;
    static const struct {
        const char *name;
        size_t size, esize, msize, bias;
    } known[] = {
        {"f16", 2, 5, 10, 15}, {"bf16", 2, 8, 7, 127}, {"f32", 4, 8, 23, 127},
        {"f64", 8, 11, 52, 1023},
    };
    for (size_t i = 0; plain && i < sizeof known / sizeof known[0]; i++) {
        if (known[i].size == size && known[i].esize == esize && known[i].msize == msize &&
            known[i].bias == bias) {
            snprintf(name, cap, "%s", known[i].name);
            *exact = strcmp(known[i].name, "f64") != 0;
            return;
        }
    }
    snprintf(name, cap, "float(1,%zu,%zu,%zu)", esize, msize, bias);
    /* Exact when the mantissa fits and both the largest exponent and the lowest mantissa bit
     * (of the smallest subnormal) lie within fp32's range. */
    long emax = (esize < 63 ? (1L << esize) - 2 : 1L << 62) - (long)bias;
    long lowbit = 1 - (long)bias - (long)msize;
    *exact = plain && msize <= 23 && esize < 63 && emax <= 127 && lowbit >= -149;
}

/* Fill the type fields of info from the on-disk type t. */
static void h5io_describe_type(hid_t t, fp4_tensor_desc *info)
{
    H5T_class_t c = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    info->numeric = c == H5T_FLOAT || c == H5T_INTEGER;
    info->exact_fp32 = false;
    if (c == H5T_FLOAT) {
        h5io_float_name(t, info->dtype, sizeof info->dtype, &info->exact_fp32);
    } else if (c == H5T_INTEGER) {
        bool sign = H5Tget_sign(t) == H5T_SGN_2;
        snprintf(info->dtype, sizeof info->dtype, "%c%zu", sign ? 'i' : 'u', size * 8);
        info->exact_fp32 = H5Tget_precision(t) <= (sign ? 25u : 24u);
    } else {
        snprintf(info->dtype, sizeof info->dtype, "%s", h5io_class_name(c));
        snprintf(info->problem, sizeof info->problem, "%s class is not supported",
                 h5io_class_name(c));
    }
    info->byte_order[0] = '\0';
    if (info->numeric && size > 1) {
        H5T_order_t o = H5Tget_order(t);
        if (o == H5T_ORDER_LE) strcpy(info->byte_order, "le");
        if (o == H5T_ORDER_BE) strcpy(info->byte_order, "be");
    }
    /* The stored word we widen ourselves: the named layouts (h5io_float_name names only plain
     * ones) and integers that use every bit, in one of the two byte orders. */
    static const struct {
        const char *name;
        fp4_stored stored;
    } words[] = {
        {"f16", FP4_STORED_F16}, {"bf16", FP4_STORED_BF16}, {"f32", FP4_STORED_F32},
        {"f64", FP4_STORED_F64}, {"i8", FP4_STORED_I8},     {"u8", FP4_STORED_U8},
        {"i16", FP4_STORED_I16}, {"u16", FP4_STORED_U16},   {"i32", FP4_STORED_I32},
        {"u32", FP4_STORED_U32}, {"i64", FP4_STORED_I64},   {"u64", FP4_STORED_U64},
    };
    info->stored = FP4_STORED_OTHER;
    bool plain_int = c != H5T_INTEGER || (H5Tget_precision(t) == size * 8 && H5Tget_offset(t) == 0);
    if (info->numeric && plain_int && (size == 1 || info->byte_order[0]))
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
            if (strcmp(info->dtype, words[i].name) == 0) info->stored = words[i].stored;
    /* HDF5 converts big-endian f64 by its soft path, which rounds subnormal results unlike
     * IEEE (and unlike its own little-endian path): keep its conversion there, so that no
     * number changes (test_widen) */
    if (info->stored == FP4_STORED_F64 && strcmp(info->byte_order, "be") == 0)
        info->stored = FP4_STORED_OTHER;
}

static void h5io_append(char *buf, size_t cap, const char *s)
{
    /* Truncates silently: the list is for display; availability is tracked separately. */
    size_t n = strlen(buf);
    if (n && n + 1 < cap) buf[n++] = ',';
    size_t k = strlen(s);
    if (k > cap - 1 - n) k = cap - 1 - n;
    memcpy(buf + n, s, k);
    buf[n + k] = '\0';
}

/* A filter's name as ls shows it: deflate(level), shuffle, fletcher32, szip, nbit,
 * scaleoffset, or a registered third-party filter by the name the file gives and its id. */
static void h5io_filter_name(H5Z_filter_t id, size_t ncd, const unsigned *cd, const char *fname,
                             char *one, size_t cap)
{
    switch (id) {
    case H5Z_FILTER_DEFLATE: snprintf(one, cap, "deflate(%u)", ncd ? cd[0] : 0u); break;
    case H5Z_FILTER_SHUFFLE: snprintf(one, cap, "shuffle"); break;
    case H5Z_FILTER_FLETCHER32: snprintf(one, cap, "fletcher32"); break;
    case H5Z_FILTER_SZIP: snprintf(one, cap, "szip"); break;
    case H5Z_FILTER_NBIT: snprintf(one, cap, "nbit"); break;
    case H5Z_FILTER_SCALEOFFSET: snprintf(one, cap, "scaleoffset"); break;
    default: {
        /* Registered third-party filters: keep the name the file gives, and the id. */
        char clean[64];
        size_t k = 0;
        for (const char *p = fname; *p && k + 1 < sizeof clean; p++)
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')
                clean[k++] = *p;
        clean[k] = '\0';
        snprintf(one, cap, "%s(#%d)", k ? clean : "filter", (int)id);
    }
    }
}

/* Filters of the pipeline, in order, and whether each can decode here. */
static void h5io_describe_filters(hid_t dcpl, fp4_tensor_desc *info)
{
    info->codec[0] = '\0';
    info->codec_available = true;
    int nf = H5Pget_nfilters(dcpl);
    for (int i = 0; i < nf; i++) {
        unsigned flags = 0, cd[8] = {0}, config = 0;
        size_t ncd = 8;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof fname,
                                         fname, &config);
        char one[96];
        h5io_filter_name(id, ncd, cd, fname, one, sizeof one);
        h5io_append(info->codec, sizeof info->codec, one);
        unsigned fconf = 0;
        bool avail = id >= 0 && H5Zfilter_avail(id) > 0 && H5Zget_filter_info(id, &fconf) >= 0 &&
                     (fconf & H5Z_FILTER_CONFIG_DECODE_ENABLED);
        if (!avail && info->codec_available) {
            info->codec_available = false;
            if (!info->problem[0])
                snprintf(info->problem, sizeof info->problem, "filter %s is not available", one);
        }
    }
}

/* Open `path` as a dataset. *is_group tells a group from a missing object. */
static hid_t h5io_open_dset(fp4_h5file *f, const char *path, bool *is_group)
{
    *is_group = false;
    /* H5Lexists fails (rather than answering no) when an intermediate group is missing. */
    if (strcmp(path, "/") == 0) {
        *is_group = true;
        return -1;
    }
    f->elink_why[0] = '\0';
    char *part = h5io_strdup(path); /* any length: no fixed buffer */
    if (!part) return -1;
    for (char *p = part; (p = strchr(p + 1, '/')) != NULL;) {
        *p = '\0';
        htri_t e = H5Lexists(f->fid, part, f->lapl);
        *p = '/';
        if (e <= 0) {
            free(part);
            return -1;
        }
    }
    free(part);
    if (H5Lexists(f->fid, path, f->lapl) <= 0) return -1;
    /* Datasets are opened with one access list everywhere (HDF5 refuses to open a dataset
     * that is already open with other external-file or virtual-source prefixes). */
    H5O_info_t oi;
    if (H5Oget_info_by_name2(f->fid, path, &oi, H5O_INFO_BASIC, f->lapl) < 0) return -1;
    if (oi.type == H5O_TYPE_GROUP) *is_group = true;
    if (oi.type != H5O_TYPE_DATASET) return -1;
    return H5Dopen2(f->fid, path, f->lapl_dset);
}

static fp4_status h5io_missing(fp4_h5file *f, const char *path, bool is_group)
{
    if (f->elink_why[0]) return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", f->name, path, f->elink_why);
    if (is_group) return fp4_error(FP4_ERR_INPUT, "%s: %s: is a group, not a dataset", f->name, path);
    return fp4_error(FP4_ERR_INPUT, "%s: %s: no such dataset", f->name, path);
}

/* The first chunk (row-major) of a partly written chunked dataset that was never written, as
 * "chunk (r,c)" in buf ("" when none is found among the first 2^20). */
static void h5io_first_unwritten(hid_t d, const fp4_tensor_desc *in, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (in->chunk_rank != in->rank || in->rank < 1) return;
    int64_t grid[FP4_MAX_RANK], cells = 1;
    for (int i = 0; i < in->rank; i++) {
        if (in->chunk[i] < 1) return;
        grid[i] = in->dims[i] / in->chunk[i] + (in->dims[i] % in->chunk[i] != 0);
        if (grid[i] == 0) return;
        cells = cells > ((int64_t)1 << 20) / grid[i] ? ((int64_t)1 << 20) : cells * grid[i];
    }
    for (int64_t k = 0; k < cells; k++) {
        hsize_t off[FP4_MAX_RANK];
        int64_t rem = k;
        for (int i = in->rank - 1; i >= 0; i--) {
            off[i] = (hsize_t)(rem % grid[i] * in->chunk[i]);
            rem /= grid[i];
        }
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &size) < 0) return;
        if (addr != HADDR_UNDEF && size > 0) continue;
        size_t n = (size_t)snprintf(buf, cap, "chunk (");
        for (int i = 0; i < in->rank && n < cap; i++)
            n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? "," : "",
                                  (unsigned long long)off[i]);
        if (n < cap) snprintf(buf + n, cap - n, ")");
        return;
    }
}

/* What a dataset's values would be read from, checked before any read: a NULL dataspace has
 * none; storage never written with no fill value (fill time "never") is uninitialised
 * memory; virtual sources and external files as above. A verdict becomes `problem`. */
static void h5io_describe_pointers(fp4_h5file *f, hid_t d, hid_t dcpl, H5S_class_t sc,
                                   fp4_tensor_desc *info)
{
    if (info->problem[0]) return;
    char why[sizeof info->problem];
    why[0] = '\0';
    H5D_layout_t layout = H5Pget_layout(dcpl);
    if (sc == H5S_NULL) {
        snprintf(why, sizeof why, "null dataspace: it holds no values");
    } else if (layout == H5D_VIRTUAL) {
        h5io_vds_seen seen[H5IO_VDS_DEPTH + 1];
        char *file = h5io_file_of(d);
        char *self = h5io_obj_name(d);
        h5io_check_vds(f, file ? file : f->name, d, self ? self : info->name, seen, 0, why,
                       sizeof why);
        free(self);
        free(file);
    } else if (H5Pget_external_count(dcpl) > 0) {
        char *file = h5io_file_of(d);
        h5io_check_external(f, file ? file : f->name, dcpl, info->logical_bytes, why, sizeof why);
        free(file);
    } else if (info->nelems > 0) {
        H5D_fill_time_t ft = H5D_FILL_TIME_IFSET;
        H5D_fill_value_t fv = H5D_FILL_VALUE_DEFAULT;
        H5D_space_status_t ss = H5D_SPACE_STATUS_ALLOCATED;
        H5Pget_fill_time(dcpl, &ft);
        H5Pfill_value_defined(dcpl, &fv);
        H5Dget_space_status(d, &ss);
        char where[96] = "";
        if (ss != H5D_SPACE_STATUS_ALLOCATED &&
            (ft == H5D_FILL_TIME_NEVER || fv == H5D_FILL_VALUE_UNDEFINED)) {
            if (layout == H5D_CHUNKED && ss == H5D_SPACE_STATUS_PART_ALLOCATED)
                h5io_first_unwritten(d, info, where, sizeof where);
            if (where[0])
                snprintf(why, sizeof why, "%s was never written and the dataset defines no fill "
                         "value (fill time never): its values would be uninitialised memory",
                         where);
            else
                snprintf(why, sizeof why, "never written, and no fill value is defined (fill "
                         "time never): its values would be uninitialised memory");
        }
    }
    if (why[0]) snprintf(info->problem, sizeof info->problem, "%s", why);
}

/* Describe an open dataset; the only failure is out of memory or an unreadable header. */
static fp4_status h5io_describe(fp4_h5file *f, hid_t d, const char *path, fp4_tensor_desc *info)
{
    memset(info, 0, sizeof *info);
    if (!(info->name = h5io_strdup(path))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    hid_t t = H5Dget_type(d), s = H5Dget_space(d), dcpl = H5Dget_create_plist(d);
    fp4_status st = FP4_OK;
    if (t < 0 || s < 0 || dcpl < 0) {
        char why[160];
        if (!h5io_why(why, sizeof why)[0]) snprintf(why, sizeof why, "corrupt");
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: cannot read the dataset header: %s", f->name, path,
                       why);
        goto out;
    }
    h5io_describe_type(t, info);
    int rank = H5Sget_simple_extent_ndims(s);
    H5S_class_t sc = H5Sget_simple_extent_type(s);
    if (rank < 0 || rank > FP4_MAX_RANK) {
        info->rank = rank < 0 ? 0 : FP4_MAX_RANK;
        info->nelems = 0;
        snprintf(info->problem, sizeof info->problem, "rank %d is not supported (max %d)", rank,
                 FP4_MAX_RANK);
        goto out;
    }
    hsize_t dims[FP4_MAX_RANK] = {0};
    H5Sget_simple_extent_dims(s, dims, NULL);
    info->rank = rank;
    bool overflow = false;
    uint64_t n = sc == H5S_NULL ? 0 : 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] > (hsize_t)INT64_MAX) overflow = true;
        info->dims[i] = overflow ? -1 : (int64_t)dims[i];
        if (dims[i] != 0 && n > (uint64_t)INT64_MAX / dims[i]) overflow = true;
        n *= dims[i];
    }
    size_t esize = H5Tget_size(t);
    if (overflow || (esize && n > (uint64_t)INT64_MAX / esize)) {
        info->nelems = -1;
        info->logical_bytes = -1;
        if (!info->problem[0])
            snprintf(info->problem, sizeof info->problem, "size overflows 64 bits");
    } else {
        info->nelems = (int64_t)n;
        info->logical_bytes = (int64_t)(n * esize);
    }
    if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
        hsize_t cd[FP4_MAX_RANK] = {0};
        int cr = H5Pget_chunk(dcpl, FP4_MAX_RANK, cd);
        /* A corrupt layout can claim more dimensions than were written into cd. */
        info->chunk_rank = cr > 0 ? (cr < FP4_MAX_RANK ? cr : FP4_MAX_RANK) : 0;
        for (int i = 0; i < info->chunk_rank; i++) info->chunk[i] = (int64_t)cd[i];
    }
    h5io_describe_filters(dcpl, info);
    info->stored_bytes = (int64_t)H5Dget_storage_size(d);
    info->file_offset = -1; /* chunks, or HDF5 decides: not one plain range we report */
    h5io_describe_pointers(f, d, dcpl, sc, info);
    /* one object under several names (hard links): its file and address say so (io/source.h
     * `view`); the same H5O_info_t family as h5io_open_dset's */
    H5O_info_t oi;
    if (!info->problem[0] && H5Oget_info2(d, &oi, H5O_INFO_BASIC) >= 0)
        snprintf(info->view, sizeof info->view, "h5:%lu:%llu", (unsigned long)oi.fileno,
                 (unsigned long long)oi.addr);
out:
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (st != FP4_OK) fp4_tensor_desc_free(info);
    return st;
}

fp4_status fp4_h5_info(fp4_h5file *f, const char *path, fp4_tensor_desc *out)
{
    h5io_init();
    memset(out, 0, sizeof *out);
    char *p = h5io_normpath(path);
    if (!p) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    bool is_group;
    hid_t d = h5io_open_dset(f, p, &is_group);
    fp4_status st = d < 0 ? h5io_missing(f, p, is_group) : h5io_describe(f, d, p, out);
    if (d >= 0) H5Dclose(d);
    free(p);
    return st;
}

/* --- walking and selecting ----------------------------------------------------------------- */

typedef struct h5io_walk {
    char **paths;
    int n, cap;
    bool oom;
} h5io_walk;

static herr_t h5io_walk_cb(hid_t group, const char *name, const H5L_info_t *linfo, void *data)
{
    h5io_walk *w = data;
    if (linfo->type != H5L_TYPE_HARD) return 0; /* soft/external links are not followed */
    /* The object's type from its header, without decoding its messages: a dataset whose
     * datatype this HDF5 cannot read is still listed (describing it gives the problem). */
    H5O_info_t oi;
    if (H5Oget_info_by_name2(group, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return 0;
    if (oi.type != H5O_TYPE_DATASET) return 0;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        char **np = realloc(w->paths, (size_t)cap * sizeof *np);
        if (!np) {
            w->oom = true;
            return -1;
        }
        w->paths = np;
        w->cap = cap;
    }
    char *p = h5io_normpath(name);
    if (!p) {
        w->oom = true;
        return -1;
    }
    w->paths[w->n++] = p;
    return 0;
}

/* Every dataset reached through hard links, in name order (the source's `list`). */
static fp4_status h5io_list(fp4_h5file *f, char ***names, int *n)
{
    h5io_init();
    *names = NULL;
    *n = 0;
    h5io_walk w = {0};
    herr_t hr = H5Lvisit(f->fid, H5_INDEX_NAME, H5_ITER_INC, h5io_walk_cb, &w);
    fp4_status st = FP4_OK;
    if (w.oom) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    } else if (hr < 0) {
        char why[160];
        if (!h5io_why(why, sizeof why)[0]) snprintf(why, sizeof why, "corrupt group structure");
        st = fp4_error(FP4_ERR_INPUT, "%s: cannot walk the file: %s", f->name, why);
    }
    if (st != FP4_OK) {
        for (int i = 0; i < w.n; i++) free(w.paths[i]);
        free(w.paths);
        return st;
    }
    *names = w.paths;
    *n = w.n;
    return FP4_OK;
}

/* Describe by exact (normalized) path, saying what the path is (the source's `describe`). */
static fp4_status h5io_describe_named(fp4_h5file *f, const char *path, fp4_tensor_desc *out,
                                      fp4_name_kind *kind)
{
    h5io_init();
    memset(out, 0, sizeof *out);
    bool is_group = false;
    hid_t d = h5io_open_dset(f, path, &is_group);
    *kind = d >= 0 ? FP4_NAME_TENSOR : is_group ? FP4_NAME_GROUP : FP4_NAME_NONE;
    if (d < 0 && f->elink_why[0]) {
        /* an external link refused (a FIFO, a device, outside the tree): an entry saying so */
        *kind = FP4_NAME_TENSOR;
        if (!(out->name = h5io_strdup(path))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        snprintf(out->dtype, sizeof out->dtype, "unknown");
        out->nelems = -1;
        out->logical_bytes = -1;
        out->stored_bytes = -1;
        snprintf(out->problem, sizeof out->problem, "%s", f->elink_why);
        return FP4_OK;
    }
    if (d < 0 && !is_group && H5Lexists(f->fid, path, f->lapl) > 0) {
        /* it exists but does not open (a datatype or layout this HDF5 cannot decode) */
        H5O_info_t oi;
        if (H5Oget_info_by_name2(f->fid, path, &oi, H5O_INFO_BASIC, f->lapl) >= 0 &&
            oi.type == H5O_TYPE_DATASET) {
            char why[120];
            if (!h5io_why(why, sizeof why)[0])
                snprintf(why, sizeof why, "its header cannot be decoded (a datatype or layout "
                         "this HDF5 does not know, or a damaged message)");
            *kind = FP4_NAME_TENSOR;
            if (!(out->name = h5io_strdup(path))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
            snprintf(out->dtype, sizeof out->dtype, "unknown");
            out->nelems = -1;
            out->logical_bytes = -1;
            out->stored_bytes = -1;
            snprintf(out->problem, sizeof out->problem, "this HDF5 cannot open it: %s", why);
            return FP4_OK;
        }
    }
    fp4_status st = d < 0 ? h5io_missing(f, path, is_group) : h5io_describe(f, d, path, out);
    if (d >= 0) H5Dclose(d);
    return st;
}

/* --- reading ------------------------------------------------------------------------------- */

/* --- the direct chunked path (io/chunked.c): chunks read with pread and decoded on worker
 * threads instead of through HDF5, when the pipeline is one we decode (deflate, shuffle,
 * fletcher32 in any order and subset, or none) --------------------------------------------- */

/* Set up f->cur_chunked for the dataset kept open, or leave it NULL (HDF5 reads it: other
 * filters, partial edge chunks stored unfiltered, types we do not read raw). */
/* Our own descriptor for direct reads (chunks, contiguous data): a regular file only (never
 * blocks); opened on first use. */
static void h5io_open_fd(fp4_h5file *f)
{
    if (f->cfd != -1) return;
    struct stat sb;
    int fd = open(f->name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
        close(fd);
        fd = -1;
    }
    f->cfd = fd >= 0 ? fd : -2;
    f->cfsize = fd >= 0 ? (int64_t)sb.st_size : 0;
}

static void h5io_chunked_setup(fp4_h5file *f, hid_t d, const fp4_tensor_desc *in)
{
    h5io_open_fd(f);
    if (f->cfd < 0 || in->problem[0] || in->stored == FP4_STORED_OTHER || in->rank < 1 ||
        in->chunk_rank != in->rank || in->nelems <= 0 || in->rank > FP4_CHUNKED_MAX_RANK)
        return;
    hid_t dcpl = H5Dget_create_plist(d), t = -1, fcpl = -1;
    fp4_chunked *c = NULL;
    if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_CHUNKED) goto out;
    unsigned opts = 0;
    if (H5Pget_chunk_opts(dcpl, &opts) < 0 || (opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS))
        goto out;
    if (!(c = calloc(1, sizeof *c))) goto out;
    int nf = H5Pget_nfilters(dcpl);
    if (nf < 0 || nf > FP4_CODEC_MAX_FILTERS) goto out;
    c->pipeline.n = nf;
    for (int i = 0; i < nf; i++) {
        unsigned flags = 0, cd[8] = {0};
        size_t ncd = 8;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof fname,
                                         fname, NULL);
        c->pipeline.f[i].id = (int)id;
        c->pipeline.f[i].param = id == H5Z_FILTER_SHUFFLE && ncd >= 1 ? cd[0] : 0;
        if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32) {
            if (fp4_source_notes()) { /* -v: the slower path, and why */
                char one[96], *shown = NULL;
                h5io_filter_name(id, ncd, cd, fname, one, sizeof one);
                char line[FP4_ERROR_MAX];
                snprintf(line, sizeof line, "%s: %s: read through HDF5: filter %s is not decoded "
                         "here", f->name, f->cur_path, one);
                shown = fp4_text_escape(line, FP4_ESC_CONTROL, NULL);
                fprintf(stderr, "fp4diag: note: %s\n", shown ? shown : line);
                free(shown);
            }
            goto out;
        }
    }
    t = H5Dget_type(d);
    size_t es = t >= 0 ? H5Tget_size(t) : 0;
    if (es < 1 || es > sizeof c->fill || (int)es != fp4_stored_size(in->stored)) goto out;
    H5D_fill_value_t fv = H5D_FILL_VALUE_UNDEFINED;
    H5D_fill_time_t ft = H5D_FILL_TIME_IFSET;
    if (H5Pfill_value_defined(dcpl, &fv) < 0 || H5Pget_fill_time(dcpl, &ft) < 0) goto out;
    /* HDF5 leaves a never-written chunk's memory untouched under fill time "never" or an
     * undefined fill value: no value is defined there. */
    c->fill_defined = fv != H5D_FILL_VALUE_UNDEFINED && ft != H5D_FILL_TIME_NEVER;
    if (c->fill_defined && H5Pget_fill_value(dcpl, t, c->fill) < 0) goto out;
    hsize_t ub = 0;
    fcpl = H5Fget_create_plist(f->fid);
    if (fcpl < 0 || H5Pget_userblock(fcpl, &ub) < 0) goto out;
    c->file = f->name;
    c->name = f->cur_path;
    c->fd = f->cfd;
    c->file_size = f->cfsize;
    c->rank = in->rank;
    for (int i = 0; i < in->rank; i++) {
        c->dims[i] = in->dims[i];
        c->chunk[i] = in->chunk[i];
    }
    c->elem_size = es;
    c->swap = es > 1 && H5Tget_order(t) != H5Tget_order(H5T_NATIVE_INT);
    f->cur_base = (uint64_t)ub;
    if (fp4_chunked_prepare(c) != FP4_OK) goto out;
    f->cur_chunked = c;
    c = NULL;
out:
    free(c);
    if (fcpl >= 0) H5Pclose(fcpl);
    if (t >= 0) H5Tclose(t);
    if (dcpl >= 0) H5Pclose(dcpl);
    fp4_error_clear();
}

/* Read a slab through f->cur_chunked: the stored chunks meeting it are looked up in HDF5's
 * chunk index (H5Dget_chunk_info_by_coord, on this thread), then read and decoded by
 * io/chunked.c. */
static fp4_status h5io_chunked_read(fp4_h5file *f, hid_t d, int dim, int64_t start,
                                    int64_t count, void *buf)
{
    fp4_chunked *c = f->cur_chunked;
    int64_t clo[FP4_CHUNKED_MAX_RANK], cn[FP4_CHUNKED_MAX_RANK], total = 1;
    for (int i = 0; i < c->rank; i++) {
        clo[i] = i == dim ? start / c->chunk[i] : 0;
        int64_t chi = i == dim ? (start + count - 1) / c->chunk[i] : c->grid[i] - 1;
        cn[i] = chi - clo[i] + 1;
        total *= cn[i];
    }
    if (total > f->cur_refs_cap) {
        fp4_chunk_ref *r = realloc(f->cur_refs, (size_t)total * sizeof *r);
        if (!r) return fp4_error(FP4_ERR_INTERNAL, "%s: %s: out of memory", f->name, c->name);
        f->cur_refs = r;
        f->cur_refs_cap = total;
    }
    int64_t n = 0;
    for (int64_t k = 0; k < total; k++) {
        hsize_t off[FP4_CHUNKED_MAX_RANK];
        int64_t rem = k, lin = 0;
        for (int i = c->rank - 1; i >= 0; i--) {
            off[i] = (hsize_t)((clo[i] + rem % cn[i]) * c->chunk[i]);
            rem /= cn[i];
        }
        for (int i = 0; i < c->rank; i++) lin = lin * c->grid[i] + (int64_t)off[i] / c->chunk[i];
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &size) < 0) {
            char why[160];
            if (!h5io_why(why, sizeof why)[0]) snprintf(why, sizeof why, "corrupt chunk index");
            return fp4_error(FP4_ERR_INPUT, "%s: %s: chunk index: %s", f->name, c->name, why);
        }
        if (addr == HADDR_UNDEF || size == 0) continue;
        /* an address that would wrap past 2^64 points outside the file */
        uint64_t at = (uint64_t)addr > UINT64_MAX - f->cur_base ? UINT64_MAX
                                                                : (uint64_t)addr + f->cur_base;
        f->cur_refs[n++] = (fp4_chunk_ref){lin, at, (uint64_t)size, mask};
    }
    c->refs = f->cur_refs;
    c->nrefs = n;
    FP4_TRY(fp4_chunked_prepare(c));
    return fp4_chunked_read(c, dim, start, count, buf);
}

/* --- the direct contiguous path: a dataset without filters, stored in one run of bytes ----- */

/* Where the dataset's data lies in the file when raw reads may bypass HDF5: contiguous layout,
 * no filter, no external file, storage allocated, words we widen ourselves, a little-endian
 * host; else -1 (HDF5
 * reads it: compact, chunked, virtual, external, never written). H5Dget_offset counts from
 * the file's start (a user block included). */
static int64_t h5io_direct_offset(fp4_h5file *f, hid_t d, const fp4_tensor_desc *in)
{
    h5io_open_fd(f);
    if (f->cfd < 0 || H5Tget_order(H5T_NATIVE_INT) != H5T_ORDER_LE || in->problem[0] ||
        in->stored == FP4_STORED_OTHER || in->codec[0] ||
        in->chunk_rank || in->nelems <= 0 || in->logical_bytes <= 0 ||
        in->stored_bytes != in->logical_bytes ||
        in->logical_bytes / in->nelems != fp4_stored_size(in->stored))
        return -1;
    hid_t dcpl = H5Dget_create_plist(d);
    if (dcpl < 0) {
        fp4_error_clear();
        return -1;
    }
    const bool plain = H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_external_count(dcpl) == 0 &&
                       H5Pget_nfilters(dcpl) == 0;
    H5Pclose(dcpl);
    if (!plain) return -1;
    haddr_t a = H5Dget_offset(d);
    if (a == HADDR_UNDEF || a > (haddr_t)INT64_MAX) return -1;
    return (int64_t)a;
}

/* The stored words of the slab, straight from the file (its bytes lie at cur_direct in
 * row-major order), in host byte order: one run of bytes per index of the dimensions before
 * `dim`. The data's end is checked against the file's size first: a truncated file is an
 * error for this tensor naming it, never zeros. */
static fp4_status h5io_read_direct(fp4_h5file *f, const char *path, const fp4_tensor_desc *in,
                                   int dim, int64_t start, int64_t count, void *buf)
{
    struct stat sb;
    if (fstat(f->cfd, &sb) != 0)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: cannot stat the file: %s", f->name, path,
                         strerror(errno));
    const int64_t w = fp4_stored_size(in->stored), off = f->cur_direct;
    if (off > INT64_MAX - in->logical_bytes || off + in->logical_bytes > (int64_t)sb.st_size)
        return fp4_error(FP4_ERR_INPUT,
                         "%s: %s: truncated file: the data (bytes %lld to %lld) ends past the end "
                         "of the file (%lld bytes)",
                         f->name, path, (long long)off, (long long)off + in->logical_bytes,
                         (long long)sb.st_size);
    int64_t outer = 1, inner = w, extent = 1;
    if (in->rank > 0) {
        for (int i = 0; i < dim; i++) outer *= in->dims[i];
        for (int i = dim + 1; i < in->rank; i++) inner *= in->dims[i];
        extent = in->dims[dim];
    }
    const int64_t run = count * inner; /* bytes per run: all within logical_bytes */
    const int swap = w > 1 && strcmp(in->byte_order, "be") == 0 ? (int)w : 0; /* host: LE */
    /* in pieces on a few threads when large (io/pario.c); the words swapped as they arrive */
    if (outer == 1 || count == extent)
        return fp4_pario_pread(f->cfd, f->name, path, buf, 0, off + start * inner, 0, 1,
                               outer * run, swap);
    return fp4_pario_pread(f->cfd, f->name, path, buf, run, off + start * inner,
                           extent * inner, outer, run, swap);
}

/* A chunked dataset when HDF5 decodes it (filters we do not decode: scaleoffset, nbit, szip,
 * plugins; layouts we do not read raw): one decoded chunk is f->cur_lib_chunk bytes, refused
 * against --mem-limit before reading (h5io_read). A chunk larger than the default chunk cache
 * would be decoded again for every slab that meets it: the dataset is reopened with a cache
 * holding one band of chunks (or at least one chunk) when --mem-limit allows. Reads through
 * io/chunked.c are bounded there instead. */
static void h5io_lib_chunks(fp4_h5file *f, const char *path, hid_t *dd)
{
    const fp4_tensor_desc *in = &f->cur_info;
    if (in->chunk_rank < 1 || in->chunk_rank != in->rank || in->nelems <= 0) return;
    hid_t t = H5Dget_type(*dd);
    int64_t cb = t >= 0 ? (int64_t)H5Tget_size(t) : 0, band = 1;
    if (t >= 0) H5Tclose(t);
    for (int i = 0; i < in->rank && cb > 0; i++) {
        const int64_t c = in->chunk[i] < 1 ? 1 : in->chunk[i];
        cb = cb > INT64_MAX / 4 / c ? INT64_MAX / 4 : cb * c;
        const int64_t g = in->dims[i] / c + (in->dims[i] % c != 0);
        if (i > 0) band = g > 0 && band > INT64_MAX / g ? INT64_MAX : band * (g > 0 ? g : 1);
    }
    if (cb <= 0) return;
    f->cur_lib_chunk = cb;
    const int64_t budget = fp4_chunked_memory();
    if (cb <= (int64_t)H5IO_CHUNK_CACHE_BYTES || (budget && 2 * cb > budget)) return;
    int64_t want = band > INT64_MAX / cb ? INT64_MAX : band * cb;
    const int64_t cap = budget ? budget / 2 : ((int64_t)1 << 30);
    if (want > cap) want = cap > cb ? cap : cb;
    hid_t dapl = H5Pcopy(f->lapl_dset);
    hid_t nd = -1;
    if (dapl >= 0 && H5Pset_chunk_cache(dapl, H5IO_CHUNK_CACHE_SLOTS, (size_t)want, 0.75) >= 0)
        nd = H5Dopen2(f->fid, path, dapl);
    if (dapl >= 0) H5Pclose(dapl);
    if (nd >= 0) {
        H5Dclose(*dd);
        *dd = nd;
        f->cur_dset = nd;
    }
    fp4_error_clear();
}

/* The dataset `path` (normalized), opened and described once and kept for the following
 * slabs (describing walks the chunk index for the stored size: not once per slab). */
static fp4_status h5io_current(fp4_h5file *f, const char *path, hid_t *d,
                               const fp4_tensor_desc **info)
{
    if (f->cur_path && strcmp(f->cur_path, path) == 0) {
        *d = f->cur_dset;
        *info = &f->cur_info;
        return FP4_OK;
    }
    h5io_drop_current(f);
    bool is_group;
    hid_t probe = h5io_open_dset(f, path, &is_group);
    if (probe < 0) return h5io_missing(f, path, is_group);
    H5Dclose(probe);
    hid_t dd = H5Dopen2(f->fid, path, f->lapl_dset);
    if (dd < 0) {
        char why[160];
        if (!h5io_why(why, sizeof why)[0]) snprintf(why, sizeof why, "corrupt object header");
        return fp4_error(FP4_ERR_INPUT, "%s: %s: cannot open the dataset: %s", f->name, path, why);
    }
    if (!(f->cur_path = h5io_strdup(path))) {
        H5Dclose(dd);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    f->cur_dset = dd;
    fp4_status st = h5io_describe(f, dd, path, &f->cur_info);
    if (st != FP4_OK) {
        h5io_drop_current(f);
        return st;
    }
    h5io_chunked_setup(f, dd, &f->cur_info);
    if (!f->cur_chunked) f->cur_direct = h5io_direct_offset(f, dd, &f->cur_info);
    h5io_lib_chunks(f, path, &dd);
    *d = dd;
    *info = &f->cur_info;
    return FP4_OK;
}

/* --- never-written storage (fp4_source_ops.zero_fill) ----------------------------------------
 * A chunk never written, or contiguous storage never allocated, reads as the fill value. When
 * that is zero, a slab lying wholly in it is 0.0 throughout: the driver accounts for it
 * without reading it (a 4 TiB dataset with 1 MiB stored). The stored chunks are listed only
 * when few: HDF5 1.10 finds chunk i by walking its index from the start. */
#define H5IO_ZF_MAX_CHUNKS 4096

static int h5io_cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void h5io_zf_setup(fp4_h5file *f, hid_t d, const fp4_tensor_desc *in, int dim)
{
    f->zf_state = H5IO_ZF_NONE;
    f->zf_dim = dim;
    free(f->zf_bands);
    f->zf_bands = NULL;
    f->zf_nbands = 0;
    if (in->problem[0] || in->nelems <= 0 || in->rank < 1 || dim < 0 || dim >= in->rank) return;
    hid_t dcpl = H5Dget_create_plist(d), t = -1, fs = -1;
    unsigned char fill[64];
    if (dcpl < 0) return;
    const H5D_layout_t lay = H5Pget_layout(dcpl);
    H5D_fill_value_t fv = H5D_FILL_VALUE_UNDEFINED;
    H5D_fill_time_t ft = H5D_FILL_TIME_NEVER;
    H5D_space_status_t ss = H5D_SPACE_STATUS_ERROR;
    if ((lay != H5D_CHUNKED && lay != H5D_CONTIGUOUS) || H5Pget_external_count(dcpl) != 0 ||
        H5Pfill_value_defined(dcpl, &fv) < 0 || fv == H5D_FILL_VALUE_UNDEFINED ||
        H5Pget_fill_time(dcpl, &ft) < 0 || ft == H5D_FILL_TIME_NEVER ||
        H5Dget_space_status(d, &ss) < 0)
        goto out;
    if (fv == H5D_FILL_VALUE_USER_DEFINED) { /* the fill value's bytes as stored: all 0? */
        t = H5Dget_type(d);
        const size_t es = t >= 0 ? H5Tget_size(t) : 0;
        if (es < 1 || es > sizeof fill || H5Pget_fill_value(dcpl, t, fill) < 0) goto out;
        for (size_t i = 0; i < es; i++)
            if (fill[i]) goto out;
    }
    if (lay == H5D_CONTIGUOUS) {
        if (ss == H5D_SPACE_STATUS_NOT_ALLOCATED) f->zf_state = H5IO_ZF_ALL;
        goto out;
    }
    if (in->chunk_rank != in->rank || in->chunk[dim] < 1) goto out;
    hsize_t n = 0;
    fs = H5Dget_space(d);
    if (fs < 0 || H5Dget_num_chunks(d, fs, &n) < 0) goto out;
    if (n == 0) {
        f->zf_state = H5IO_ZF_ALL;
        goto out;
    }
    /* dense (most chunks stored: nothing worth skipping) or too many to list */
    int64_t cells = 1;
    for (int i = 0; i < in->rank && cells <= INT64_MAX / 4; i++) {
        const int64_t g = in->dims[i] / in->chunk[i] + (in->dims[i] % in->chunk[i] != 0);
        cells = g > 0 && cells > INT64_MAX / 4 / g ? INT64_MAX / 4 : cells * g;
    }
    if (n > H5IO_ZF_MAX_CHUNKS || (int64_t)n * 2 > cells) goto out;
    if (!(f->zf_bands = malloc((size_t)n * sizeof *f->zf_bands))) goto out;
    for (hsize_t i = 0; i < n; i++) {
        hsize_t off[H5S_MAX_RANK];
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info(d, fs, i, off, &mask, &addr, &size) < 0) {
            free(f->zf_bands);
            f->zf_bands = NULL;
            goto out;
        }
        f->zf_bands[i] = (int64_t)(off[dim] / (hsize_t)in->chunk[dim]);
    }
    qsort(f->zf_bands, (size_t)n, sizeof *f->zf_bands, h5io_cmp_i64);
    f->zf_nbands = (int64_t)n;
    f->zf_state = H5IO_ZF_BANDS;
out:
    if (fs >= 0) H5Sclose(fs);
    if (t >= 0) H5Tclose(t);
    H5Pclose(dcpl);
    fp4_error_clear();
}

static bool h5src_zero_fill(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                            int64_t count)
{
    fp4_h5file *f = impl;
    h5io_init();
    char *path = h5io_normpath(t->name);
    const fp4_tensor_desc *in = NULL;
    hid_t d = -1;
    bool zero = false;
    if (path && h5io_current(f, path, &d, &in) == FP4_OK && in->rank >= 1 && dim >= 0 &&
        dim < in->rank && start >= 0 && count > 0 && start <= in->dims[dim] - count) {
        if (f->zf_state == H5IO_ZF_UNKNOWN || f->zf_dim != dim) h5io_zf_setup(f, d, in, dim);
        if (f->zf_state == H5IO_ZF_ALL) {
            zero = true;
        } else if (f->zf_state == H5IO_ZF_BANDS) {
            const int64_t c = in->chunk[dim], b0 = start / c, b1 = (start + count - 1) / c;
            int64_t lo = 0, hi = f->zf_nbands; /* the first stored band >= b0 */
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (f->zf_bands[mid] < b0) lo = mid + 1;
                else hi = mid;
            }
            zero = lo == f->zf_nbands || f->zf_bands[lo] > b1;
        }
    }
    fp4_error_clear();
    free(path);
    return zero;
}

/* HDF5 reads past the end of a file as zeros: a file cut short after it was opened (by
 * another process) would give zeros for data. Checked after every read. */
static fp4_status h5io_check_size(const fp4_h5file *f, const char *path)
{
    struct stat sb;
    if (stat(f->name, &sb) != 0)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the file went away while it was read: %s",
                         f->name, path, strerror(errno));
    if ((int64_t)sb.st_size < f->open_size)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the file was truncated while it was read "
                         "(%lld of %lld bytes left)", f->name, path, (long long)sb.st_size,
                         (long long)f->open_size);
    return FP4_OK;
}

/* Read [start, start+count) along dim of the dataset into buf as mem_type. */
static fp4_status h5io_read(fp4_h5file *f, const char *path_in, int dim, int64_t start,
                            int64_t count, hid_t mem_type, void *buf, bool want_int)
{
    h5io_init();
    char *path = h5io_normpath(path_in);
    if (!path) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    const fp4_tensor_desc *in = NULL;
    hid_t d = -1, fs = -1, ms = -1, raw_type = -1, raw_type_copy = -1;
    fp4_status st = h5io_current(f, path, &d, &in);
    if (st != FP4_OK) goto out;
    if (in->problem[0]) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s", f->name, path, in->problem);
        goto out;
    }
    if (want_int && strchr("iu", in->dtype[0]) == NULL) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s is not an integer type", f->name, path,
                       in->dtype);
        goto out;
    }
    int64_t extent = in->rank == 0 ? 1 : in->dims[dim < 0 || dim >= in->rank ? 0 : dim];
    if (dim < 0 || (in->rank > 0 && dim >= in->rank) || (in->rank == 0 && dim != 0) ||
        start < 0 || count < 0 || start > extent || count > extent - start) {
        st = fp4_error(FP4_ERR_USAGE, "%s: %s: slab dim %d [%lld, +%lld) is outside the shape",
                       f->name, path, dim, (long long)start, (long long)count);
        goto out;
    }
    if (count == 0 || in->nelems == 0) goto out;
    /* Stored words (raw reads, and fp32 reads of float32 data, whose words are the floats)
     * of a chunked dataset we decode: straight from the chunks, on worker threads. */
    if (f->cur_chunked && (mem_type == H5I_INVALID_HID ||
                           (mem_type == H5T_NATIVE_FLOAT && in->stored == FP4_STORED_F32))) {
        st = h5io_chunked_read(f, d, dim, start, count, buf);
        if (st == FP4_OK) st = h5io_check_size(f, path); /* the chunk index read too */
        goto out;
    }
    /* ... and of a contiguous dataset: straight from the file */
    if (f->cur_direct >= 0 && (mem_type == H5I_INVALID_HID ||
                               (mem_type == H5T_NATIVE_FLOAT && in->stored == FP4_STORED_F32))) {
        st = h5io_read_direct(f, path, in, dim, start, count, buf);
        goto out;
    }
    /* HDF5 decodes a whole chunk at a time: --mem-limit decides before it starts */
    if (f->cur_lib_chunk && fp4_chunked_memory() &&
        2 * f->cur_lib_chunk > fp4_chunked_memory()) {
        st = fp4_error(FP4_ERR_INPUT,
                       "%s: %s: decoding a chunk of %lld bytes through the HDF5 library needs "
                       "about %lld bytes, more than the half of --mem-limit kept for decoding (%lld "
                       "bytes; the other half holds the slabs; a chunk is decoded whole); raise "
                       "--mem-limit",
                       f->name, path, (long long)f->cur_lib_chunk,
                       (long long)(2 * f->cur_lib_chunk), (long long)fp4_chunked_memory());
        goto out;
    }
    fs = H5Dget_space(d);
    if (fs < 0) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: cannot read the dataspace", f->name, path);
        goto out;
    }
    if (in->rank == 0) {
        ms = H5Screate(H5S_SCALAR);
    } else {
        hsize_t off[FP4_MAX_RANK], cnt[FP4_MAX_RANK];
        for (int i = 0; i < in->rank; i++) {
            off[i] = i == dim ? (hsize_t)start : 0;
            cnt[i] = i == dim ? (hsize_t)count : (hsize_t)in->dims[i];
        }
        if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) < 0) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: cannot select the slab", f->name, path);
            goto out;
        }
        ms = H5Screate_simple(in->rank, cnt, NULL);
    }
    if (ms < 0) {
        st = fp4_error(FP4_ERR_INTERNAL, "%s: %s: cannot make the memory space", f->name, path);
        goto out;
    }
    if (mem_type == H5I_INVALID_HID) {
        /* raw: the file type itself, in host byte order (HDF5 then only swaps bytes) */
        if (in->stored == FP4_STORED_OTHER) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s words cannot be read raw", f->name, path,
                           in->dtype);
            goto out;
        }
        raw_type = H5Dget_type(d);
        if (raw_type >= 0) raw_type_copy = H5Tcopy(raw_type);
        if (raw_type_copy < 0 ||
            (fp4_stored_size(in->stored) > 1 &&
             H5Tset_order(raw_type_copy, H5Tget_order(H5T_NATIVE_INT)) < 0)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: cannot make the memory type", f->name, path);
            goto out;
        }
        mem_type = raw_type_copy;
    }
    if (H5Dread(d, mem_type, ms, fs, H5P_DEFAULT, buf) < 0) {
        char why[160];
        if (!h5io_why(why, sizeof why)[0]) snprintf(why, sizeof why, "corrupt data");
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: read failed: %s", f->name, path, why);
    } else {
        st = h5io_check_size(f, path);
    }
out:
    /* any read failure on a file that shrank meanwhile: say so (the cause, not its symptom:
     * a chunk index or a chunk past the end) */
    if (st == FP4_ERR_INPUT && in && h5io_check_size(f, path) != FP4_OK) st = FP4_ERR_INPUT;
    if (raw_type_copy >= 0) H5Tclose(raw_type_copy);
    if (raw_type >= 0) H5Tclose(raw_type);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (st != FP4_OK && st != FP4_ERR_USAGE) h5io_drop_current(f);
    free(path);
    return st;
}

fp4_status fp4_h5_read_slab(fp4_h5file *f, const char *path, int dim, int64_t start,
                            int64_t count, float *buf)
{
    return h5io_read(f, path, dim, start, count, H5T_NATIVE_FLOAT, buf, false);
}

fp4_status fp4_h5_read_slab_raw(fp4_h5file *f, const char *path, int dim, int64_t start,
                                int64_t count, void *buf)
{
    return h5io_read(f, path, dim, start, count, H5I_INVALID_HID, buf, false);
}

fp4_status fp4_h5_read_all(fp4_h5file *f, const char *path, float *buf)
{
    fp4_tensor_desc info;
    FP4_TRY(fp4_h5_info(f, path, &info));
    int64_t n = info.rank == 0 ? 1 : info.dims[0];
    fp4_status st = h5io_read(f, path, 0, 0, n, H5T_NATIVE_FLOAT, buf, false);
    fp4_tensor_desc_free(&info);
    return st;
}

fp4_status fp4_h5_read_u8(fp4_h5file *f, const char *path, uint8_t *buf)
{
    fp4_tensor_desc info;
    FP4_TRY(fp4_h5_info(f, path, &info));
    int64_t n = info.rank == 0 ? 1 : info.dims[0];
    fp4_status st = h5io_read(f, path, 0, 0, n, H5T_NATIVE_UINT8, buf, true);
    fp4_tensor_desc_free(&info);
    return st;
}

fp4_status fp4_h5_read_attr_double(fp4_h5file *f, const char *obj, const char *name,
                                   double *out)
{
    h5io_init();
    char *p = h5io_normpath(obj);
    if (!p) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = FP4_OK;
    hid_t a = -1, t = -1, s = -1;
    if (H5Aexists_by_name(f->fid, p, name, f->lapl) <= 0) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: no attribute '%s'", f->name, p, name);
        goto out;
    }
    a = H5Aopen_by_name(f->fid, p, name, H5P_DEFAULT, f->lapl);
    if (a >= 0) t = H5Aget_type(a);
    if (a >= 0) s = H5Aget_space(a);
    if (a < 0 || t < 0 || s < 0) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: cannot open attribute '%s'", f->name, p, name);
        goto out;
    }
    H5T_class_t c = H5Tget_class(t);
    if ((c != H5T_FLOAT && c != H5T_INTEGER) || H5Sget_simple_extent_npoints(s) != 1) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: attribute '%s' is not a numeric scalar", f->name,
                       p, name);
        goto out;
    }
    if (H5Aread(a, H5T_NATIVE_DOUBLE, out) < 0)
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: cannot read attribute '%s'", f->name, p, name);
out:
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    free(p);
    return st;
}

/* --- the HDF5 tensor source ------------------------------------------------------------------ */

static fp4_status h5src_open(const char *file, void **impl)
{
    fp4_h5file *f = NULL;
    FP4_TRY(fp4_h5_open(file, &f));
    *impl = f;
    return FP4_OK;
}

static void h5src_close(void *impl) { fp4_h5_close(impl); }

static fp4_status h5src_list(void *impl, char ***names, int *n)
{
    return h5io_list(impl, names, n);
}

static fp4_status h5src_describe(void *impl, const char *name, fp4_tensor_desc *out,
                                 fp4_name_kind *kind)
{
    return h5io_describe_named(impl, name, out, kind);
}

static fp4_status h5src_read_raw(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                                 int64_t count, void *buf)
{
    return fp4_h5_read_slab_raw(impl, t->name, dim, start, count, buf);
}

static fp4_status h5src_read_f32(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                                 int64_t count, float *buf)
{
    return fp4_h5_read_slab(impl, t->name, dim, start, count, buf);
}

const fp4_source_ops fp4_source_hdf5 = {
    .name = "hdf5",
    .separators = "/",
    .rooted = true,
    .probe = NULL, /* the fallback: any file no other format claims */
    .open = h5src_open,
    .close = h5src_close,
    .list = h5src_list,
    .describe = h5src_describe,
    .read_raw = h5src_read_raw,
    .read_f32 = h5src_read_f32,
    .set_verbose = fp4_h5_set_verbose,
    .set_allow_external = fp4_h5_set_allow_external,
    .zero_fill = h5src_zero_fill,
};
