/* test_codec.c — io/codec: known answers from chunks HDF5 itself wrote (C API, temp dir): each
 * stored chunk read raw (H5Dread_chunk) and decoded must equal HDF5's own read of the stored
 * words; skipped filters (H5Dwrite_chunk with a mask); corrupt, truncated and wrong-size chunks
 * end in errors with no byte written past the output. */
#include "testutil.h"

#include <stdbool.h>

#include <hdf5.h>

#include "io/codec.h"

/* --- fixtures ------------------------------------------------------------------------------ */

typedef struct fx {
    char *dir;
    char file[4200];
    hid_t fid;
} fx;

static void fx_open(fx *x)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    x->dir = fp4t_tmpdir();
    snprintf(x->file, sizeof x->file, "%s/c.h5", x->dir);
    x->fid = H5Fcreate(x->file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(x->fid >= 0);
}

static void fx_close(fx *x)
{
    assert_true(H5Fclose(x->fid) >= 0);
    fp4t_rmtree(x->dir);
}

/* Heavy-tailed words of `size` bytes per element: mostly small values, a few large, so that
 * deflate and shuffle have something real to do. Deterministic. */
static void fill_words(unsigned char *buf, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        unsigned v = (unsigned)(s >> 32);
        buf[i] = (unsigned char)((i % 4 == 3) ? (v % 8 == 0 ? v >> 8 : 0x3f)
                                              : (v % 3 == 0 ? v >> 16 : i & 0x0f));
    }
}

/* The pipeline of a dataset's creation property list, as h5io will build it. */
static fp4_pipeline pipeline_of(hid_t dcpl)
{
    fp4_pipeline p = {0};
    int n = H5Pget_nfilters(dcpl);
    assert_true(n >= 0 && n <= FP4_CODEC_MAX_FILTERS);
    p.n = n;
    for (int i = 0; i < n; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        char name[64];
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof name, name,
                                         NULL);
        p.f[i].id = (int)id;
        p.f[i].param = (id == H5Z_FILTER_SHUFFLE && ncd >= 1) ? cd[0] : 0;
    }
    return p;
}

enum { F_SHUF = 1, F_DEFL = 2, F_FLET = 4, F_FLET_FIRST = 8 };

/* Create /d (rank 2, dims r x c, chunks cr x cc) of element type `type` with the filters of
 * `flags` (h5py's order shuffle, deflate, fletcher32; F_FLET_FIRST puts fletcher32 first), and
 * write `words` (r*c elements in the file type). Returns the dataset (open). */
static hid_t make_dset(hid_t fid, const char *name, hid_t type, hsize_t r, hsize_t c,
                       hsize_t cr, hsize_t cc, int flags, const void *words)
{
    hsize_t dims[2] = {r, c}, chunk[2] = {cr, cc};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    assert_true(H5Pset_chunk(dcpl, 2, chunk) >= 0);
    if (flags & F_FLET_FIRST) assert_true(H5Pset_fletcher32(dcpl) >= 0);
    if (flags & F_SHUF) assert_true(H5Pset_shuffle(dcpl) >= 0);
    if (flags & F_DEFL) assert_true(H5Pset_deflate(dcpl, 4) >= 0);
    if ((flags & F_FLET) && !(flags & F_FLET_FIRST)) assert_true(H5Pset_fletcher32(dcpl) >= 0);
    hid_t d = H5Dcreate2(fid, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(d >= 0);
    if (words) assert_true(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, words) >= 0);
    H5Pclose(dcpl);
    H5Sclose(sp);
    return d;
}

/* Every stored chunk of d, read raw and decoded with fp4_chunk_decode, equals HDF5's own read
 * of the same region (stored words, no conversion). Returns the number of chunks checked. */
