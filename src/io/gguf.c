/* io/gguf.c — the GGUF tensor source (llama.cpp / ggml files, SPEC §8): one .gguf file, mapped
 * read-only; the header parsed by io/gguf_parse.c from a copy taken under io/mapguard.h.
 * Shapes are reported row-major (ggml's ne reversed: ne[0], the contiguous dimension, last),
 * as every other source reports them. F32, F16, BF16, F64 and the integer types are read as
 * numbers; MXFP4 (type 39) and NVFP4 (type 40) are described as not numeric and read as
 * already-quantized tensors by io/quantized.c (through `bytes`); every other ggml type (Q4_0,
 * Q8_0, the K- and I-quants, ...) is described with its type name and a problem saying it is
 * not read. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf_parse.h"
#include "io/mapguard.h"
#include "io/rawconv.h"
#include "io/source.h"

/* The first copy of the header taken from the mapping; doubled until the parse is done. */
#define GG_FIRST_COPY ((uint64_t)1 << 20)

/* One .gguf file. */
typedef struct gg_part {
    char *file;
    const uint8_t *map;
    uint64_t size;
    fp4_gguf_header h;
} gg_part;

/* A tensor of the source: part p, index i of its header. */
typedef struct gg_ix {
    int p, i;
} gg_ix;

/* One file, or the parts of a split model (llama.cpp gguf-split, gguf-py's GGUFWriter:
 * NAME-00001-of-0000N.gguf ..., keys split.no, split.count, split.tensors.count) read as one
 * model: the first part's metadata, every part's tensors. */
typedef struct gg_src {
    char *file;
    gg_part *p;
    int np;
    gg_ix *by_name; /* every tensor, sorted by name */
    int n;
} gg_src;

static bool gg_probe(const unsigned char *head, size_t n)
{
    return n >= 4 && memcmp(head, "GGUF", 4) == 0;
}

typedef struct gg_copy {
    const uint8_t *map;
    uint8_t *out;
    uint64_t n;
} gg_copy;

static void gg_copy_run(void *ctx)
{
    gg_copy *c = ctx;
    memcpy(c->out, c->map, (size_t)c->n);
}

static void gg_part_close(gg_part *p)
{
    if (p->map) munmap((void *)p->map, (size_t)p->size);
    fp4_gguf_header_free(&p->h);
    free(p->file);
    memset(p, 0, sizeof *p);
}

static void gg_close(void *impl)
{
    gg_src *s = impl;
    if (!s) return;
    for (int i = 0; i < s->np; i++) gg_part_close(&s->p[i]);
    free(s->p);
    free(s->by_name);
    free(s->file);
    free(s);
}

static const gg_src *sort_s; /* qsort context (open runs on one thread at a time) */

static const fp4_gguf_tensor *gg_t(const gg_src *s, gg_ix x) { return &s->p[x.p].h.t[x.i]; }

static int cmp_ix(const void *a, const void *b)
{
    return strcmp(gg_t(sort_s, *(const gg_ix *)a)->name, gg_t(sort_s, *(const gg_ix *)b)->name);
}

