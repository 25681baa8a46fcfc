/* io/source.c — the tensor-source interface: open a file as the format its first bytes name,
 * the one selection grammar over tensor names (SPEC §8), and the dispatch of reads to the
 * format's operations. Names no format: the table lives in source_reg.c. */
#include "io/source.h"

#include "io/pario.h"
#include "io/widen.h"
#include "base/trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fp4_source {
    const fp4_source_ops *ops;
    void *impl;
    char *file;
};

int fp4_stored_size(fp4_stored s)
{
    switch (s) {
    case FP4_STORED_I8:
    case FP4_STORED_U8: return 1;
    case FP4_STORED_F16:
    case FP4_STORED_BF16:
    case FP4_STORED_I16:
    case FP4_STORED_U16: return 2;
    case FP4_STORED_F32:
    case FP4_STORED_I32:
    case FP4_STORED_U32: return 4;
    case FP4_STORED_F64:
    case FP4_STORED_I64:
    case FP4_STORED_U64: return 8;
    default: return 0;
    }
}

void fp4_tensor_desc_free(fp4_tensor_desc *t)
{
    if (!t) return;
    free(t->name);
    t->name = NULL;
}

void fp4_tensor_desc_free_list(fp4_tensor_desc *list, int n)
{
    if (!list) return;
    for (int i = 0; i < n; i++) fp4_tensor_desc_free(&list[i]);
    free(list);
}

static bool source_notes;

void fp4_source_set_notes(bool on) { source_notes = on; }

bool fp4_source_notes(void) { return source_notes; }

void fp4_source_set_verbose(bool verbose)
{
    for (int i = 0; i < fp4_source_count; i++)
        if (fp4_source_table[i]->set_verbose) fp4_source_table[i]->set_verbose(verbose);
}

static bool source_allow_external;

bool fp4_source_allow_external(void) { return source_allow_external; }

void fp4_source_set_allow_external(bool allow)
{
    source_allow_external = allow;
    for (int i = 0; i < fp4_source_count; i++)
        if (fp4_source_table[i]->set_allow_external)
            fp4_source_table[i]->set_allow_external(allow);
}

static const char *kind_not_regular(mode_t m)
{
    if (S_ISDIR(m)) return "a directory, not a regular file";
    if (S_ISFIFO(m)) return "a FIFO, not a regular file";
    if (S_ISCHR(m)) return "a character device, not a regular file";
    if (S_ISBLK(m)) return "a block device, not a regular file";
    if (S_ISSOCK(m)) return "a socket, not a regular file";
    return "not a regular file";
}

int fp4_open_regular(const char *path, struct stat *sb, const char **why)
{
    struct stat pre;
    if (stat(path, &pre) != 0) {
        *why = errno == ENOENT || errno == ENOTDIR ? "no such file" : strerror(errno);
        return -1;
    }
    if (!S_ISREG(pre.st_mode)) {
        *why = kind_not_regular(pre.st_mode);
        return -1;
    }
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        *why = errno == ENOENT || errno == ENOTDIR ? "no such file" : strerror(errno);
        return -1;
    }
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
        *why = kind_not_regular(sb->st_mode);
        close(fd);
        return -1;
    }
    const int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        *why = strerror(errno);
        close(fd);
        return -1;
    }
    return fd;
}

/* A Hugging Face cache keeps one repository per folder REPO (models--org--name, datasets--...):
 * REPO/snapshots/REV/ holds symlinks into REPO/blobs/. A directory input at or below
 * REPO/snapshots/REV has REPO as its tree, so the snapshot's links into that repository's own
 * blobs are inside it, and nothing outside that one repository is. `real` is a real path. */
