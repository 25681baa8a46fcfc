/* report/audit.h — the audit report (SPEC §11): the JSON document (schema fp4diag.audit/1,
 * schema/audit.schema.json) and the table, worst tensor first, from run/audit.h's results. */
#ifndef FP4_REPORT_AUDIT_H
#define FP4_REPORT_AUDIT_H

#include <stdio.h>

#include "run/audit.h"

/* The JSON text (malloc'd; NULL when out of memory). argv: the command line as given. */
char *fp4_report_audit_json(int argc, char **argv, const fp4_audit *a);

/* The table: one line per tensor audited, lowest export SQNR first, the pooled line, the
 * findings (a layout only another convention makes sane, per-tensor scales the rule does not
 * give, special scale bytes) and the errors. */
void fp4_report_audit_table(FILE *out, const fp4_audit *a);

#endif
