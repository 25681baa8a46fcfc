/* verdict.h — the verdict of an analysis run (SPEC §9 "verdict"), computed apart from how it
 * is shown: the tensors ranked by the run's --rank-by, and the config with the highest pooled
 * SQNR with its runner-up. The JSON report (report.c) and the human table use the same. */
#ifndef FP4_REPORT_VERDICT_H
#define FP4_REPORT_VERDICT_H

#include <stdbool.h>

#include "base/status.h"
#include "num/metrics.h"
#include "run/driver.h"

/* One tensor of the ranking: t its index in run->tensors, its best and worst config by SQNR
 * (status ok and finite only; indices into run->cfgs), their gap in dB, the best config's SQNR
 * and delta. ok is false when no config has a finite SQNR (then the rest is unset). */
typedef struct fp4_verdict_row {
    int t, best, worst;
    bool ok;
    double gap_db, best_db, delta;
    /* the best config's recipe statistics (SPEC §5.1; NaN where not computed): underflows_pct,
     * sqnr_nonamax_db, max_abs_err / tensor_amax, rel_err_percentiles.p99 */
    double underflows_pct, sqnr_na_db, maxerr_rel, rel_err_p99;
    /* the tensor's keep score and whether it is kept (fp4_verdict_keep; score NaN when keep
     * was not judged: no config) */
    double keep_score;
    bool kept;
} fp4_verdict_row;

/* Whether m's SQNR counts for the verdict: status ok and finite. */
bool fp4_verdict_sqnr_ok(const fp4_metrics *m);

/* Whether the ranking is by the keep score (SPEC §9): --rank-by gap (the default) with every
 * finite gap equal (one config, configs giving the same values, or all gaps tied), where the
 * gap ranks nothing. */
bool fp4_verdict_by_keep(const fp4_run *run);

/* Every tensor's row, ordered by run->config->rank_by (by the keep score, largest first, when
 * fp4_verdict_by_keep) (gap: largest first; sqnr: lowest best
 * first; delta: largest |delta| first; underflow: largest underflows_pct first; sqnr-nonamax:
 * lowest first; maxerr: largest max_abs_err / tensor_amax first; relerr: largest
 * rel_err_percentiles.p99 first; a NaN key after the rest);
 * ties by the other keys in the order gap, sqnr, delta,
 * then by tensor order; tensors without a finite SQNR last, in tensor order. malloc'd,
 * run->ntensors entries; NULL when out of memory or there are no tensors. */
fp4_verdict_row *fp4_verdict_rank(const fp4_run *run);

/* The config with the highest pooled SQNR (-1 when none is finite; ties: the first in config
 * order), and in *runner the best config whose dequantized values differ from the winner's
 * (-1 when none has a finite SQNR). */
int fp4_verdict_winner(const fp4_run *run, int *runner);

/* Whether config c is another name for the winner w's quantizer (c != w, the same dequantized
 * values: fp4_qconfig_same_values). */
bool fp4_verdict_same(const fp4_run *run, int w, int c);

/* The verdict's tolerance (SPEC §9 "Verdict"): configurations whose pooled SQNRs differ by less
 * than FP4_VERDICT_TIE_DB dB are a tie, not a win (0.05 dB: 1.2 % of the error energy). */
#define FP4_VERDICT_TIE_DB 0.05

/* Whether the winner w and its runner-up r tie: both finite, w - r < FP4_VERDICT_TIE_DB. False
 * when either is -1. */
bool fp4_verdict_tie(const fp4_run *run, int w, int r);

/* ---- which tensors stay in high precision (SPEC §9 "Keep in high precision") ---------------
 * Under one config (the recipe format: plain E2M1, full grid, RTNE, without RHT, under NVFP4
 * scales, else MXFP4; without one, the plain config with the highest pooled SQNR; else the
 * winner), each tensor's flushed share f (non-zero inputs quantized to +-0 over non-zero
 * inputs: (hist[0] + hist[8] - zero) / (elements - zero), clamped to [0, 1]), SQNR s and
 * non-amax SQNR a (sqnr_nonamax_db, SPEC §5.1) are compared with the run's typical tensor by
 * modified z-scores (Iglewicz & Hoaglin):
 *   z_f = 0.6745 (f - median f) / max(MAD f, FP4_KEEP_MAD_FLUSHED)
 *   z_s = 0.6745 (median s - s) / max(MAD s, FP4_KEEP_MAD_SQNR_DB)
 *   z_a = 0.6745 (median a - a) / max(MAD a, FP4_KEEP_MAD_SQNR_DB)
 * score = max(z_f, z_s, z_a) (a tensor without a finite value: that z is 0); `by` names the
 * first of z_f, z_s, z_a above FP4_KEEP_Z, else the largest (equal: in that order); the tensors with score > FP4_KEEP_Z are kept, ranked by score (ties: tensor
 * order). Fewer than FP4_KEEP_MIN_TENSORS tensors: nothing is kept (no typical tensor to
 * compare with). */
