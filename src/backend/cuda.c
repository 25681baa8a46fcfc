/* backend_cuda.c — the host side of the CUDA engine behind backend.h: CUDA started on a thread
 * of its own at open (context and staging buffers, while the caller reads its first tensor);
 * pinned staging buffers, the stream, events and per-config device buffers reused across slabs
 * and tensors (an allocation of pinned memory or a cudaFree costs a synchronisation and
 * milliseconds: per tensor of a many-tensor checkpoint it added up), two slab slots so that the
 * caller's next read, the H2D copy and the kernels overlap; stored f16/bf16 words uploaded as
 * they are and widened on the device; per-chunk fp64 partials added on the device into each
 * config's running sums in (row, chunk) order, as the CPU adds them (fp4k_ordered_sums; only
 * those sums and the counts come back, at a tensor's end). Compiled always; the engine exists
 * only with FP4_HAVE_CUDA (backend.c reports its absence). */
#include "backend/impl.h"

#include <stddef.h>

#include "kernels.h"
#include "num/metrics.h"

/* fp4_fsums is laid out as the kernels' per-chunk sums (kernels.h FP4K_S_*, SPEC §7): the
 * partials this file copies back are read as fp4_fsums. Checked in every build. */
_Static_assert(offsetof(fp4_fsums, x2) == FP4K_S_X2 * sizeof(double), "FP4K_S_X2");
_Static_assert(offsetof(fp4_fsums, err2) == FP4K_S_ERR2 * sizeof(double), "FP4K_S_ERR2");
_Static_assert(offsetof(fp4_fsums, xqx) == FP4K_S_XQX * sizeof(double), "FP4K_S_XQX");
_Static_assert(offsetof(fp4_fsums, xq2) == FP4K_S_XQ2 * sizeof(double), "FP4K_S_XQ2");
_Static_assert(offsetof(fp4_fsums, serr) == FP4K_S_SIGNED * sizeof(double), "FP4K_S_SIGNED");
_Static_assert(offsetof(fp4_fsums, lerr) == FP4K_S_LEVEL0 * sizeof(double), "FP4K_S_LEVEL0");
_Static_assert(sizeof(fp4_fsums) == FP4K_NSUMS * sizeof(double), "FP4K_NSUMS");
/* fp4_ssums likewise, as fp4k_stats's per-chunk sums (FP4K_T_*); its histograms' sizes */
_Static_assert(offsetof(fp4_ssums, x2_na) == FP4K_T_X2NA * sizeof(double), "FP4K_T_X2NA");
_Static_assert(offsetof(fp4_ssums, err2_na) == FP4K_T_ERR2NA * sizeof(double), "FP4K_T_ERR2NA");
_Static_assert(offsetof(fp4_ssums, fos_err2) == FP4K_T_FOS * sizeof(double), "FP4K_T_FOS");
_Static_assert(offsetof(fp4_ssums, sp_flush) == FP4K_T_SP_FLUSH * sizeof(double), "SP_FLUSH");
_Static_assert(offsetof(fp4_ssums, sp_scale) == FP4K_T_SP_SCALE * sizeof(double), "SP_SCALE");
_Static_assert(offsetof(fp4_ssums, sp_grid) == FP4K_T_SP_GRID * sizeof(double), "SP_GRID");
_Static_assert(offsetof(fp4_ssums, sp_cross) == FP4K_T_SP_CROSS * sizeof(double), "SP_CROSS");
_Static_assert(sizeof(fp4_ssums) == FP4K_NTSUMS * sizeof(double), "FP4K_NTSUMS");
_Static_assert(FP4K_SC_AMAX0 - FP4K_SC_SCALE0 == 256, "scale_hist");
_Static_assert(FP4K_SC_RERR0 - FP4K_SC_AMAX0 == FP4_AMAX_BINS, "FP4_AMAX_BINS");
_Static_assert(FP4K_NSCOUNTS - FP4K_SC_RERR0 == FP4_RERR_BINS, "FP4_RERR_BINS");

#ifdef FP4_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/widen.h"
#include "base/trace.h"

#define NSLOT 2
/* Elements per staging slot made at start-up (the driver's slabs are about 8 MiB of fp32);
 * a larger slab grows them. */
#define STAGE_INIT_ELEMS ((int64_t)2 << 20)

/* Per config (by its index in the analysis; every analysis of a run has the same configs):
 * device buffers kept from tensor to tensor, grown when a tensor needs more. */
typedef struct cuda_keep {
    float *d_signs;       /* signs_cap floats */
    int signs_cap;
    float *d_amax;        /* 1 float */
    uint64_t *d_counts;   /* FP4K_NCOUNTS */
    uint64_t *d_scounts;  /* FP4K_NSCOUNTS: the recipe statistics' counts (fp4k_stats) */
    double *d_part[NSLOT];
    double *d_spart[NSLOT]; /* FP4K_NTSUMS per chunk: the recipe statistics' sums */
    int64_t part_cap;     /* chunks per slot */
    /* the tensor's ordered sums so far: FP4K_NSUMS, then FP4K_NTSUMS doubles, the partials
     * added in chunk order by fp4k_ordered_sums */
    double *d_acc;
} cuda_keep;

/* A range the caller keeps stable (fp4_backend_host_register). */
typedef struct cuda_reg {
    unsigned char *p; /* NULL: free */
    size_t bytes;
    int state;        /* 0: not yet pinned, 1: pinned, -1: pinning failed (staged) */
    unsigned age;     /* registration order */
} cuda_reg;

/* The backend: the GPU it runs on, the start-up thread, and what its analyses (one at a time)
 * share: the staging buffers, the stream and events, the per-config buffers. */
typedef struct cuda_be {
    int dev;
    pthread_t init_th;
    bool init_running;
    cudaError_t init_err;
    const char *init_what;
    bool init_nodev;          /* the start-up thread found no GPU (cudaGetDeviceCount) */
    bool check_devices;       /* the start-up thread counts the GPUs (open did not) */
    bool objs;                /* stream and events made */
    cudaStream_t stream;
    cudaEvent_t done[NSLOT];
    cuda_keep *keep;          /* [nkeep] */
    int nkeep;
    void *h_stage[NSLOT];     /* pinned: fp32 rows or 16-bit words */
    float *d_in[NSLOT];       /* fp32 rows on the device */
    uint16_t *d_words[NSLOT]; /* words on the device, before widening */
    int64_t cap;              /* elements per slot */
    /* the caller's stable ranges (fp4_backend_host_register), each pinned at its first use:
     * the kept rows of the tensor analysed and of the one read ahead */
    cuda_reg reg[FP4_HOST_REGS];
    unsigned reg_clock;       /* registrations so far: the oldest range is replaced */
    /* a tensor's fp32 rows on the device, widened once in its amax pass and quantized from
     * there in its second pass (rows the caller keeps stable: a registered range) */
    float *d_tensor;
    int64_t tensor_cap;       /* floats */
    /* the analyses' scratch, kept from tensor to tensor (a cudaFree synchronises the device):
     * weight_2d's tile amax, and RHT configs' rotated rows for fp4k_stats */
    float *d_tile;
    int64_t tile_cap;
    float *d_rot;
    int64_t rot_cap;          /* floats */
    /* pinned: what a tensor's plan and end read back (every config's amax; counts and sums),
     * copied in one go, then one wait (back_reserve) */
    unsigned char *h_back;
    size_t back_cap;          /* bytes */
    /* the audit (fp4_backend_audit_sums): the tensor's stored bytes, uploaded once per
     * tensor; its decodes; a slab's source values and per-segment sums */
    uint8_t *a_packed, *a_scales;
    int64_t a_packed_cap, a_scales_cap, a_tensor;
    bool a_loaded;
    fp4c_qdec *a_dec;         /* 3 */
    float *a_x;
    int64_t a_x_cap;          /* floats */
    double *a_seg;
    int64_t a_seg_cap;        /* doubles */
} cuda_be;

typedef struct cuda_cfg {
    fp4_qplan plan;
    fp4k_cfg kc;
    bool device;          /* false: the host reference runs it (geometry the kernel lacks) */
    int amax_src;         /* config whose amax this one shares (same rotation), or itself */
    cuda_keep *k;         /* the backend's buffers for this config index (make_ready) */
    fp4_metrics acc;      /* host configs: everything; device configs: nothing (the ordered
                           * sums are on the device, cuda_keep.d_acc; the counts too) */
} cuda_cfg;

