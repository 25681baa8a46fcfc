/* codec.c — stored chunk decoding: inflate through libdeflate, HDF5's unshuffle, HDF5's
 * Fletcher-32, and the reverse filter pipeline with its skip mask. No I/O, no HDF5 calls. */
#include "io/codec.h"

#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct fp4_codec {
    struct libdeflate_decompressor *d;
    unsigned char *scratch[2];
    size_t cap[2];
};

bool fp4_pipeline_supported(const fp4_pipeline *p)
{
    if (!p || p->n < 0 || p->n > FP4_CODEC_MAX_FILTERS) return false;
    for (int i = 0; i < p->n; i++) {
        switch (p->f[i].id) {
        case FP4_FILTER_DEFLATE:
        case FP4_FILTER_FLETCHER32: break;
        case FP4_FILTER_SHUFFLE:
            if (p->f[i].param < 1) return false;
            break;
        default: return false;
        }
    }
    return true;
}

fp4_status fp4_codec_new(fp4_codec **out)
{
    *out = NULL;
    fp4_codec *c = calloc(1, sizeof *c);
    if (!c) return fp4_error(FP4_ERR_INTERNAL, "out of memory (chunk decoder)");
    c->d = libdeflate_alloc_decompressor();
    if (!c->d) {
        free(c);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory (chunk decoder)");
    }
    *out = c;
    return FP4_OK;
}

void fp4_codec_free(fp4_codec *c)
{
    if (!c) return;
    libdeflate_free_decompressor(c->d);
    free(c->scratch[0]);
    free(c->scratch[1]);
    free(c);
}

size_t fp4_codec_scratch_bytes(const fp4_codec *c) { return c ? c->cap[0] + c->cap[1] : 0; }

uint32_t fp4_fletcher32(const void *data_, size_t n)
{
    /* The same folds at the same points as HDF5 (every 360 words): the 32-bit sums never
     * overflow between folds, and the result's representation (0xffff vs 0) is HDF5's. */
    const unsigned char *data = data_;
    size_t len = n / 2;
    uint32_t sum1 = 0, sum2 = 0;
    while (len) {
        size_t tlen = len > 360 ? 360 : len;
        len -= tlen;
        do {
            sum1 += ((uint32_t)data[0] << 8) | (uint32_t)data[1];
            data += 2;
            sum2 += sum1;
        } while (--tlen);
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if (n % 2) {
        sum1 += (uint32_t)data[0] << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    return (sum2 << 16) | sum1;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FP4_CODEC_LE 1
#else
#define FP4_CODEC_LE 0
#endif

void fp4_unshuffle(const void *in_, void *out_, size_t n, size_t k)
{
    const unsigned char *in = in_;
    unsigned char *out = out_;
    size_t m = k ? n / k : 0;
    if (k <= 1 || m <= 1) {
        if (n) memcpy(out, in, n);
        return;
    }
    if (k == 2 && FP4_CODEC_LE) {
        const unsigned char *b0 = in, *b1 = in + m;
        size_t i = 0;
#if defined(__SSE2__)
        for (; i + 16 <= m; i += 16) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)(b0 + i));
            __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(b1 + i));
            _mm_storeu_si128((__m128i *)(void *)(out + 2 * i), _mm_unpacklo_epi8(x0, x1));
            _mm_storeu_si128((__m128i *)(void *)(out + 2 * i + 16), _mm_unpackhi_epi8(x0, x1));
        }
#endif
        for (; i < m; i++) {
            uint16_t w = (uint16_t)(b0[i] | (unsigned)b1[i] << 8);
            memcpy(out + 2 * i, &w, 2);
        }
    } else if (k == 4 && FP4_CODEC_LE) {
        const unsigned char *b0 = in, *b1 = in + m, *b2 = in + 2 * m, *b3 = in + 3 * m;
        size_t i = 0;
#if defined(__SSE2__)
        for (; i + 16 <= m; i += 16) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)(b0 + i));
            __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(b1 + i));
            __m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(b2 + i));
            __m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(b3 + i));
            __m128i lo01 = _mm_unpacklo_epi8(x0, x1), hi01 = _mm_unpackhi_epi8(x0, x1);
            __m128i lo23 = _mm_unpacklo_epi8(x2, x3), hi23 = _mm_unpackhi_epi8(x2, x3);
            unsigned char *o = out + 4 * i;
            _mm_storeu_si128((__m128i *)(void *)o, _mm_unpacklo_epi16(lo01, lo23));
            _mm_storeu_si128((__m128i *)(void *)(o + 16), _mm_unpackhi_epi16(lo01, lo23));
            _mm_storeu_si128((__m128i *)(void *)(o + 32), _mm_unpacklo_epi16(hi01, hi23));
            _mm_storeu_si128((__m128i *)(void *)(o + 48), _mm_unpackhi_epi16(hi01, hi23));
        }
