/* backend.h — one interface for the CPU (OpenMP) and CUDA backends: stream the rows of one
 * tensor through several configs at once and get their metrics. Commands never see which
 * backend runs. */
#ifndef FP4_BACKEND_H
#define FP4_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "base/status.h"

typedef enum fp4_device { FP4_DEVICE_CPU = 0, FP4_DEVICE_CUDA, FP4_DEVICE_AUTO } fp4_device;

typedef struct fp4_backend fp4_backend;

/* Open a backend. threads: OpenMP threads for the CPU (0 = all cores). FP4_DEVICE_CUDA in a
 * build without CUDA or with no GPU: FP4_ERR_DEVICE with a detail (never a silent fall-back).
 * FP4_DEVICE_AUTO picks CUDA when a GPU is present, else the CPU. */
fp4_status fp4_backend_open(fp4_device dev, int threads, fp4_backend **out);
void fp4_backend_close(fp4_backend *be);

/* The GPU a CUDA backend opened later runs on (default 0; under mpirun world.c gives each rank
 * its local rank modulo the GPUs). No CUDA call; a no-op in a build without CUDA. */
void fp4_cuda_backend_set_device(int dev);
/* The GPU set by fp4_cuda_backend_set_device (0 by default). */
int fp4_cuda_backend_get_device(void);
/* For a program whose last CUDA work is the run: on, the close of a CUDA backend starts the
 * release of its GPU (cudaDeviceReset: the context's teardown, which the process's exit would
 * otherwise do, 0.1 s on the H100 host) on a thread of its own, while the program writes its
 * report; fp4_cuda_backend_release_join waits for it (call it before the program ends; a CUDA
 * backend opened meanwhile waits for it too). Never in the library: a reset destroys every
 * allocation and stream of the process's context, the caller's included. Off by default;
 * no-ops without CUDA. */
void fp4_cuda_backend_release_at_close(bool on);
void fp4_cuda_backend_release_join(void);

/* The CPUs this process may run on (its affinity mask; at least 1). */
int fp4_cpu_count(void);

/* Cap OpenMP's default thread count (OMP_NUM_THREADS, or libgomp's own default) at
 * fp4_cpu_count(): an environment asking for 100000 threads would otherwise make thread
 * creation fail (libgomp then exits 1 or crashes). An explicit --threads N is not touched.
 * Called once by main before any parallel region. */
void fp4_threads_cap_default(void);
const char *fp4_backend_name(const fp4_backend *be); /* "cpu" or "cuda" */

/* One tensor through ncfg configs. Usage per tensor:
 *   fp4_analysis_begin(be, cfgs, ncfg, n_rows, row_len, &an);
 *   if (fp4_analysis_needs_amax(an)) for each slab: fp4_analysis_amax(an, rows, nrows);
 *   for each slab, in order: fp4_analysis_feed(an, rows, nrows);
 *   fp4_analysis_end(an, metrics);    metrics[ncfg], finished (fp4_metrics_finish applied)
 * Slabs are consecutive whole rows, row-major, row stride row_len; with any weight_2d config
 * every slab but the last holds a multiple of 16 rows. Results do not depend on the slab split
 * or the thread count (see fp4_quantize_rows). The configs array must outlive the analysis. */
typedef struct fp4_analysis fp4_analysis;
fp4_status fp4_analysis_begin(fp4_backend *be, const fp4_qconfig *cfgs, int ncfg,
                              int64_t n_rows, int64_t row_len, fp4_analysis **out);
bool fp4_analysis_needs_amax(const fp4_analysis *an);
fp4_status fp4_analysis_amax(fp4_analysis *an, const float *rows, int64_t nrows);
fp4_status fp4_analysis_feed(fp4_analysis *an, const float *rows, int64_t nrows);
/* The same for nrows rows that are all +0.0 (a source's never-written storage whose fill
 * value is zero): the results equal feeding those rows, but a backend may account for them
 * without touching each value (a 4 TiB tensor with 1 MiB stored is analysed in seconds).
 * The amax pass needs no values: zeros leave every amax as it is. The same order checks. */
fp4_status fp4_analysis_amax_zero(fp4_analysis *an, int64_t nrows);
fp4_status fp4_analysis_feed_zero(fp4_analysis *an, int64_t nrows);
fp4_status fp4_analysis_end(fp4_analysis *an, fp4_metrics *out);
/* Free without results (error paths). */
void fp4_analysis_abort(fp4_analysis *an);

/* A hint: rows handed to analyses of `be` from [p, p + bytes) are not changed until the
 * analysis they were handed to has ended (fp4_analysis_end or _abort), so the backend may copy
 * them later, straight from there (CUDA: the range is pinned with cudaHostRegister at its first
 * use, and copied without staging). Unregister before the memory is freed. Results never
 * depend on it; no effect on the CPU backend. Up to FP4_HOST_REGS ranges at a time (the kept
 * rows of the tensor analysed and of the one read ahead); a further one replaces the oldest,
 * registering a range again is a no-op. */
