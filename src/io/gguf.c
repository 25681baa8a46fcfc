/* io/gguf.c — the GGUF tensor source (llama.cpp / ggml files, SPEC §8): one .gguf file, mapped
 * read-only; the header parsed by io/gguf_parse.c from a copy taken under io/mapguard.h.
 * Shapes are reported row-major (ggml's ne reversed: ne[0], the contiguous dimension, last),
 * as every other source reports them. F32, F16, BF16, F64 and the integer types are read as
 * numbers; MXFP4 (type 39) and NVFP4 (type 40) are described as not numeric and read as
 * already-quantized tensors by io/quantized.c (through `bytes`); every other ggml type (Q4_0,
 * Q8_0, the K- and I-quants, ...) is described with its type name and a problem saying it is
 * not read. */
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

typedef struct gg_src {
    char *file;
    const uint8_t *map;
    uint64_t size;
    fp4_gguf_header h;
    int *by_name; /* tensor indices sorted by name */
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

static void gg_close(void *impl)
{
    gg_src *s = impl;
    if (!s) return;
    if (s->map) munmap((void *)s->map, (size_t)s->size);
    fp4_gguf_header_free(&s->h);
    free(s->by_name);
    free(s->file);
    free(s);
}

static const fp4_gguf_header *sort_h; /* qsort context (open runs on one thread at a time) */

static int cmp_ix(const void *a, const void *b)
{
    return strcmp(sort_h->t[*(const int *)a].name, sort_h->t[*(const int *)b].name);
}

static fp4_status gg_open(const char *file, void **impl)
{
    *impl = NULL;
    gg_src *s = calloc(1, sizeof *s);
    if (!s || !(s->file = strdup(file))) {
        free(s);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    struct stat sb;
    const char *why;
    int fd = fp4_open_regular(file, &sb, &why);
    if (fd < 0) {
        gg_close(s);
        return fp4_error(FP4_ERR_INPUT, "%s: %s", file, why);
    }
    s->size = (uint64_t)sb.st_size;
    if (s->size < 24) {
        close(fd);
        fp4_status st = fp4_error(FP4_ERR_INPUT, "%s: %" PRIu64 " bytes: too short for a GGUF "
                                  "header", file, s->size);
        gg_close(s);
        return st;
    }
    void *m = mmap(NULL, (size_t)s->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        fp4_status st = fp4_error(FP4_ERR_INPUT, "%s: cannot map: %s", file, strerror(errno));
        gg_close(s);
        return st;
    }
    s->map = m;
    /* the header copied out of the mapping under the guard (the file may shrink meanwhile),
     * more of it each time the parse needs more */
    fp4_status st = FP4_ERR_INPUT;
    for (uint64_t n = GG_FIRST_COPY;; n *= 2) {
        if (n > s->size) n = s->size;
        gg_copy c = {s->map, malloc((size_t)n), n};
        if (!c.out) {
            st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", file);
            break;
        }
        if (!fp4_mapguard_call(gg_copy_run, &c)) {
            free(c.out);
            st = fp4_error(FP4_ERR_INPUT, "%s: the file shrank while it was read (truncated)",
                           file);
            break;
        }
        bool more = false;
        st = fp4_gguf_parse(file, c.out, n, s->size, &s->h, &more);
        free(c.out);
        if (!more || n == s->size) break;
    }
    if (st != FP4_OK) {
        gg_close(s);
        return st;
    }
    if (!(s->by_name = malloc(((size_t)s->h.n + 1) * sizeof *s->by_name))) {
        gg_close(s);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    for (int i = 0; i < s->h.n; i++) s->by_name[i] = i;
    sort_h = &s->h;
    qsort(s->by_name, (size_t)s->h.n, sizeof *s->by_name, cmp_ix);
    sort_h = NULL;
    *impl = s;
    return FP4_OK;
}

static fp4_status gg_list(void *impl, char ***names, int *n)
{
    gg_src *s = impl;
    *names = calloc((size_t)s->h.n + 1, sizeof **names);
    if (!*names) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < s->h.n; i++) {
        if (!((*names)[i] = strdup(s->h.t[i].name))) {
            for (int k = 0; k < i; k++) free((*names)[k]);
            free(*names);
            *names = NULL;
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        }
    }
    *n = s->h.n;
    return FP4_OK;
}

static const fp4_gguf_tensor *gg_find(const gg_src *s, const char *name)
{
    int lo = 0, hi = s->h.n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const fp4_gguf_tensor *t = &s->h.t[s->by_name[mid]];
        int c = strcmp(t->name, name);
        if (c == 0) return t;
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
    for (int i = 0; i < s->h.n; i++) {
        const char *t = s->h.t[i].name;
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
    const fp4_gguf_tensor *t = gg_find(s, name);
    if (!t) {
        if (gg_is_group(s, name, fp4_source_gguf.separators)) {
            *kind = FP4_NAME_GROUP;
            return fp4_error(FP4_ERR_INPUT, "%s: %s: is a group, not a dataset", s->file, name);
        }
        *kind = FP4_NAME_NONE;
        return fp4_error(FP4_ERR_INPUT, "%s: %s: no such dataset", s->file, name);
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
    out->file_offset = t->nbytes >= 0 ? (int64_t)(s->h.data_start + t->offset) : -1;
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
    const fp4_gguf_tensor *t = gg_find(s, d->name);
    if (!t) return fp4_error(FP4_ERR_INPUT, "%s: %s: no such dataset", s->file, d->name);
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
    if (!fp4_raw_slab_mapped(s->map + s->h.data_start + t->offset, k, false, t->n_dims, dims,
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
    const fp4_gguf_tensor *t = gg_find(s, d->name);
    if (!t || t->problem[0] || fp4_raw_stored(gg_raw(t->type)) == FP4_STORED_OTHER) return NULL;
    const uint8_t *p = s->map + s->h.data_start + t->offset;
    /* a general.alignment below the word size may leave the words unaligned: no view then */
    return (uintptr_t)p % (uintptr_t)fp4_raw_size(gg_raw(t->type)) == 0 ? p : NULL;
}

static const void *gg_bytes(void *impl, const fp4_tensor_desc *d)
{
    gg_src *s = impl;
    const fp4_gguf_tensor *t = gg_find(s, d->name);
    /* the parser checked the range of every tensor without a problem */
    if (!t || t->problem[0] || t->nbytes < 0) return NULL;
    return s->map + s->h.data_start + t->offset;
}

static fp4_status gg_metadata(void *impl, char ***keys, char ***vals, int *n)
{
    gg_src *s = impl;
    *n = 0;
    *keys = calloc((size_t)s->h.nkv + 1, sizeof **keys);
    *vals = calloc((size_t)s->h.nkv + 1, sizeof **vals);
    bool ok = *keys && *vals;
    for (int i = 0; ok && i < s->h.nkv; i++) {
        (*keys)[i] = strdup(s->h.kv[i].key);
        (*vals)[i] = strdup(s->h.kv[i].text);
        *n = i + 1;
        ok = (*keys)[i] && (*vals)[i];
    }
    if (ok) return FP4_OK;
    fp4_source_metadata_free(*keys, *vals, *n);
    *keys = *vals = NULL;
    *n = 0;
    return fp4_error(FP4_ERR_INTERNAL, "out of memory");
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
};