typedef struct cuda_an {
    cuda_cfg *c;
    bool ready;           /* the CUDA objects below are set (at the first slab) */
    cudaStream_t stream;  /* the backend's (borrowed) */
    cudaEvent_t done[NSLOT]; /* the backend's (borrowed) */
    int slot;
    bool planned;
    float *h_wide;        /* host fp32 rows of a words slab, for configs run on the host */
    int64_t wide_cap;
    /* never-written rows (cuda_feed_zero, as cpu.c's cpu_feed_zero): [ncfg] the counts 16 / 1
     * zero rows add, measured once per tensor, and the counts the rows given that way add */
    fp4_metrics *zero16, *zero1, *zcnt;
    bool zero_moves;      /* zeros moved an fp64 sum (never expected): zero rows are fed */
    /* the amax pass's slabs uploaded into cb->d_tensor: host bytes [dt_host, + dt_bytes) of
     * words kind dt_w (0: fp32) are at d_tensor[0 ..); dt_off: no further slab goes there */
    const unsigned char *dt_host;
    int64_t dt_bytes;
    int dt_w;
    bool dt_off;
    /* a device tensor (fp4_analysis_device): its view, the first row of the slab the next
     * pass call takes, whether its rows lie in C order at data (read in place, else gathered),
     * and the bytes copied to the host for the host reference's configs */
    const fp4_device_view *dv;
    int64_t dv_row0;
    bool dv_rows;
    int64_t host_bytes;
    fp4k_osum *osum;      /* [2 * ncfg]: the slab's partials, added on the device */
    /* FP4DIAG_TRACE (seconds; 0 when off): the host's copies into staging, its waits on the
     * GPU (events, stream), pinning; bytes staged and bytes uploaded from pinned rows */
    double t_stage, t_sync, t_pin;
    int64_t b_staged, b_direct;
} cuda_an;

/* fp4_cuda_backend_release_at_close: the release thread, started by the close */
static bool g_release_at_close, g_release_running;
static pthread_t g_release_th;
static int g_release_dev;

static void *release_main(void *arg)
{
    (void)arg;
    if (cudaSetDevice(g_release_dev) == cudaSuccess) cudaDeviceReset();
    cudaGetLastError();
    fp4_trace("cuda: device released");
    return NULL;
}

void fp4_cuda_backend_release_at_close(bool on) { g_release_at_close = on; }

void fp4_cuda_backend_release_join(void)
{
    if (!g_release_running) return;
    pthread_join(g_release_th, NULL);
    g_release_running = false;
}

static fp4_status cuda_fail(cudaError_t e, const char *what)
{
    return fp4_error(FP4_ERR_DEVICE, "cuda: %s: %s", what, cudaGetErrorString(e));
}

#define CU(call, what)                                                                         \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) return cuda_fail(e_, what);                                     \
    } while (0)
#define KU(call, what) CU((cudaError_t)(call), what)

void fp4_cuda_cfg_of(const fp4_qplan *p, struct fp4k_cfg *o)
{
    memset(o, 0, sizeof *o);
    o->grid = p->grid;
    o->scale = (int)p->cfg.scale;
    o->block = p->block;
    o->rounding = (int)p->cfg.rounding;
    o->sr_bits = p->cfg.sr_bits;
    o->seed = p->cfg.seed;
    o->stream = p->cfg.stream;
    o->mx_rule = (int)p->cfg.mx_rule;
    o->weight_2d = p->cfg.weight_2d;
    o->rht_n = p->cfg.rht ? p->cfg.rht->n : 0;
    o->ts = p->ts;
    o->nv_sdec = p->nv_sdec;
    o->nv_m = p->nv_m;
    o->row_len = p->row_len;
    o->padded_len = p->padded_len;
    o->counted_len = p->counted_len;
    o->nv_m4 = p->nv_m4;
    o->fos = fp4_fos_applies(&p->cfg);
    o->split = fp4_split_applies(&p->cfg);
    o->tensor_amax = p->tensor_amax;
}

static void stage_free(cuda_be *cb)
{
    for (int s = 0; s < NSLOT; s++) {
        cudaFreeHost(cb->h_stage[s]);
        cudaFree(cb->d_in[s]);
        cudaFree(cb->d_words[s]);
        cb->h_stage[s] = NULL;
        cb->d_in[s] = NULL;
        cb->d_words[s] = NULL;
    }
    cb->cap = 0;
}

/* Staging for n elements per slot: pinned host bytes for fp32, device fp32 and words. */
static cudaError_t stage_alloc(cuda_be *cb, int64_t n, const char **what)
{
    cudaError_t e = cudaSuccess;
    for (int s = 0; s < NSLOT && e == cudaSuccess; s++) {
        *what = "pinned alloc";
        e = cudaHostAlloc(&cb->h_stage[s], (size_t)n * sizeof(float) + 16, cudaHostAllocDefault);
        if (e == cudaSuccess) {
            *what = "device alloc";
            e = cudaMalloc((void **)&cb->d_in[s], (size_t)n * sizeof(float) + 16);
        }
        if (e == cudaSuccess) e = cudaMalloc((void **)&cb->d_words[s], (size_t)n * 2 + 16);
    }
    if (e == cudaSuccess) cb->cap = n;
    return e;
}

