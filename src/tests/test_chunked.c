/* test_chunked.c — io/chunked: slabs of chunked datasets that HDF5 wrote (C API, temp dir),
 * read from the stored chunks with pread and our decoder, equal HDF5's own read of the stored
 * words for every slab along every dimension (ranks 1-3, edge chunks, never-written chunks,
 * big-endian words, a userblock, 1 and 2 threads); bad chunks (address outside the file,
 * truncated file, corrupt bytes), an undefined fill value and a chunk larger than the memory
 * bound are errors naming the chunk. */
#include "testutil.h"

#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "io/chunked.h"

typedef struct fx {
    char *dir;
    char file[4200];
} fx;

static void fill_words(unsigned char *buf, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        buf[i] = (unsigned char)((s >> 40) % 5 == 0 ? s >> 32 : i % 7);
    }
}

/* Describe dataset `name` of `file` as the reader needs it (what h5io does for real). */
typedef struct opened {
    fp4_chunked c;
    fp4_chunk_ref refs[4096];
    int fd;
    char file[4200], name[64];
} opened;

static void open_chunked(opened *o, const char *file, const char *name)
{
    memset(o, 0, sizeof *o);
    snprintf(o->file, sizeof o->file, "%s", file);
    snprintf(o->name, sizeof o->name, "%s", name);
    hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t d = H5Dopen2(fid, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t dcpl = H5Dget_create_plist(d), sp = H5Dget_space(d), t = H5Dget_type(d);
    hid_t fcpl = H5Fget_create_plist(fid);
    hsize_t ub = 0;
    assert_true(H5Pget_userblock(fcpl, &ub) >= 0);
    fp4_chunked *c = &o->c;
    c->file = o->file;
    c->name = o->name;
    c->rank = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[8], ch[8];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    assert_int_equal(H5Pget_chunk(dcpl, 8, ch), c->rank);
    for (int i = 0; i < c->rank; i++) {
        c->dims[i] = (int64_t)dims[i];
        c->chunk[i] = (int64_t)ch[i];
    }
    c->elem_size = H5Tget_size(t);
    c->swap = H5Tget_order(t) == H5T_ORDER_BE;
    int nf = H5Pget_nfilters(dcpl);
    c->pipeline.n = nf;
    for (int i = 0; i < nf; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL);
        c->pipeline.f[i].id = (int)id;
        c->pipeline.f[i].param = id == H5Z_FILTER_SHUFFLE ? cd[0] : 0;
    }
    H5D_fill_value_t fv;
    assert_true(H5Pfill_value_defined(dcpl, &fv) >= 0);
    c->fill_defined = fv != H5D_FILL_VALUE_UNDEFINED;
    if (c->fill_defined) assert_true(H5Pget_fill_value(dcpl, t, c->fill) >= 0);
    hsize_t n = 0;
    assert_true(H5Dget_num_chunks(d, sp, &n) >= 0);
    assert_true(n <= 4096);
    for (hsize_t k = 0; k < n; k++) {
        hsize_t off[8], sz;
        unsigned mask;
        haddr_t addr;
        assert_true(H5Dget_chunk_info(d, sp, k, off, &mask, &addr, &sz) >= 0);
        int64_t lin = 0;
        for (int i = 0; i < c->rank; i++) {
            int64_t g = (c->dims[i] + c->chunk[i] - 1) / c->chunk[i];
            lin = lin * g + (int64_t)(off[i] / ch[i]);
        }
        o->refs[k] = (fp4_chunk_ref){lin, (uint64_t)addr + ub, (uint64_t)sz, mask};
    }
    c->refs = o->refs;
    c->nrefs = (int64_t)n;
    H5Pclose(fcpl);
    H5Tclose(t);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Dclose(d);
    H5Fclose(fid);
    o->fd = open(file, O_RDONLY);
    assert_true(o->fd >= 0);
    struct stat stt;
    assert_int_equal(fstat(o->fd, &stt), 0);
    c->fd = o->fd;
    c->file_size = (int64_t)stt.st_size;
    assert_int_equal(fp4_chunked_prepare(c), FP4_OK);
}

