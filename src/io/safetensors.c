/* io/safetensors.c — the safetensors tensor source: one .safetensors file, a sharded checkpoint
 * through its model.safetensors.index.json, or a directory holding either. Files are mapped
 * read-only; slabs are read straight from the mapping (no copy of a file in memory). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/ckpt_index.h"
#include "io/mapguard.h"
#include "io/rawconv.h"
#include "io/source.h"
#include "io/st_parse.h"

typedef struct st_file {
    char *path;
    const uint8_t *map;
    uint64_t size;
    fp4_st_header h;
    char cut_why[128]; /* "" once the header is read; else why it cannot be (the file is cut
                          short inside it, or a shard the index names is missing): its tensors
                          then errors entries saying so (st_cut_shard, st_cut_file) */
} st_file;

typedef struct st_entry {
    const char *name; /* h.t[t].name of files[f] */
    int f, t;
} st_entry;

typedef struct st_src {
    char *file;      /* as the user named it */
    st_file *files;
    int nfiles;
    st_entry *list;  /* listing order: the index's, else file by file in data order */
    int n;
    st_entry *by_name; /* the same, sorted by name */
    fp4_st_index imeta; /* only its metadata fields: the index's "metadata" */
    char *root;         /* the input's tree: the real directory named, or the real directory
                           of the file named; every file read must resolve inside it */
} st_src;

/* --allow-external: files a checkpoint names (shards, directory entries) may resolve outside
 * the input's tree (symlinks out of it); the same rule as HDF5's external files. */
static bool st_allow_external;

static void st_set_allow_external(bool allow) { st_allow_external = allow; }



/* ---- probing ---------------------------------------------------------------------------- */

/* 8 bytes of header length, then the JSON: '{' (or '[', so that a header that is JSON but not
 * an object is named as such) at byte 8 of a file that is not HDF5. The length is the
 * parser's to check: a hostile one must be refused as safetensors, not as "not HDF5". */
static bool st_probe_file(const unsigned char *head, size_t n)
{
    if (n < 9 || (head[8] != '{' && head[8] != '[')) return false;
    return memcmp(head, "\x89HDF\r\n\x1a\n", 8) != 0;
}

/* Whether the first n bytes of a file can begin a JSON object: whitespace, then '{' (an index
 * is JSON text: no NUL byte, which a safetensors file's 8-byte length holds). */
static bool st_json_object_head(const unsigned char *head, size_t n)
{
    size_t i = 0;
    while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) i++;
    if (i >= n || head[i] != '{') return false;
    return memchr(head, '\0', n) == NULL;
}

/* An index: a JSON object with a top-level key "weight_map", wherever it stands (Hugging Face
 * writes "metadata" first, which may fill the first kilobytes). Scans the file's JSON tokens
 * (strings, nesting) up to the end of the top-level object or FP4_ST_MAX_HEADER bytes; stops
 * at the key. The index parser reads the file again and says what else is wrong. */
static bool st_is_index(const char *file, const unsigned char *head, size_t n)
{
    if (!st_json_object_head(head, n)) return false;
    struct stat sb;
    const char *why;
    const int fd = fp4_open_regular(file, &sb, &why);
    if (fd < 0) return false;
    static const char key[] = "weight_map";
    enum { KLEN = sizeof key - 1 };
    unsigned char buf[1 << 16];
    int depth = 0;
    bool in_str = false, esc = false, want_key = false, is_key = false, found = false, end = false;
    size_t klen = 0; /* characters of the key string read so far (KLEN + 1: longer) */
    bool kmatch = false;
    uint64_t total = 0;
    while (!found && !end && total < FP4_ST_MAX_HEADER) {
        const ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        total += (uint64_t)r;
        for (ssize_t i = 0; i < r && !found && !end; i++) {
            const unsigned char c = buf[i];
            if (in_str) {
                if (esc) {
                    esc = false;
                    kmatch = false; /* an escaped key is not the literal one */
                } else if (c == '\\') {
                    esc = true;
                } else if (c == '"') {
                    in_str = false;
                    if (is_key && kmatch && klen == KLEN) found = true;
                } else if (is_key) {
                    kmatch = kmatch && klen < KLEN && c == (unsigned char)key[klen];
                    klen++;
                }
                continue;
            }
            switch (c) {
            case '"':
                in_str = true;
                is_key = want_key && depth == 1;
                want_key = false;
                klen = 0;
                kmatch = true;
                break;
            case '{':
            case '[':
                depth++;
                want_key = c == '{' && depth == 1;
                break;
            case '}':
            case ']':
                if (--depth <= 0) end = true;
                break;
            case ',': want_key = depth == 1; break;
            default: break;
            }
        }
    }
    close(fd);
    return found;
}

