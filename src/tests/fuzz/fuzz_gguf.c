/* fuzz_gguf.c — libFuzzer target over the GGUF reader (io/gguf_parse.c, io/gguf.c) and its
 * 4-bit block types as already-quantized tensors (io/quantized.c): the input bytes are (1)
 * parsed in memory whole and from a prefix (the caller's "more bytes" loop), then (2) written
 * as a .gguf file and opened as a run opens it: every tensor selected, described, the numeric
 * ones read in slabs (fp32 and stored words into buffers of their exact size), the metadata
 * listed, every MXFP4/NVFP4 tensor without a problem decoded whole (a block index outside the
 * tensor's bytes is an ASan report), a decode of one with a problem refused, and the listing
 * folded. Nothing may crash, leak, hang or read outside a buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzutil.h"
#include "io/gguf_parse.h"
#include "io/quantized.h"
#include "io/source.h"

#define FZ_MAX_ELEMS ((int64_t)1 << 16) /* elements read or decoded per tensor */

static void fz_read(fp4_source *src, const fp4_tensor_desc *d)
{
    if (d->problem[0] || !d->numeric || d->nelems <= 0 || d->nelems > FZ_MAX_ELEMS) {
        float one;
        if (d->problem[0] && fp4_source_read_f32(src, d, 0, 0, 1, &one) == FP4_OK) abort();
        return;
    }
    const int64_t extent = d->dims[0], row = d->nelems / extent;
    float *buf = malloc((size_t)d->nelems * sizeof *buf);
    unsigned char *raw = malloc((size_t)(d->nelems * fp4_stored_size(d->stored)) + 1);
    if (buf && raw) {
        (void)fp4_source_read_f32(src, d, 0, 0, extent, buf);
        (void)fp4_source_read_raw(src, d, 0, 0, extent, raw);
        if (extent > 1) (void)fp4_source_read_f32(src, d, 0, extent - 1, 1, buf + row);
        if (d->rank >= 2) (void)fp4_source_read_f32(src, d, d->rank - 1, 0, 1, buf);
        (void)fp4_source_read_f32(src, d, 0, extent, 1, buf); /* past the end: refused */
    }
    free(buf);
    free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* (1) the parser in memory: the whole input, then half of it as the bytes read so far */
    fp4_gguf_header h;
    bool more = false;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if (fp4_gguf_parse("fz.gguf", copy, size, size, &h, &more) == FP4_OK) {
        if (more) abort();
        fp4_gguf_header_free(&h);
    }
    if (fp4_gguf_parse("fz.gguf", copy, size / 2, size, &h, &more) == FP4_OK)
        fp4_gguf_header_free(&h);
    free(copy);

    /* (2) the source */
    const char *path = fz_write_file("model.gguf", data, size);
    fp4_source *src = NULL;
    if (fp4_source_open(path, &src) != FP4_OK) return 0;
    fp4_tensor_desc *list = NULL;
    int n = 0;
    if (fp4_source_select(src, NULL, 0, &list, &n) == FP4_OK) {
        for (int i = 0; i < n; i++) fz_read(src, &list[i]);
    }
    char **k = NULL, **v = NULL;
    int nm = 0;
    if (fp4_source_metadata(src, &k, &v, &nm) == FP4_OK) fp4_source_metadata_free(k, v, nm);
    fp4_qset qs;
    if (fp4_quant_scan(src, &qs) == FP4_OK) {
        for (int i = 0; i < qs.n; i++) {
            const fp4_qtensor *q = &qs.t[i];
            if (q->problem[0] || q->rows <= 0 || q->rank < 1 || q->dims[q->rank - 1] <= 0 ||
                q->rows * q->dims[q->rank - 1] > FZ_MAX_ELEMS) {
                float one;
                if (q->problem[0] && fp4_quant_read(src, q, 0, 0, &one) == FP4_OK) abort();
                continue;
            }
            const int64_t ne = q->rows * q->dims[q->rank - 1];
            float *out = malloc((size_t)ne * sizeof *out);
            if (out) {
                (void)fp4_quant_read(src, q, 0, q->rows, out);
                free(out);
            }
        }
        int *qidx = NULL;
        if (list && qs.n > 0 && fp4_quant_fold(&qs, list, &n, &qidx) == FP4_OK) free(qidx);
        fp4_qset_free(&qs);
    }
    fp4_tensor_desc_free_list(list, n);
    fp4_source_close(src);
    return 0;
}