#endif
        for (; i < m; i++) {
            uint32_t w = (uint32_t)b0[i] | (uint32_t)b1[i] << 8 | (uint32_t)b2[i] << 16 |
                         (uint32_t)b3[i] << 24;
            memcpy(out + 4 * i, &w, 4);
        }
    } else {
        /* Element blocks of 4096 keep the k planes' current lines in cache. */
        for (size_t i0 = 0; i0 < m; i0 += 4096) {
            size_t i1 = m - i0 < 4096 ? m : i0 + 4096;
            for (size_t j = 0; j < k; j++) {
                const unsigned char *src = in + j * m;
                for (size_t i = i0; i < i1; i++) out[i * k + j] = src[i];
            }
        }
    }
    size_t left = n - m * k;
    if (left) memcpy(out + m * k, in + m * k, left);
}

void fp4_shuffle(const void *in_, void *out_, size_t n, size_t k)
{
    const unsigned char *in = in_;
    unsigned char *out = out_;
    size_t m = k ? n / k : 0;
    if (k <= 1 || m <= 1) {
        if (n) memcpy(out, in, n);
        return;
    }
    for (size_t j = 0; j < k; j++)
        for (size_t i = 0; i < m; i++) out[j * m + i] = in[i * k + j];
    size_t left = n - m * k;
    if (left) memcpy(out + m * k, in + m * k, left);
}

fp4_status fp4_inflate(fp4_codec *c, const void *in, size_t in_n, void *out, size_t out_n,
                       const char *where)
{
    size_t got = 0;
    enum libdeflate_result r = libdeflate_zlib_decompress(c->d, in, in_n, out, out_n, &got);
    switch (r) {
    case LIBDEFLATE_SUCCESS:
        if (got != out_n)
            return fp4_error(FP4_ERR_INPUT,
                             "%s: deflate data decodes to %zu bytes, the chunk holds %zu",
                             where, got, out_n);
        return FP4_OK;
    case LIBDEFLATE_INSUFFICIENT_SPACE:
        return fp4_error(FP4_ERR_INPUT,
                         "%s: deflate data decodes to more than the chunk's %zu bytes", where,
                         out_n);
    default:
        return fp4_error(FP4_ERR_INPUT,
                         "%s: deflate data is corrupt or truncated (%zu stored bytes)", where,
                         in_n);
    }
}

/* A scratch buffer of at least n bytes other than `avoid` (the buffer being read). */
static unsigned char *scratch_get(fp4_codec *c, size_t n, const void *avoid)
{
    int i = c->scratch[0] && (const void *)c->scratch[0] == avoid ? 1 : 0;
    if (c->cap[i] < n) {
        size_t want = n < 4096 ? 4096 : n;
        unsigned char *p = realloc(c->scratch[i], want);
        if (!p) return NULL;
        c->scratch[i] = p;
        c->cap[i] = want;
    }
    return c->scratch[i];
}