static bool st_probe(const unsigned char *head, size_t n) { return st_probe_file(head, n); }

/* probe_file: an index whose first bytes do not name its key */
static bool st_probe_path(const char *file, const unsigned char *head, size_t n)
{
    return st_is_index(file, head, n);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* A directory holding an index or .safetensors files. */
static bool st_probe_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = ends_with(e->d_name, ".safetensors") ||
                ends_with(e->d_name, ".safetensors.index.json");
    closedir(d);
    return found;
}

/* ---- files ---------------------------------------------------------------------------- */

/* The first 8 + header-length bytes of a mapped file (just the 8 when the length is over the
 * limit or past the end: the parser then refuses it), copied into out (malloc'd before any
 * byte is copied, so that a fault leaves it to free). */
typedef struct hdr_copy {
    const uint8_t *map;
    uint64_t size;
    uint8_t *out;
    size_t n;
} hdr_copy;

static void hdr_copy_run(void *ctx)
{
    hdr_copy *c = ctx;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | c->map[i];
    c->n = n <= FP4_ST_MAX_HEADER && n <= c->size - 8 ? (size_t)(8 + n) : 8;
    if (!(c->out = malloc(c->n))) return;
    memcpy(c->out, c->map, c->n);
}

static fp4_status st_map(const char *path, const char *named_by, const char *root, st_file *f)
{
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    /* a shard or directory entry that resolves (symlinks) outside the input's tree is not
     * read unless --allow-external */
    if (root && !st_allow_external) {
        const bool out = fp4_source_outside_tree(path, root);
        if (out && named_by)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: resolves outside the checkpoint's directory "
                             "%s (a shard the index names; --allow-external reads it)",
                             named_by, path, root);
        if (out)
            return fp4_error(FP4_ERR_INPUT, "%s: resolves outside the checkpoint's directory %s "
                             "(--allow-external reads it)", path, root);
    }
    struct stat sb;
    const char *why;
    int fd = fp4_open_regular(path, &sb, &why); /* a FIFO shard is refused, never waited on */
    if (fd < 0) {
        if (named_by && strcmp(why, "no such file") == 0) /* only the tensors it holds fail */
            snprintf(f->cut_why, sizeof f->cut_why, "no such file (a shard the index names)");
        if (named_by)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: %s (a shard the index names)", named_by,
                             path, why);
        return fp4_error(FP4_ERR_INPUT, "%s: %s", path, why);
    }
    struct stat ib;
    if (named_by && stat(named_by, &ib) == 0 && ib.st_dev == sb.st_dev && ib.st_ino == sb.st_ino) {
        close(fd);
        return fp4_error(FP4_ERR_INPUT, "%s: weight_map names the index itself as a shard (%s)",
                         named_by, path);
    }
    f->size = (uint64_t)sb.st_size;
    if (f->size < 8) {
        close(fd);
        snprintf(f->cut_why, sizeof f->cut_why,
                 "%llu bytes: too short for a safetensors header (truncated)",
                 (unsigned long long)f->size);
        return fp4_error(FP4_ERR_INPUT, "%s: %llu bytes: too short for a safetensors header",
                         path, (unsigned long long)f->size);
    }
    void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return fp4_error(FP4_ERR_INPUT, "%s: cannot map: %s", path, strerror(errno));
    f->map = m;
    /* the header copied out of the mapping under the guard (the file may shrink meanwhile),
     * then parsed from the copy: fp4_st_parse reads only its first 8 + header-length bytes */
    hdr_copy c = {f->map, f->size, NULL, 0};
    if (!fp4_mapguard_call(hdr_copy_run, &c)) {
        free(c.out);
        return fp4_error(FP4_ERR_INPUT, "%s: the file shrank while it was read (truncated)", path);
    }
    if (!c.out) return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", path);
    const fp4_status st = fp4_st_parse(path, c.out, f->size, &f->h);
    if (st != FP4_OK && fp4_st_header_cut(c.out, f->size)) {
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--) n = (n << 8) | c.out[i];
        snprintf(f->cut_why, sizeof f->cut_why,
                 "header size %llu runs past the end of the file (%llu bytes): truncated",
                 (unsigned long long)n, (unsigned long long)f->size);
    }
    free(c.out);
    return st;
}

