/* fuzz_quantized.c — libFuzzer target over the grouping of packed tensors (io/quantized.c):
 * the input bytes choose a safetensors checkpoint of a few tensors named as the producers name
 * their partners (codes, block scales, per-tensor scales; ModelOpt, compressed-tensors,
 * gpt-oss), their dtypes and shapes, and the sidecars beside it: config.json,
 * hf_quant_config.json (ModelOpt), both or neither, each a template naming a producer (the two
 * agreeing or not, exclude lists of odd types, quantized_layers, a duplicate key) or raw
 * bytes. Every grouped tensor without a problem is decoded whole (an index outside its
 * members' bytes is an ASan report), `fold` runs on the listing, and a decode of a tensor with
 * a problem must be refused. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzzutil.h"
#include "io/quantized.h"
#include "io/source.h"

typedef struct fz_in {
    const uint8_t *p;
    size_t n;
} fz_in;

static unsigned take(fz_in *in)
{
    if (in->n == 0) return 0;
    in->n--;
    return *in->p++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *mods[] = {"m.a", "m.b.q_proj", "m.b.k_proj", "x.experts.gate_up_proj"};
    static const char *sfx[] = {".weight",        ".weight_scale",        ".weight_scale_2",
                                ".input_scale",   ".weight_packed",       ".weight_global_scale",
                                ".input_global_scale", "_blocks",         "_scales",
                                ".bias",          ".blocks",              ".scales"};
    static const struct {
        const char *name;
        int bytes;
    } dts[] = {{"U8", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1}, {"F32", 4}, {"BF16", 2}, {"I8", 1}};
    static const char *cfgs[] = {
        "",
        "{\"quantization_config\":{\"quant_method\":\"modelopt\",\"quant_algo\":\"NVFP4\","
        "\"ignore\":[\"m.a\",\"re:.*k_proj\"]}}",
        "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":"
        "\"nvfp4-pack-quantized\",\"ignore\":[\"*q_proj\"]}}",
        "{\"quantization_config\":{\"quant_method\":\"mxfp4\",\"modules_to_not_convert\":[1,"
        "\"m.*\"]}}",
        "{\"quantization_config\":[]}",
        "not json"};
    static const char *hfs[] = {
        "{\"quantization\":{\"quant_algo\":\"NVFP4\",\"group_size\":16,\"exclude_modules\":"
        "[\"m.a\",\"x.*\"]}}",
        "{\"quantization\":{\"quant_algo\":\"W4A16_NVFP4\",\"quantized_layers\":{\"m.b.q_proj\":"
        "{\"quant_algo\":\"NVFP4\"},\"m.a\":{\"quant_algo\":\"FP8\"}}}}",
        "{\"quantization\":{\"quant_algo\":\"MXFP4\",\"exclude_modules\":[7,null,\"\"]}}",
        "{\"quantization\":{\"quant_algo\":null,\"exclude_modules\":{}}}",
        "{\"quantization\":[]}",
        "{\"quantization\":{\"quant_algo\":\"NVFP4\"},\"quantization\":{\"quant_algo\":\"MXFP4\"}}"};
    fz_in in = {data, size};
    char header[8192];
    size_t h = 0;
    uint64_t off = 0;
    int nt = 1 + (int)(take(&in) % 8);
    h += (size_t)snprintf(header + h, sizeof header - h, "{");
    char used[8][64];
    int nu = 0;
    for (int i = 0; i < nt; i++) {
        unsigned a = take(&in), b = take(&in), c = take(&in);
        char name[64];
        snprintf(name, sizeof name, "%s%s", mods[a % 4], sfx[b % 12]);
        int dup = 0;
        for (int k = 0; k < nu; k++) dup |= !strcmp(used[k], name);
        if (dup) continue;
        snprintf(used[nu++], sizeof used[0], "%s", name);
        int rank = (int)(c % 5), dt = (int)((c >> 3) % 6);
        int64_t dims[4], ne = 1;
        for (int r = 0; r < rank; r++) {
            static const int choice[8] = {0, 1, 2, 4, 8, 16, 32, 128};
            dims[r] = choice[take(&in) % 8];
            ne *= dims[r];
        }
        if (ne > 4096) continue;
        uint64_t bytes = (uint64_t)ne * (uint64_t)dts[dt].bytes;
        h += (size_t)snprintf(header + h, sizeof header - h,
                              "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", h > 1 ? "," : "", name,
                              dts[dt].name);
        for (int r = 0; r < rank; r++)
            h += (size_t)snprintf(header + h, sizeof header - h, "%s%lld", r ? "," : "",
                                  (long long)dims[r]);
        h += (size_t)snprintf(header + h, sizeof header - h, "],\"data_offsets\":[%llu,%llu]}",
                              (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
        if (h >= sizeof header - 256) break;
    }
    h += (size_t)snprintf(header + h, sizeof header - h, "}");
    size_t total = 8 + h + off;
    uint8_t *file = calloc(total ? total : 1, 1);
    if (!file) return 0;
    for (int k = 0; k < 8; k++) file[k] = (uint8_t)((uint64_t)h >> (8 * k));
    memcpy(file + 8, header, h);
    for (uint64_t k = 0; k < off; k++) file[8 + h + k] = (uint8_t)take(&in); /* the values */
    fz_write_file("model.safetensors", file, total);
    free(file);
    /* the sidecars: config.json, hf_quant_config.json, both (agreeing or not) or none; each
     * a template or, the last one written, the rest of the input raw */
    unsigned which = take(&in) % 4, cf = take(&in) % 7, hf = take(&in) % 7;
    char side[4200];
    snprintf(side, sizeof side, "%s/config.json", fz_scratch());
    remove(side);
    snprintf(side, sizeof side, "%s/hf_quant_config.json", fz_scratch());
    remove(side);
    if (which & 1) {
        if (cf < 6 || (which & 2))
            fz_write_file("config.json", (const uint8_t *)cfgs[cf % 6], strlen(cfgs[cf % 6]));
        else
            fz_write_file("config.json", in.p, in.n); /* the rest, raw */
    }
    if (which & 2) {
        if (hf < 6)
            fz_write_file("hf_quant_config.json", (const uint8_t *)hfs[hf], strlen(hfs[hf]));
        else
            fz_write_file("hf_quant_config.json", in.p, in.n);
    }

    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", fz_scratch());
    fp4_source *src = NULL;
    if (fp4_source_open(path, &src) != FP4_OK) return 0;
    fp4_qset qs;
    if (fp4_quant_scan(src, &qs) == FP4_OK) {
        for (int i = 0; i < qs.n; i++) {
            const fp4_qtensor *q = &qs.t[i];
            if (q->problem[0] || q->rows <= 0 || q->rank < 1 || q->dims[q->rank - 1] <= 0) {
                float one;
                if (q->problem[0] && fp4_quant_read(src, q, 0, 0, &one) == FP4_OK) abort();
                continue;
            }
            int64_t n = q->rows * q->dims[q->rank - 1];
            float *out = malloc((size_t)n * sizeof *out);
            if (out) {
                (void)fp4_quant_read(src, q, 0, q->rows, out);
                free(out);
            }
        }
        fp4_tensor_desc *list = NULL;
        int n = 0, *qidx = NULL;
        if (fp4_source_select(src, NULL, 0, &list, &n) == FP4_OK) {
            if (qs.n > 0 && fp4_quant_fold(&qs, list, &n, &qidx) == FP4_OK) free(qidx);
            fp4_tensor_desc_free_list(list, n);
        }
        fp4_qset_free(&qs);
    }
    fp4_source_close(src);
    return 0;
}