static int check_all_chunks(hid_t d, hid_t type, const unsigned char *words, hsize_t r, hsize_t c)
{
    hid_t dcpl = H5Dget_create_plist(d);
    fp4_pipeline p = pipeline_of(dcpl);
    assert_true(fp4_pipeline_supported(&p));
    hsize_t ch[2];
    assert_int_equal(H5Pget_chunk(dcpl, 2, ch), 2);
    H5Pclose(dcpl);
    size_t es = H5Tget_size(type);
    size_t out_n = (size_t)(ch[0] * ch[1]) * es;

    /* HDF5's own read as the reference. */
    unsigned char *ref = malloc((size_t)(r * c) * es);
    assert_non_null(ref);
    assert_true(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ref) >= 0);
    if (words) assert_memory_equal(ref, words, (size_t)(r * c) * es);

    fp4_codec *cd = NULL;
    assert_int_equal(fp4_codec_new(&cd), FP4_OK);
    hsize_t nch = 0;
    hid_t fsp = H5Dget_space(d); /* HDF5 1.10's chunk queries want the space, not H5S_ALL */
    assert_true(H5Dget_num_chunks(d, fsp, &nch) >= 0);
    assert_true(nch > 0);
    unsigned char *out = malloc(out_n + 16);
    assert_non_null(out);
    for (hsize_t k = 0; k < nch; k++) {
        hsize_t off[2], sz = 0;
        unsigned mask = 0;
        haddr_t addr;
        assert_true(H5Dget_chunk_info(d, fsp, k, off, &mask, &addr, &sz) >= 0);
        unsigned char *raw = malloc(sz ? sz : 1);
        assert_non_null(raw);
        unsigned mask2 = 0;
        assert_true(H5Dread_chunk(d, H5P_DEFAULT, off, &mask2, raw) >= 0);
        assert_int_equal(mask, mask2);
        memset(out + out_n, 0xA5, 16);
        fp4_status st = fp4_chunk_decode(cd, &p, mask, raw, (size_t)sz, out, out_n, "t.h5: /d");
        if (st != FP4_OK) fail_msg("chunk %llu: %s", (unsigned long long)k, fp4_last_error());
        for (int g = 0; g < 16; g++) assert_int_equal(out[out_n + g], 0xA5);
        /* The part of the chunk inside the extent. */
        for (hsize_t i = 0; i < ch[0] && off[0] + i < r; i++) {
            hsize_t w = off[1] + ch[1] <= c ? ch[1] : c - off[1];
            assert_memory_equal(out + (size_t)(i * ch[1]) * es,
                                ref + (size_t)((off[0] + i) * c + off[1]) * es, (size_t)w * es);
        }
        free(raw);
    }
    H5Sclose(fsp);
    free(out);
    free(ref);
    fp4_codec_free(cd);
    return (int)nch;
}

/* --- fletcher32, shuffle ------------------------------------------------------------------- */

static void test_fletcher32_hdf5_chunks(void **state)
{
    (void)state;
    /* fletcher32 alone: the stored chunk is the words plus HDF5's checksum (little-endian).
     * Lengths: odd byte counts (1-byte elements), < 360 words, and many times 360 words. */
    static const size_t lens[] = {1, 2, 3, 7, 719, 720, 721, 1440, 4099, 100001};
    fx x;
    fx_open(&x);
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        size_t n = lens[li];
        unsigned char *w = malloc(n);
        fill_words(w, n, 11 + li);
        if (li % 2) memset(w, 0xff, n / 2); /* sums near the fold points */
        char name[32];
        snprintf(name, sizeof name, "f%zu", li);
        hid_t d = make_dset(x.fid, name, H5T_NATIVE_UCHAR, 1, n, 1, n, F_FLET, w);
        hsize_t off[2] = {0, 0}, sz = 0;
        assert_true(H5Dget_chunk_storage_size(d, off, &sz) >= 0);
        assert_int_equal(sz, n + 4);
        unsigned char *raw = malloc(sz);
        unsigned mask = 0;
        assert_true(H5Dread_chunk(d, H5P_DEFAULT, off, &mask, raw) >= 0);
        assert_memory_equal(raw, w, n);
        uint32_t stored = (uint32_t)raw[n] | (uint32_t)raw[n + 1] << 8 |
                          (uint32_t)raw[n + 2] << 16 | (uint32_t)raw[n + 3] << 24;
        assert_int_equal(fp4_fletcher32(w, n), stored);
        H5Dclose(d);
        free(raw);
        free(w);
    }
    fx_close(&x);
}

static void test_shuffle_roundtrip(void **state)
{
    (void)state;
    /* Element sizes 1..9 (general path and the 2- and 4-byte paths), with leftover bytes. */
    for (size_t k = 1; k <= 9; k++) {
        for (size_t n = 0; n < 3 * 4096 + 40; n += (n < 64 ? 1 : 997)) {
            unsigned char *a = malloc(n + 1), *b = malloc(n + 1), *c = malloc(n + 1);
            fill_words(a, n, k * 1000 + n);
            fp4_shuffle(a, b, n, k);
            fp4_unshuffle(b, c, n, k);
            if (n) assert_memory_equal(a, c, n);
            /* the byte-plane layout itself, for whole elements */
            size_t m = n / k;
            if (k > 1 && m > 1)
                for (size_t i = 0; i < m; i += 7)
                    for (size_t j = 0; j < k; j++) assert_int_equal(b[j * m + i], a[i * k + j]);
            free(a);
            free(b);
            free(c);
        }
    }
}