static void st_unmap(st_file *f)
{
    if (f->map) munmap((void *)f->map, (size_t)f->size);
    fp4_st_header_free(&f->h);
    free(f->path);
    memset(f, 0, sizeof *f);
}

static void st_close(void *impl)
{
    st_src *s = impl;
    if (!s) return;
    for (int i = 0; i < s->nfiles; i++) st_unmap(&s->files[i]);
    free(s->files);
    free(s->list);
    free(s->by_name);
    fp4_st_index_free(&s->imeta);
    free(s->root);
    free(s->file);
    free(s);
}

static int cmp_entry(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return x->f - y->f;
}

/* A shard cut short inside its header or missing (f->cut_why): the tensors the index gives it
 * (shard number `shard`), each `cut` with the reason as its problem, so that each is an errors
 * entry naming the shard and the other shards are read (SPEC section 8). Nothing else of the
 * file is known: a tensor it holds that the index does not list is not seen. */
static fp4_status st_cut_shard(st_file *f, const fp4_st_index *ix, int shard)
{
    fp4_st_header_free(&f->h);
    memset(&f->h, 0, sizeof f->h);
    int n = 0;
    for (int i = 0; i < ix->n; i++) n += ix->shard[i] == shard;
    if (!(f->h.t = calloc((size_t)n + 1, sizeof *f->h.t)))
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < ix->n; i++) {
        if (ix->shard[i] != shard) continue;
        fp4_st_tensor *t = &f->h.t[f->h.n];
        if (!(t->name = strdup(ix->names[i]))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        f->h.n++;
        snprintf(t->dtype, sizeof t->dtype, "unknown");
        t->nelems = -1;
        t->cut = true;
        snprintf(t->problem, sizeof t->problem, "%s", f->cut_why);
    }
    fp4_error_clear();
    return FP4_OK;
}

/* A file of a directory without an index cut short inside its header (f->cut_why): no name of
 * its tensors is known, so it stands as one entry named "[FILE]" (its base name in brackets,
 * which no tensor of the directory's other files may also be named), `cut` with the reason,
 * so that it is one errors entry naming the file and the other files are read (SPEC
 * section 8). */