/* HDF5's read of slab [start, start+count) along dim, stored words in host order. */
static unsigned char *hdf5_slab(const char *file, const char *name, int dim, int64_t start,
                                int64_t count, size_t *nbytes)
{
    hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(fid, name, H5P_DEFAULT);
    hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
    hid_t mt = H5Tcopy(t);
    if (H5Tget_order(t) == H5T_ORDER_BE) H5Tset_order(mt, H5T_ORDER_LE);
    int r = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[8], st[8] = {0}, cnt[8];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    size_t n = H5Tget_size(t);
    for (int i = 0; i < r; i++) {
        cnt[i] = i == dim ? (hsize_t)count : dims[i];
        st[i] = i == dim ? (hsize_t)start : 0;
        n *= cnt[i];
    }
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, st, NULL, cnt, NULL);
    hid_t ms = H5Screate_simple(r, cnt, NULL);
    unsigned char *buf = malloc(n ? n : 1);
    assert_true(H5Dread(d, mt, ms, sp, H5P_DEFAULT, buf) >= 0);
    H5Sclose(ms);
    H5Tclose(mt);
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(fid);
    *nbytes = n;
    return buf;
}

static void check_slabs(opened *o, int threads)
{
    fp4_chunked_set_threads(threads);
    const fp4_chunked *c = &o->c;
    for (int dim = 0; dim < c->rank; dim++) {
        int64_t ext = c->dims[dim];
        const int64_t steps[] = {1, 3, c->chunk[dim], ext};
        for (size_t si = 0; si < 4; si++) {
            int64_t step = steps[si] > 0 ? steps[si] : 1;
            for (int64_t s = 0; s < ext; s += step) {
                int64_t cnt = ext - s < step ? ext - s : step;
                size_t nb = 0;
                unsigned char *want = hdf5_slab(o->file, o->name, dim, s, cnt, &nb);
                unsigned char *got = malloc(nb + 8);
                memset(got + nb, 0x5c, 8);
                fp4_status st = fp4_chunked_read(c, dim, s, cnt, got);
                if (st != FP4_OK) fail_msg("%s", fp4_last_error());
                if (nb) assert_memory_equal(got, want, nb);
                for (int g = 0; g < 8; g++) assert_int_equal(got[nb + (size_t)g], 0x5c);
                free(got);
                free(want);
            }
        }
    }
    fp4_chunked_set_threads(0);
}

static void close_chunked(opened *o) { close(o->fd); }

enum { F_SHUF = 1, F_DEFL = 2, F_FLET = 4 };

/* Write dataset `name`: rank r, dims, chunk, type, filters; `write_mask` selects which chunks
 * along dim 0 are written (bit k: chunk row k), the rest are never written. */
static void make(const char *file, bool create, hsize_t ub, const char *name, int r,
                 const hsize_t *dims, const hsize_t *ch, hid_t type, int filters,
                 uint64_t write_mask, const void *fill)
{
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (ub) H5Pset_userblock(fcpl, ub);
    hid_t fid = create ? H5Fcreate(file, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT)
                       : H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(fid >= 0);
    H5Pclose(fcpl);
    hid_t sp = H5Screate_simple(r, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, r, ch);
    if (filters & F_SHUF) H5Pset_shuffle(dcpl);
    if (filters & F_DEFL) H5Pset_deflate(dcpl, 3);
    if (filters & F_FLET) H5Pset_fletcher32(dcpl);
    if (fill) H5Pset_fill_value(dcpl, type, fill);
    hid_t d = H5Dcreate2(fid, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(d >= 0);
    size_t es = H5Tget_size(type);
    size_t row = es;
    for (int i = 1; i < r; i++) row *= dims[i];
    for (hsize_t k = 0; k * ch[0] < dims[0]; k++) {
        if (!((write_mask >> k) & 1)) continue;
        hsize_t st[8] = {0}, cnt[8];
        for (int i = 0; i < r; i++) cnt[i] = dims[i];
        st[0] = k * ch[0];
        cnt[0] = dims[0] - st[0] < ch[0] ? dims[0] - st[0] : ch[0];
        size_t n = row * cnt[0];
        unsigned char *w = malloc(n);
        fill_words(w, n, k + 17 * (uint64_t)es);
        hid_t fs = H5Dget_space(d);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, cnt, NULL);
        hid_t ms = H5Screate_simple(r, cnt, NULL);
        assert_true(H5Dwrite(d, type, ms, fs, H5P_DEFAULT, w) >= 0);
        H5Sclose(ms);
        H5Sclose(fs);
        free(w);
    }
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(fid);
}