/* --- whole pipelines against HDF5 ------------------------------------------------------- */

typedef struct pcase {
    hid_t type;
    int flags;
    hsize_t r, c, cr, cc;
} pcase;

static void test_pipelines_match_hdf5(void **state)
{
    (void)state;
    hid_t i24 = H5Tcopy(H5T_STD_I32LE);
    assert_true(H5Tset_size(i24, 3) >= 0);
    assert_true(H5Tset_precision(i24, 24) >= 0);
    const pcase cases[] = {
        {H5T_IEEE_F32LE, F_DEFL, 100, 70, 16, 32},
        {H5T_IEEE_F32LE, F_SHUF | F_DEFL, 100, 70, 16, 32},
        {H5T_IEEE_F32LE, F_SHUF | F_DEFL | F_FLET, 100, 70, 16, 32},
        {H5T_IEEE_F32BE, F_SHUF | F_DEFL | F_FLET, 33, 17, 8, 8},
        {H5T_STD_I16LE, F_SHUF | F_DEFL, 130, 64, 64, 64},
        {H5T_STD_U16LE, F_SHUF | F_DEFL | F_FLET, 64, 256, 64, 256},
        {H5T_IEEE_F64LE, F_SHUF, 20, 20, 7, 5},
        {H5T_IEEE_F64LE, F_FLET, 20, 20, 7, 5},
        {H5T_STD_I8LE, F_SHUF | F_DEFL | F_FLET, 50, 51, 9, 13},
        {H5T_IEEE_F32LE, F_FLET_FIRST | F_SHUF | F_DEFL, 40, 40, 16, 16},
        {H5T_IEEE_F32LE, F_FLET_FIRST | F_SHUF, 40, 40, 16, 16},
        {H5T_IEEE_F32LE, F_FLET_FIRST | F_FLET | F_DEFL, 40, 40, 16, 16},
        {i24, F_SHUF | F_DEFL | F_FLET, 31, 29, 10, 7},
        {H5T_IEEE_F32LE, F_SHUF | F_DEFL, 1, 1, 1, 1},
    };
    fx x;
    fx_open(&x);
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const pcase *pc = &cases[ci];
        size_t es = H5Tget_size(pc->type);
        size_t nb = (size_t)(pc->r * pc->c) * es;
        unsigned char *w = malloc(nb);
        fill_words(w, nb, 100 + ci);
        if (es == 4 && H5Tget_class(pc->type) == H5T_FLOAT)
            for (size_t i = 0; i < nb; i += 4) w[i + (pc->type == H5T_IEEE_F32BE ? 0 : 3)] &= 0xbf;
        char name[32];
        snprintf(name, sizeof name, "d%zu", ci);
        hid_t d = make_dset(x.fid, name, pc->type, pc->r, pc->c, pc->cr, pc->cc, pc->flags, w);
        hsize_t want = ((pc->r + pc->cr - 1) / pc->cr) * ((pc->c + pc->cc - 1) / pc->cc);
        assert_int_equal(check_all_chunks(d, pc->type, w, pc->r, pc->c), (int)want);
        H5Dclose(d);
        free(w);
    }
    H5Tclose(i24);
    fx_close(&x);
}

/* A chunk written with H5Dwrite_chunk and a filter mask that skips filters is read by HDF5
 * accordingly; the decoder must agree. */
static void test_skipped_filters(void **state)
{
    (void)state;
    fx x;
    fx_open(&x);
    const hsize_t r = 32, c = 64, cr = 16, cc = 64;
    size_t es = 4, out_n = (size_t)(cr * cc) * es;
    unsigned char *w = malloc((size_t)(r * c) * es);
    fill_words(w, (size_t)(r * c) * es, 7);
    for (size_t i = 3; i < (size_t)(r * c) * es; i += 4) w[i] &= 0xbf;
    hid_t d = make_dset(x.fid, "d", H5T_IEEE_F32LE, r, c, cr, cc, F_SHUF | F_DEFL | F_FLET,
                        NULL);
    /* Chunk 0: shuffle and deflate skipped (mask 0b011), fletcher32 applied by hand.
     * Chunk 1: deflate skipped (0b010): shuffled words plus checksum. */
    unsigned char *buf = malloc(out_n + 4), *shuf = malloc(out_n);
    for (int k = 0; k < 2; k++) {
        const unsigned char *src = w + (size_t)k * out_n;
        unsigned mask = k == 0 ? 0x3u : 0x2u;
        if (k == 0) memcpy(buf, src, out_n);
        else {
            fp4_shuffle(src, shuf, out_n, es);
            memcpy(buf, shuf, out_n);
        }
        uint32_t s = fp4_fletcher32(buf, out_n);
        for (int b = 0; b < 4; b++) buf[out_n + (size_t)b] = (unsigned char)(s >> (8 * b));
        hsize_t off[2] = {(hsize_t)k * cr, 0};
        assert_true(H5Dwrite_chunk(d, H5P_DEFAULT, mask, off, out_n + 4, buf) >= 0);
    }
    H5Fflush(x.fid, H5F_SCOPE_GLOBAL);
    assert_int_equal(check_all_chunks(d, H5T_IEEE_F32LE, w, r, c), 2);
    H5Dclose(d);
    free(buf);
    free(shuf);
    free(w);
    fx_close(&x);
}