/* cudaGetDeviceCount's failure (or no GPU) as --device cuda reports it. */
static fp4_status no_device_error(cudaError_t e)
{
    if (e == cudaSuccess || e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
        return fp4_error(FP4_ERR_DEVICE, "CUDA requested but no CUDA GPU/driver is "
                                         "available on this machine");
    return fp4_error(FP4_ERR_DEVICE, "CUDA requested but no usable GPU was found (%s)",
                     cudaGetErrorString(e));
}

/* The start-up thread: the context (the 0.2-0.5 s of a first CUDA call) and the staging
 * buffers, while the caller opens its input and reads the first slab. */
static void *cuda_init_main(void *arg)
{
    cuda_be *cb = arg;
    cb->init_what = "set device";
    fp4_trace("cuda: start-up thread");
    cudaError_t e = cudaSuccess;
    if (cb->check_devices) { /* the driver's start-up (cuInit): 0.1-0.2 s on the H200 host */
        int n = 0;
        cb->init_what = "device count";
        e = cudaGetDeviceCount(&n);
        if (e == cudaSuccess && n <= 0) e = cudaErrorNoDevice;
        cb->init_nodev = e != cudaSuccess;
        if (e == cudaSuccess && cb->dev >= n) cb->dev = 0;
        fp4_trace("cuda: %d devices", n);
        cb->init_what = "set device";
    }
    if (e == cudaSuccess) e = cudaSetDevice(cb->dev);
    fp4_trace("cuda: device set");
    if (e == cudaSuccess) {
        cb->init_what = "context";
        e = cudaFree(0);
        fp4_trace("cuda: context made");
    }
    if (e == cudaSuccess) e = stage_alloc(cb, STAGE_INIT_ELEMS, &cb->init_what);
    fp4_trace("cuda: staging allocated");
    if (e != cudaSuccess) cudaGetLastError();
    cb->init_err = e;
    return NULL;
}

/* Wait for the start-up thread (once) and make this thread use the backend's GPU. */
static fp4_status cuda_ready(cuda_be *cb)
{
    if (cb->init_running) {
        fp4_trace("cuda: waiting for the start-up thread");
        pthread_join(cb->init_th, NULL);
        cb->init_running = false;
        fp4_trace("cuda: start-up joined");
    }
    if (cb->init_nodev) return no_device_error(cb->init_err);
    if (cb->init_err != cudaSuccess) return cuda_fail(cb->init_err, cb->init_what);
    CU(cudaSetDevice(cb->dev), "set device");
    return FP4_OK;
}

static void cuda_host_unregister(fp4_backend *be, void *p);

/* The stream, events and per-config buffers (after the start-up thread is joined). */
static void keep_free(cuda_be *cb)
{
    if (cb->objs) cudaStreamSynchronize(cb->stream);
    for (int c = 0; c < cb->nkeep; c++) {
        cuda_keep *k = &cb->keep[c];
        cudaFree(k->d_signs);
        cudaFree(k->d_amax);
        cudaFree(k->d_counts);
        cudaFree(k->d_scounts);
        for (int s = 0; s < NSLOT; s++) {
            cudaFree(k->d_part[s]);
            cudaFree(k->d_spart[s]);
        }
        cudaFree(k->d_acc);
    }
    free(cb->keep);
    cb->keep = NULL;
    cb->nkeep = 0;
    if (cb->objs) {
        for (int s = 0; s < NSLOT; s++) cudaEventDestroy(cb->done[s]);
        cudaStreamDestroy(cb->stream);
        cb->objs = false;
    }
    cudaGetLastError();
}

static void cuda_close(fp4_backend *be)
{
    cuda_be *cb = be->impl;
    if (cb) {
        /* a run that failed closes its backend on the way out: its error is the one the
         * program prints, so what the close itself meets (a failed start) must not replace
         * or clear it */
        char kept[FP4_ERROR_MAX];
        snprintf(kept, sizeof kept, "%s", fp4_last_error());
        if (cuda_ready(cb) == FP4_OK) {
            for (int i = 0; i < FP4_HOST_REGS; i++)
                if (cb->reg[i].p) cuda_host_unregister(be, cb->reg[i].p);
            stage_free(cb);
            keep_free(cb);
            cudaFree(cb->d_tensor);
            cudaFree(cb->d_tile);
            cudaFree(cb->d_rot);
            cudaFreeHost(cb->h_back);
            cudaFree(cb->a_packed);
            cudaFree(cb->a_scales);
            cudaFree(cb->a_dec);
            cudaFree(cb->a_x);
            cudaFree(cb->a_seg);
            cudaGetLastError();
            fp4_trace("cuda: staging freed");
            if (g_release_at_close && !g_release_running) {
                g_release_dev = cb->dev;
                g_release_running =
                    pthread_create(&g_release_th, NULL, release_main, NULL) == 0;
            }
        }
        fp4_error(FP4_OK, "%s", kept);
        free(cb);
    }
    free(be);
}

static void cuda_host_unregister(fp4_backend *be, void *p)
{
    cuda_be *cb = be->impl;
    for (int i = 0; i < FP4_HOST_REGS; i++) {
        cuda_reg *r = &cb->reg[i];
        if (!r->p || r->p != p) continue;
        if (r->state == 1) {
            cudaHostUnregister(r->p);
            cudaGetLastError();
        }
        memset(r, 0, sizeof *r);
    }
}

static void cuda_host_register(fp4_backend *be, void *p, size_t bytes)
{
    cuda_be *cb = be->impl;
    unsigned char *const q = p;
    for (int i = 0; i < FP4_HOST_REGS; i++)
        if (cb->reg[i].p == q && cb->reg[i].bytes == bytes) return; /* already */
    /* a range overlapping this one would be pinned twice: dropped */
    for (int i = 0; i < FP4_HOST_REGS; i++) {
        const cuda_reg *r = &cb->reg[i];
        if (r->p && q < r->p + r->bytes && r->p < q + bytes) cuda_host_unregister(be, r->p);
    }
    cuda_reg *slot = &cb->reg[0]; /* a free one, else the oldest */
    for (int i = 1; i < FP4_HOST_REGS && slot->p; i++)
        if (!cb->reg[i].p || cb->reg[i].age < slot->age) slot = &cb->reg[i];
    if (slot->p) cuda_host_unregister(be, slot->p);
    *slot = (cuda_reg){.p = q, .bytes = bytes, .state = 0, .age = ++cb->reg_clock};
}

/* Whether [data, data + bytes) lies in a registered range, pinned (now, at its first use,
 * after CUDA started): then it is copied from there, with no staging. */
static bool in_pinned(cuda_be *cb, const void *data, size_t bytes)
{
    const unsigned char *d = data;
    for (int i = 0; i < FP4_HOST_REGS; i++) {
        cuda_reg *r = &cb->reg[i];
        if (!r->p || d < r->p || bytes > r->bytes || (size_t)(d - r->p) > r->bytes - bytes)
            continue;
        if (r->state == 0) {
            r->state = cudaHostRegister(r->p, r->bytes, cudaHostRegisterDefault) == cudaSuccess
                           ? 1
                           : -1;
            if (r->state < 0) cudaGetLastError(); /* staged as any other memory */
            fp4_trace("cuda: host register of %zu bytes: %s", r->bytes,
                      r->state > 0 ? "pinned" : "failed");
        }
        return r->state == 1;
    }
    return false;
}

/* Whether [data, data + bytes) lies in a registered range (pinned or not): memory the caller
 * keeps unchanged while the analysis runs (fp4_backend_host_register). */
static bool in_registered(const cuda_be *cb, const void *data, size_t bytes)
{
    const unsigned char *d = data;
    for (int i = 0; i < FP4_HOST_REGS; i++) {
        const cuda_reg *r = &cb->reg[i];
        if (r->p && d >= r->p && bytes <= r->bytes && (size_t)(d - r->p) <= r->bytes - bytes)
            return true;
    }
    return false;
}

static bool cuda_takes_words(const fp4_backend *be, fp4_words w)
{
    return w == FP4_WORDS_F16 || w == FP4_WORDS_BF16;
}

static void cuda_abort(fp4_analysis *an)
{
    cuda_an *ca = an->impl;
    if (!ca) return;
    free(ca->h_wide);
    free(ca->zero16);
    free(ca->zero1);
    free(ca->zcnt);
    free(ca->osum);
    if (!ca->ready) {
        free(ca->c);
        free(ca);
        an->impl = NULL;
        return;
    }
    /* the next analysis reuses the stream and the buffers: nothing of this one in flight */
    cudaStreamSynchronize(ca->stream); /* NULL: the legacy default stream */
    free(ca->c);
    free(ca);
    an->impl = NULL;
    fp4_trace("cuda: analysis objects freed");
}

/* No CUDA call here: the analysis is begun before its first slab is read, and CUDA may still
 * be starting (cuda_init_main); the device objects come with the first slab (make_ready). */
static fp4_status cuda_begin(fp4_analysis *an)
{
    cuda_an *ca = calloc(1, sizeof *ca);
    if (!ca) return fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
    an->impl = ca;
    ca->c = calloc((size_t)an->ncfg, sizeof *ca->c);
    ca->osum = calloc((size_t)an->ncfg * 2 + 1, sizeof *ca->osum);
    if (!ca->c || !ca->osum) return fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
    for (int c = 0; c < an->ncfg; c++) {
        cuda_cfg *cc = &ca->c[c];
        const fp4_qconfig *cfg = &an->cfgs[c];
        fp4_metrics_init(&cc->acc);
        cc->amax_src = c;
        for (int d = 0; d < c; d++)
            if (fp4_needs_tensor_amax(&an->cfgs[d]) && an->cfgs[d].rht == cfg->rht) {
                cc->amax_src = d;
                break;
            }
    }
    return FP4_OK;
}

/* The backend's stream and events, made once (after cuda_ready). */
static fp4_status objs_make(cuda_be *cb)
{
    if (cb->objs) return FP4_OK;
    CU(cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking), "stream");
    int s = 0;
    cudaError_t e = cudaSuccess;
    for (; s < NSLOT && e == cudaSuccess; s++)
        e = cudaEventCreateWithFlags(&cb->done[s], cudaEventDisableTiming);
    if (e != cudaSuccess) {
        for (int k = 0; k < s - 1; k++) cudaEventDestroy(cb->done[k]);
        cudaStreamDestroy(cb->stream);
        return cuda_fail(e, "event");
    }
    cb->objs = true;
    return FP4_OK;
}

static fp4_status make_ready(fp4_analysis *an)
{
    cuda_an *ca = an->impl;
    if (ca->ready) return FP4_OK;
    cuda_be *cb = an->be->impl;
    FP4_TRY(cuda_ready(cb));
    FP4_TRY(objs_make(cb));
    if (cb->nkeep < an->ncfg) {
        cuda_keep *k = realloc(cb->keep, (size_t)an->ncfg * sizeof *k);
        if (!k) return fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
        memset(k + cb->nkeep, 0, (size_t)(an->ncfg - cb->nkeep) * sizeof *k);
        cb->keep = k;
        cb->nkeep = an->ncfg;
    }
    /* a device tensor: every call on the caller's stream (NULL: the legacy default stream) */
    ca->stream = ca->dv ? (cudaStream_t)ca->dv->stream : cb->stream;
    for (int s = 0; s < NSLOT; s++) ca->done[s] = cb->done[s];
    ca->ready = true; /* from here cuda_abort waits for the stream */
    for (int c = 0; c < an->ncfg; c++) {
        cuda_cfg *cc = &ca->c[c];
        cuda_keep *k = cc->k = &cb->keep[c];
        const fp4_qconfig *cfg = &an->cfgs[c];
        if (!k->d_amax) CU(cudaMalloc((void **)&k->d_amax, sizeof(float)), "malloc");
        CU(cudaMemsetAsync(k->d_amax, 0, sizeof(float), ca->stream), "memset");
        if (!k->d_counts)
            CU(cudaMalloc((void **)&k->d_counts, FP4K_NCOUNTS * sizeof(uint64_t)), "malloc");
        CU(cudaMemsetAsync(k->d_counts, 0, FP4K_NCOUNTS * sizeof(uint64_t), ca->stream),
           "memset");
        if (!k->d_scounts)
            CU(cudaMalloc((void **)&k->d_scounts, FP4K_NSCOUNTS * sizeof(uint64_t)), "malloc");
        CU(cudaMemsetAsync(k->d_scounts, 0, FP4K_NSCOUNTS * sizeof(uint64_t), ca->stream),
           "memset");
        /* +0.0 everywhere: the host's sums started there too (fp4_metrics_init) */
        if (!k->d_acc)
            CU(cudaMalloc((void **)&k->d_acc, (FP4K_NSUMS + FP4K_NTSUMS) * sizeof(double)),
               "malloc");
        CU(cudaMemsetAsync(k->d_acc, 0, (FP4K_NSUMS + FP4K_NTSUMS) * sizeof(double),
                           ca->stream),
           "memset");
        if (cfg->rht) {
            if (k->signs_cap < cfg->rht->n) {
                cudaFree(k->d_signs);
                k->d_signs = NULL;
                k->signs_cap = 0;
                CU(cudaMalloc((void **)&k->d_signs, (size_t)cfg->rht->n * sizeof(float)),
                   "malloc");
                k->signs_cap = cfg->rht->n;
            }
            /* in stream order (the previous tensor's kernels are done: cuda_abort waited);
             * from pageable memory, staged by CUDA before the call returns */
            CU(cudaMemcpyAsync(k->d_signs, cfg->rht->s, (size_t)cfg->rht->n * sizeof(float),
                               cudaMemcpyHostToDevice, ca->stream),
               "signs");
        }
    }
    fp4_trace("cuda: analysis objects made");
    return FP4_OK;
}

