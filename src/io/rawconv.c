/* rawconv.c — stored words to fp32 for the zero-copy sources: byte loads (no alignment
 * assumed), bit constructions for the narrow floats (exact), C conversions for the rest;
 * large slabs in pieces on a few threads. */
#include "io/rawconv.h"

#include <string.h>

#include "io/mapguard.h"
#include "io/pario.h"
#include "io/widen_f8.h"

const char *fp4_raw_name(fp4_raw k)
{
    static const char *const n[FP4_RAW_COUNT] = {
        [FP4_RAW_F16] = "f16", [FP4_RAW_BF16] = "bf16", [FP4_RAW_F32] = "f32",
        [FP4_RAW_F64] = "f64", [FP4_RAW_I8] = "i8",     [FP4_RAW_U8] = "u8",
        [FP4_RAW_I16] = "i16", [FP4_RAW_U16] = "u16",   [FP4_RAW_I32] = "i32",
        [FP4_RAW_U32] = "u32", [FP4_RAW_I64] = "i64",   [FP4_RAW_U64] = "u64",
        [FP4_RAW_F8_E4M3] = "f8_e4m3", [FP4_RAW_F8_E5M2] = "f8_e5m2"};
    return k > FP4_RAW_NONE && k < FP4_RAW_COUNT ? n[k] : "";
}

fp4_stored fp4_raw_stored(fp4_raw k)
{
    switch (k) {
    case FP4_RAW_F16: return FP4_STORED_F16;
    case FP4_RAW_BF16: return FP4_STORED_BF16;
    case FP4_RAW_F32: return FP4_STORED_F32;
    case FP4_RAW_F64: return FP4_STORED_F64;
    case FP4_RAW_I8: return FP4_STORED_I8;
    case FP4_RAW_U8: return FP4_STORED_U8;
    case FP4_RAW_I16: return FP4_STORED_I16;
    case FP4_RAW_U16: return FP4_STORED_U16;
    case FP4_RAW_I32: return FP4_STORED_I32;
    case FP4_RAW_U32: return FP4_STORED_U32;
    case FP4_RAW_I64: return FP4_STORED_I64;
    case FP4_RAW_U64: return FP4_STORED_U64;
    default: return FP4_STORED_OTHER; /* F8: widened by read_f32 */
    }
}

fp4_status fp4_raw_slab_check(const char *file, const char *name, int rank, const int64_t *dims,
                              int dim, int64_t start, int64_t count)
{
    int64_t ext = rank == 0 ? 1 : dims[dim >= 0 && dim < rank ? dim : 0];
    if (dim < 0 || (dim >= rank && !(rank == 0 && dim == 0)) || start < 0 || count < 0 ||
        start > ext || count > ext - start)
        return fp4_error(FP4_ERR_USAGE, "%s: %s: slab [%lld, +%lld) along dimension %d is out "
                         "of range", file, name, (long long)start, (long long)count, dim);
    return FP4_OK;
}

int fp4_raw_size(fp4_raw k)
{
    switch (k) {
    case FP4_RAW_I8: case FP4_RAW_U8: case FP4_RAW_F8_E4M3: case FP4_RAW_F8_E5M2: return 1;
    case FP4_RAW_F16: case FP4_RAW_BF16: case FP4_RAW_I16: case FP4_RAW_U16: return 2;
    case FP4_RAW_F32: case FP4_RAW_I32: case FP4_RAW_U32: return 4;
    case FP4_RAW_F64: case FP4_RAW_I64: case FP4_RAW_U64: return 8;
    default: return 0;
    }
}

bool fp4_raw_exact(fp4_raw k)
{
    return k != FP4_RAW_NONE && k != FP4_RAW_F64 && k != FP4_RAW_I32 && k != FP4_RAW_U32 &&
           k != FP4_RAW_I64 && k != FP4_RAW_U64;
}

