/* fuzz_merge.c — libFuzzer target over what `merge` and `compare` read from other machines:
 * partial reports (report/merge.c) and reports (report/compare.c). The input is split at each
 * form feed line ("\n\f\n") into up to 8 texts; they are merged as parts named p0.json...
 * (every check: schema, shard, fingerprint, timing, positions, the exact sums re-rendered,
 * gemm layers and audit tensors recomputed), the first two compared, and each text's parse cost estimated (the memory
 * bound of fp4_report_file_read_budget: never negative, at least its length). Seeds
 * (seeds/merge/): real parts of small sqnr, rht --rounding sr, gemm and audit runs (one with a
 * tensor only another layout fits), each run split in two with --shard 0/2 and 1/2 and the two
 * parts joined by a form-feed line, made by scripts/make_merge_seeds.sh from the current build
 * (it checks that `merge` accepts each pair; src/tests/cli/fuzz_merge_seeds.sh fails on a stale
 * seed: rerun the script when reports change). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "cmd/options.h"
#include "report/compare.h"
#include "report/merge.h"

#define FZ_MAX_PARTS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    if (memchr(buf, '\0', size)) { /* fp4_report_file_read stops at a NUL: never a text */
        free(buf);
        return 0;
    }
    char *texts[FZ_MAX_PARTS];
    int n = 0;
    char *s = buf;
    while (n < FZ_MAX_PARTS) {
        texts[n++] = s;
        char *sep = strstr(s, "\n\f\n");
        if (!sep) break;
        *sep = '\0';
        s = sep + 3;
    }
    for (int i = 0; i < n; i++) {
        int64_t c = fp4_report_parse_cost(texts[i], strlen(texts[i]));
        if (c < (int64_t)strlen(texts[i])) abort();
    }
    static const char *const names[FZ_MAX_PARTS] = {"p0.json", "p1.json", "p2.json", "p3.json",
                                                    "p4.json", "p5.json", "p6.json", "p7.json"};
    fp4_merge_result res;
    if (fp4_merge_reports((const char *const *)texts, names, n, "merged.json", NULL,
                          fp4_options_config_of_argv, &res) == FP4_OK) {
        if (!res.text || res.nerrors < 0 || res.nunits < 0) abort();
    }
    free(res.text);
    fp4_error_clear();
    if (n >= 2) {
        fp4_compare_opts o = fp4_compare_opts_default();
        fp4_compare_result r;
        fp4_compare_texts(texts[0], "base.json", texts[1], "new.json", &o, &r);
        fp4_compare_result_free(&r);
        fp4_error_clear();
    }
    free(buf);
    return 0;
}