/* Make room for nrows rows in both slots (the backend's staging, grown for a larger slab). */
static fp4_status ensure_rows(fp4_analysis *an, int64_t nrows)
{
    cuda_an *ca = an->impl;
    cuda_be *cb = an->be->impl;
    const int64_t n = nrows * an->row_len;
    if (n <= cb->cap) return FP4_OK;
    CU(cudaStreamSynchronize(ca->stream), "sync");
    stage_free(cb);
    const char *what = "";
    cudaError_t e = stage_alloc(cb, n, &what);
    if (e != cudaSuccess) {
        stage_free(cb);
        return cuda_fail(e, what);
    }
    return FP4_OK;
}

/* A device tensor's slab (rows dv_row0 .. + nrows) as fp32 rows on the device for slot s:
 * read in place (fp32 rows in C order, 16-byte aligned), else gathered by a kernel into the
 * slot's buffers (words: into d_words, widened into d_in), on the caller's stream. */
static fp4_status stage_device(fp4_analysis *an, int w, int64_t nrows, int s, const float **din)
{
    cuda_an *ca = an->impl;
    cuda_be *cb = an->be->impl;
    const fp4_device_view *v = ca->dv;
    const int64_t n = nrows * an->row_len, esz = w ? 2 : 4;
    const unsigned char *at =
        ca->dv_rows ? (const unsigned char *)v->data + ca->dv_row0 * an->row_len * esz : NULL;
    void *to = w ? (void *)cb->d_words[s] : (void *)cb->d_in[s];
    if (at && ((uintptr_t)at & 15) == 0) {
        if (!w) {
            *din = (const float *)(const void *)at;
            return FP4_OK;
        }
        to = (void *)(uintptr_t)at; /* widened from where it lies */
    } else {
        KU(fp4k_gather(v->data, (int)esz, v->rank, v->dims, v->strides, v->axis, ca->dv_row0,
                       nrows, to, ca->stream),
           "gather kernel");
    }
    if (w)
        KU(fp4k_widen16(to, w == FP4_WORDS_BF16, cb->d_in[s], n, ca->stream), "widen kernel");
    *din = cb->d_in[s];
    return FP4_OK;
}

/* Copies into the pinned staging buffers on several threads, in pieces of this size: one
 * thread's memcpy ran at ~3 GB/s on the H100 host (27 of the 28 ms of an 86 MiB bf16 tensor
 * staged), 16 threads copied 1.12 GB in 0.036 s (31 GB/s). At most 16 threads (the OpenMP
 * limit, --threads). */
#define STAGE_COPY_PIECE ((size_t)1 << 20)

static void stage_copy(void *dst, const void *src, size_t bytes)
{
    const int64_t n = (int64_t)((bytes + STAGE_COPY_PIECE - 1) / STAGE_COPY_PIECE);
    int nt = omp_get_max_threads();
    nt = nt < 16 ? nt : 16;
    nt = (int64_t)nt < n ? nt : (int)n;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t i = 0; i < n; i++) {
        const size_t off = (size_t)i * STAGE_COPY_PIECE;
        const size_t len = bytes - off < STAGE_COPY_PIECE ? bytes - off : STAGE_COPY_PIECE;
        memcpy((unsigned char *)dst + off, (const unsigned char *)src + off, len);
    }
}

/* Stage rows (fp32, or 16-bit words of kind w > 0) into the current slot: a copy into its
 * pinned buffer, the H2D copy, and for words the widening on the device, into dst (NULL: the
 * slot's d_in); *din the fp32 rows on the device. A device tensor's rows: stage_device. */
static fp4_status stage(fp4_analysis *an, const void *data, int w, int64_t nrows, float *dst,
                        int *slot, const float **din)
{
    cuda_an *ca = an->impl;
    cuda_be *cb = an->be->impl;
    FP4_TRY(ensure_rows(an, nrows));
    const int s = ca->slot;
    ca->slot = (ca->slot + 1) % NSLOT;
    /* the slot's previous work must be done before its staging buffer is reused */
    const double t0 = fp4_trace_clock();
    CU(cudaEventSynchronize(ca->done[s]), "sync");
    const double t1 = fp4_trace_clock();
    ca->t_sync += t1 - t0;
    *slot = s;
    if (ca->dv) return stage_device(an, w, nrows, s, din);
    if (!dst) dst = cb->d_in[s];
    *din = dst;
    const int64_t n = nrows * an->row_len;
    const size_t bytes = (size_t)n * (w ? 2 : sizeof(float));
    /* from the caller's pinned, stable rows directly; else through the slot's staging */
    const void *from = data;
    const bool pinned = in_pinned(cb, data, bytes);
    const double t2 = fp4_trace_clock();
    ca->t_pin += t2 - t1;
    if (!pinned) {
        stage_copy(cb->h_stage[s], data, bytes);
        from = cb->h_stage[s];
        ca->t_stage += fp4_trace_clock() - t2;
        ca->b_staged += (int64_t)bytes;
    } else {
        ca->b_direct += (int64_t)bytes;
    }
    if (w) {
        CU(cudaMemcpyAsync(cb->d_words[s], from, bytes, cudaMemcpyHostToDevice, ca->stream),
           "H2D");
        KU(fp4k_widen16(cb->d_words[s], w == FP4_WORDS_BF16, dst, n, ca->stream),
           "widen kernel");
    } else {
        CU(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyHostToDevice, ca->stream), "H2D");
    }
    return FP4_OK;
}

/* Offsets into d_tensor are multiples of 64 floats (256 bytes, cudaMalloc's alignment), so
 * that the kernels see rows aligned as in the staging buffers. */
#define DT_ALIGN 64

/* In the amax pass: where slab `data` (nrows rows, words kind w) goes on the device to stay
 * for the second pass, or NULL (staged as before). The slabs of a registered range, in order
 * from the first, fill d_tensor (made at the first slab, for the whole tensor); a slab that is
 * not the next bytes of that range, or not aligned, ends it for this tensor. A failed device
 * allocation only ends it too. */
static float *tensor_dst(fp4_analysis *an, const void *data, int w, int64_t nrows)
{
    cuda_an *ca = an->impl;
    cuda_be *cb = an->be->impl;
    if (ca->dt_off || ca->dv) return NULL;
    const int64_t esz = w ? 2 : (int64_t)sizeof(float);
    const int64_t n = nrows * an->row_len, total = an->n_rows * an->row_len;
    const unsigned char *d = data;
    if (!ca->dt_host) {
        if (!in_registered(cb, data, (size_t)(n * esz)) || total <= 0) {
            ca->dt_off = true;
            return NULL;
        }
        if (total > cb->tensor_cap) {
            /* the previous tensor's kernels may still read it */
            if (cudaStreamSynchronize(ca->stream) != cudaSuccess) {
                cudaGetLastError();
                ca->dt_off = true;
                return NULL;
            }
            cudaFree(cb->d_tensor);
            cb->d_tensor = NULL;
            cb->tensor_cap = 0;
            if (cudaMalloc((void **)&cb->d_tensor, (size_t)total * sizeof(float)) != cudaSuccess) {
                cudaGetLastError(); /* no room on the device: staged as before */
                cb->d_tensor = NULL;
                ca->dt_off = true;
                return NULL;
            }
            cb->tensor_cap = total;
        }
        ca->dt_host = d;
        ca->dt_w = w;
        ca->dt_bytes = 0;
    }
    const int64_t off = ca->dt_bytes / esz;
    if (d != ca->dt_host + ca->dt_bytes || w != ca->dt_w || off % DT_ALIGN != 0 ||
        off + n > total || !in_registered(cb, data, (size_t)(n * esz))) {
        ca->dt_off = true;
        return NULL;
    }
    ca->dt_bytes += n * esz;
    return cb->d_tensor + off;
}