static void source_tree_hf_cache(char *real)
{
    for (char *p = strstr(real, "/snapshots/"); p; p = strstr(p + 1, "/snapshots/")) {
        const char *rev = p + strlen("/snapshots/");
        if (*rev == '\0' || *rev == '/') continue;
        const char *repo = p; /* REPO ends here; its last component names the repository */
        const char *base = repo;
        while (base > real && base[-1] != '/') base--;
        if (base == repo) continue;
        char blobs[PATH_MAX];
        const int n = snprintf(blobs, sizeof blobs, "%.*s/blobs", (int)(repo - real), real);
        struct stat sb;
        if (n < 0 || (size_t)n >= sizeof blobs || stat(blobs, &sb) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        *p = '\0';
        return;
    }
}

char *fp4_source_tree(const char *input)
{
    char *real = realpath(input, NULL);
    struct stat sb;
    if (real && stat(real, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        char *slash = strrchr(real, '/');
        if (slash == real) slash[1] = '\0';
        else if (slash) *slash = '\0';
    } else if (real) {
        source_tree_hf_cache(real);
    }
    return real;
}

bool fp4_source_outside_tree(const char *path, const char *root)
{
    if (!root) return false;
    char *real = realpath(path, NULL);
    if (!real) return false;
    const size_t n = strlen(root);
    const bool inside = (n == 1 && root[0] == '/') ||
                        (strncmp(real, root, n) == 0 && (real[n] == '/' || real[n] == '\0'));
    free(real);
    return !inside;
}

/* The format of `file` by its first bytes; the fallback (last entry) when none claims it or
 * the file cannot be read here (its open then says why). */
static const fp4_source_ops *source_detect(const char *file)
{
    unsigned char head[4096];
    size_t n = 0;
    struct stat sb;
    if (stat(file, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        for (int i = 0; i < fp4_source_count; i++)
            if (fp4_source_table[i]->probe_dir && fp4_source_table[i]->probe_dir(file))
                return fp4_source_table[i];
        return fp4_source_table[fp4_source_count - 1];
    }
    struct stat st;
    const char *why;
    /* only a regular file is read here (a FIFO would block); the fallback's open names the
     * others */
    int fd = fp4_open_regular(file, &st, &why);
    if (fd >= 0) {
        ssize_t r;
        while (n < sizeof head && (r = read(fd, head + n, sizeof head - n)) > 0) n += (size_t)r;
        close(fd);
    }
    for (int i = 0; fd >= 0 && i < fp4_source_count; i++)
        if (fp4_source_table[i]->probe && fp4_source_table[i]->probe(head, n))
            return fp4_source_table[i];
    for (int i = 0; fd >= 0 && i < fp4_source_count; i++)
        if (fp4_source_table[i]->probe_file && fp4_source_table[i]->probe_file(file, head, n))
            return fp4_source_table[i];
    return fp4_source_table[fp4_source_count - 1];
}

fp4_status fp4_source_open(const char *file, fp4_source **out)
{
    *out = NULL;
    const fp4_source_ops *ops = source_detect(file);
    void *impl = NULL;
    FP4_TRY(ops->open(file, &impl));
    fp4_source *s = calloc(1, sizeof *s);
    if (!s || !(s->file = strdup(file))) {
        free(s);
        ops->close(impl);
        return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", file);
    }
    s->ops = ops;
    s->impl = impl;
    *out = s;
    fp4_trace("source open: %s", file);
    return FP4_OK;
}

fp4_status fp4_source_wrap(const fp4_source_ops *ops, void *impl, const char *file,
                           fp4_source **out)
{
    *out = NULL;
    fp4_source *s = calloc(1, sizeof *s);
    if (!s || !(s->file = strdup(file))) {
        free(s);
        return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", file);
    }
    s->ops = ops;
    s->impl = impl;
    *out = s;
    return FP4_OK;
}

/* Append a copy of p to the growing list (*files, *n, *cap). */
static bool files_add(char ***files, int *n, int *cap, char *p)
{
    if (!p) return false;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        char **a = realloc(*files, (size_t)nc * sizeof *a);
        if (!a) {
            free(p);
            return false;
        }
        *files = a;
        *cap = nc;
    }
    (*files)[(*n)++] = p;
    return true;
}

static char *join2(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) snprintf(p, a + b + 2, "%s/%s", dir, name);
    return p;
}

fp4_status fp4_source_input_files(const char *path, char ***files, int *n)
{
    *files = NULL;
    *n = 0;
    int cap = 0;
    bool ok = files_add(files, n, &cap, strdup(path));
    const fp4_source_ops *ops = source_detect(path);
    struct stat sb;
    /* a directory a format reads (a sharded checkpoint's folder): every entry; one that no
     * format claims is no source (its open says so) and none of its files is read */
    if (ok && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && ops->probe_dir &&
        ops->probe_dir(path)) {
        DIR *d = opendir(path);
        for (struct dirent *e; ok && d && (e = readdir(d));)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                ok = files_add(files, n, &cap, join2(path, e->d_name));
        if (d) closedir(d);
    }
    if (ok && ops->files) {
        char **more = NULL;
        int nm = 0;
        if (ops->files(path, &more, &nm) != FP4_OK) {
            fp4_error_clear(); /* a bad index: its open says so */
            nm = 0;
        }
        for (int i = 0; i < nm; i++) {
            if (ok) ok = files_add(files, n, &cap, more[i]);
            else free(more[i]);
        }
        free(more);
    }
    if (!ok) {
        fp4_source_files_free(*files, *n);
        *files = NULL;
        *n = 0;
        return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", path);
    }
    return FP4_OK;
}

void fp4_source_files_free(char **files, int n)
{
    for (int i = 0; i < n; i++) free(files[i]);
    free(files);
}

void fp4_source_close(fp4_source *s)
{
    if (!s) return;
    s->ops->close(s->impl);
    free(s->file);
    free(s);
}

fp4_status fp4_source_index_metadata(fp4_source *s, char ***keys, char ***vals, int *n)
{
    *keys = *vals = NULL;
    *n = 0;
    return s->ops->index_metadata ? s->ops->index_metadata(s->impl, keys, vals, n) : FP4_OK;
}

fp4_status fp4_source_metadata(fp4_source *s, char ***keys, char ***vals, int *n)
{
    *keys = *vals = NULL;
    *n = 0;
    return s->ops->metadata ? s->ops->metadata(s->impl, keys, vals, n) : FP4_OK;
}

void fp4_source_metadata_free(char **keys, char **vals, int n)
{
    for (int i = 0; i < n; i++) {
        free(keys[i]);
        free(vals[i]);
    }
    free(keys);
    free(vals);
}

const char *fp4_source_file(const fp4_source *s) { return s ? s->file : ""; }

const fp4_source_ops *fp4_source_format(const fp4_source *s) { return s ? s->ops : NULL; }

const char *fp4_source_what(const fp4_source *s)
{
    return s && s->ops && s->ops->name && strcmp(s->ops->name, "hdf5") != 0
               ? "tensor or name prefix"
               : "dataset or group";
}

/* --- the selection grammar ----------------------------------------------------------------- */

/* A pattern or name as the format spells names: rooted formats "/x/y" from "x/y", "/x/y/" or
 * "/x/y" ("/" stays "/"); others without the leading '/' and trailing separators. */
static char *select_normalize(const fp4_source_ops *ops, const char *p)
{
    size_t n = strlen(p);
    char *d = malloc(n + 2);
    if (!d) return NULL;
    size_t k = 0;
    if (ops->rooted) {
        if (p[0] != '/') d[k++] = '/';
    } else {
        while (*p == '/') p++, n--;
    }
    memcpy(d + k, p, n + 1);
    k += n;
    while (k > (ops->rooted ? 1u : 0u) && strchr(ops->separators, d[k - 1])) d[--k] = '\0';
    return d;
}

static bool select_match_slash(const char *pat, const char *path)
{
    if (strcmp(pat, path) == 0) return true;
    size_t n = strlen(pat);
    if (strcmp(pat, "/") == 0 || n == 0 || (strncmp(pat, path, n) == 0 && path[n] == '/'))
        return true;
    if (fnmatch(pat, path, FNM_PATHNAME) == 0) return true;
    if (!strpbrk(pat, "*?[")) return false;
    const size_t len = strlen(path);
    char *buf = malloc(len + 1); /* names of any length: no fixed buffer */
    if (!buf) return false;
    memcpy(buf, path, len + 1);
    bool hit = false;
    for (size_t i = len; i-- > 1 && !hit;) /* ancestors, deepest first */
        if (buf[i] == '/') {
            buf[i] = '\0';
            hit = fnmatch(pat, buf, FNM_PATHNAME) == 0;
        }
    free(buf);
    return hit;
}

/* Whether `pat` selects `name`: the name itself, a group above it, or a glob matching the name
 * or one of its groups (a glob for "every /blocks/N" selects every tensor below each
 * /blocks/N, as the group /blocks/N would). Separators other than '/' count as '/'. */
bool fp4_select_matches(const char *pat, const char *name, const char *seps)
{
    if (!seps[0] || (seps[0] == '/' && !seps[1])) return select_match_slash(pat, name);
    size_t lp = strlen(pat), ln = strlen(name);
    char *p2 = malloc(lp + 1), *n2 = malloc(ln + 1);
    bool hit = false;
    if (p2 && n2) {
        for (size_t i = 0; i <= lp; i++) p2[i] = pat[i] && strchr(seps, pat[i]) ? '/' : pat[i];
        for (size_t i = 0; i <= ln; i++) n2[i] = name[i] && strchr(seps, name[i]) ? '/' : name[i];
        hit = select_match_slash(p2, n2);
    }
    free(p2);
    free(n2);
    return hit;
}

fp4_status fp4_select_check(const char *const *patterns, int npatterns)
{
    for (int j = 0; j < npatterns; j++)
        if (!patterns[j] || !patterns[j][0])
            return fp4_error(FP4_ERR_USAGE, "selection pattern %d is empty (''): give a name, "
                                            "group or glob, or no pattern at all",
                             j + 1);
    return FP4_OK;
}

fp4_status fp4_source_select(fp4_source *s, const char *const *patterns, int npatterns,
                             fp4_tensor_desc **out, int *n)
{
    return fp4_source_select_some(s, patterns, npatterns, out, n, NULL);
}


/* By edit distance: insertions, deletions, substitutions of bytes (source.h). */
const char *fp4_source_nearest_name(const char *pat, char *const *names, int nnames)
{
    if (strpbrk(pat, "*?[")) return NULL;
    const size_t lp = strlen(pat);
    if (lp == 0 || lp > 512) return NULL;
    size_t limit = lp / 4 > 2 ? lp / 4 : 2;
    size_t *row = malloc((lp + 1) * sizeof *row);
    if (!row) return NULL;
    const char *best = NULL;
    size_t bestd = limit + 1;
    for (int i = 0; i < nnames; i++) {
        const char *nm = names[i];
        const size_t ln = strlen(nm);
        if ((ln > lp ? ln - lp : lp - ln) >= bestd) continue;
        for (size_t k = 0; k <= lp; k++) row[k] = k;
        for (size_t a = 1; a <= ln; a++) {
            size_t diag = row[0];
            row[0] = a;
            for (size_t k = 1; k <= lp; k++) {
                const size_t up = row[k];
                size_t v = diag + (nm[a - 1] != pat[k - 1]);
                if (up + 1 < v) v = up + 1;
                if (row[k - 1] + 1 < v) v = row[k - 1] + 1;
                row[k] = v;
                diag = up;
            }
        }
        if (row[lp] < bestd) bestd = row[lp], best = nm;
    }
    free(row);
    return best;
}

fp4_status fp4_source_select_some(fp4_source *s, const char *const *patterns, int npatterns,
                                  fp4_tensor_desc **out, int *n, bool *unmatched)
{
    *out = NULL;
    *n = 0;
    const fp4_source_ops *ops = s->ops;
    char **names = NULL;
    int nnames = 0;
    fp4_status st = FP4_OK;
    bool *sel = NULL;
    char **pats = NULL;
    char **extra = NULL; /* exact names `list` does not reach (HDF5 soft links) */
    int nextra = 0;
    fp4_tensor_desc *list = NULL;
    if ((st = fp4_select_check(patterns, npatterns)) != FP4_OK) return st;
    st = ops->list(s->impl, &names, &nnames);
    if (st != FP4_OK) goto out;
    sel = calloc((size_t)nnames + 1, sizeof *sel);
    pats = calloc((size_t)npatterns + 1, sizeof *pats);
    extra = calloc((size_t)npatterns + 1, sizeof *extra);
    if (!sel || !pats || !extra) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int j = 0; j < npatterns; j++) {
        if (!(pats[j] = select_normalize(ops, patterns[j]))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        bool any = false;
        for (int i = 0; i < nnames; i++)
            if (fp4_select_matches(pats[j], names[i], ops->separators)) any = sel[i] = true;
        if (any) continue;
        fp4_name_kind kind = FP4_NAME_NONE;
        fp4_tensor_desc probe;
        memset(&probe, 0, sizeof probe);
        fp4_status ds = ops->describe(s->impl, pats[j], &probe, &kind);
        fp4_tensor_desc_free(&probe);
        if (kind == FP4_NAME_TENSOR) {
            (void)ds; /* a header error surfaces when it is described below */
            bool dup = false;
            for (int k = 0; k < nextra; k++) dup = dup || strcmp(extra[k], pats[j]) == 0;
            if (!dup) extra[nextra++] = pats[j];
            continue;
        }
        if (kind == FP4_NAME_GROUP) continue; /* an empty group selects nothing: no error */
        if (unmatched) {
            unmatched[j] = true;
            continue;
        }
        const char *near = fp4_source_nearest_name(pats[j], names, nnames);
        const bool h5 = !strcmp(fp4_source_what(s), "dataset or group");
        if (near)
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: no such %s; did you mean %s? "
                                          "('fp4diag ls %s' lists them)",
                           s->file, pats[j], fp4_source_what(s), near, s->file);
        else if (h5)
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: no such dataset or group", s->file, pats[j]);
        else
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor or name prefix ('fp4diag ls "
                                          "%s' lists the tensors)",
                           s->file, pats[j], s->file);
        goto out;
    }
    int total = 0;
    for (int i = 0; i < nnames; i++) total += npatterns == 0 || sel[i];
    total += nextra;
    list = calloc((size_t)total + 1, sizeof *list);
    if (!list) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    int k = 0;
    for (int i = 0; i < nnames + nextra && st == FP4_OK; i++) {
        if (i < nnames && npatterns != 0 && !sel[i]) continue;
        fp4_name_kind kind;
        st = ops->describe(s->impl, i < nnames ? names[i] : extra[i - nnames], &list[k], &kind);
        if (st == FP4_OK) k++;
    }
    if (st != FP4_OK) {
        fp4_tensor_desc_free_list(list, k);
        list = NULL;
        goto out;
    }
    *out = list;
    *n = k;
    fp4_trace("source select: %d tensors", k);
out:
    for (int i = 0; i < nnames; i++) free(names[i]);
    free(names);
    for (int j = 0; pats && j < npatterns; j++) free(pats[j]);
    free(pats);
    free(extra);
    free(sel);
    return st;
}