static void test_slabs_match_hdf5(void **state)
{
    (void)state;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fx x = {fp4t_tmpdir(), ""};
    snprintf(x.file, sizeof x.file, "%s/c.h5", x.dir);
    const hsize_t d1[] = {1000}, c1[] = {64};
    const hsize_t d2[] = {37, 50}, c2[] = {8, 16};
    const hsize_t d2b[] = {40, 64}, c2b[] = {8, 64};
    const hsize_t d3[] = {9, 10, 11}, c3[] = {4, 3, 11};
    const float ffill = 2.5f;
    const uint16_t hfill = 0x3c00;
    make(x.file, true, 0, "a", 1, d1, c1, H5T_IEEE_F32LE, F_SHUF | F_DEFL, ~0ull, NULL);
    make(x.file, false, 0, "b", 2, d2, c2, H5T_IEEE_F32LE, F_SHUF | F_DEFL | F_FLET, 0x15, &ffill);
    make(x.file, false, 0, "c", 2, d2b, c2b, H5T_STD_U16LE, F_SHUF | F_DEFL, 0x2d, &hfill);
    make(x.file, false, 0, "d", 3, d3, c3, H5T_IEEE_F64BE, F_DEFL | F_FLET, 0x5, NULL);
    make(x.file, false, 0, "e", 2, d2, c2, H5T_STD_I16BE, F_SHUF, ~0ull, NULL);
    make(x.file, false, 0, "f", 2, d2b, c2b, H5T_STD_I8LE, F_DEFL, ~0ull, NULL);
    static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
    for (int i = 0; i < 6; i++) {
        opened *o = malloc(sizeof *o);
        open_chunked(o, x.file, names[i]);
        check_slabs(o, 1);
        check_slabs(o, 2);
        close_chunked(o);
        free(o);
    }
    /* A file with a userblock: chunk addresses are relative to the HDF5 base address. */
    snprintf(x.file, sizeof x.file, "%s/ub.h5", x.dir);
    make(x.file, true, 1024, "u", 2, d2b, c2b, H5T_IEEE_F32LE, F_SHUF | F_DEFL, ~0ull, NULL);
    opened *o = malloc(sizeof *o);
    open_chunked(o, x.file, "u");
    check_slabs(o, 2);
    close_chunked(o);
    free(o);
    fp4t_rmtree(x.dir);
}