/* In the second pass: slab `data` on the device already (uploaded by the amax pass into
 * d_tensor, from bytes the caller kept unchanged), or NULL. */
static const float *tensor_src(fp4_analysis *an, const void *data, int w, int64_t nrows)
{
    cuda_an *ca = an->impl;
    cuda_be *cb = an->be->impl;
    if (ca->dv || !ca->dt_host || w != ca->dt_w) return NULL;
    const int64_t esz = w ? 2 : (int64_t)sizeof(float);
    const int64_t bytes = nrows * an->row_len * esz;
    const unsigned char *d = data;
    if (d < ca->dt_host || d - ca->dt_host > ca->dt_bytes - bytes) return NULL;
    const int64_t off = (int64_t)(d - ca->dt_host);
    if (off % esz != 0 || (off / esz) % DT_ALIGN != 0) return NULL;
    if (!in_registered(cb, data, (size_t)bytes)) return NULL;
    return cb->d_tensor + off / esz;
}

static fp4_status amax_any(fp4_analysis *an, const void *rows, int w, int64_t nrows)
{
    cuda_an *ca = an->impl;
    int s;
    if (nrows <= 0) return FP4_OK;
    FP4_TRY(make_ready(an));
    float *dst = tensor_dst(an, rows, w, nrows);
    const float *din = NULL;
    FP4_TRY(stage(an, rows, w, nrows, dst, &s, &din));
    for (int c = 0; c < an->ncfg; c++) {
        const fp4_qconfig *cfg = &an->cfgs[c];
        cuda_cfg *cc = &ca->c[c];
        if (!fp4_needs_tensor_amax(cfg) || cc->amax_src != c) continue;
        const int n = cfg->rht ? cfg->rht->n : 0;
        const int64_t P = n ? (an->row_len + n - 1) / n * n
                            : (an->row_len + 15) / 16 * 16;
        KU(fp4k_amax(din, nrows, an->row_len, P, n, cc->k->d_signs, cc->k->d_amax, ca->stream),
           "amax kernel");
    }
    CU(cudaEventRecord(ca->done[s], ca->stream), "event");
    return FP4_OK;
}

/* cb->h_back holding at least `bytes` (pinned; grown, never shrunk, its contents dropped). The
 * caller has waited for every copy into it (they are read right after a stream wait). */
static fp4_status back_reserve(cuda_be *cb, size_t bytes)
{
    if (bytes <= cb->back_cap) return FP4_OK;
    cudaFreeHost(cb->h_back);
    cb->h_back = NULL;
    cb->back_cap = 0;
    void *p = NULL;
    CU(cudaHostAlloc(&p, bytes < 4096 ? 4096 : bytes, cudaHostAllocDefault), "pinned alloc");
    cb->h_back = p;
    cb->back_cap = bytes < 4096 ? 4096 : bytes;
    return FP4_OK;
}

static fp4_status cuda_plan(fp4_analysis *an)
{
    cuda_an *ca = an->impl;
    FP4_TRY(make_ready(an));
    const double t0 = fp4_trace_clock();
    cuda_be *cb = an->be->impl;
    FP4_TRY(back_reserve(cb, (size_t)an->ncfg * sizeof(float)));
    float *amaxes = (float *)(void *)cb->h_back;
    /* every config's amax (its amax_src's) queued, then one wait */
    for (int c = 0; c < an->ncfg; c++)
        if (fp4_needs_tensor_amax(&an->cfgs[c]))
            CU(cudaMemcpyAsync(&amaxes[c], ca->c[ca->c[c].amax_src].k->d_amax, sizeof(float),
                               cudaMemcpyDeviceToHost, ca->stream),
               "D2H amax");
    CU(cudaStreamSynchronize(ca->stream), "sync");
    ca->t_sync += fp4_trace_clock() - t0;
    for (int c = 0; c < an->ncfg; c++) {
        cuda_cfg *cc = &ca->c[c];
        const float amax = fp4_needs_tensor_amax(&an->cfgs[c]) ? amaxes[c] : 0.0f;
        FP4_TRY(fp4_qplan_make(&an->cfgs[c], amax, an->row_len, &cc->plan));
        fp4_cuda_cfg_of(&cc->plan, &cc->kc);
        cc->device = fp4k_cfg_supported(&cc->kc) != 0;
    }
    fp4_trace("cuda: planned (amax read back); %lld bytes of rows stay on the device",
              (long long)ca->dt_bytes);
    ca->planned = true;
    return FP4_OK;
}

/* ca->h_wide holding at least n floats (grown, never shrunk; its old contents dropped). */
static fp4_status wide_reserve(cuda_an *ca, int64_t n)
{
    if (n <= ca->wide_cap) return FP4_OK;
    free(ca->h_wide);
    ca->wide_cap = 0;
    ca->h_wide = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!ca->h_wide) return fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
    ca->wide_cap = n;
    return FP4_OK;
}

/* fp32 rows of a words slab on the host (the host-reference configs need them). */
static fp4_status host_rows(fp4_analysis *an, const void *data, int w, int64_t nrows,
                            const float **rows)
{
    cuda_an *ca = an->impl;
    if (!w) {
        *rows = data;
        return FP4_OK;
    }
    const int64_t n = nrows * an->row_len;
    fp4_status st = wide_reserve(ca, n);
    if (st != FP4_OK) return st;
    fp4_widen(w == FP4_WORDS_BF16 ? FP4_STORED_BF16 : FP4_STORED_F16, false, data, ca->h_wide,
              (size_t)n);
    *rows = ca->h_wide;
    return FP4_OK;
}

/* A device tensor's slab for the configs the kernels do not cover (the host reference): its
 * fp32 rows copied to the host (the one host copy of a device tensor, counted), in slab
 * order. None: nothing copied. */
static fp4_status device_host_configs(fp4_analysis *an, const float *din, int64_t row0,
                                      int64_t nrows)
{
    cuda_an *ca = an->impl;
    bool any = false;
    for (int c = 0; c < an->ncfg; c++) any = any || !ca->c[c].device;
    if (!any) return FP4_OK;
    const int64_t n = nrows * an->row_len;
    fp4_status st = wide_reserve(ca, n);
    if (st != FP4_OK) return st;
    CU(cudaMemcpyAsync(ca->h_wide, din, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost,
                       ca->stream),
       "D2H rows");
    CU(cudaStreamSynchronize(ca->stream), "sync");
    ca->host_bytes += n * (int64_t)sizeof(float);
    for (int c = 0; c < an->ncfg; c++) {
        cuda_cfg *cc = &ca->c[c];
        if (cc->device) continue;
        FP4_TRY(fp4_quantize_rows(&an->cfgs[c], cc->plan.tensor_amax, ca->h_wide, row0, nrows,
                                  an->row_len, NULL, &cc->acc));
    }
    return FP4_OK;
}