fp4_status fp4_source_pattern_hits(const fp4_source *s, const char *pattern,
                                   const fp4_tensor_desc *list, int n, bool *any)
{
    *any = false;
    char *p = select_normalize(s->ops, pattern);
    if (!p) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < n && !*any; i++)
        *any = list[i].name && fp4_select_matches(p, list[i].name, s->ops->separators);
    free(p);
    return FP4_OK;
}

static bool desc_is_float(const fp4_tensor_desc *t)
{
    switch (t->stored) {
    case FP4_STORED_F16:
    case FP4_STORED_BF16:
    case FP4_STORED_F32:
    case FP4_STORED_F64: return true;
    case FP4_STORED_OTHER: return t->numeric && (t->dtype[0] == 'f' || !strncmp(t->dtype, "bf", 2));
    default: return false;
    }
}

bool fp4_source_names_exactly(const fp4_source *s, const char *pattern, const char *name)
{
    char *p = select_normalize(s->ops, pattern);
    bool exact = p && strcmp(p, name) == 0;
    free(p);
    return exact;
}

fp4_status fp4_source_skip_reason(const fp4_source *s, const fp4_tensor_desc *t,
                                  const char *const *patterns, int npatterns, bool all_tensors,
                                  const char *const *exclude, int nexclude, char *buf,
                                  size_t n, const char **reason)
{
    *reason = NULL;
    for (int j = 0; j < nexclude; j++) {
        char *p = select_normalize(s->ops, exclude[j]);
        if (!p) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        bool hit = fp4_select_matches(p, t->name, s->ops->separators);
        free(p);
        if (hit) {
            snprintf(buf, n, "excluded by --exclude %s", exclude[j]);
            *reason = buf;
            return FP4_OK;
        }
    }
    if (all_tensors) return FP4_OK;
    /* What is wrong with a tensor (a refused pointer, storage never written, a dataset that
     * cannot be opened: dtype "unknown") is an error to report, never a reason to skip it. */
    if (t->problem[0] && (t->numeric || !strcmp(t->dtype, "unknown"))) return FP4_OK;
    for (int j = 0; j < npatterns; j++) {
        char *p = select_normalize(s->ops, patterns[j]);
        if (!p) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        bool exact = strcmp(p, t->name) == 0;
        free(p);
        if (exact) return FP4_OK;
    }
    if (!t->numeric) snprintf(buf, n, "not numeric (%s)", t->dtype);
    else if (!desc_is_float(t)) snprintf(buf, n, "integer (%s)", t->dtype);
    else if (t->rank == 0) snprintf(buf, n, "rank 0 (scalar)");
    else if (t->rank == 1) snprintf(buf, n, "rank 1");
    else return FP4_OK;
    *reason = buf;
    return FP4_OK;
}