static fp4_status st_cut_file(st_file *f)
{
    fp4_st_header_free(&f->h);
    memset(&f->h, 0, sizeof f->h);
    const char *base = strrchr(f->path, '/');
    base = base ? base + 1 : f->path;
    const size_t n = strlen(base) + 3;
    fp4_st_tensor *t = calloc(1, sizeof *t);
    if (!t || !(t->name = malloc(n))) {
        free(t);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    snprintf(t->name, n, "[%s]", base);
    f->h.t = t;
    f->h.n = 1;
    snprintf(t->dtype, sizeof t->dtype, "unknown");
    t->nelems = -1;
    t->cut = true;
    snprintf(t->problem, sizeof t->problem, "%.88s: none of its tensors can be named", f->cut_why);
    fp4_error_clear();
    return FP4_OK;
}

static fp4_status st_open_index(st_src *s, const char *index)
{
    fp4_st_index ix;
    FP4_TRY(fp4_ckpt_index_load(index, &ix, &s->imeta)); /* metadata kept for index_metadata */
    char **paths = NULL;
    st_entry *all = NULL;
    bool *used = NULL;
    int nall = 0;
    fp4_status st = fp4_ckpt_index_paths(index, &ix, &paths);
    if (st != FP4_OK) goto out;
    s->files = calloc((size_t)ix.nshards + 1, sizeof *s->files);
    if (!s->files) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int i = 0; i < ix.nshards; i++) {
        st = st_map(paths[i], index, s->root, &s->files[i]);
        s->nfiles = i + 1;
        if (st != FP4_OK && s->files[i].cut_why[0]) st = st_cut_shard(&s->files[i], &ix, i);
        if (st != FP4_OK) goto out;
        nall += s->files[i].h.n;
    }
    all = calloc((size_t)nall + 1, sizeof *all);
    used = calloc((size_t)nall + 1, sizeof *used);
    s->list = calloc((size_t)nall + 1, sizeof *s->list); /* every entry at most once */
    if (!all || !used || !s->list) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    nall = 0;
    for (int f = 0; f < s->nfiles; f++)
        for (int t = 0; t < s->files[f].h.n; t++)
            all[nall++] = (st_entry){s->files[f].h.t[t].name, f, t};
    qsort(all, (size_t)nall, sizeof *all, cmp_entry);
    for (int i = 0; i < ix.n; i++) {
        st_entry key = {ix.names[i], ix.shard[i], 0};
        st_entry *hit = bsearch(&key, all, (size_t)nall, sizeof *all, cmp_entry);
        if (!hit) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: listed in %s, which does not hold it", index,
                           ix.names[i], s->files[ix.shard[i]].path);
            goto out;
        }
        used[hit - all] = true;
        s->list[s->n++] = *hit;
    }
    /* a tensor a shard holds that the index does not list is read too, after the listed ones
     * in file order (transformers loads every tensor of the shards an index names): never
     * left out silently; a name held twice (two shards, the index naming one or none) is
     * ambiguous and refused */
    for (int j = 0; j < nall; j++) {
        if (used[j]) continue;
        const int o = j > 0 && !strcmp(all[j - 1].name, all[j].name)              ? j - 1
                      : j + 1 < nall && !strcmp(all[j + 1].name, all[j].name) ? j + 1
                                                                               : -1;
        if (o >= 0) {
            st = fp4_error(FP4_ERR_INPUT, "%s: tensor %s is held by both %s and %s", index,
                           all[j].name, s->files[all[o].f < all[j].f ? all[o].f : all[j].f].path,
                           s->files[all[o].f < all[j].f ? all[j].f : all[o].f].path);
            goto out;
        }
    }
    for (int f = 0; f < s->nfiles; f++)
        for (int t = 0; t < s->files[f].h.n; t++) {
            st_entry key = {s->files[f].h.t[t].name, f, 0};
            st_entry *hit = bsearch(&key, all, (size_t)nall, sizeof *all, cmp_entry);
            if (hit && !used[hit - all]) s->list[s->n++] = *hit;
        }
out:
    free(used);
    for (int i = 0; paths && i < ix.nshards; i++) free(paths[i]);
    free(paths);
    free(all);
    fp4_st_index_free(&ix);
    return st;
}

static bool st_name_is_file(const char *name) { return ends_with(name, ".safetensors"); }

static fp4_status st_open_dir(st_src *s, const char *dir)
{
    char *index = NULL, **names = NULL;
    int nn = 0;
    FP4_TRY(fp4_ckpt_dir_scan(dir, ".safetensors.index.json", st_name_is_file,
                              ".safetensors file or index", &index, &names, &nn));
    fp4_status st = FP4_OK;
    if (index) {
        if (!st_allow_external && fp4_source_outside_tree(index, s->root))
            st = fp4_error(FP4_ERR_INPUT, "%s: resolves outside the checkpoint's directory %s "
                           "(--allow-external reads it)", index, s->root);
        else
            st = st_open_index(s, index);
        free(index);
        return st;
    }
    s->files = calloc((size_t)nn, sizeof *s->files);
    if (!s->files) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    int total = 0;
    for (int i = 0; i < nn; i++) {
        st = st_map(names[i], NULL, s->root, &s->files[i]);
        s->nfiles = i + 1;
        if (st != FP4_OK && s->files[i].cut_why[0]) st = st_cut_file(&s->files[i]);
        if (st != FP4_OK) goto out;
        total += s->files[i].h.n;
    }
    if (!(s->list = calloc((size_t)total + 1, sizeof *s->list))) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int f = 0; f < s->nfiles; f++)
        for (int t = 0; t < s->files[f].h.n; t++)
            s->list[s->n++] = (st_entry){s->files[f].h.t[t].name, f, t};
out:
    for (int i = 0; i < nn; i++) free(names[i]);
    free(names);
    return st;
}

