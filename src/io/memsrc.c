/* io/memsrc.c — the tensor source over caller memory (see memsrc.h): one tensor, its words
 * read in place along any strides. */
#include "io/memsrc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct memsrc {
    char *label, *name;
    fp4_stored stored;
    int rank;
    int64_t dims[FP4_MAX_RANK];
    int64_t strides[FP4_MAX_RANK]; /* in words */
    int64_t nelems;
    const unsigned char *data;
} memsrc;

static void mem_close(void *impl)
{
    memsrc *m = impl;
    if (!m) return;
    free(m->label);
    free(m->name);
    free(m);
}

static fp4_status mem_open(const char *file, void **impl)
{
    (void)impl;
    return fp4_error(FP4_ERR_USAGE, "%s: memory tensors are opened with fp4_source_open_memory",
                     file);
}

static fp4_status mem_list(void *impl, char ***names, int *n)
{
    memsrc *m = impl;
    *names = malloc(sizeof **names);
    if (!*names || !((*names)[0] = strdup(m->name))) {
        free(*names);
        *names = NULL;
        *n = 0;
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    *n = 1;
    return FP4_OK;
}

static const char *stored_name(fp4_stored s)
{
    return s == FP4_STORED_F16 ? "f16" : s == FP4_STORED_BF16 ? "bf16" : "f32";
}

static fp4_status mem_describe(void *impl, const char *name, fp4_tensor_desc *out,
                               fp4_name_kind *kind)
{
    memsrc *m = impl;
    memset(out, 0, sizeof *out);
    if (strcmp(name, m->name) != 0) {
        *kind = FP4_NAME_NONE;
        return fp4_error(FP4_ERR_INPUT, "%s: %s: no such dataset", m->label, name);
    }
    *kind = FP4_NAME_TENSOR;
    if (!(out->name = strdup(m->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    out->rank = m->rank;
    for (int d = 0; d < m->rank; d++) out->dims[d] = m->dims[d];
    out->nelems = m->nelems;
    snprintf(out->dtype, sizeof out->dtype, "%s", stored_name(m->stored));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    snprintf(out->byte_order, sizeof out->byte_order, "be");
#else
    snprintf(out->byte_order, sizeof out->byte_order, "le");
#endif
    out->stored = m->stored;
    out->numeric = true;
    out->exact_fp32 = true;
    out->codec_available = true;
    out->logical_bytes = m->nelems * fp4_stored_size(m->stored);
    out->stored_bytes = out->logical_bytes;
    out->file_offset = -1;
    return FP4_OK;
}

/* The slab [start, start+count) along dim in row-major order: an odometer over the slab's
 * indices, the last dimension copied as one run when its stride is 1. */
static fp4_status mem_read_raw(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                               int64_t count, void *buf)
{
    memsrc *m = impl;
    const size_t w = (size_t)fp4_stored_size(m->stored);
    unsigned char *out = buf;
    if (m->rank == 0) {
        if (dim != 0 || start != 0 || count != 1)
            return fp4_error(FP4_ERR_USAGE, "%s: %s: bad slab of a scalar", m->label, m->name);
        memcpy(out, m->data, w);
        return FP4_OK;
    }
    if (dim < 0 || dim >= m->rank || start < 0 || count < 0 || start > m->dims[dim] ||
        count > m->dims[dim] - start)
        return fp4_error(FP4_ERR_USAGE, "%s: %s: slab dim %d [%lld, +%lld) is outside the shape",
                         m->label, m->name, dim, (long long)start, (long long)count);
    int64_t lo[FP4_MAX_RANK], hi[FP4_MAX_RANK], idx[FP4_MAX_RANK];
    for (int d = 0; d < m->rank; d++) {
        lo[d] = d == dim ? start : 0;
        hi[d] = d == dim ? start + count : m->dims[d];
        if (hi[d] <= lo[d]) return FP4_OK; /* nothing to read */
        idx[d] = lo[d];
    }
    const int last = m->rank - 1;
    const int64_t run = hi[last] - lo[last], st = m->strides[last];
    for (;;) {
        int64_t off = 0;
        for (int d = 0; d < last; d++) off += idx[d] * m->strides[d];
        off += lo[last] * st;
        if (st == 1) {
            memcpy(out, m->data + off * (int64_t)w, (size_t)run * w);
            out += (size_t)run * w;
        } else {
            for (int64_t k = 0; k < run; k++, out += w)
                memcpy(out, m->data + (off + k * st) * (int64_t)w, w);
        }
        int d = last - 1;
        while (d >= 0 && ++idx[d] == hi[d]) idx[d] = lo[d], d--;
        if (d < 0) break;
    }
    return FP4_OK;
}

/* Names as the caller spells them: "/a/b" rooted (as HDF5's), "a.b" not (as safetensors'). */
#define MEM_OPS(ROOTED)                                                                        \
    {.name = "memory", .separators = "/", .rooted = ROOTED, .open = mem_open,                 \
     .close = mem_close, .list = mem_list, .describe = mem_describe, .read_raw = mem_read_raw}
static const fp4_source_ops fp4_source_memory = MEM_OPS(false);
static const fp4_source_ops fp4_source_memory_rooted = MEM_OPS(true);

fp4_status fp4_memory_view_check(const char *label, const char *name, fp4_stored stored,
                                 int rank, const int64_t *dims, const int64_t *strides,
                                 const void *data, int64_t *nelems)
{
    const char *nm = name ? name : "tensor";
    if (stored != FP4_STORED_F32 && stored != FP4_STORED_F16 && stored != FP4_STORED_BF16)
        return fp4_error(FP4_ERR_USAGE, "%s: %s: dtype must be f32, f16 or bf16", label, nm);
    if (rank < 0 || rank > FP4_MAX_RANK)
        return fp4_error(FP4_ERR_USAGE, "%s: %s: rank %d is outside 0..%d", label, nm, rank,
                         FP4_MAX_RANK);
    if (rank > 0 && !dims) return fp4_error(FP4_ERR_USAGE, "%s: %s: no shape", label, nm);
    const int64_t w = fp4_stored_size(stored);
    /* the element count and the C-order strides (the product of the non-zero dimensions) at 8
     * bytes an element (an fp64 copy) within int64 */
    int64_t n = 1, nz = 8;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0)
            return fp4_error(FP4_ERR_USAGE, "%s: %s: dimension %d is negative (%lld)", label, nm,
                             d, (long long)dims[d]);
        if (dims[d] && __builtin_mul_overflow(nz, dims[d], &nz))
            return fp4_error(FP4_ERR_USAGE, "%s: %s: size overflows 64 bits (dimension %d: "
                                            "%lld)",
                             label, nm, d, (long long)dims[d]);
        n *= dims[d]; /* at most nz / w */
    }
    if (n > 0 && !data) return fp4_error(FP4_ERR_USAGE, "%s: %s: data is NULL", label, nm);
    /* given strides: every byte offset the view reaches, sum_d (i_d * strides[d]) * w, within
     * int64 (the reads compute them so; an empty view reaches none) */
    if (strides && n > 0) {
        int64_t lo = 0, hi = 0, e, bl, bh;
        for (int d = 0; d < rank; d++) {
            if (__builtin_mul_overflow(dims[d] - 1, strides[d], &e) ||
                __builtin_add_overflow(e < 0 ? lo : hi, e, e < 0 ? &lo : &hi))
                return fp4_error(FP4_ERR_USAGE, "%s: %s: strides reach beyond 64-bit offsets "
                                                "(dimension %d: %lld x stride %lld)",
                                 label, nm, d, (long long)dims[d], (long long)strides[d]);
        }
        if (__builtin_mul_overflow(lo, w, &bl) || __builtin_mul_overflow(hi, w, &bh) ||
            __builtin_add_overflow(bh, w, &bh))
            return fp4_error(FP4_ERR_USAGE, "%s: %s: strides reach beyond 64-bit byte offsets",
                             label, nm);
    }
    if (nelems) *nelems = n;
    return FP4_OK;
}

fp4_status fp4_source_open_memory(const char *label, const char *name, fp4_stored stored,
                                  int rank, const int64_t *dims, const int64_t *strides,
                                  const void *data, fp4_source **out)
{
    *out = NULL;
    int64_t n = 0;
    fp4_status vs = fp4_memory_view_check(label, name, stored, rank, dims, strides, data, &n);
    if (vs != FP4_OK) return vs;
    memsrc *m = calloc(1, sizeof *m);
    const char *nm = name ? name : "";
    const bool rooted = nm[0] == '/';
    while (nm[0] == '/' && nm[1] == '/') nm++;
    size_t len = strlen(nm);
    while (len > (rooted ? 1u : 0u) && nm[len - 1] == '/') len--;
    if (rooted && len == 1) nm = "/tensor", len = 7;
    if (m) {
        m->label = strdup(label);
        m->name = len ? strndup(nm, len) : strdup("tensor");
    }
    if (!m || !m->label || !m->name) {
        mem_close(m);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    m->stored = stored;
    m->rank = rank;
    m->nelems = n;
    m->data = data;
    int64_t step = 1;
    for (int d = rank - 1; d >= 0; d--) {
        m->dims[d] = dims[d];
        m->strides[d] = strides ? strides[d] : step;
        step *= dims[d] ? dims[d] : 1; /* within int64: fp4_memory_view_check */
    }
    fp4_status st =
        fp4_source_wrap(rooted ? &fp4_source_memory_rooted : &fp4_source_memory, m, label, out);
    if (st != FP4_OK) mem_close(m);
    return st;
}
