/* api/impl.h — what the public API's implementation shares inside the project: the
 * configuration handle. api/api.c implements include/fp4diag.h on the run and the report;
 * cmd/libconfig.c fills an fp4d_config from the CLI's own option strings (the program's
 * parser, cmd/options.c: the layer above api/). */
#ifndef FP4_API_IMPL_H
#define FP4_API_IMPL_H

#include "fp4diag.h"

#include "base/status.h"
#include "run/config.h"

struct fp4d_config {
    fp4_run_config cfg; /* resolved (fp4_run_config_finish); its string fields are unused */
    char **strings;     /* the option strings parsed (owned; the config may point into them) */
    int nstrings;
    int ncfg;           /* qconfigs it selects */
};

/* fp4_status -> fp4d_status (the same values). */
fp4d_status fp4_api_status(fp4_status st);

#endif