static fp4_status st_open(const char *file, void **impl)
{
    *impl = NULL;
    st_src *s = calloc(1, sizeof *s);
    if (!s || !(s->file = strdup(file))) {
        free(s);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    fp4_status st;
    struct stat sb;
    unsigned char head[4096];
    size_t n = 0;
    /* the input's tree (HDF5's rule): the real directory named, or the real directory of
     * the file named */
    s->root = fp4_source_tree(file); /* NULL: the open below says why */
    if (stat(file, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        st = st_open_dir(s, file);
    } else {
        const char *why;
        int fd = fp4_open_regular(file, &sb, &why); /* else st_map below says why */
        if (fd >= 0) {
            ssize_t r;
            while (n < sizeof head && (r = read(fd, head + n, sizeof head - n)) > 0) n += (size_t)r;
            close(fd);
        }
        if (fd >= 0 && st_is_index(file, head, n)) {
            st = st_open_index(s, file);
        } else {
            s->files = calloc(1, sizeof *s->files);
            st = s->files ? st_map(file, NULL, NULL, &s->files[0])
                          : fp4_error(FP4_ERR_INTERNAL, "out of memory");
            if (s->files) s->nfiles = 1;
            if (st == FP4_OK && !(s->list = calloc((size_t)s->files[0].h.n + 1, sizeof *s->list)))
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            for (int t = 0; st == FP4_OK && t < s->files[0].h.n; t++)
                s->list[s->n++] = (st_entry){s->files[0].h.t[t].name, 0, t};
        }
    }
    if (st == FP4_OK) {
        s->by_name = malloc(((size_t)s->n + 1) * sizeof *s->by_name);
        if (!s->by_name) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        } else {
            memcpy(s->by_name, s->list, (size_t)s->n * sizeof *s->by_name);
            qsort(s->by_name, (size_t)s->n, sizeof *s->by_name, cmp_entry);
            for (int i = 1; i < s->n; i++)
                if (strcmp(s->by_name[i - 1].name, s->by_name[i].name) == 0) {
                    st = fp4_error(FP4_ERR_INPUT, "%s: tensor %s is in both %s and %s", file,
                                   s->by_name[i].name, s->files[s->by_name[i - 1].f].path,
                                   s->files[s->by_name[i].f].path);
                    break;
                }
        }
    }
    if (st != FP4_OK) {
        st_close(s);
        return st;
    }
    *impl = s;
    return FP4_OK;
}

static fp4_status st_list(void *impl, char ***names, int *n)
{
    st_src *s = impl;
    *names = calloc((size_t)s->n + 1, sizeof **names);
    if (!*names) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < s->n; i++) {
        if (!((*names)[i] = strdup(s->list[i].name))) {
            for (int k = 0; k < i; k++) free((*names)[k]);
            free(*names);
            *names = NULL;
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        }
    }
    *n = s->n;
    return FP4_OK;
}

