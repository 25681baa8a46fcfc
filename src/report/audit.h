/* report/audit.h — the audit report (SPEC §11): the JSON document (schema fp4diag.audit/1,
 * schema/audit.schema.json) and the table, worst tensor first, from run/audit.h's results. */
#ifndef FP4_REPORT_AUDIT_H
#define FP4_REPORT_AUDIT_H

#include <stdio.h>

#include "run/audit.h"

struct cJSON;

/* The report's "pooled" object from the pooled sums (export and requant: [0] over every
 * element, [1] over the non-amax ones), code histograms (export and requant: the sums of the
 * pooled tensors') and counts (merge rebuilds it so from the parts' exact sums and shown
 * histograms, bit for bit). NULL when out of memory. */
struct cJSON *fp4_report_audit_pooled_json(int tensors, const fp4_audit_sums ex[2],
                                           const fp4_audit_sums rq[2], const int64_t ex_hist[16],
                                           const int64_t rq_hist[16], int64_t nonnearest,
                                           int64_t elements, int64_t scale_match,
                                           int64_t scale_bytes);

/* The JSON text (malloc'd; NULL when out of memory). argv: the command line as given. With
 * --shard (a->shard.count > 0) a "shard" object: index, count, selected, assigned (positions),
 * tensors [{index, export and requant [xx, ee, xq] as hex floats, export_nonamax and
 * requant_nonamax the same over the non-amax elements, elements, nonnearest, scale_match,
 * scale_bytes, pooled}], errors (positions), fingerprint. */
char *fp4_report_audit_json(int argc, char **argv, const fp4_audit *a);

/* The table: one line per tensor audited, lowest export SQNR first, the pooled line, the
 * findings (a layout only another convention makes sane, per-tensor scales the rule does not
 * give, special scale bytes) and the errors. */
void fp4_report_audit_table(FILE *out, const fp4_audit *a);

#endif