static fp4_status feed_any(fp4_analysis *an, const void *data, int w, int64_t nrows)
{
    cuda_an *ca = an->impl;
    cuda_be *cb = an->be->impl;
    if (!ca->planned) FP4_TRY(cuda_plan(an));
    if (nrows <= 0) return FP4_OK;
    const int64_t row0 = an->rows_fed;
    /* configs the kernel does not cover: the host reference, in slab order (a device
     * tensor's: after its rows are on the device, below) */
    for (int c = 0; c < an->ncfg && !ca->dv; c++) {
        cuda_cfg *cc = &ca->c[c];
        if (cc->device) continue;
        const float *rows = NULL;
        FP4_TRY(host_rows(an, data, w, nrows, &rows));
        FP4_TRY(fp4_quantize_rows(&an->cfgs[c], cc->plan.tensor_amax, rows, row0, nrows,
                                  an->row_len, NULL, &cc->acc));
    }
    int s = ca->slot;
    /* the slot's partials are read on the device, in stream order (fp4k_ordered_sums): no
     * wait for them; rows staged wait for the slot's staging buffer (stage) */
    const float *din = tensor_src(an, data, w, nrows);
    if (din) { /* on the device since the amax pass: the slot for its partials only */
        ca->slot = (s + 1) % NSLOT;
    } else {
        FP4_TRY(stage(an, data, w, nrows, NULL, &s, &din));
    }
    if (ca->dv) FP4_TRY(device_host_configs(an, din, row0, nrows));
    int no = 0;
    for (int c = 0; c < an->ncfg; c++) {
        cuda_cfg *cc = &ca->c[c];
        if (!cc->device) continue;
        const int64_t nch = fp4k_nchunks(&cc->kc, nrows);
        if (nch > cc->k->part_cap) {
            /* the kernels queued before may still use them */
            CU(cudaStreamSynchronize(ca->stream), "sync");
            cc->k->part_cap = 0; /* until both slots are made again */
            for (int k = 0; k < NSLOT; k++) {
                cudaFree(cc->k->d_part[k]);
                cudaFree(cc->k->d_spart[k]);
                cc->k->d_part[k] = NULL;
                cc->k->d_spart[k] = NULL;
                CU(cudaMalloc((void **)&cc->k->d_part[k], (size_t)nch * FP4K_NSUMS * sizeof(double)),
                   "device alloc");
                CU(cudaMalloc((void **)&cc->k->d_spart[k],
                              (size_t)nch * FP4K_NTSUMS * sizeof(double)),
                   "device alloc");
            }
            cc->k->part_cap = nch;
        }
        if (cc->kc.weight_2d) {
            const int64_t nt = (nrows + 15) / 16 * (cc->kc.padded_len / 16);
            if (nt > cb->tile_cap) {
                CU(cudaStreamSynchronize(ca->stream), "sync");
                cudaFree(cb->d_tile);
                cb->d_tile = NULL;
                CU(cudaMalloc((void **)&cb->d_tile, (size_t)nt * sizeof(float)), "device alloc");
                cb->tile_cap = nt;
            }
            KU(fp4k_tile_amax(din, nrows, an->row_len, cc->kc.padded_len, cc->kc.rht_n,
                              cc->k->d_signs, cb->d_tile, ca->stream),
               "tile amax kernel");
        }
        KU(fp4k_quantize(&cc->kc, din, row0, nrows, cc->k->d_signs,
                         cc->kc.weight_2d ? cb->d_tile : NULL, cc->k->d_part[s], cc->k->d_counts, NULL,
                         NULL, ca->stream),
           "quantize kernel");
        /* the recipe statistics (SPEC §5.1): a second pass over the slab, the CPU's bits; with
         * RHT over the rows rotated into d_rot (one buffer: the stream orders its users) */
        if (cc->kc.rht_n) {
            const int64_t nr = nrows * cc->kc.padded_len;
            if (nr > cb->rot_cap) {
                CU(cudaStreamSynchronize(ca->stream), "sync");
                cudaFree(cb->d_rot);
                cb->d_rot = NULL;
                cb->rot_cap = 0;
                CU(cudaMalloc((void **)&cb->d_rot, (size_t)nr * sizeof(float)), "device alloc");
                cb->rot_cap = nr;
            }
        }
        KU(fp4k_stats(&cc->kc, din, row0, nrows, cc->k->d_signs,
                      cc->kc.weight_2d ? cb->d_tile : NULL, cc->kc.rht_n ? cb->d_rot : NULL,
                      cc->k->d_spart[s], cc->k->d_scounts, ca->stream),
           "statistics kernel");
        ca->osum[no++] = (fp4k_osum){cc->k->d_part[s], cc->k->d_acc, nch, FP4K_NSUMS};
        ca->osum[no++] =
            (fp4k_osum){cc->k->d_spart[s], cc->k->d_acc + FP4K_NSUMS, nch, FP4K_NTSUMS};
    }
    /* every config's partials of the slab added to its sums in chunk order, one launch */
    KU(fp4k_ordered_sums(ca->osum, no, ca->stream), "ordered sums kernel");
    CU(cudaEventRecord(ca->done[s], ca->stream), "event");
    return FP4_OK;
}

/* The kernel's counts (FP4K_C_*, the amax aside) added to m's integer counts. */
static void device_counts_add(fp4_metrics *m, const uint64_t *k)
{
    for (int i = 0; i < 16; i++) m->hist[i] += k[FP4K_C_HIST0 + i];
    for (int i = 0; i < 8; i++) m->level_count[i] += k[FP4K_C_LEVEL0 + i];
    m->signed_err_n += k[FP4K_C_SIGNED_N];
    m->zero += k[FP4K_C_ZERO];
    m->nan += k[FP4K_C_NAN];
    m->inf += k[FP4K_C_INF];
    m->saturated += k[FP4K_C_SATURATED];
    m->clipped += k[FP4K_C_CLIPPED];
    m->blocks += k[FP4K_C_BLOCKS];
    m->zero_blocks += k[FP4K_C_ZERO_BLOCKS];
    m->scale_underflow_blocks += k[FP4K_C_UNDERFLOW_BLOCKS];
    m->nonfinite_blocks += k[FP4K_C_NONFINITE_BLOCKS];
}

/* fp4k_stats's counts (FP4K_SC_*) added to m's: the recipe statistics' counts, histograms and
 * max. */
static void device_stats_add(fp4_metrics *m, const uint64_t *k)
{
    m->st_blocks += k[FP4K_SC_BLOCKS];
    m->st_count += k[FP4K_SC_COUNT];
    m->st_nonzero += k[FP4K_SC_NONZERO];
    m->underflows += k[FP4K_SC_UNDERFLOWS];
    m->fos_blocks += k[FP4K_SC_FOS_BLOCKS];
    m->fos_blocks4 += k[FP4K_SC_FOS_BLOCKS4];
    m->split_blocks += k[FP4K_SC_SPLIT_BLOCKS];
    m->hist_blocks += k[FP4K_SC_HIST_BLOCKS];
    for (int i = 0; i < 256; i++) m->scale_hist[i] += k[FP4K_SC_SCALE0 + i];
    for (int i = 0; i < FP4_AMAX_BINS; i++) m->amax_hist[i] += k[FP4K_SC_AMAX0 + i];
    for (int i = 0; i < FP4_RERR_BINS; i++) m->rerr_hist[i] += k[FP4K_SC_RERR0 + i];
    double mx;
    memcpy(&mx, &k[FP4K_SC_MAXERR], sizeof mx);
    if (mx > m->max_abs_err) m->max_abs_err = mx;
}

/* One device config's readback in cb->h_back (back_at): the kernel's counts, the statistics
 * kernel's counts, the ordered sums. */
typedef struct cuda_back {
    uint64_t k[FP4K_NCOUNTS], sk[FP4K_NSCOUNTS];
    double acc[FP4K_NSUMS + FP4K_NTSUMS];
} cuda_back;

/* Every device config's counts and ordered sums copied into cb->h_back (config c at entry c),
 * on the analysis's stream (no legacy-stream copy: it would wait for other streams), then one
 * wait. */
static fp4_status device_counts_fetch(fp4_analysis *an)
{
    cuda_an *ca = an->impl;
    cuda_be *cb = an->be->impl;
    FP4_TRY(back_reserve(cb, (size_t)an->ncfg * sizeof(cuda_back)));
    cuda_back *b = (cuda_back *)(void *)cb->h_back;
    for (int c = 0; c < an->ncfg; c++) {
        const cuda_cfg *cc = &ca->c[c];
        if (!cc->device) continue;
        CU(cudaMemcpyAsync(b[c].k, cc->k->d_counts, sizeof b[c].k, cudaMemcpyDeviceToHost,
                           ca->stream),
           "D2H counts");
        CU(cudaMemcpyAsync(b[c].sk, cc->k->d_scounts, sizeof b[c].sk, cudaMemcpyDeviceToHost,
                           ca->stream),
           "D2H counts");
        CU(cudaMemcpyAsync(b[c].acc, cc->k->d_acc, sizeof b[c].acc, cudaMemcpyDeviceToHost,
                           ca->stream),
           "D2H sums");
    }
    const double t0 = fp4_trace_clock();
    CU(cudaStreamSynchronize(ca->stream), "sync");
    ca->t_sync += fp4_trace_clock() - t0;
    return FP4_OK;
}

/* What device config c has on the device (fetched by device_counts_fetch), added to m: the
 * kernel's and the statistics kernel's counts, and its ordered sums (m's sums +0: then they are
 * the device's bits, as when the host added the partials in chunk order from +0). */