#define FP4_KEEP_Z 3.5
#define FP4_KEEP_MAD_FLUSHED 0.005
#define FP4_KEEP_MAD_SQNR_DB 0.1
#define FP4_KEEP_MIN_TENSORS 4

/* which z-score decided a tensor's keep score */
typedef enum fp4_keep_by {
    FP4_KEEP_BY_FLUSHED = 0,
    FP4_KEEP_BY_SQNR = 1,
    FP4_KEEP_BY_SQNR_NONAMAX = 2,
} fp4_keep_by;

/* "flushed", "sqnr", "sqnr_nonamax" (the JSON's `by`) */
const char *fp4_keep_by_name(fp4_keep_by by);
/* "flushed", "SQNR", "non-amax" (the tables' reason words: the keep list's "z 35.7 (non-amax)",
 * audit's "KEEP (non-amax)") */
const char *fp4_keep_by_word(fp4_keep_by by);

/* The keep score of one tensor's three modified z-scores (see above; a z of a value that is not
 * finite passed as 0): max(z_flushed, z_sqnr, z_sqnr_na), and in *by the first of them above
 * FP4_KEEP_Z, else the largest (equal: in that order). The tensor is kept when the score is
 * > FP4_KEEP_Z. The analyses' keep list (fp4_verdict_keep) and audit's table (SPEC §11) both
 * use it. */
double fp4_keep_score(double z_flushed, double z_sqnr, double z_sqnr_na, fp4_keep_by *by);

typedef struct fp4_keep_row {
    int t;                  /* index in run->tensors */
    double flushed;         /* flushed share in [0, 1]; NaN when the tensor has no non-zero input */
    double sqnr_db;         /* NaN when not finite */
    double sqnr_na_db;      /* sqnr_nonamax_db; NaN when not finite or not computed */
    double z_flushed, z_sqnr, z_sqnr_na, score;
    bool keep;
    fp4_keep_by by;         /* the z-score that tells why (see above) */
} fp4_keep_row;

typedef struct fp4_keep {
    int cfg;                /* the config it is computed under; -1: none (then nothing else set) */
    bool recipe;            /* cfg is a recipe format: plain E2M1 under NVFP4 (else MXFP4) scales */
    fp4_keep_row *rows;     /* run->ntensors rows, by score, highest first */
    int n, nkeep;           /* rows; kept ones (the first nkeep rows) */
    double median_flushed, mad_flushed, median_sqnr_db, mad_sqnr_db;
    double median_sqnr_na_db, mad_sqnr_na_db; /* NaN when no tensor has a non-amax SQNR */
    /* pooled over every tensor under cfg, then with the kept tensors exact (their error 0,
     * their signal and inputs still counted): SQNR in dB (NaN when not finite) and the
     * flushed share */
    double pooled_sqnr_db, pooled_sqnr_kept_db, pooled_flushed, pooled_flushed_kept;
} fp4_keep;

/* The flushed share of m (see above); NaN when m has no non-zero input. */
double fp4_flushed_share(const fp4_metrics *m);

/* Compute *out for run (every field; out->rows malloc'd). FP4_ERR_INTERNAL when out of memory.
 * Free with fp4_keep_free. */
fp4_status fp4_verdict_keep(const fp4_run *run, fp4_keep *out);
void fp4_keep_free(fp4_keep *k);

/* Append to list (*n entries, strdup'd) the module of tensor `name` and, when its last
 * component is in a fused group (q_proj/k_proj/v_proj, gate_proj/up_proj, MoE experts w1/w3:
 * what vLLM fuses and quantizes all or none of), the group's other modules that the run has
 * (analysed or skipped), in group order; each once. False when out of memory. */
bool fp4_verdict_fused(const fp4_run *run, const char *name, char ***list, int *n);

/* The exclude list of --emit-exclude (SPEC §9 "Keep in high precision"), ready to paste:
 * format FP4_EMIT_MODELOPT gives {"exclude_modules": [...]} (JSON), FP4_EMIT_LLM_COMPRESSOR an
 * "ignore:" YAML block of double-quoted names. The modules (run/recipe.h fp4_recipe_module),
 * each once, in this order: the Linear-like weights left out as kept in high precision (output
 * heads and MoE routers by recipe, and what the checkpoint's own exclude list names), then the
 * verdict's tensors to keep by their score, each with its fused partners (fp4_verdict_fused).
 * malloc'd text ending in a newline; NULL when out of
 * memory (fp4_error set). */
char *fp4_verdict_exclude_text(const fp4_run *run, int format);

#endif
