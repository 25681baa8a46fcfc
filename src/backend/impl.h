/* backend_impl.h — the backend vtable a backend (CPU, CUDA) plugs into, shared by backend.c
 * and the backends; the per-unit CPU engine they drive is engine/engine.h. Not a public
 * interface. */
#ifndef FP4_BACKEND_IMPL_H
#define FP4_BACKEND_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/common.h"
#include "engine/engine.h"
#include "num/metrics.h"
#include "num/quant.h"

/* ---- the backend vtable ------------------------------------------------------------------ */
typedef struct fp4_backend_ops {
    const char *name;
    void (*close)(fp4_backend *be);
    /* an->be, cfgs, ncfg, n_rows, row_len and needs_amax are set before begin is called */
    fp4_status (*begin)(fp4_analysis *an);
    /* The two passes on nrows rows: fp32 values (w == 0) or stored words of kind w (an
     * fp4_words), the latter only of a kind takes_words accepts (backend.c widens the rest) */
    fp4_status (*amax)(fp4_analysis *an, const void *rows, int w, int64_t nrows);
    fp4_status (*feed)(fp4_analysis *an, const void *rows, int w, int64_t nrows);
    /* Optional: nrows rows of +0.0 (never-written storage) without a buffer; backend.c
     * feeds a zero buffer through `feed` when absent */
    fp4_status (*feed_zero)(fp4_analysis *an, int64_t nrows);
    fp4_status (*end)(fp4_analysis *an, fp4_metrics *out); /* unfinished metrics */
    /* Optional: words this backend takes itself in amax/feed (backend.h fp4_words); without,
     * backend.c widens every kind on the host and passes fp32 rows. */
    bool (*takes_words)(const fp4_backend *be, fp4_words w);
    /* Optional: fp4_backend_host_register / _unregister. */
    void (*host_register)(fp4_backend *be, void *p, size_t bytes);
    void (*host_unregister)(fp4_backend *be, void *p);
    /* Optional: fp4_analysis_device (both passes over a device tensor; sets rows_amax and
     * rows_fed); without, FP4_ERR_DEVICE */
    fp4_status (*device)(fp4_analysis *an, const fp4_device_view *v, int64_t *host_bytes);
    void (*abort)(fp4_analysis *an);                       /* free an->impl */
    /* Optional: fp4_backend_audit_sums (backend.h); absent on a backend that does not audit */
    fp4_status (*audit_sums)(fp4_backend *be, const fp4_audit_slab *slab);
} fp4_backend_ops;

struct fp4_backend {
    const fp4_backend_ops *ops;
    int threads; /* resolved, >= 1 */
    void *impl;
};

struct fp4_analysis {
    fp4_backend *be;
    const fp4_qconfig *cfgs;
    int ncfg;
    int64_t n_rows, row_len;
    int64_t rows_amax, rows_fed; /* progress, for order checks */
    bool needs_amax;
    void *impl;
};

/* ---- the registry (registry.c: the one file that names the backends) --------------------
 * One row per device, in the order FP4_DEVICE_AUTO tries them. open: threads for the CPU (0 =
 * all cores); asked true when the device was named (--device cuda), false when AUTO probes it;
 * NULL when this build lacks the backend, `absent` then being the FP4_ERR_DEVICE message. */
typedef struct fp4_backend_entry {
    fp4_device dev;
    fp4_status (*open)(int threads, bool asked, fp4_backend **out);
    const char *absent;
} fp4_backend_entry;
extern const fp4_backend_entry fp4_backends[];
extern const int fp4_nbackends;

/* Each backend's own open, called only from registry.c. */
/* The CPU (OpenMP) engine of cpu.c. */
fp4_status fp4_cpu_backend_open(int threads, fp4_backend **out);

#ifdef FP4_HAVE_CUDA_BACKEND
/* The CUDA engine (kernels/), when a build provides it: FP4_ERR_DEVICE "CUDA requested but
 * ..." when no GPU or driver is usable. early: CUDA's whole start-up may run on the backend's
 * start-up thread, and that error come at the first slab instead (--device cuda); false: the
 * GPUs are counted before it returns (--device auto chooses by it). */
fp4_status fp4_cuda_backend_open(bool early, fp4_backend **out);
/* A plan as the kernels see it (kernels.h fp4k_cfg); rht_n 0 without RHT. */
struct fp4k_cfg;
void fp4_cuda_cfg_of(const fp4_qplan *p, struct fp4k_cfg *out);
#endif

#endif