static const st_entry *st_find(const st_src *s, const char *name)
{
    int lo = 0, hi = s->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(s->by_name[mid].name, name);
        if (c == 0) return &s->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static fp4_raw st_raw(fp4_st_dtype t)
{
    switch (t) {
    case FP4_ST_F16: return FP4_RAW_F16;
    case FP4_ST_BF16: return FP4_RAW_BF16;
    case FP4_ST_F32: return FP4_RAW_F32;
    case FP4_ST_F64: return FP4_RAW_F64;
    case FP4_ST_I8: return FP4_RAW_I8;
    case FP4_ST_U8: return FP4_RAW_U8;
    case FP4_ST_I16: return FP4_RAW_I16;
    case FP4_ST_U16: return FP4_RAW_U16;
    case FP4_ST_I32: return FP4_RAW_I32;
    case FP4_ST_U32: return FP4_RAW_U32;
    case FP4_ST_I64: return FP4_RAW_I64;
    case FP4_ST_U64: return FP4_RAW_U64;
    case FP4_ST_F8_E4M3: return FP4_RAW_F8_E4M3;
    case FP4_ST_F8_E5M2: return FP4_RAW_F8_E5M2;
    default: return FP4_RAW_NONE;
    }
}

/* Whether `name` is a component prefix of some tensor's name (a group). */
static bool st_is_group(const st_src *s, const char *name, const char *seps)
{
    size_t n = strlen(name);
    for (int i = 0; i < s->n; i++) {
        const char *t = s->list[i].name;
        if (n == 0 || (strncmp(t, name, n) == 0 && t[n] && strchr(seps, t[n]))) return true;
    }
    return false;
}

extern const fp4_source_ops fp4_source_safetensors;

static fp4_status st_describe(void *impl, const char *name, fp4_tensor_desc *out,
                              fp4_name_kind *kind)
{
    st_src *s = impl;
    memset(out, 0, sizeof *out);
    const st_entry *e = st_find(s, name);
    if (!e) {
        if (st_is_group(s, name, fp4_source_safetensors.separators)) {
            *kind = FP4_NAME_GROUP;
            return fp4_error(FP4_ERR_INPUT, "%s: %s: is a group, not a dataset", s->file, name);
        }
        *kind = FP4_NAME_NONE;
        return fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor", s->file, name);
    }
    *kind = FP4_NAME_TENSOR;
    const st_file *f = &s->files[e->f];
    const fp4_st_tensor *t = &f->h.t[e->t];
    if (!(out->name = strdup(t->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    out->rank = t->rank < FP4_MAX_RANK ? t->rank : FP4_MAX_RANK;
    for (int i = 0; i < out->rank; i++) out->dims[i] = t->dims[i];
    out->nelems = t->nelems;
    /* numeric says what the type is; a tensor of a numeric type that cannot be read (rank
     * over FP4_ST_MAX_RANK) is an error to report with its problem, never skipped as "not
     * numeric" */
    const fp4_raw kt = st_raw(t->type);
    fp4_raw k = t->problem[0] ? FP4_RAW_NONE : kt;
    snprintf(out->dtype, sizeof out->dtype, "%s", kt ? fp4_raw_name(kt) : t->dtype);
    snprintf(out->byte_order, sizeof out->byte_order, "%s",
             fp4_st_dtype_bits(t->type) > 8 ? "le" : "");
    out->stored = fp4_raw_stored(k);
    out->numeric = kt != FP4_RAW_NONE;
    out->exact_fp32 = fp4_raw_exact(k);
    out->codec_available = true;
    /* a cut tensor's offsets are bounded by nothing the file holds: -1 where they overflow */
    out->logical_bytes = t->end - t->begin <= (uint64_t)INT64_MAX ? (int64_t)(t->end - t->begin) : -1;
    out->stored_bytes = out->logical_bytes;
    if (t->cut) /* what the file still holds of it */
        out->stored_bytes = f->h.data_len > t->begin ? (int64_t)(f->h.data_len - t->begin) : 0;
    out->file_offset = t->begin <= (uint64_t)INT64_MAX - f->h.data_start
                           ? (int64_t)(f->h.data_start + t->begin) : -1;
    if (s->nfiles > 1 || strcmp(f->path, s->file) != 0) {
        const char *base = strrchr(f->path, '/');
        snprintf(out->part, sizeof out->part, "%s", base ? base + 1 : f->path);
    }
    if (f->cut_why[0]) { /* a shard cut inside its header: nothing known of the tensor */
        snprintf(out->dtype, sizeof out->dtype, "unknown");
        out->byte_order[0] = '\0';
        out->nelems = -1;
        out->logical_bytes = -1;
        out->stored_bytes = 0;
        out->file_offset = -1;
    }
    if (t->cut && out->part[0]) { /* which shard is cut short */
        char m[sizeof out->part + sizeof t->problem + 4];
        snprintf(m, sizeof m, "%s: %s", out->part, t->problem);
        snprintf(out->problem, sizeof out->problem, "%.*s", (int)sizeof out->problem - 1, m);
    } else {
        snprintf(out->problem, sizeof out->problem, "%s", t->problem);
    }
    return FP4_OK;
}

/* The tensor behind a descriptor and the range check every read makes. */
static fp4_status st_slab_args(st_src *s, const fp4_tensor_desc *d, int dim, int64_t start,
                               int64_t count, const st_file **f, const fp4_st_tensor **t)
{
    const st_entry *e = st_find(s, d->name);
    if (!e) return fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor", s->file, d->name);
    *f = &s->files[e->f];
    *t = &(*f)->h.t[e->t];
    if ((*t)->problem[0])
        return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", s->file, d->name, (*t)->problem);
    FP4_TRY(fp4_raw_slab_check(s->file, d->name, (*t)->rank, (*t)->dims, dim, start, count));
    return FP4_OK;
}

static fp4_status st_read(void *impl, const fp4_tensor_desc *d, int dim, int64_t start,
                          int64_t count, bool raw, void *buf)
{
    st_src *s = impl;
    const st_file *f = NULL;
    const fp4_st_tensor *t = NULL;
    FP4_TRY(st_slab_args(s, d, dim, start, count, &f, &t));
    if (t->nelems == 0 || count == 0) return FP4_OK;
    /* read from the mapping under io/mapguard.h: a file shrunk meanwhile is this tensor's
     * error, never SIGBUS */
    if (!fp4_raw_slab_mapped(f->map + f->h.data_start + t->begin, st_raw(t->type), false,
                             t->rank, t->dims, false, dim, start, count, raw, buf))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the file shrank while it was read (truncated)",
                         f->path, d->name);
    return FP4_OK;
}

static fp4_status st_read_raw(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                              int64_t count, void *buf)
{
    return st_read(impl, t, dim, start, count, true, buf);
}

static fp4_status st_read_f32(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                              int64_t count, float *buf)
{
    return st_read(impl, t, dim, start, count, false, buf);
}

static const void *st_view(void *impl, const fp4_tensor_desc *d)
{
    st_src *s = impl;
    const st_entry *e = st_find(s, d->name);
    if (!e) return NULL;
    const st_file *f = &s->files[e->f];
    const fp4_st_tensor *t = &f->h.t[e->t];
    if (t->problem[0] || fp4_raw_stored(st_raw(t->type)) == FP4_STORED_OTHER) return NULL;
    return f->map + f->h.data_start + t->begin;
}

static const void *st_bytes(void *impl, const fp4_tensor_desc *d)
{
    st_src *s = impl;
    const st_entry *e = st_find(s, d->name);
    if (!e) return NULL;
    const st_file *f = &s->files[e->f];
    const fp4_st_tensor *t = &f->h.t[e->t];
    /* the parser checked every tensor's range lies inside the data section, or marked it cut */
    return t->cut ? NULL : f->map + f->h.data_start + t->begin;
}

static fp4_status st_metadata(void *impl, char ***keys, char ***vals, int *n)
{
    st_src *s = impl;
    *keys = *vals = NULL;
    *n = 0;
    int total = 0;
    for (int f = 0; f < s->nfiles; f++) total += s->files[f].h.nmeta;
    *keys = calloc((size_t)total + 1, sizeof **keys);
    *vals = calloc((size_t)total + 1, sizeof **vals);
    if (!*keys || !*vals) goto oom;
    for (int f = 0; f < s->nfiles; f++) {
        const fp4_st_header *h = &s->files[f].h;
        for (int i = 0; i < h->nmeta; i++) {
            bool dup = false; /* shards repeat their metadata: keep the first */
            for (int k = 0; k < *n && !dup; k++)
                dup = strcmp((*keys)[k], h->meta_keys[i]) == 0 &&
                      strcmp((*vals)[k], h->meta_vals[i]) == 0;
            if (dup) continue;
            (*keys)[*n] = strdup(h->meta_keys[i]);
            (*vals)[*n] = strdup(h->meta_vals[i]);
            (*n)++;
            if (!(*keys)[*n - 1] || !(*vals)[*n - 1]) goto oom;
        }
    }
    return FP4_OK;
oom:
    for (int i = 0; i < *n; i++) {
        free((*keys)[i]);
        free((*vals)[i]);
    }
    free(*keys);
    free(*vals);
    *keys = *vals = NULL;
    *n = 0;
    return fp4_error(FP4_ERR_INTERNAL, "out of memory");
}

/* The shards an index names (the index given, or the one index of a directory), as paths
 * beside the index; nothing for a plain .safetensors file or a directory of them (those are
 * its own entries). Only the index is read. */
static fp4_status st_files(const char *path, char ***files, int *n)
{
    return fp4_ckpt_index_files(path, ".safetensors.index.json", st_is_index, files, n);
}

static fp4_status st_index_metadata(void *impl, char ***keys, char ***vals, int *n)
{
    return fp4_ckpt_index_metadata(&((st_src *)impl)->imeta, keys, vals, n);
}

const fp4_source_ops fp4_source_safetensors = {
    .name = "safetensors",
    .separators = "./",
    .rooted = false,
    .probe = st_probe,
    .probe_file = st_probe_path,
    .set_allow_external = st_set_allow_external,
    .probe_dir = st_probe_dir,
    .open = st_open,
    .close = st_close,
    .list = st_list,
    .describe = st_describe,
    .read_raw = st_read_raw,
    .read_f32 = st_read_f32,
    .view = st_view,
    .bytes = st_bytes,
    .metadata = st_metadata,
    .files = st_files,
    .index_metadata = st_index_metadata,
};
