/* fuzz_chunk.c — libFuzzer target over the direct chunk decode path (io/codec.c): the first
 * bytes choose a filter pipeline (deflate, shuffle, fletcher32 in any order), its skip mask and
 * the chunk's decoded size; the rest is the stored chunk. The decoder must never read or write
 * outside its buffers, whatever the bytes; a chunk that decodes is decoded again through a
 * reused workspace and must give the same bytes. Input: [pipeline][shuffle size][mask][size lo]
 * [size hi][stored chunk...]; pipeline = up to three 2-bit filter codes from bit 0
 * (0 none/end, 1 deflate, 2 shuffle, 3 fletcher32). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5) return 0;
    fp4_pipeline p = {0};
    static const int ids[4] = {0, FP4_FILTER_DEFLATE, FP4_FILTER_SHUFFLE, FP4_FILTER_FLETCHER32};
    for (int i = 0; i < 3; i++) {
        int code = (data[0] >> (2 * i)) & 3;
        if (!code) break;
        p.f[p.n].id = ids[code];
        p.f[p.n].param = (uint32_t)(data[1] % 16) + 1;
        p.n++;
    }
    if (data[0] & 0xC0) p.f[p.n++] = (fp4_filter){32001, 0}; /* an unknown filter, maybe masked */
    uint32_t mask = data[2];
    size_t out_n = (size_t)data[3] | (size_t)data[4] << 8;
    /* Exactly sized copies: any access outside them is a sanitizer report. */
    size_t in_n = size - 5;
    uint8_t *in = malloc(in_n ? in_n : 1);
    uint8_t *out = malloc(out_n ? out_n : 1), *again = malloc(out_n ? out_n : 1);
    if (!in || !out || !again) abort();
    if (in_n) memcpy(in, data + 5, in_n);
    fp4_codec *c = NULL;
    if (fp4_codec_new(&c) != FP4_OK) abort();
    fp4_status st = fp4_chunk_decode(c, &p, mask, in, in_n, out, out_n, "fuzz.h5: /d: chunk 0");
    if (st == FP4_OK) {
        if (fp4_chunk_decode(c, &p, mask, in, in_n, again, out_n, "again") != FP4_OK) abort();
        if (out_n && memcmp(out, again, out_n) != 0) abort();
    } else if (st != FP4_ERR_INPUT && st != FP4_ERR_INTERNAL) {
        abort();
    }
    /* The pieces alone. */
    (void)fp4_inflate(c, in, in_n, out, out_n, "inflate");
    (void)fp4_fletcher32(in, in_n);
    fp4_unshuffle(in, out, in_n < out_n ? in_n : out_n, (size_t)(data[1] % 16) + 1);
    fp4_codec_free(c);
    free(in);
    free(out);
    free(again);
    return 0;
}