static void device_counts_add_back(const cuda_be *cb, int c, fp4_metrics *m, uint32_t *amax_bits)
{
    const cuda_back *b = (const cuda_back *)(const void *)cb->h_back + c;
    device_counts_add(m, b->k);
    device_stats_add(m, b->sk);
    fp4_fsums fs;
    fp4_ssums ss;
    memcpy(&fs, b->acc, sizeof fs);
    memcpy(&ss, b->acc + FP4K_NSUMS, sizeof ss);
    fp4_fsums_add(m, &fs);
    fp4_ssums_add(m, &ss);
    if (amax_bits) *amax_bits = (uint32_t)b->k[FP4K_C_AMAX];
}

/* Each config's integer counts so far (device configs: the kernel's, which leave out the
 * elements and padding cuda_end adds for every row; host configs: their whole metrics), and
 * its ordered sums. */
static fp4_status counts_now(fp4_analysis *an, fp4_metrics *m, fp4_fsums *s, fp4_ssums *ss)
{
    cuda_an *ca = an->impl;
    FP4_TRY(device_counts_fetch(an));
    for (int c = 0; c < an->ncfg; c++) {
        cuda_cfg *cc = &ca->c[c];
        fp4_metrics_init(&m[c]);
        if (!cc->device) {
            fp4_fsums_of(&cc->acc, &s[c]);
            fp4_ssums_of(&cc->acc, &ss[c]);
            fp4_metrics_merge_counts(&m[c], &cc->acc);
            continue;
        }
        device_counts_add_back(an->be->impl, c, &m[c], NULL);
        fp4_fsums_of(&m[c], &s[c]);
        fp4_ssums_of(&m[c], &ss[c]);
    }
    return FP4_OK;
}

/* k rows of zeros fed as any rows (placed from rows_fed). delta (non-NULL): the counts they
 * added per config, and zero_moves set should they have moved an fp64 sum. */
static fp4_status cuda_zero_rows(fp4_analysis *an, int64_t k, fp4_metrics *delta)
{
    cuda_an *ca = an->impl;
    const int n = an->ncfg;
    float *z = calloc((size_t)(k * an->row_len) + 1, sizeof *z);
    fp4_metrics *before = calloc((size_t)n, sizeof *before);
    fp4_metrics *after = calloc((size_t)n, sizeof *after);
    fp4_fsums *s0 = calloc((size_t)n, sizeof *s0), *s1 = calloc((size_t)n, sizeof *s1);
    fp4_ssums *t0 = calloc((size_t)n, sizeof *t0), *t1 = calloc((size_t)n, sizeof *t1);
    fp4_status st = FP4_OK;
    if (!z || !before || !after || !s0 || !s1 || !t0 || !t1)
        st = fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
    if (st == FP4_OK && delta) st = counts_now(an, before, s0, t0);
    if (st == FP4_OK) st = feed_any(an, z, 0, k);
    if (st == FP4_OK && delta) st = counts_now(an, after, s1, t1);
    for (int c = 0; st == FP4_OK && delta && c < n; c++) {
        if (memcmp(&s1[c], &s0[c], sizeof s1[c]) != 0 || memcmp(&t1[c], &t0[c], sizeof t1[c]) != 0)
            ca->zero_moves = true;
        fp4_metrics_init(&delta[c]);
        fp4_metrics_add_count_delta(&delta[c], &after[c], &before[c], 1);
    }
    free(z);
    free(before);
    free(after);
    free(s0);
    free(s1);
    free(t0);
    free(t1);
    return st;
}

/* Rows of zeros (never-written storage) with cpu.c's cpu_feed_zero's rule, so that the report
 * is the one feeding them would give, without uploading them: a block of zeros quantizes to
 * zeros whatever its place, scale, rotation or rounding, every fp64 sum gains +0 (checked) and
 * each row adds the same counts, those of 16 zero rows (a tile group under weight_2d) and of
 * one, measured once per tensor by feeding zero rows of the run through the kernels (and the
 * host reference's configs), then multiplied. A weight_2d tail under 16 rows is fed; should
 * zeros ever move a sum, every zero row is. */
static fp4_status cuda_feed_zero(fp4_analysis *an, int64_t nrows)
{
    cuda_an *ca = an->impl;
    if (!ca->planned) FP4_TRY(cuda_plan(an));
    const int n = an->ncfg;
    if (!ca->zcnt) {
        if (!(ca->zcnt = calloc((size_t)n, sizeof *ca->zcnt)))
            return fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
        for (int c = 0; c < n; c++) fp4_metrics_init(&ca->zcnt[c]);
    }
    bool two_d = false;
    for (int c = 0; c < n; c++) two_d = two_d || an->cfgs[c].weight_2d;
    const int64_t row0 = an->rows_fed;
    int64_t left = nrows;
    fp4_status st = FP4_OK;
    if (left >= 16 && !ca->zero_moves) { /* whole groups of 16 (rows_fed is 16-aligned) */
        if (!ca->zero16) {
            if (!(ca->zero16 = calloc((size_t)n, sizeof *ca->zero16)))
                return fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
            st = cuda_zero_rows(an, 16, ca->zero16);
            if (st != FP4_OK) return st;
            left -= 16;
            an->rows_fed += 16; /* feed_any places rows from rows_fed */
        }
        if (!ca->zero_moves) {
            const int64_t q = left / 16;
            for (int c = 0; c < n; c++)
                fp4_metrics_add_count_delta(&ca->zcnt[c], &ca->zero16[c], &(fp4_metrics){0},
                                            (uint64_t)q);
            left -= q * 16;
        }
    }
    if (left > 0 && !two_d && !ca->zero_moves) { /* single rows: every row alike */
        if (!ca->zero1) {
            if (!(ca->zero1 = calloc((size_t)n, sizeof *ca->zero1))) {
                an->rows_fed = row0;
                return fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
            }
            st = cuda_zero_rows(an, 1, ca->zero1);
            if (st != FP4_OK) {
                an->rows_fed = row0;
                return st;
            }
            left -= 1;
            an->rows_fed += 1;
        }
        if (!ca->zero_moves) {
            for (int c = 0; c < n; c++)
                fp4_metrics_add_count_delta(&ca->zcnt[c], &ca->zero1[c], &(fp4_metrics){0},
                                            (uint64_t)left);
            left = 0;
        }
    }
    /* the rest fed: a weight_2d tail of under 16 rows (the tensor's end), or every zero row
     * should zeros ever move a sum; in pieces of whole 16-row groups */
    an->rows_fed = row0 + (nrows - left);
    while (left > 0 && st == FP4_OK) {
        int64_t per = an->row_len ? ((int64_t)1 << 20) / an->row_len / 16 * 16 : left;
        if (per < 16) per = 16;
        const int64_t k = left < per ? left : per;
        st = cuda_zero_rows(an, k, NULL);
        an->rows_fed += k;
        left -= k;
    }
    an->rows_fed = row0; /* backend.c adds nrows */
    return st;
}

static fp4_status cuda_end(fp4_analysis *an, fp4_metrics *out)
{
    cuda_an *ca = an->impl;
    if (!ca->planned) FP4_TRY(cuda_plan(an));
    FP4_TRY(device_counts_fetch(an));
    for (int c = 0; c < an->ncfg; c++) {
        cuda_cfg *cc = &ca->c[c];
        out[c] = cc->acc; /* device configs: zeros, the device's sums and counts added below */
        /* the rows cuda_feed_zero counted without feeding them (host configs: with their
         * elements and padding; device configs: without, added below for every row) */
        if (ca->zcnt) fp4_metrics_add_count_delta(&out[c], &ca->zcnt[c], &(fp4_metrics){0}, 1);
        if (!cc->device) continue;
        fp4_metrics *m = &out[c];
        uint32_t ab = 0;
        device_counts_add_back(an->be->impl, c, m, &ab);
        m->elements += (uint64_t)(an->n_rows * an->row_len);
        m->padded += (uint64_t)(an->n_rows * (cc->kc.padded_len - an->row_len));
        float a;
        memcpy(&a, &ab, sizeof a);
        if (a > m->tensor_amax) m->tensor_amax = a;
        if (fp4_needs_tensor_amax(&an->cfgs[c]) && cc->plan.tensor_amax > m->tensor_amax)
            m->tensor_amax = cc->plan.tensor_amax;
    }
    fp4_trace("cuda: host waited on the GPU %.4f s, copied into staging %.4f s (%lld bytes; "
              "%lld uploaded from pinned rows), pinned %.4f s",
              ca->t_sync, ca->t_stage, (long long)ca->b_staged, (long long)ca->b_direct,
              ca->t_pin);
    return FP4_OK;
}