fp4_status fp4_chunk_decode(fp4_codec *c, const fp4_pipeline *p, uint32_t filter_mask,
                            const void *in, size_t in_n, void *out, size_t out_n,
                            const char *where)
{
    if (!p || p->n < 0 || p->n > FP4_CODEC_MAX_FILTERS)
        return fp4_error(FP4_ERR_INPUT, "%s: filter pipeline of %d filters", where,
                         p ? p->n : -1);
    bool active[FP4_CODEC_MAX_FILTERS];
    /* size_out[i]: the size filter i's decoding must produce. Only Fletcher-32 changes the
     * size other than deflate: it appended 4 bytes when writing. Sizes are known from the end:
     * the last decoding step produces out_n. */
    size_t size_out[FP4_CODEC_MAX_FILTERS];
    int last_transform = -1; /* pipeline index of the last transforming decode step */
    size_t sz = out_n;
    for (int i = 0; i < p->n; i++) {
        active[i] = !(i < 32 && (filter_mask >> i) & 1u);
        size_out[i] = sz;
        if (!active[i]) continue;
        switch (p->f[i].id) {
        case FP4_FILTER_FLETCHER32:
            if (sz > SIZE_MAX - 4)
                return fp4_error(FP4_ERR_INPUT, "%s: chunk size overflows", where);
            sz += 4;
            break;
        case FP4_FILTER_DEFLATE:
        case FP4_FILTER_SHUFFLE:
            if (last_transform < 0) last_transform = i;
            break;
        default:
            return fp4_error(FP4_ERR_INPUT, "%s: filter %d is not decoded here", where,
                             p->f[i].id);
        }
    }
    /* Decoding goes from filter n-1 down to 0; the last transforming step is the lowest index
     * that transforms (last_transform was set at the first, i.e. lowest, such index). */
    const unsigned char *cur = in;
    size_t cur_n = in_n;
    for (int i = p->n - 1; i >= 0; i--) {
        if (!active[i]) continue;
        const fp4_filter *f = &p->f[i];
        unsigned char *dst = NULL;
        size_t dst_n = f->id == FP4_FILTER_DEFLATE ? size_out[i] : cur_n;
        if (f->id != FP4_FILTER_FLETCHER32) {
            if (i == last_transform && dst_n <= out_n && (const void *)cur != out)
                dst = out;
            else if (!(dst = scratch_get(c, dst_n, cur)))
                return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory (%zu bytes of scratch)",
                                 where, dst_n);
        }
        switch (f->id) {
        case FP4_FILTER_FLETCHER32: {
            if (cur_n < 4)
                return fp4_error(FP4_ERR_INPUT,
                                 "%s: %zu bytes, shorter than a Fletcher-32 checksum", where,
                                 cur_n);
            size_t body = cur_n - 4;
            const unsigned char *t = cur + body;
            uint32_t stored = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
                              (uint32_t)t[3] << 24;
            uint32_t sum = fp4_fletcher32(cur, body);
            /* HDF5 before 1.6.3 wrote the checksum with each byte pair swapped; HDF5 accepts
             * both forms, and so does this. */
            uint32_t swapped = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
            if (stored != sum && stored != swapped)
                return fp4_error(FP4_ERR_INPUT,
                                 "%s: Fletcher-32 checksum mismatch (stored %08x, computed "
                                 "%08x): the chunk is corrupt",
                                 where, stored, sum);
            cur_n = body;
            break;
        }
        case FP4_FILTER_DEFLATE:
            FP4_TRY(fp4_inflate(c, cur, cur_n, dst, dst_n, where));
            cur = dst;
            cur_n = dst_n;
            break;
        case FP4_FILTER_SHUFFLE:
            fp4_unshuffle(cur, dst, cur_n, f->param);
            cur = dst;
            break;
        default: break; /* rejected above */
        }
    }
    if (cur_n != out_n)
        return fp4_error(FP4_ERR_INPUT, "%s: chunk decodes to %zu bytes, expected %zu", where,
                         cur_n, out_n);
    if ((const void *)cur != out && out_n) memcpy(out, cur, out_n);
    return FP4_OK;
}