static void test_bad_chunks(void **state)
{
    (void)state;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fx x = {fp4t_tmpdir(), ""};
    snprintf(x.file, sizeof x.file, "%s/c.h5", x.dir);
    const hsize_t d2[] = {64, 256}, c2[] = {16, 256};
    make(x.file, true, 0, "b", 2, d2, c2, H5T_IEEE_F32LE, F_SHUF | F_DEFL, ~0ull, NULL);
    opened *o = malloc(sizeof *o);
    open_chunked(o, x.file, "b");
    size_t nb = 64 * 256 * 4;
    unsigned char *buf = malloc(nb);
    assert_int_equal(fp4_chunked_read(&o->c, 0, 0, 64, buf), FP4_OK);

    /* An index entry pointing past the end of the file. */
    fp4_chunk_ref keep = o->refs[2];
    o->refs[2].addr = (uint64_t)o->c.file_size - 10;
    assert_int_equal(fp4_chunked_read(&o->c, 0, 0, 64, buf), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "c.h5: b: chunk (32,0) points outside the file"));
    o->refs[2].addr = UINT64_MAX - 5;
    assert_int_equal(fp4_chunked_read(&o->c, 0, 0, 64, buf), FP4_ERR_INPUT);
    /* The other slabs stay readable. */
    assert_int_equal(fp4_chunked_read(&o->c, 0, 0, 32, buf), FP4_OK);
    o->refs[2] = keep;

    /* A wrong stored size (a corrupt index): deflate sees a truncated stream. */
    o->refs[1].bytes -= 7;
    for (int th = 1; th <= 2; th++) {
        fp4_chunked_set_threads(th);
        assert_int_equal(fp4_chunked_read(&o->c, 0, 0, 64, buf), FP4_ERR_INPUT);
        assert_non_null(strstr(fp4_last_error(), "c.h5: b: chunk (16,0): deflate data is"));
    }
    o->refs[1].bytes += 7;
    /* Two bad chunks: the first in grid order is named, whatever the threads. */
    o->refs[3].bytes = 3;
    o->refs[1].bytes = 5;
    for (int th = 1; th <= 2; th++) {
        fp4_chunked_set_threads(th);
        assert_int_equal(fp4_chunked_read(&o->c, 0, 0, 64, buf), FP4_ERR_INPUT);
        assert_non_null(strstr(fp4_last_error(), "chunk (16,0)"));
    }
    fp4_chunked_set_threads(0);
    o->refs[1] = (fp4_chunk_ref){o->refs[1].lin, o->refs[1].addr, keep.bytes, 0};
    close_chunked(o);

    /* Corrupt bytes in the file itself, and a file cut short. */
    open_chunked(o, x.file, "b");
    int fd = open(x.file, O_RDWR);
    unsigned char z[16] = {0};
    assert_int_equal(pwrite(fd, z, 16, (off_t)o->refs[3].addr + 2), 16);
    assert_int_equal(fp4_chunked_read(&o->c, 0, 48, 16, buf), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "chunk (48,0): deflate data is corrupt"));
    assert_int_equal(ftruncate(fd, (off_t)o->refs[3].addr + 4), 0);
    close(fd);
    o->c.file_size = (int64_t)o->refs[3].addr + 4;
    assert_int_equal(fp4_chunked_read(&o->c, 0, 48, 16, buf), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "chunk (48,0) points outside the file"));
    /* The size recorded before the file shrank: the read ends early. */
    o->c.file_size = (int64_t)o->refs[3].addr + (int64_t)o->refs[3].bytes;
    assert_int_equal(fp4_chunked_read(&o->c, 0, 48, 16, buf), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "chunk (48,0): the file ends inside the chunk"));
    close_chunked(o);

    /* Never written, no fill value defined. */
    o->c.fill_defined = false;
    o->c.nrefs = 0;
    assert_int_equal(fp4_chunked_read(&o->c, 0, 0, 16, buf), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "chunk (0,0) was never written and the dataset "
                                             "defines no fill value"));
    /* The memory bound: a chunk that cannot be decoded inside it is refused, by name. */
    o->c.fill_defined = true;
    fp4_chunked_set_memory(1000);
    assert_int_equal(fp4_chunked_read(&o->c, 0, 16, 16, buf), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "c.h5: b: chunk (16,0): decoding a chunk of "
                                             "16384 bytes needs"));
    assert_non_null(strstr(fp4_last_error(), "--mem-limit"));
    fp4_chunked_set_memory(0);
    /* Bad ranges. */
    assert_int_equal(fp4_chunked_read(&o->c, 0, 60, 5, buf), FP4_ERR_USAGE);
    assert_int_equal(fp4_chunked_read(&o->c, 2, 0, 1, buf), FP4_ERR_USAGE);
    free(buf);
    free(o);
    fp4t_rmtree(x.dir);
}

static void test_prepare_rejects(void **state)
{
    (void)state;
    fp4_chunk_ref refs[2] = {{0, 0, 1, 0}, {0, 10, 1, 0}};
    fp4_chunked c = {.file = "f", .name = "n", .rank = 1, .dims = {10}, .chunk = {5},
                     .elem_size = 4, .refs = refs, .nrefs = 2, .fill_defined = true};
    assert_int_equal(fp4_chunked_prepare(&c), FP4_ERR_INPUT);
    assert_string_equal(fp4_last_error(), "f: n: a chunk is listed twice");
    refs[1].lin = 2;
    assert_int_equal(fp4_chunked_prepare(&c), FP4_ERR_INPUT);
    assert_string_equal(fp4_last_error(), "f: n: a chunk lies outside the dataset's grid");
    refs[1].lin = 1;
    assert_int_equal(fp4_chunked_prepare(&c), FP4_OK);
    c.pipeline = (fp4_pipeline){1, {{32001, 0}}};
    assert_int_equal(fp4_chunked_prepare(&c), FP4_ERR_INPUT);
    c.pipeline.n = 0;
    c.rank = 2;
    c.dims[1] = INT64_MAX;
    c.chunk[1] = 1;
    assert_int_equal(fp4_chunked_prepare(&c), FP4_ERR_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slabs_match_hdf5),
        cmocka_unit_test(test_bad_chunks),
        cmocka_unit_test(test_prepare_rejects),
    };
    return cmocka_run_group_tests_name("chunked", tests, NULL, NULL);
}