/* Map and parse one file into *p (zeroed first; gg_part_close it on any return). */
static fp4_status gg_part_open(const char *file, gg_part *p)
{
    memset(p, 0, sizeof *p);
    if (!(p->file = strdup(file))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    struct stat sb;
    const char *why;
    int fd = fp4_open_regular(file, &sb, &why);
    if (fd < 0) return fp4_error(FP4_ERR_INPUT, "%s: %s", file, why);
    p->size = (uint64_t)sb.st_size;
    if (p->size < 24) {
        close(fd);
        return fp4_error(FP4_ERR_INPUT, "%s: %" PRIu64 " bytes: too short for a GGUF header",
                         file, p->size);
    }
    void *m = mmap(NULL, (size_t)p->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return fp4_error(FP4_ERR_INPUT, "%s: cannot map: %s", file, strerror(errno));
    p->map = m;
    /* the header copied out of the mapping under the guard (the file may shrink meanwhile),
     * more of it each time the parse needs more */
    fp4_status st = FP4_ERR_INPUT;
    for (uint64_t n = GG_FIRST_COPY;; n *= 2) {
        if (n > p->size) n = p->size;
        gg_copy c = {p->map, malloc((size_t)n), n};
        if (!c.out) return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", file);
        if (!fp4_mapguard_call(gg_copy_run, &c)) {
            free(c.out);
            return fp4_error(FP4_ERR_INPUT, "%s: the file shrank while it was read (truncated)",
                             file);
        }
        bool more = false;
        st = fp4_gguf_parse(file, c.out, n, p->size, &p->h, &more);
        free(c.out);
        if (!more || n == p->size) break;
    }
    return st;
}

/* The unsigned integer value of key `k` of h: 1 found (*v set), 0 absent, -1 not a
 * non-negative integer. */
static int gg_uint_key(const fp4_gguf_header *h, const char *k, uint64_t *v)
{
    for (int i = 0; i < h->nkv; i++) {
        if (strcmp(h->kv[i].key, k) != 0) continue;
        const fp4_gguf_kv *kv = &h->kv[i];
        switch (kv->type) {
        case FP4_GGUF_I8:
        case FP4_GGUF_I16:
        case FP4_GGUF_I32:
        case FP4_GGUF_I64:
            if (kv->i < 0) return -1;
            *v = (uint64_t)kv->i;
            return 1;
        case FP4_GGUF_U8:
        case FP4_GGUF_U16:
        case FP4_GGUF_U32:
        case FP4_GGUF_U64: *v = kv->u; return 1;
        default: return -1;
        }
    }
    return 0;
}

/* The length of the stem of a split part's name STEM-00001-of-00003.gguf (*no = 1,
 * *count = 3), or 0 when the name is not one. */
static size_t gg_split_name(const char *file, unsigned *no, unsigned *count)
{
    static const char pat[] = "-00001-of-00003.gguf";
    const size_t n = strlen(file), tail = sizeof pat - 1;
    if (n < tail) return 0;
    const char *t = file + n - tail;
    for (size_t i = 0; i < tail; i++) {
        const bool digit = pat[i] >= '0' && pat[i] <= '9';
        if (digit ? !(t[i] >= '0' && t[i] <= '9') : t[i] != pat[i]) return 0;
    }
    *no = (unsigned)strtoul(t + 1, NULL, 10);
    *count = (unsigned)strtoul(t + 10, NULL, 10);
    return n - tail;
}

static const char *fmt_u64(uint64_t v, char buf[24])
{
    snprintf(buf, 24, "%" PRIu64, v);
    return buf;
}

static void free_paths(char **paths, uint64_t n)
{
    for (uint64_t k = 0; paths && k < n; k++) free(paths[k]);
    free(paths);
}

/* The paths of parts 2..count of the split model whose first part is `file` (*paths: count - 1
 * malloc'd strings; free_paths). */
static fp4_status gg_split_paths(const char *file, unsigned count, char ***paths)
{
    unsigned no = 0, cnt = 0;
    const size_t stem = gg_split_name(file, &no, &cnt);
    *paths = NULL;
    if (!stem || no != 1 || cnt != count)
        return fp4_error(FP4_ERR_INPUT, "%s: split.count %u, but the name is not "
                         "NAME-00001-of-%05u.gguf (llama.cpp's gguf-split naming)", file, count,
                         count);
    *paths = calloc((size_t)count, sizeof **paths);
    if (!*paths) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (unsigned k = 2; k <= count; k++) {
        char *q = malloc(stem + 32);
        if (!q) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        snprintf(q, stem + 32, "%.*s-%05u-of-%05u.gguf", (int)stem, file, k, count);
        (*paths)[k - 2] = q;
    }
    return FP4_OK;
}

/* After the first part: the other parts of a split model, checked. */
static fp4_status gg_open_split(gg_src *s)
{
    const fp4_gguf_header *h0 = &s->p[0].h;
    uint64_t count = 0, no = 0, total = 0;
    const int kc = gg_uint_key(h0, "split.count", &count);
    if (kc == 0 || (kc == 1 && count == 1 && gg_uint_key(h0, "split.no", &no) != 1))
        return FP4_OK; /* one file */
    if (kc < 0 || count == 0 || count > 99999)
        return fp4_error(FP4_ERR_INPUT, "%s: split.count is not a part count (1 to 99999)",
                         s->file);
    if (gg_uint_key(h0, "split.no", &no) != 1 || no >= count)
        return fp4_error(FP4_ERR_INPUT, "%s: split.count %" PRIu64 " without a split.no below "
                         "it", s->file, count);
    if (no != 0) {
        unsigned n1 = 0, c1 = 0;
        const size_t stem = gg_split_name(s->file, &n1, &c1);
        if (stem)
            return fp4_error(FP4_ERR_INPUT, "%s: part %" PRIu64 " of a split model of %" PRIu64
                             ": name its first part, %.*s-00001-of-%05u.gguf", s->file, no + 1,
                             count, (int)stem, s->file, c1);
        return fp4_error(FP4_ERR_INPUT, "%s: part %" PRIu64 " of a split model of %" PRIu64
                         ": name its first part", s->file, no + 1, count);
    }
    const int kt = gg_uint_key(h0, "split.tensors.count", &total);
    char **paths = NULL;
    fp4_status st = count > 1 ? gg_split_paths(s->file, (unsigned)count, &paths) : FP4_OK;
    if (st == FP4_OK && count > 1) {
        gg_part *np = realloc(s->p, (size_t)count * sizeof *np);
        if (!np) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        else s->p = np;
    }
    /* a part that resolves (symlinks) outside the first part's directory tree is not read
     * unless --allow-external (SPEC §8: the rule for shards) */
    char *root = st == FP4_OK && count > 1 && !fp4_source_allow_external()
                     ? fp4_source_tree(s->file) : NULL;
    for (uint64_t k = 1; st == FP4_OK && k < count; k++) {
        gg_part *p = &s->p[k];
        if (root && fp4_source_outside_tree(paths[k - 1], root)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: split part %" PRIu64 " of %" PRIu64 ": %s: "
                           "resolves outside the model's directory %s (--allow-external reads "
                           "it)", s->file, k + 1, count, paths[k - 1], root);
            break;
        }
        st = gg_part_open(paths[k - 1], p);
        s->np++;
        uint64_t c2 = 0, n2 = 0;
        if (st != FP4_OK) {
            char *why = strdup(fp4_last_error()); /* the part's own message names its file */
            if (st != FP4_ERR_INTERNAL && why)
                st = fp4_error(FP4_ERR_INPUT, "%s: split part %" PRIu64 " of %" PRIu64 ": %s",
                               s->file, k + 1, count, why);
            free(why);
        } else {
            const int kc2 = gg_uint_key(&p->h, "split.count", &c2);
            const int kn2 = gg_uint_key(&p->h, "split.no", &n2);
            if (kc2 != 1 || kn2 != 1)
                st = fp4_error(FP4_ERR_INPUT, "%s: split part %" PRIu64 " of %" PRIu64 " (%s) "
                               "has no split.%s", s->file, k + 1, count, p->file,
                               kc2 != 1 ? "count" : "no");
            else if (c2 != count || n2 != k)
                st = fp4_error(FP4_ERR_INPUT, "%s: split part %" PRIu64 " of %" PRIu64 " (%s) "
                               "says split.no %" PRIu64 " of split.count %" PRIu64 ", expected %"
                               PRIu64 " of %" PRIu64, s->file, k + 1, count, p->file, n2, c2, k,
                               count);
        }
    }
    free(root);
    free_paths(paths, count - 1);
    if (st != FP4_OK) return st;
    char buf[24];
    uint64_t n = 0;
    for (int k = 0; k < s->np; k++) n += (uint64_t)s->p[k].h.n;
    if (kt != 1 || n != total)
        return fp4_error(FP4_ERR_INPUT, "%s: split.tensors.count %s, but the %" PRIu64 " parts "
                         "hold %" PRIu64 " tensors", s->file, kt == 1 ? fmt_u64(total, buf) :
                         "missing", count, n);
    return FP4_OK;
}

static bool gg_is_gguf_name(const char *n)
{
    const size_t k = strlen(n);
    return k > 5 && strcmp(n + k - 5, ".gguf") == 0;
}

/* A directory holding .gguf files (one holding safetensors or PyTorch files is theirs: those
 * formats' probes come first). */
static bool gg_probe_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) found = gg_is_gguf_name(e->d_name);
    closedir(d);
    return found;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The file an open of directory `dir` reads (*first, malloc'd): its one .gguf file, or the
 * first part of the one split model its .gguf files are the parts of. */
static fp4_status gg_dir_first(const char *dir, char **first)
{
    *first = NULL;
    DIR *d = opendir(dir);
    if (!d) return fp4_error(FP4_ERR_INPUT, "%s: cannot read the directory: %s", dir,
                             strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    fp4_status st = FP4_OK;
    for (struct dirent *e; st == FP4_OK && (e = readdir(d));) {
        if (!gg_is_gguf_name(e->d_name)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            char **a = realloc(names, cap * sizeof *a);
            if (!a) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                break;
            }
            names = a;
        }
        if (!(names[n] = strdup(e->d_name))) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        else n++;
    }
    closedir(d);
    if (st == FP4_OK && n == 0) st = fp4_error(FP4_ERR_INPUT, "%s: no .gguf file", dir);
    if (st == FP4_OK) {
        qsort(names, n, sizeof *names, cmp_str);
        /* one model: one file, or every file a part NAME-0000k-of-0000N.gguf of one NAME, N */
        unsigned no = 0, count = 0, no1 = 0, count1 = 0;
        const size_t stem = gg_split_name(names[0], &no1, &count1);
        bool one = n == 1;
        if (!one && stem && n <= count1) {
            one = true;
            for (size_t i = 1; one && i < n; i++)
                one = gg_split_name(names[i], &no, &count) == stem && count == count1 &&
                      strncmp(names[i], names[0], stem) == 0;
        }
        if (!one)
            st = fp4_error(FP4_ERR_INPUT, "%s: %zu .gguf files (%s, %s%s) that are not the parts "
                           "of one split model: name the file to read", dir, n, names[0],
                           names[1], n > 2 ? ", ..." : "");
        else {
            const size_t len = strlen(dir) + strlen(names[0]) + 2;
            if (!(*first = malloc(len))) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            else if (n == 1 && (!stem || count1 < 2))
                snprintf(*first, len, "%s/%s", dir, names[0]);
            else /* the first part, by name (its open says so when it is missing) */
                snprintf(*first, len, "%s/%.*s-00001-of-%05u.gguf", dir, (int)stem, names[0],
                         count1);
        }
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

static fp4_status gg_open_file(const char *file, void **impl);

/* A file, or a directory holding one model (gg_dir_first). */
static fp4_status gg_open(const char *path, void **impl)
{
    *impl = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) return gg_open_file(path, impl);
    char *first = NULL;
    FP4_TRY(gg_dir_first(path, &first));
    fp4_status st = gg_open_file(first, impl);
    free(first);
    return st;
}

static fp4_status gg_open_file(const char *file, void **impl)
{
    *impl = NULL;
    gg_src *s = calloc(1, sizeof *s);
    if (!s || !(s->file = strdup(file)) || !(s->p = calloc(1, sizeof *s->p))) {
        if (s) free(s->file);
        free(s);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    s->np = 1;
    fp4_status st = gg_part_open(file, &s->p[0]);
    if (st == FP4_OK) st = gg_open_split(s);
    if (st != FP4_OK) {
        gg_close(s);
        return st;
    }
    int64_t n = 0;
    for (int k = 0; k < s->np; k++) n += s->p[k].h.n;
    if (n > INT32_MAX || !(s->by_name = malloc(((size_t)n + 1) * sizeof *s->by_name))) {
        gg_close(s);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    for (int k = 0; k < s->np; k++)
        for (int i = 0; i < s->p[k].h.n; i++) s->by_name[s->n++] = (gg_ix){k, i};
    sort_s = s;
    qsort(s->by_name, (size_t)s->n, sizeof *s->by_name, cmp_ix);
    sort_s = NULL;
    for (int i = 1; i < s->n; i++) {
        const gg_ix a = s->by_name[i - 1], b = s->by_name[i];
        if (strcmp(gg_t(s, a)->name, gg_t(s, b)->name) == 0) {
            st = fp4_error(FP4_ERR_INPUT, "%s: tensor %s is stored twice (%s, %s)", s->file,
                           gg_t(s, b)->name, s->p[a.p].file, s->p[b.p].file);
            gg_close(s);
            return st;
        }
    }
    *impl = s;
    return FP4_OK;
}

static fp4_status gg_list(void *impl, char ***names, int *n)
{
    gg_src *s = impl;
    *names = calloc((size_t)s->n + 1, sizeof **names);
    if (!*names) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    int i = 0; /* in the files' order */
    for (int k = 0; k < s->np; k++)
        for (int j = 0; j < s->p[k].h.n; j++, i++) {
            if (!((*names)[i] = strdup(s->p[k].h.t[j].name))) {
                for (int f = 0; f < i; f++) free((*names)[f]);
                free(*names);
                *names = NULL;
                return fp4_error(FP4_ERR_INTERNAL, "out of memory");
            }
        }
    *n = s->n;
    return FP4_OK;
}

/* The tensor `name` and its part (*part), or NULL. */
static const fp4_gguf_tensor *gg_find(const gg_src *s, const char *name, const gg_part **part)
{
    int lo = 0, hi = s->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const fp4_gguf_tensor *t = gg_t(s, s->by_name[mid]);
        int c = strcmp(t->name, name);
        if (c == 0) {
            if (part) *part = &s->p[s->by_name[mid].p];
            return t;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static fp4_raw gg_raw(uint32_t type)
{
    switch (type) {
    case FP4_GGML_F32: return FP4_RAW_F32;
    case FP4_GGML_F16: return FP4_RAW_F16;
    case FP4_GGML_BF16: return FP4_RAW_BF16;
    case FP4_GGML_F64: return FP4_RAW_F64;
    case FP4_GGML_I8: return FP4_RAW_I8;
    case FP4_GGML_I16: return FP4_RAW_I16;
    case FP4_GGML_I32: return FP4_RAW_I32;
    case FP4_GGML_I64: return FP4_RAW_I64;
    default: return FP4_RAW_NONE;
    }
}

static bool gg_is_group(const gg_src *s, const char *name, const char *seps)
{
    size_t n = strlen(name);
    for (int i = 0; i < s->n; i++) {
        const char *t = gg_t(s, s->by_name[i])->name;
        if (n == 0 || (strncmp(t, name, n) == 0 && t[n] && strchr(seps, t[n]))) return true;
    }
    return false;
}

extern const fp4_source_ops fp4_source_gguf;

/* The row-major dims of t (ne reversed). */
static void gg_dims(const fp4_gguf_tensor *t, int64_t *dims)
{
    for (int i = 0; i < t->n_dims; i++) dims[i] = (int64_t)t->ne[t->n_dims - 1 - i];
}

static fp4_status gg_describe(void *impl, const char *name, fp4_tensor_desc *out,
                              fp4_name_kind *kind)
{
    gg_src *s = impl;
    memset(out, 0, sizeof *out);
    const gg_part *pt = NULL;
    const fp4_gguf_tensor *t = gg_find(s, name, &pt);
    if (!t) {
        if (gg_is_group(s, name, fp4_source_gguf.separators)) {
            *kind = FP4_NAME_GROUP;
            return fp4_error(FP4_ERR_INPUT, "%s: %s: is a group, not a dataset", s->file, name);
        }
        *kind = FP4_NAME_NONE;
        return fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor", s->file, name);
    }
    *kind = FP4_NAME_TENSOR;
    if (!(out->name = strdup(t->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    out->rank = t->n_dims;
    gg_dims(t, out->dims);
    out->nelems = t->nelems;
    const char *tn = fp4_ggml_type_name(t->type, NULL, NULL);
    const fp4_raw kt = gg_raw(t->type);
    const fp4_raw k = t->problem[0] ? FP4_RAW_NONE : kt;
    if (tn)
        snprintf(out->dtype, sizeof out->dtype, "%s", tn);
    else
        snprintf(out->dtype, sizeof out->dtype, "ggml type %" PRIu32, t->type);
    snprintf(out->byte_order, sizeof out->byte_order, "%s",
             kt != FP4_RAW_NONE && fp4_raw_size(kt) > 1 ? "le" : "");
    out->stored = fp4_raw_stored(k);
    out->numeric = kt != FP4_RAW_NONE;
    out->exact_fp32 = fp4_raw_exact(k);
    out->codec_available = true;
    out->logical_bytes = t->nbytes; /* blocks * block bytes: nelems * word size for the
                                       plain types; -1 on overflow or an unknown type */
    out->stored_bytes = t->nbytes;
    out->file_offset = t->nbytes >= 0 ? (int64_t)(pt->h.data_start + t->offset) : -1;
    if (s->np > 1) { /* the part holding it, as a sharded safetensors checkpoint names it */
        const char *base = strrchr(pt->file, '/');
        snprintf(out->part, sizeof out->part, "%s", base ? base + 1 : pt->file);
    }
    if (t->problem[0])
        snprintf(out->problem, sizeof out->problem, "%s", t->problem);
    else if (kt == FP4_RAW_NONE && t->type != FP4_GGML_MXFP4 && t->type != FP4_GGML_NVFP4)
        snprintf(out->problem, sizeof out->problem,
                 "ggml type %s is not read (only f32, f16, bf16, f64, integers, and mxfp4/nvfp4 "
                 "as already quantized)", out->dtype);
    return FP4_OK;
}

static fp4_status gg_read(void *impl, const fp4_tensor_desc *d, int dim, int64_t start,
                          int64_t count, bool raw, void *buf)
{
    gg_src *s = impl;
    const gg_part *pt = NULL;
    const fp4_gguf_tensor *t = gg_find(s, d->name, &pt);
    if (!t) return fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor", s->file, d->name);
    const fp4_raw k = gg_raw(t->type);
    if (t->problem[0])
        return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", s->file, d->name, t->problem);
    if (k == FP4_RAW_NONE)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: ggml type %s is not read as numbers", s->file,
                         d->name, fp4_ggml_type_name(t->type, NULL, NULL));
    int64_t dims[FP4_GGUF_MAX_DIMS];
    gg_dims(t, dims);
    FP4_TRY(fp4_raw_slab_check(s->file, d->name, t->n_dims, dims, dim, start, count));
    if (t->nelems == 0 || count == 0) return FP4_OK;
    if (!fp4_raw_slab_mapped(pt->map + pt->h.data_start + t->offset, k, false, t->n_dims, dims,
                             false, dim, start, count, raw, buf))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the file shrank while it was read (truncated)",
                         s->file, d->name);
    return FP4_OK;
}

static fp4_status gg_read_raw(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                              int64_t count, void *buf)
{
    return gg_read(impl, t, dim, start, count, true, buf);
}

static fp4_status gg_read_f32(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                              int64_t count, float *buf)
{
    return gg_read(impl, t, dim, start, count, false, buf);
}

static const void *gg_view(void *impl, const fp4_tensor_desc *d)
{
    gg_src *s = impl;
    const gg_part *pt = NULL;
    const fp4_gguf_tensor *t = gg_find(s, d->name, &pt);
    if (!t || t->problem[0] || fp4_raw_stored(gg_raw(t->type)) == FP4_STORED_OTHER) return NULL;
    const uint8_t *p = pt->map + pt->h.data_start + t->offset;
    /* a general.alignment below the word size may leave the words unaligned: no view then */
    return (uintptr_t)p % (uintptr_t)fp4_raw_size(gg_raw(t->type)) == 0 ? p : NULL;
}

static const void *gg_bytes(void *impl, const fp4_tensor_desc *d)
{
    gg_src *s = impl;
    const gg_part *pt = NULL;
    const fp4_gguf_tensor *t = gg_find(s, d->name, &pt);
    /* the parser checked the range of every tensor without a problem */
    if (!t || t->problem[0] || t->nbytes < 0) return NULL;
    return pt->map + pt->h.data_start + t->offset;
}

static fp4_status gg_metadata(void *impl, char ***keys, char ***vals, int *n)
{
    gg_src *s = impl;
    const fp4_gguf_header *h = &s->p[0].h; /* the first part's: the model's */
    *n = 0;
    *keys = calloc((size_t)h->nkv + 1, sizeof **keys);
    *vals = calloc((size_t)h->nkv + 1, sizeof **vals);
    bool ok = *keys && *vals;
    for (int i = 0; ok && i < h->nkv; i++) {
        (*keys)[i] = strdup(h->kv[i].key);
        (*vals)[i] = strdup(h->kv[i].text);
        *n = i + 1;
        ok = (*keys)[i] && (*vals)[i];
    }
    if (ok) return FP4_OK;
    fp4_source_metadata_free(*keys, *vals, *n);
    *keys = *vals = NULL;
    *n = 0;
    return fp4_error(FP4_ERR_INTERNAL, "out of memory");
}

/* The other parts of a split model whose first part is `path` (its header's split.count and
 * split.no, the parts' names from its own): what an open would read; the open checks them. */
static fp4_status gg_files(const char *path, char ***files, int *n)
{
    *files = NULL;
    *n = 0;
    unsigned no = 0, count = 0;
    if (!gg_split_name(path, &no, &count) || no != 1 || count < 2) return FP4_OK;
    gg_part p0;
    uint64_t c = 0, k = 0;
    const bool split = gg_part_open(path, &p0) == FP4_OK &&
                       gg_uint_key(&p0.h, "split.count", &c) == 1 && c == count &&
                       gg_uint_key(&p0.h, "split.no", &k) == 1 && k == 0;
    gg_part_close(&p0);
    fp4_error_clear(); /* a bad file: its open says what is wrong */
    if (!split) return FP4_OK;
    char **p = NULL;
    if (gg_split_paths(path, count, &p) != FP4_OK) {
        free_paths(p, count - 1);
        fp4_error_clear();
        return FP4_OK;
    }
    *files = p;
    *n = (int)count - 1;
    return FP4_OK;
}

const fp4_source_ops fp4_source_gguf = {
    .name = "gguf",
    .separators = "./",
    .rooted = false,
    .probe = gg_probe,
    .open = gg_open,
    .close = gg_close,
    .list = gg_list,
    .describe = gg_describe,
    .read_raw = gg_read_raw,
    .read_f32 = gg_read_f32,
    .view = gg_view,
    .bytes = gg_bytes,
    .metadata = gg_metadata,
    .files = gg_files,
    .probe_dir = gg_probe_dir,
};
