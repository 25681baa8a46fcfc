/* fuzz_tsparse.c — libFuzzer target over the tensor-file header parsers (io/st_parse.c,
 * io/npy_parse.c): the input bytes as a safetensors file, as an index's JSON, as an .npy and
 * as an .npz (each member's .npy header parsed from the mapping as the source reads it), and
 * an .npy header from a prefix (a deflated member inflated only so far). On
 * success every tensor's bytes are touched: an offset outside the input is an ASan report. */
#include <stdint.h>
#include <stdlib.h>

#include "io/npy_parse.h"
#include "io/st_parse.h"

static volatile unsigned fz_sink;

static void fz_touch(const uint8_t *p, uint64_t n)
{
    unsigned s = 0;
    for (uint64_t i = 0; i < n; i += 61) s += p[i];
    if (n) s += p[n - 1];
    fz_sink += s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fp4_st_header h;
    if (fp4_st_parse("fuzz.safetensors", data, size, &h) == FP4_OK) {
        for (int i = 0; i < h.n; i++) /* a cut tensor's bytes are past the end: never read */
            if (!h.t[i].cut) fz_touch(data + h.data_start + h.t[i].begin, h.t[i].end - h.t[i].begin);
        fp4_st_header_free(&h);
    }
    fp4_st_index ix;
    if (fp4_st_index_parse("fuzz.index.json", (const char *)data, size, &ix) == FP4_OK)
        fp4_st_index_free(&ix);
    fp4_npy_header nh;
    if (fp4_npy_parse("fuzz.npy", data, size, &nh) == FP4_OK)
        fz_touch(data + nh.data_offset, nh.data_bytes);
    /* a deflated member's header from its first bytes: only buf[0..have) may be read */
    if (size > 0) {
        uint64_t have = size / 2, total = (uint64_t)size + ((uint64_t)data[0] << 24);
        uint8_t *head = malloc(have ? have : 1); /* exactly `have` bytes: ASan sees a read past */
        if (head) {
            for (uint64_t i = 0; i < have; i++) head[i] = data[i];
            if (fp4_npy_parse_prefix("fuzz.npy", head, have, total, &nh) == FP4_OK &&
                (nh.data_offset > have || nh.data_bytes > total - nh.data_offset))
                abort(); /* the header must lie in the prefix, the data in the whole */
            free(head);
        }
    }
    fp4_zip_member *m;
    int n;
    if (fp4_zip_list("fuzz.npz", data, size, &m, &n) == FP4_OK) {
        for (int i = 0; i < n; i++) {
            fz_touch(data + m[i].data_offset, m[i].csize);
            if (m[i].method == 0 && !m[i].problem[0] &&
                fp4_npy_parse(m[i].name, data + m[i].data_offset, m[i].usize, &nh) == FP4_OK)
                fz_touch(data + m[i].data_offset + nh.data_offset, nh.data_bytes);
        }
        fp4_zip_free(m, n);
    }
    return 0;
}
