/* io/ckpt_index.c — the sharded checkpoint index both sharded sources read (ckpt_index.h). */
#include "io/ckpt_index.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/source.h"

char *fp4_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

char *fp4_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Read a small whole file (an index) into memory. */
static fp4_status slurp(const char *path, char **out, size_t *len)
{
    *out = NULL;
    struct stat sb;
    const char *why;
    const int fd = fp4_open_regular(path, &sb, &why); /* a FIFO index is refused */
    if (fd < 0) return fp4_error(FP4_ERR_INPUT, "%s: %s", path, why);
    FILE *fh = fdopen(fd, "rb");
    if (!fh) {
        close(fd);
        return fp4_error(FP4_ERR_INPUT, "%s: %s", path, strerror(errno));
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    fp4_status st = FP4_OK;
    while (b) {
        if (n == cap) {
            if (cap > FP4_ST_MAX_HEADER) {
                st = fp4_error(FP4_ERR_INPUT, "%s: index file exceeds the 100 MB limit", path);
                break;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - n, fh);
        n += r;
        if (r == 0) break;
    }
    if (!b) st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", path);
    else if (st == FP4_OK && ferror(fh)) st = fp4_error(FP4_ERR_INPUT, "%s: read error", path);
    fclose(fh);
    if (st != FP4_OK) {
        free(b);
        return st;
    }
    *out = b;
    *len = n;
    return FP4_OK;
}

fp4_status fp4_ckpt_index_load(const char *index, fp4_st_index *ix, fp4_st_index *meta)
{
    memset(ix, 0, sizeof *ix);
    char *buf = NULL;
    size_t len = 0;
    FP4_TRY(slurp(index, &buf, &len));
    fp4_status st = fp4_st_index_parse(index, buf, len, ix);
    free(buf);
    if (st != FP4_OK) {
        memset(ix, 0, sizeof *ix);
        return st;
    }
    fp4_st_index_free(meta);
    meta->meta_keys = ix->meta_keys;
    meta->meta_vals = ix->meta_vals;
    meta->nmeta = ix->nmeta;
    ix->meta_keys = ix->meta_vals = NULL;
    ix->nmeta = 0;
    return FP4_OK;
}

fp4_status fp4_ckpt_index_paths(const char *index, const fp4_st_index *ix, char ***paths)
{
    char *dir = fp4_dir_of(index);
    char **p = calloc((size_t)ix->nshards + 1, sizeof *p);
    bool ok = dir && p;
    for (int i = 0; ok && i < ix->nshards; i++) ok = (p[i] = fp4_path_join(dir, ix->shards[i]));
    free(dir);
    if (!ok) {
        for (int i = 0; p && i < ix->nshards; i++) free(p[i]);
        free(p);
        *paths = NULL;
        return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", index);
    }
    *paths = p;
    return FP4_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

fp4_status fp4_ckpt_index_files(const char *path, const char *suffix,
                                bool (*is_index)(const char *path, const unsigned char *head,
                                                 size_t n),
                                char ***files, int *n)
{
    *files = NULL;
    *n = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) return FP4_OK;
    char *index = NULL;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        int ni = 0;
        for (struct dirent *e; d && (e = readdir(d));)
            if (ends_with(e->d_name, suffix) && ni++ == 0) index = fp4_path_join(path, e->d_name);
        if (d) closedir(d);
        if (ni != 1) { /* none, or several: the open refuses it */
            free(index);
            return FP4_OK;
        }
    } else if (S_ISREG(sb.st_mode)) {
        unsigned char head[4096];
        size_t k = 0;
        const char *why;
        struct stat fb;
        int fd = fp4_open_regular(path, &fb, &why);
        if (fd < 0) return FP4_OK; /* the open says why */
        ssize_t r;
        while (k < sizeof head && (r = read(fd, head + k, sizeof head - k)) > 0) k += (size_t)r;
        close(fd);
        if (!is_index(path, head, k)) return FP4_OK;
        index = strdup(path);
    } else {
        return FP4_OK;
    }
    if (!index) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_st_index ix, meta = {0};
    char **paths = NULL;
    fp4_status st = fp4_ckpt_index_load(index, &ix, &meta);
    if (st == FP4_OK) st = fp4_ckpt_index_paths(index, &ix, &paths);
    if (st == FP4_OK) {
        *files = paths;
        *n = ix.nshards;
    }
    fp4_st_index_free(&ix);
    fp4_st_index_free(&meta);
    free(index);
    return st;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

fp4_status fp4_ckpt_dir_scan(const char *dir, const char *idx_suffix,
                             bool (*is_file)(const char *name), const char *what, char **index,
                             char ***files, int *nfiles)
{
    *index = NULL;
    *files = NULL;
    *nfiles = 0;
    DIR *d = opendir(dir);
    if (!d) return fp4_error(FP4_ERR_INPUT, "%s: %s", dir, strerror(errno));
    char **names = NULL, **idx = NULL;
    int nn = 0, ni = 0, cap = 0;
    fp4_status st = FP4_OK;
    for (struct dirent *e; (e = readdir(d));) {
        bool is_idx = ends_with(e->d_name, idx_suffix);
        if (!is_idx && !is_file(e->d_name)) continue;
        if (nn + ni >= cap) {
            cap = cap ? cap * 2 : 16;
            char **a = realloc(names, ((size_t)cap + 1) * sizeof *a), **b = NULL;
            if (a) names = a;
            if (a) b = realloc(idx, (size_t)cap * sizeof *b);
            if (b) idx = b;
            if (!a || !b) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                goto out;
            }
        }
        char *p = strdup(e->d_name);
        if (!p) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        if (is_idx) idx[ni++] = p;
        else names[nn++] = p;
    }
    if (ni > 1) {
        qsort(idx, (size_t)ni, sizeof *idx, cmp_cstr);
        st = fp4_error(FP4_ERR_INPUT, "%s: holds %d index files (%s, %s%s): name the one to read",
                       dir, ni, idx[0], idx[1], ni > 2 ? ", ..." : "");
        goto out;
    }
    if (ni == 1) {
        if (!(*index = fp4_path_join(dir, idx[0])))
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    if (nn == 0) {
        st = fp4_error(FP4_ERR_INPUT, "%s: no %s in this directory", dir, what);
        goto out;
    }
    qsort(names, (size_t)nn, sizeof *names, cmp_cstr);
    for (int i = 0; i < nn; i++) {
        char *p = fp4_path_join(dir, names[i]);
        if (!p) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        free(names[i]);
        names[i] = p;
    }
    names[nn] = NULL;
    *files = names;
    *nfiles = nn;
    names = NULL;
    nn = 0;
out:
    closedir(d);
    for (int i = 0; i < nn; i++) free(names[i]);
    for (int i = 0; i < ni; i++) free(idx[i]);
    free(names);
    free(idx);
    return st;
}

fp4_status fp4_ckpt_index_metadata(const fp4_st_index *meta, char ***keys, char ***vals, int *n)
{
    *keys = calloc((size_t)meta->nmeta + 1, sizeof **keys);
    *vals = calloc((size_t)meta->nmeta + 1, sizeof **vals);
    *n = 0;
    bool ok = *keys && *vals;
    for (int i = 0; ok && i < meta->nmeta; i++) {
        (*keys)[i] = strdup(meta->meta_keys[i]);
        (*vals)[i] = strdup(meta->meta_vals[i]);
        *n = i + 1;
        ok = (*keys)[i] && (*vals)[i];
    }
    if (ok) return FP4_OK;
    fp4_source_metadata_free(*keys, *vals, *n);
    *keys = *vals = NULL;
    *n = 0;
    return fp4_error(FP4_ERR_INTERNAL, "out of memory");
}