/* Whether a device view's canonical rows (fp4_layout_of) lie in C order at its data: the
 * other dimensions, then the axis, with C-order strides (a dimension of 1 takes any). */
static bool device_rows_in_order(const fp4_device_view *v)
{
    if (v->rank == 0) return true;
    int order[8], k = 0;
    for (int d = 0; d < v->rank; d++)
        if (d != v->axis) order[k++] = d;
    order[k++] = v->axis;
    int64_t step = 1;
    for (int j = k - 1; j >= 0; j--) {
        const int d = order[j];
        if (v->dims[d] != 1 && v->strides[d] != step) return false;
        step *= v->dims[d];
    }
    return true;
}

/* fp4_analysis_device: the amax pass, then the feed, over slabs of the staging slots' size
 * (whole groups of 16 rows), each read in place or gathered on the device. */
static fp4_status cuda_device(fp4_analysis *an, const fp4_device_view *v, int64_t *host_bytes)
{
    cuda_an *ca = an->impl;
    cuda_be *cb = an->be->impl;
    ca->dv = v;
    ca->dv_rows = device_rows_in_order(v);
    FP4_TRY(make_ready(an));
    fp4_trace("cuda: device tensor, %lld x %lld, rows %s", (long long)an->n_rows,
              (long long)an->row_len, ca->dv_rows ? "in place" : "gathered");
    const int w = v->w;
    int64_t per = an->row_len > 0 ? cb->cap / an->row_len : an->n_rows;
    per = per < 16 ? 16 : per / 16 * 16;
    fp4_status st = FP4_OK;
    for (int pass = an->needs_amax ? 0 : 1; pass < 2 && st == FP4_OK; pass++) {
        for (int64_t r = 0; r < an->n_rows && st == FP4_OK; r += per) {
            const int64_t k = an->n_rows - r < per ? an->n_rows - r : per;
            ca->dv_row0 = r;
            st = pass == 0 ? amax_any(an, NULL, w, k) : feed_any(an, NULL, w, k);
            if (st != FP4_OK) break;
            if (pass == 0) an->rows_amax += k;
            else an->rows_fed += k;
        }
    }
    /* feed_any plans at its first slab: an empty tensor is planned here */
    if (st == FP4_OK && !ca->planned) st = cuda_plan(an);
    if (host_bytes) *host_bytes = ca->host_bytes;
    return st;
}

/* A device buffer of at least `need` bytes (its contents not kept when it grows). */
static fp4_status grow(void **p, int64_t *cap, int64_t need, const char *what)
{
    if (*cap >= need) return FP4_OK;
    cudaFree(*p);
    *p = NULL;
    *cap = 0;
    CU(cudaMalloc(p, (size_t)need), what);
    *cap = need;
    return FP4_OK;
}

/* fp4_backend_audit_sums: the stored bytes once per tensor, the slab's source values up, the
 * per-segment sums down; one slab at a time on the backend's stream. */
static fp4_status cuda_audit_sums(fp4_backend *be, const fp4_audit_slab *sl)
{
    cuda_be *cb = be->impl;
    FP4_TRY(cuda_ready(cb));
    FP4_TRY(objs_make(cb));
    const fp4c_qdec *d = sl->dec[0];
    const int64_t K = d->K, nseg = sl->nrows * ((K + FP4C_AUDIT_SEG - 1) / FP4C_AUDIT_SEG);
    if (!cb->a_loaded || cb->a_tensor != sl->tensor) {
        cb->a_loaded = false;
        FP4_TRY(grow((void **)&cb->a_packed, &cb->a_packed_cap, sl->packed_bytes + 16,
                     "audit: packed bytes"));
        FP4_TRY(grow((void **)&cb->a_scales, &cb->a_scales_cap, sl->scale_bytes + 16,
                     "audit: scale bytes"));
        CU(cudaMemcpyAsync(cb->a_packed, sl->packed, (size_t)sl->packed_bytes,
                           cudaMemcpyHostToDevice, cb->stream), "audit: upload packed bytes");
        CU(cudaMemcpyAsync(cb->a_scales, sl->scales, (size_t)sl->scale_bytes,
                           cudaMemcpyHostToDevice, cb->stream), "audit: upload scale bytes");
        cb->a_tensor = sl->tensor;
        cb->a_loaded = true;
    }
    if (!cb->a_dec) CU(cudaMalloc((void **)&cb->a_dec, 3 * sizeof *cb->a_dec), "audit: decodes");
    /* the synchronous copies below keep the host structs alive until they are read */
    for (int h = 0; h < 3; h++)
        if (sl->dec[h])
            CU(cudaMemcpyAsync(cb->a_dec + h, sl->dec[h], sizeof *cb->a_dec,
                               cudaMemcpyHostToDevice, cb->stream), "audit: upload decodes");
    FP4_TRY(grow((void **)&cb->a_x, &cb->a_x_cap, sl->nrows * K * (int64_t)sizeof(float),
                 "audit: source values"));
    FP4_TRY(grow((void **)&cb->a_seg, &cb->a_seg_cap,
                 nseg * FP4C_AS_N * (int64_t)sizeof(double), "audit: sums"));
    CU(cudaMemcpyAsync(cb->a_x, sl->x, (size_t)(sl->nrows * K) * sizeof(float),
                       cudaMemcpyHostToDevice, cb->stream), "audit: upload source values");
    KU(fp4k_audit_sums(cb->a_dec, K, sl->dec[1] != NULL, sl->dec[2] != NULL, cb->a_packed,
                       cb->a_scales, sl->global, sl->row0, sl->nrows, cb->a_x, cb->a_seg,
                       cb->stream),
       "audit: sums kernel");
    CU(cudaMemcpyAsync(sl->seg, cb->a_seg, (size_t)(nseg * FP4C_AS_N) * sizeof(double),
                       cudaMemcpyDeviceToHost, cb->stream), "audit: download sums");
    CU(cudaStreamSynchronize(cb->stream), "audit: sync");
    return FP4_OK;
}

static const fp4_backend_ops cuda_ops = {
    .name = "cuda",
    .close = cuda_close,
    .begin = cuda_begin,
    .amax = amax_any,
    .feed = feed_any,
    .feed_zero = cuda_feed_zero,
    .end = cuda_end,
    .abort = cuda_abort,
    .takes_words = cuda_takes_words,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .device = cuda_device,
    .audit_sums = cuda_audit_sums,
};

static int g_cuda_dev; /* fp4_cuda_backend_set_device */

void fp4_cuda_backend_set_device(int dev) { g_cuda_dev = dev >= 0 ? dev : 0; }

int fp4_cuda_backend_get_device(void) { return g_cuda_dev; }

fp4_status fp4_cuda_backend_open(bool early, fp4_backend **out)
{
    *out = NULL;
    fp4_cuda_backend_release_join(); /* a release under way ends first */
    /* early: the GPUs are counted on the start-up thread too (cudaGetDeviceCount is the
     * driver's start-up, 0.1-0.2 s on the H200 host, before the input could be opened), when
     * the NVIDIA driver's device nodes exist; an error (no usable GPU) then comes at the first
     * slab, as FP4_ERR_DEVICE with the same message. Without the nodes, or when the caller
     * must know now (--device auto), the GPUs are counted here. */
    const bool defer =
        early && (access("/dev/nvidiactl", F_OK) == 0 || access("/dev/dxg", F_OK) == 0);
    if (!defer) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n <= 0) {
            cudaGetLastError();
            return no_device_error(e);
        }
    }
    fp4_backend *be = calloc(1, sizeof *be);
    cuda_be *cb = calloc(1, sizeof *cb);
    if (!be || !cb) {
        free(be);
        free(cb);
        return fp4_error(FP4_ERR_INTERNAL, "cuda backend: out of memory");
    }
    /* the GPU this process was given (mpirun: world.c picks local rank mod GPUs), else 0 */
    cb->dev = g_cuda_dev;
    cb->check_devices = defer;
    be->ops = &cuda_ops;
    be->threads = 1;
    be->impl = cb;
    /* without the thread, CUDA starts at the first slab (same results, no overlap) */
    cb->init_running = pthread_create(&cb->init_th, NULL, cuda_init_main, cb) == 0;
    if (!cb->init_running) cuda_init_main(cb);
    *out = be;
    return FP4_OK;
}

#else
/* Built without CUDA: backend.c answers --device cuda with FP4_ERR_DEVICE. */
void fp4_cuda_backend_set_device(int dev) { (void)dev; }
int fp4_cuda_backend_get_device(void) { return 0; }
void fp4_cuda_backend_release_at_close(bool on) { (void)on; }
void fp4_cuda_backend_release_join(void) {}
#endif