static uint64_t load(const uint8_t *p, int size, bool be)
{
    uint64_t v = 0;
    if (be)
        for (int i = 0; i < size; i++) v = (v << 8) | p[i];
    else
        for (int i = size; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float f16_to_f32(uint32_t h)
{
    uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3FFu;
    if (e == 31) return bits_f32(s | 0x7F800000u | (m << 13));
    if (e == 0) { /* m * 2^-24, exact */
        float v = (float)m * 0x1p-24f;
        return s ? -v : v;
    }
    return bits_f32(s | ((e + 112u) << 23) | (m << 13));
}

void fp4_raw_to_f32(fp4_raw k, bool big_endian, const uint8_t *src, int64_t stride, int64_t n,
                    float *dst)
{
    const int size = fp4_raw_size(k);
    const bool be = big_endian && size > 1;
    if (k == FP4_RAW_F32 && !be && stride == 4) {
        memcpy(dst, src, (size_t)n * 4);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const uint64_t w = load(src + i * stride, size, be);
        float v;
        switch (k) {
        case FP4_RAW_F16: v = f16_to_f32((uint32_t)w); break;
        case FP4_RAW_BF16: v = bits_f32((uint32_t)w << 16); break;
        case FP4_RAW_F32: v = bits_f32((uint32_t)w); break;
        case FP4_RAW_F64: {
            double d;
            memcpy(&d, &w, sizeof d);
            v = (float)d;
            break;
        }
        case FP4_RAW_I8: v = (float)(int8_t)(uint8_t)w; break;
        case FP4_RAW_U8: v = (float)(uint8_t)w; break;
        case FP4_RAW_I16: v = (float)(int16_t)(uint16_t)w; break;
        case FP4_RAW_U16: v = (float)(uint16_t)w; break;
        case FP4_RAW_I32: v = (float)(int32_t)(uint32_t)w; break;
        case FP4_RAW_U32: v = (float)(uint32_t)w; break;
        case FP4_RAW_I64: v = (float)(int64_t)w; break;
        case FP4_RAW_U64: v = (float)w; break;
        case FP4_RAW_F8_E4M3: v = fp4_f8e4m3_to_f32((uint8_t)w); break;
        case FP4_RAW_F8_E5M2: v = fp4_f8e5m2_to_f32((uint8_t)w); break;
        default: v = 0.0f; break;
        }
        dst[i] = v;
    }
}

/* n words at src (stride in bytes) into dst as host-order words or as fp32. */
static void run_out(fp4_raw k, bool be, const uint8_t *src, int64_t stride, int64_t n, bool raw,
                    uint8_t *dst)
{
    const int size = fp4_raw_size(k);
    if (!raw) {
        fp4_raw_to_f32(k, be, src, stride, n, (float *)(void *)dst);
        return;
    }
    if (!be && stride == size) {
        memcpy(dst, src, (size_t)(n * size));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        for (int b = 0; b < size; b++)
            dst[i * size + b] = src[i * stride + (be && size > 1 ? size - 1 - b : b)];
}

/* A C-order slab in pieces: piece q is part of run q / per. */
typedef struct slab_job {
    fp4_raw k;
    bool be, raw;
    const uint8_t *base;
    int size;
    int64_t osize, run, inner, extent, start, pe, per;
    uint8_t *out;
    bool guarded; /* each piece under its own fp4_mapguard_call (it may run on a pool thread) */
    int faulted;  /* a guarded piece touched a page the file no longer holds */
} slab_job;

typedef struct piece_args {
    const slab_job *J;
    int64_t q;
} piece_args;

static void slab_piece_run(void *ctx)
{
    const piece_args *a = ctx;
    const slab_job *J = a->J;
    const int64_t o = a->q / J->per, j = (a->q % J->per) * J->pe;
    const int64_t m = J->run - j < J->pe ? J->run - j : J->pe;
    run_out(J->k, J->be, J->base + ((o * J->extent + J->start) * J->inner + j) * J->size, J->size,
            m, J->raw, J->out + (o * J->run + j) * J->osize);
}

static void slab_piece(void *ctx, int64_t q)
{
    slab_job *J = ctx;
    piece_args a = {J, q};
    if (!J->guarded) slab_piece_run(&a);
    else if (!fp4_mapguard_call(slab_piece_run, &a))
        __atomic_store_n(&J->faulted, 1, __ATOMIC_RELAXED);
}

static void raw_slab(const uint8_t *base, fp4_raw k, bool big_endian, int rank,
                     const int64_t *dims, bool fortran, int dim, int64_t start, int64_t count,
                     bool raw, void *buf, bool guarded, int *faulted)
{
    const int size = fp4_raw_size(k);
    const int64_t osize = raw ? size : (int64_t)sizeof(float);
    uint8_t *out = buf;
    if (rank == 0) {
        run_out(k, big_endian, base, size, 1, raw, out);
        return;
    }
    if (!fortran || rank == 1) {
        int64_t outer = 1, inner = 1;
        for (int j = 0; j < dim; j++) outer *= dims[j];
        for (int j = dim + 1; j < rank; j++) inner *= dims[j];
        const int64_t run = count * inner;
        const int nth = fp4_pario_threads(outer * run * osize);
        if (nth <= 1) {
            for (int64_t o = 0; o < outer; o++)
                run_out(k, big_endian, base + ((o * dims[dim] + start) * inner) * size, size,
                        run, raw, out + o * run * osize);
            return;
        }
        /* large: in pieces on a few threads (io/pario.c), each its own part of buf */
        slab_job J = {.k = k, .be = big_endian, .base = base, .size = size, .osize = osize,
                      .raw = raw, .out = out, .run = run, .inner = inner, .extent = dims[dim],
                      .start = start, .pe = FP4_PARIO_PIECE / osize, .guarded = guarded};
        J.per = (run + J.pe - 1) / J.pe;
        fp4_pario_for(slab_piece, &J, outer * J.per, nth);
        if (__atomic_load_n(&J.faulted, __ATOMIC_RELAXED)) *faulted = 1;
        return;
    }
    /* Column-major: element (i0..ir-1) at sum i_j * stride_j, stride_0 = 1. Rows of the slab
     * (the last dimension) are strided runs; an odometer walks the others. */
    int64_t stride[8], idx[8] = {0}, ext[8];
    stride[0] = 1;
    for (int j = 1; j < rank; j++) stride[j] = stride[j - 1] * dims[j - 1];
    for (int j = 0; j < rank; j++) ext[j] = j == dim ? count : dims[j];
    const int last = rank - 1;
    for (int j = 0; j < rank; j++)
        if (ext[j] == 0) return;
    for (;;) {
        int64_t off = 0;
        for (int j = 0; j < last; j++) off += (idx[j] + (j == dim ? start : 0)) * stride[j];
        off += (last == dim ? start : 0) * stride[last];
        run_out(k, big_endian, base + off * size, stride[last] * size, ext[last], raw, out);
        out += ext[last] * osize;
        int j = last - 1;
        while (j >= 0 && ++idx[j] == ext[j]) idx[j--] = 0;
        if (j < 0) break;
    }
}

void fp4_raw_slab(const uint8_t *base, fp4_raw k, bool big_endian, int rank,
                  const int64_t *dims, bool fortran, int dim, int64_t start, int64_t count,
                  bool raw, void *buf)
{
    int faulted = 0;
    raw_slab(base, k, big_endian, rank, dims, fortran, dim, start, count, raw, buf, false,
             &faulted);
}

typedef struct mapped_args {
    const uint8_t *base;
    fp4_raw k;
    bool be, fortran, raw;
    int rank, dim;
    const int64_t *dims;
    int64_t start, count;
    void *buf;
    int faulted;
} mapped_args;

static void raw_slab_mapped(void *ctx)
{
    mapped_args *a = ctx;
    raw_slab(a->base, a->k, a->be, a->rank, a->dims, a->fortran, a->dim, a->start, a->count,
             a->raw, a->buf, true, &a->faulted);
}

bool fp4_raw_slab_mapped(const uint8_t *base, fp4_raw k, bool big_endian, int rank,
                         const int64_t *dims, bool fortran, int dim, int64_t start, int64_t count,
                         bool raw, void *buf)
{
    mapped_args a = {.base = base, .k = k, .be = big_endian, .fortran = fortran, .raw = raw,
                     .rank = rank, .dim = dim, .dims = dims, .start = start, .count = count,
                     .buf = buf};
    /* the single-thread paths under this guard; pool pieces under their own */
    return fp4_mapguard_call(raw_slab_mapped, &a) && !a.faulted;
}
