/* fuzz_h5load.c — libFuzzer target over HDF5 loading (io/h5io.c): the input bytes become a file
 * that is opened (as a tensor source and through h5io), walked and selected (all datasets, then
 * a group pattern and a glob), every dataset described and read in slabs as the analysis driver
 * reads it (converted by HDF5, and as stored words into buffers of their exact size: the direct
 * reads of contiguous data), plus an out-of-range slab and an attribute. Our code must not crash, leak or hang on any file; HDF5 itself is not
 * instrumented (a crash inside the library is reported by scripts/fuzz_run.sh as HDF5's). */
#include <stdint.h>
#include <stdlib.h>

#include "fuzzutil.h"
#include "io/h5io.h"
#include "io/source.h"

/* Bounds that keep one input fast: declared sizes can be huge (fill values need no storage). */
#define FZ_MAX_ROW_ELEMS ((int64_t)1 << 20) /* elements of one row (all but dim 0) */
#define FZ_MAX_READ_ELEMS ((int64_t)1 << 22) /* elements read per dataset */
#define FZ_SLAB_ELEMS ((int64_t)1 << 16)     /* target elements per slab */

static void fz_read_dataset(fp4_h5file *f, const fp4_tensor_desc *d)
{
    fp4_tensor_desc again;
    if (fp4_h5_info(f, d->name, &again) != FP4_OK) return;
    fp4_tensor_desc_free(&again);
    if (d->nelems < 0) return;
    int64_t extent = d->rank == 0 ? 1 : d->dims[0];
    int64_t row = extent == 0 ? 0 : d->nelems / extent;
    float one;
    if (d->nelems == 0 || row > FZ_MAX_ROW_ELEMS) {
        (void)fp4_h5_read_slab(f, d->name, 0, 0, 0, &one); /* an empty slab reads nothing */
        return;
    }
    int64_t per = FZ_SLAB_ELEMS / row > 0 ? FZ_SLAB_ELEMS / row : 1;
    if (per > extent) per = extent;
    float *buf = malloc((size_t)(per * row) * sizeof *buf);
    if (!buf) return;
    int64_t done = 0;
    for (int64_t s = 0; s < extent && done < FZ_MAX_READ_ELEMS; s += per) {
        int64_t c = extent - s < per ? extent - s : per;
        if (fp4_h5_read_slab(f, d->name, 0, s, c, buf) != FP4_OK) break;
        done += c * row;
    }
    /* The stored words of contiguous data (the direct reads), 8 bytes a word at most: the same
     * slabs into a buffer of exactly their size. Chunked data's direct path has its own target
     * (fuzz_chunk); reading its slabs a second time here made slow inputs (a huge declared
     * shape, few chunks written) time out. */
    done = 0;
    for (int64_t s = 0; d->chunk_rank == 0 && s < extent && done < FZ_MAX_READ_ELEMS; s += per) {
        int64_t c = extent - s < per ? extent - s : per;
        const int w = fp4_stored_size(d->stored);
        if (w == 0) break;
        unsigned char *exact = malloc((size_t)(c * row * w));
        if (!exact) break;
        fp4_status st = fp4_h5_read_slab_raw(f, d->name, 0, s, c, exact);
        free(exact);
        if (st != FP4_OK) break;
        done += c * row;
    }
    /* Past the end and a wrong dimension must be usage errors, not reads. */
    (void)fp4_h5_read_slab(f, d->name, 0, extent, 1, buf);
    (void)fp4_h5_read_slab(f, d->name, d->rank, 0, 1, buf);
    free(buf);
    double a;
    (void)fp4_h5_read_attr_double(f, d->name, "scale", &a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write_file("input.h5", data, size);
    fp4_source *src = NULL;
    if (fp4_source_open(path, &src) != FP4_OK) return 0;
    fp4_h5file *f = NULL;
    if (fp4_h5_open(path, &f) != FP4_OK) {
        fp4_source_close(src);
        return 0;
    }
    fp4_tensor_desc *ds = NULL;
    int n = 0;
    if (fp4_source_select(src, NULL, 0, &ds, &n) == FP4_OK) {
        for (int i = 0; i < n; i++) fz_read_dataset(f, &ds[i]);
        fp4_tensor_desc_free_list(ds, n);
    }
    static const char *const pats[] = {"/blocks", "/*/w*", "x/y/", "/"};
    if (fp4_source_select(src, pats, 4, &ds, &n) == FP4_OK) fp4_tensor_desc_free_list(ds, n);
    fp4_h5_close(f);
    fp4_source_close(src);
    return 0;
}