fp4_status fp4_source_describe(fp4_source *s, const char *name, fp4_tensor_desc *out)
{
    memset(out, 0, sizeof *out);
    char *p = select_normalize(s->ops, name);
    if (!p) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_name_kind kind;
    fp4_status st = s->ops->describe(s->impl, p, out, &kind);
    free(p);
    return st;
}

/* --- reads ---------------------------------------------------------------------------------- */

/* Elements of the slab [start, start+count) along dim; FP4_ERR_USAGE when it is outside the
 * shape (the message the sources give). */
static fp4_status slab_elems(const fp4_source *s, const fp4_tensor_desc *t, int dim,
                             int64_t start, int64_t count, int64_t *n)
{
    const int64_t extent = t->rank == 0 ? 1 : t->dims[dim < 0 || dim >= t->rank ? 0 : dim];
    if (dim < 0 || (t->rank > 0 && dim >= t->rank) || (t->rank == 0 && dim != 0) || start < 0 ||
        count < 0 || start > extent || count > extent - start || t->nelems < 0)
        return fp4_error(FP4_ERR_USAGE, "%s: %s: slab dim %d [%lld, +%lld) is outside the shape",
                         s->file, t->name, dim, (long long)start, (long long)count);
    *n = extent ? count * (t->nelems / extent) : 0;
    return FP4_OK;
}