/* --- bad chunks ----------------------------------------------------------------------------- */

/* One stored chunk (shuffle, deflate, fletcher32 as HDF5 wrote it) for the error tests. */
typedef struct stored {
    fp4_pipeline p;
    unsigned char *raw;
    size_t raw_n, out_n;
    unsigned char *words;
} stored;

static void stored_make(stored *s, int flags)
{
    fx x;
    fx_open(&x);
    const hsize_t r = 64, c = 64;
    s->out_n = (size_t)(r * c) * 4;
    s->words = malloc(s->out_n);
    fill_words(s->words, s->out_n, 99);
    for (size_t i = 3; i < s->out_n; i += 4) s->words[i] &= 0xbf;
    hid_t d = make_dset(x.fid, "d", H5T_IEEE_F32LE, r, c, r, c, flags, s->words);
    hid_t dcpl = H5Dget_create_plist(d);
    s->p = pipeline_of(dcpl);
    H5Pclose(dcpl);
    hsize_t off[2] = {0, 0}, sz = 0;
    assert_true(H5Dget_chunk_storage_size(d, off, &sz) >= 0);
    s->raw_n = (size_t)sz;
    s->raw = malloc(s->raw_n);
    unsigned mask;
    assert_true(H5Dread_chunk(d, H5P_DEFAULT, off, &mask, s->raw) >= 0);
    assert_int_equal(mask, 0);
    H5Dclose(d);
    fx_close(&x);
}

static void stored_free(stored *s)
{
    free(s->raw);
    free(s->words);
}

/* Decode into an exactly sized heap buffer (ASan sees any write past it) with a canary copy. */
static fp4_status decode_exact(fp4_codec *cd, const fp4_pipeline *p, unsigned mask,
                               const unsigned char *in, size_t in_n, size_t out_n)
{
    /* The input too lives in an exactly sized buffer: a read past it is an ASan report. */
    unsigned char *inb = malloc(in_n ? in_n : 1);
    if (in_n) memcpy(inb, in, in_n);
    unsigned char *out = malloc(out_n ? out_n : 1);
    fp4_status st = fp4_chunk_decode(cd, p, mask, inb, in_n, out, out_n, "f.h5: /d: chunk (0,0)");
    free(out);
    free(inb);
    return st;
}