#define FP4_HOST_REGS 2
void fp4_backend_host_register(fp4_backend *be, void *p, size_t bytes);
/* Whether registering does anything on this backend (CUDA: it pins). False for NULL. */
bool fp4_backend_pins_host(const fp4_backend *be);
void fp4_backend_host_unregister(fp4_backend *be, void *p);

/* Stored 16-bit words in place of fp32 rows (host byte order; SPEC §8): IEEE f16 and bf16
 * (sign 15, exponent 7..14, mantissa 0..6, bias 127), widened exactly as io/widen.h widens
 * them. The CUDA backend uploads the words (half the bytes of fp32) and widens them on the
 * device; a backend that does not take them itself widens them on the host first. */
typedef enum fp4_words { FP4_WORDS_F16 = 1, FP4_WORDS_BF16 = 2 } fp4_words;

/* Whether `be` takes words of kind w itself (then a caller reading a tensor stored so does
 * better to hand it the stored words than fp32). */
bool fp4_backend_takes_words(const fp4_backend *be, fp4_words w);

/* fp4_analysis_amax / fp4_analysis_feed on nrows rows of row_len words of kind w: the same
 * protocol, the same results as the fp32 rows the words widen to (bit for bit). FP4_ERR_USAGE
 * for an unknown kind; FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_analysis_amax_words(fp4_analysis *an, const void *words, fp4_words w,
                                   int64_t nrows);
fp4_status fp4_analysis_feed_words(fp4_analysis *an, const void *words, fp4_words w,
                                   int64_t nrows);

/* A tensor in device memory (CUDA), analysed where it lies: `data` a device pointer of the GPU
 * the backend runs on, elements of kind w (0: fp32, else an fp4_words kind), dims and strides
 * (in elements, any sign; a view that reaches only valid memory: io/memsrc.h's checks) of a
 * tensor of rank <= 8, rows along `axis` as fp4_layout_of (run/driver.h) makes them (the
 * analysis was begun with that n_rows and row_len). All the backend's device work for it is
 * ordered on `stream` (a cudaStream_t; NULL the legacy default stream), after what the caller
 * queued there; nothing is copied to the host but the configurations the kernels do not
 * cover (then each slab of rows, as the host reference needs them). */
typedef struct fp4_device_view {
    const void *data;
    int w;
    int rank, axis;
    int64_t dims[8], strides[8];
    void *stream;
} fp4_device_view;

/* Both passes of an analysis (fp4_analysis_begin, nothing fed yet) over the whole tensor of
 * v: then fp4_analysis_end. FP4_ERR_DEVICE on a backend that cannot read device memory (the
 * CPU's) or when a CUDA call fails; the results are those of feeding the same values from
 * the host, bit for bit. *host_bytes (may be NULL): the bytes copied to the host for
 * configurations the kernels lack (0 when they cover every one). */
fp4_status fp4_analysis_device(fp4_analysis *an, const fp4_device_view *v, int64_t *host_bytes);

/* ---- an already-quantized export's sums on the device (SPEC §11: audit --device) ----------
 * One slab of a tensor of an export: its stored bytes, its decodes (base/common.h fp4c_qdec)
 * and the source values of its rows; the backend decodes every element as fp4c_qdec_value
 * does and returns the audit's per-segment fp64 sums (common.h FP4C_AS_*, the order
 * run/audit.c takes them on the CPU), so the report is the same bit for bit. */
typedef struct fp4_audit_slab {
    const fp4c_qdec *dec[3];  /* declared; the other global-scale direction and the other
                                 scale layout (NULL: not tried, their sums 0) */
    int64_t tensor;           /* the caller's number of the tensor: the stored bytes are
                                 uploaded when it changes, kept for the next slabs */
    const uint8_t *packed, *scales; /* the whole tensor's stored bytes (host) */
    int64_t packed_bytes, scale_bytes;
    float global;             /* the per-tensor scale (1 for MXFP4) */
    int64_t row0, nrows;      /* the slab's logical rows */
    const float *x;           /* nrows x K source values, row-major */
    double *seg;              /* out: FP4C_AS_N doubles per segment of FP4C_AUDIT_SEG
                                 elements of a row, in (row, segment) order */
} fp4_audit_slab;

/* Whether `be` computes fp4_backend_audit_sums (CUDA); false for the CPU backend and NULL. */
bool fp4_backend_audits(const fp4_backend *be);
/* The sums of one slab (see fp4_audit_slab). FP4_ERR_USAGE on a backend that does not
 * audit; FP4_ERR_DEVICE on a CUDA failure; FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_backend_audit_sums(fp4_backend *be, const fp4_audit_slab *slab);

#endif