bool fp4_source_widens(const fp4_source *s, const fp4_tensor_desc *t)
{
    return s->ops->read_raw && fp4_widen_supported(t->stored) && !t->problem[0];
}

fp4_status fp4_source_read_f32(fp4_source *s, const fp4_tensor_desc *t, int dim, int64_t start,
                               int64_t count, float *buf)
{
    if (!fp4_source_widens(s, t)) {
        if (!s->ops->read_f32)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: %s cannot be read as fp32", s->file,
                             t->name, t->dtype);
        return s->ops->read_f32(s->impl, t, dim, start, count, buf);
    }
    /* The stored words, widened here: words of up to 4 bytes are read into the end of buf and
     * widened in place; 8-byte words need a buffer of their own. */
    int64_t n = 0;
    FP4_TRY(slab_elems(s, t, dim, start, count, &n));
    const size_t w = (size_t)fp4_stored_size(t->stored);
    if (w <= sizeof(float)) {
        FP4_TRY(s->ops->read_raw(s->impl, t, dim, start, count,
                                 (unsigned char *)buf + (size_t)n * (sizeof(float) - w)));
        fp4_pario_widen_inplace(t->stored, buf, (size_t)n); /* large: on a few threads */
        return FP4_OK;
    }
    void *raw = malloc(n ? (size_t)n * w : 1);
    if (!raw)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: cannot allocate %lld bytes for the stored words",
                         s->file, t->name, (long long)n * (long long)w);
    fp4_status st = s->ops->read_raw(s->impl, t, dim, start, count, raw);
    if (st == FP4_OK) fp4_widen(t->stored, false, raw, buf, (size_t)n);
    free(raw);
    return st;
}

fp4_status fp4_source_read_raw(fp4_source *s, const fp4_tensor_desc *t, int dim, int64_t start,
                               int64_t count, void *buf)
{
    if (t->problem[0]) return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", s->file, t->name, t->problem);
    if (!s->ops->read_raw || t->stored == FP4_STORED_OTHER)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: %s words cannot be read raw", s->file, t->name,
                         t->dtype);
    return s->ops->read_raw(s->impl, t, dim, start, count, buf);
}

bool fp4_source_zero_fill(fp4_source *s, const fp4_tensor_desc *t, int dim, int64_t start,
                          int64_t count)
{
    if (t->problem[0] || !s->ops->zero_fill || count <= 0) return false;
    return s->ops->zero_fill(s->impl, t, dim, start, count);
}

const void *fp4_source_bytes(fp4_source *s, const fp4_tensor_desc *t)
{
    return s->ops->bytes ? s->ops->bytes(s->impl, t) : NULL;
}