static void test_corrupt_truncated_wrong_size(void **state)
{
    (void)state;
    fp4_codec *cd = NULL;
    assert_int_equal(fp4_codec_new(&cd), FP4_OK);

    stored s;
    stored_make(&s, F_SHUF | F_DEFL | F_FLET);
    assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, s.out_n), FP4_OK);
    /* Any truncation: the checksum no longer matches (or the chunk is shorter than it). */
    for (size_t n = 0; n < s.raw_n; n += (n < 64 ? 1 : 37)) {
        assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, n, s.out_n), FP4_ERR_INPUT);
        assert_non_null(strstr(fp4_last_error(), "f.h5: /d: chunk (0,0): "));
    }
    /* Any single corrupted byte: fletcher32 catches it. */
    for (size_t i = 0; i < s.raw_n; i += 13) {
        s.raw[i] ^= 0x5a;
        assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, s.out_n), FP4_ERR_INPUT);
        s.raw[i] ^= 0x5a;
    }
    s.raw[s.raw_n / 2] ^= 1;
    assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, s.out_n), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "Fletcher-32 checksum mismatch"));
    s.raw[s.raw_n / 2] ^= 1;
    /* Wrong decoded sizes. */
    assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, s.out_n - 1), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "more than the chunk's"));
    assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, s.out_n + 4), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "decodes to 16384 bytes, the chunk holds 16388"));
    assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, 0), FP4_ERR_INPUT);
    /* The pre-1.6.3 checksum form (byte pairs swapped) is accepted, as HDF5 does. */
    {
        unsigned char *t = s.raw + s.raw_n - 4, keep[4];
        memcpy(keep, t, 4);
        unsigned char sw[4] = {t[1], t[0], t[3], t[2]};
        memcpy(t, sw, 4);
        assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, s.out_n), FP4_OK);
        memcpy(t, keep, 4);
    }
    stored_free(&s);

    /* Without fletcher32, deflate's own checks: truncation and corruption. */
    stored_make(&s, F_SHUF | F_DEFL);
    assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, s.out_n), FP4_OK);
    for (size_t n = 0; n < s.raw_n; n += (n < 64 ? 1 : 29)) {
        assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, n, s.out_n), FP4_ERR_INPUT);
        assert_non_null(strstr(fp4_last_error(), "f.h5: /d: chunk (0,0): "));
    }
    int caught = 0, tried = 0;
    for (size_t i = 0; i < s.raw_n; i += 5, tried++) {
        s.raw[i] ^= 0x21;
        caught += decode_exact(cd, &s.p, 0, s.raw, s.raw_n, s.out_n) == FP4_ERR_INPUT;
        s.raw[i] ^= 0x21;
    }
    /* zlib's Adler-32 catches a flipped byte the bit stream still parses */
    assert_int_equal(caught, tried);
    /* Bytes after the end of the zlib stream are ignored, as HDF5 ignores them. */
    unsigned char *longer = malloc(s.raw_n + 9);
    memcpy(longer, s.raw, s.raw_n);
    memset(longer + s.raw_n, 0x77, 9);
    assert_int_equal(decode_exact(cd, &s.p, 0, longer, s.raw_n + 9, s.out_n), FP4_OK);
    free(longer);
    /* A deflate bomb: a small stream that decodes to far more than the chunk. */
    assert_int_equal(decode_exact(cd, &s.p, 0, s.raw, s.raw_n, 100), FP4_ERR_INPUT);
    stored_free(&s);

    /* Fletcher32 alone, a stored chunk of 3 bytes. */
    fp4_pipeline pf = {1, {{FP4_FILTER_FLETCHER32, 0}}};
    unsigned char three[3] = {1, 2, 3};
    assert_int_equal(decode_exact(cd, &pf, 0, three, 3, 4), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "shorter than a Fletcher-32 checksum"));
    /* No filter active: a copy, whose size must match. */
    assert_int_equal(decode_exact(cd, &pf, 1, three, 3, 3), FP4_OK);
    assert_int_equal(decode_exact(cd, &pf, 1, three, 3, 2), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "decodes to 3 bytes, expected 2"));
    fp4_codec_free(cd);
}

static void test_unknown_filters(void **state)
{
    (void)state;
    fp4_codec *cd = NULL;
    assert_int_equal(fp4_codec_new(&cd), FP4_OK);
    fp4_pipeline p = {2, {{FP4_FILTER_SHUFFLE, 4}, {32001, 0}}};
    assert_false(fp4_pipeline_supported(&p));
    unsigned char in[8] = {0}, out[8];
    assert_int_equal(fp4_chunk_decode(cd, &p, 0, in, 8, out, 8, "w"), FP4_ERR_INPUT);
    assert_string_equal(fp4_last_error(), "w: filter 32001 is not decoded here");
    /* Skipped by the mask, an unknown filter is no obstacle. */
    assert_int_equal(fp4_chunk_decode(cd, &p, 0x2, in, 8, out, 8, "w"), FP4_OK);
    fp4_pipeline z = {1, {{FP4_FILTER_SHUFFLE, 0}}};
    assert_false(fp4_pipeline_supported(&z));
    fp4_pipeline many = {FP4_CODEC_MAX_FILTERS + 1, {{0}}};
    assert_false(fp4_pipeline_supported(&many));
    assert_int_equal(fp4_chunk_decode(cd, &many, 0, in, 8, out, 8, "w"), FP4_ERR_INPUT);
    fp4_codec_free(cd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fletcher32_hdf5_chunks),
        cmocka_unit_test(test_shuffle_roundtrip),
        cmocka_unit_test(test_pipelines_match_hdf5),
        cmocka_unit_test(test_skipped_filters),
        cmocka_unit_test(test_corrupt_truncated_wrong_size),
        cmocka_unit_test(test_unknown_filters),
    };
    return cmocka_run_group_tests_name("codec", tests, NULL, NULL);
}
