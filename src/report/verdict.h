/* verdict.h — the verdict of an analysis run (SPEC §9 "verdict"), computed apart from how it
 * is shown: the tensors ranked by the run's --rank-by, and the config with the highest pooled
 * SQNR with its runner-up. The JSON report (report.c) and the human table use the same. */
#ifndef FP4_REPORT_VERDICT_H
#define FP4_REPORT_VERDICT_H

#include <stdbool.h>

#include "num/metrics.h"
#include "run/driver.h"

/* One tensor of the ranking: t its index in run->tensors, its best and worst config by SQNR
 * (status ok and finite only; indices into run->cfgs), their gap in dB, the best config's SQNR
 * and delta. ok is false when no config has a finite SQNR (then the rest is unset). */
typedef struct fp4_verdict_row {
    int t, best, worst;
    bool ok;
    double gap_db, best_db, delta;
} fp4_verdict_row;

/* Whether m's SQNR counts for the verdict: status ok and finite. */
bool fp4_verdict_sqnr_ok(const fp4_metrics *m);

/* Every tensor's row, ordered by run->config->rank_by (gap: largest first; sqnr: lowest best
 * first; delta: largest |delta| first); ties by the other keys in the order gap, sqnr, delta,
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

#endif
