/* api/api.c — the public C API (include/fp4diag.h) on top of the run (run/driver.h) and the
 * report (report/report.h): a configuration is the CLI's options, an analysis is the CLI's
 * run of one tensor, the JSON is the report's own entry for it. */
#include "fp4diag.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FP4_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "base/status.h"
#include "base/version.h"
#include "api/impl.h"
#include "backend/backend.h"
#include "base/trace.h"
#include "io/chunked.h"
#include "io/memsrc.h"
#include "io/pario.h"
#include "io/quantized.h"
#include "io/source.h"
#include "num/format.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "report/report.h"
#include "run/driver.h"
#include "run/recipe.h"

_Static_assert((int)FP4D_OK == (int)FP4_OK && (int)FP4D_ERR_USAGE == (int)FP4_ERR_USAGE &&
                   (int)FP4D_ERR_INPUT == (int)FP4_ERR_INPUT &&
                   (int)FP4D_ERR_DEVICE == (int)FP4_ERR_DEVICE &&
                   (int)FP4D_ERR_INTERNAL == (int)FP4_ERR_INTERNAL,
               "fp4d_status values are the exit codes of fp4_status");
_Static_assert(FP4D_MAX_RANK == FP4_MAX_RANK, "one rank limit");

struct fp4d_input {
    fp4_source *src;
    fp4_tensor_desc *list;
    int n;
    fp4_qset qs;  /* the source's already-quantized tensors (io/quantized.h), once scanned */
    bool scanned;
};

struct fp4d_result {
    fp4_run run;
    fp4_run_config cfg; /* run.config points here (its qconfigs at its signs): the caller's
                         * config may be freed first */
    char *json;
};

fp4d_status fp4_api_status(fp4_status st) { return (fp4d_status)st; }
#define ret fp4_api_status

const char *fp4d_version(void) { return FP4DIAG_VERSION; }

int fp4d_version_number(void)
{
    int a = 0, b = 0, c = 0;
    if (sscanf(FP4DIAG_VERSION, "%d.%d.%d", &a, &b, &c) != 3) return 0;
    return a * 10000 + b * 100 + c;
}

const char *fp4d_last_error(void) { return fp4_last_error(); }

const char *fp4d_status_name(fp4d_status st)
{
    switch (st) {
    case FP4D_OK: return "ok";
    case FP4D_ERR_USAGE: return "usage_error";
    case FP4D_ERR_INPUT: return "input_error";
    case FP4D_ERR_DEVICE: return "device_error";
    case FP4D_ERR_INTERNAL: return "internal_error";
    }
    return "unknown";
}

/* ------------------------------------------------------------------ configuration */

void fp4d_config_free(fp4d_config *cfg)
{
    if (!cfg) return;
    for (int i = 0; i < cfg->nstrings; i++) free(cfg->strings[i]);
    free(cfg->strings);
    free(cfg);
}

int fp4d_config_count(const fp4d_config *cfg) { return cfg ? cfg->ncfg : 0; }

/* ------------------------------------------------------------------ inputs */

fp4d_status fp4d_open(const char *path, fp4d_input **out)
{
    fp4_error_clear();
    if (!out) return ret(fp4_error(FP4_ERR_USAGE, "fp4d_open: out is NULL"));
    *out = NULL;
    if (!path || !path[0]) return ret(fp4_error(FP4_ERR_USAGE, "fp4d_open: no path"));
    fp4d_input *in = calloc(1, sizeof *in);
    if (!in) return ret(fp4_error(FP4_ERR_INTERNAL, "out of memory"));
    fp4_status st = fp4_source_open(path, &in->src);
    if (st == FP4_OK) st = fp4_source_select(in->src, NULL, 0, &in->list, &in->n);
    /* the listing of `fp4diag ls`: each already-quantized tensor one entry (its logical name,
     * dtype "nvfp4"/"mxfp4", logical shape), its members not listed (SPEC §10) */
    if (st == FP4_OK) { /* a tensor the scan cannot describe: listed as stored, as before */
        if (fp4_quant_scan(in->src, &in->qs) == FP4_OK) {
            in->scanned = true;
        } else { /* the scan freed what it had */
            memset(&in->qs, 0, sizeof in->qs);
            fp4_error_clear();
        }
    }
    if (st == FP4_OK && in->scanned && (in->qs.n > 0 || in->qs.nfp8 > 0)) {
        int *qidx = NULL;
        st = fp4_quant_fold(&in->qs, in->list, &in->n, &qidx);
        free(qidx);
    }
    if (st != FP4_OK) {
        fp4d_close(in);
        return ret(st);
    }
    *out = in;
    return FP4D_OK;
}

void fp4d_close(fp4d_input *in)
{
    if (!in) return;
    if (in->list) fp4_tensor_desc_free_list(in->list, in->n);
    if (in->scanned) fp4_qset_free(&in->qs);
    if (in->src) fp4_source_close(in->src);
    free(in);
}

int fp4d_tensor_count(const fp4d_input *in) { return in ? in->n : 0; }

static void info_of(const fp4_tensor_desc *t, fp4d_tensor_info *out)
{
    memset(out, 0, sizeof *out);
    out->name = t->name ? t->name : "";
    out->dtype = t->dtype;
    out->rank = t->rank;
    for (int d = 0; d < t->rank && d < FP4D_MAX_RANK; d++) out->shape[d] = t->dims[d];
    out->nelems = t->nelems;
    out->problem = t->problem;
}

fp4d_status fp4d_tensor_get(const fp4d_input *in, int i, fp4d_tensor_info *out)
{
    fp4_error_clear();
    if (!in || !out) return ret(fp4_error(FP4_ERR_USAGE, "fp4d_tensor_get: NULL argument"));
    if (i < 0 || i >= in->n)
        return ret(fp4_error(FP4_ERR_USAGE, "%s: tensor index %d is outside 0..%d",
                             fp4_source_file(in->src), i, in->n - 1));
    info_of(&in->list[i], out);
    return FP4D_OK;
}

/* A member of an already-quantized tensor (packed codes, block scales, tensor or input
 * scale; with `fp8`, an FP8 weight or its scales too: SPEC §10) is stored bytes, not the
 * values of a tensor: read as numbers they would be codes. FP4_ERR_USAGE naming it and what
 * it is. */
static fp4_status refuse_quantized(fp4d_input *in, const fp4_tensor_desc *d, bool fp8)
{
    if (!in->scanned) {
        fp4_status st = fp4_quant_scan(in->src, &in->qs);
        if (st != FP4_OK) return st;
        in->scanned = true;
    }
    const char *file = fp4_source_file(in->src), *name = d->name ? d->name : "";
    const int i = fp4_qset_find(&in->qs, name);
    if (i >= 0) {
        const fp4_qtensor *q = &in->qs.t[i];
        const char *role = !strcmp(name, q->packed) ? "the packed 4-bit codes"
                           : !strcmp(name, q->scale) ? "the block scales"
                           : q->global && !strcmp(name, q->global) ? "the tensor scale"
                                                                    : "the input scale";
        return fp4_error(FP4_ERR_USAGE,
                         "%s: %s: %s of the already-quantized %s tensor %s (%s), stored bytes "
                         "not values: `fp4diag audit SOURCE QUANTIZED` decodes it",
                         file, name, role, q->format == FP4_QF_NVFP4 ? "NVFP4" : "MXFP4",
                         q->name, fp4_qproducer_name(q->producer));
    }
    char why[320];
    if (fp8 && fp4_quant_fp8_role(&in->qs, name, why, sizeof why))
        return fp4_error(FP4_ERR_USAGE, "%s: %s: %s; not read as values (`fp4diag audit` "
                                        "covers NVFP4/MXFP4 exports)", file, name, why);
    return FP4_OK;
}

/* An already-quantized tensor named by its logical name, as fp4d_tensor_get lists it
 * (compressed-tensors' <m>.weight is stored under no tensor of that name; ModelOpt's is its
 * packed codes): FP4_ERR_USAGE saying what it is and what measures it, and its problem when
 * it has one (a member missing, a config the tensors contradict); else FP4_OK. The one
 * refusal of fp4d_read_f32 and fp4d_analyze. */
static fp4_status refuse_logical(const fp4d_input *in, const char *tensor)
{
    while (*tensor == '/') tensor++;
    for (int i = 0; in->scanned && i < in->qs.n; i++) {
        const fp4_qtensor *q = &in->qs.t[i];
        if (strcmp(q->name, tensor) != 0) continue;
        return fp4_error(FP4_ERR_USAGE,
                         "%s: %s: an already-quantized %s tensor (%s): its stored 4-bit codes "
                         "and block scales are not values to read; `fp4diag audit SOURCE "
                         "QUANTIZED` decodes it and measures it against its source%s%s",
                         fp4_source_file(in->src), q->name,
                         q->format == FP4_QF_NVFP4 ? "NVFP4" : "MXFP4",
                         fp4_qproducer_name(q->producer), q->problem[0] ? "; its problem: " : "",
                         q->problem);
    }
    return FP4_OK;
}

/* What fp4d_read_f32 and fp4d_analyze refuse before reading: an already-quantized tensor by
 * its logical name or a member of one (FP4_ERR_USAGE, the same message from both), with
 * `fp8` an FP8 weight or its scales too (which `fp4diag sqnr` analyses as stored); a name
 * the input does not hold (FP4_ERR_INPUT). *d described when FP4_OK (free it with
 * fp4_tensor_desc_free either way). */
static fp4_status refuse_stored(fp4d_input *in, const char *tensor, bool fp8,
                                fp4_tensor_desc *d)
{
    memset(d, 0, sizeof *d);
    FP4_TRY(refuse_logical(in, tensor));
    FP4_TRY(fp4_source_describe(in->src, tensor, d));
    return refuse_quantized(in, d, fp8);
}

fp4d_status fp4d_read_f32(fp4d_input *in, const char *tensor, float *out, int64_t n)
{
    fp4_error_clear();
    if (!in || !tensor || (!out && n > 0))
        return ret(fp4_error(FP4_ERR_USAGE, "fp4d_read_f32: %s is NULL",
                             !in ? "the input" : !tensor ? "the tensor name" : "out"));
    fp4_tensor_desc d;
    fp4_status st = refuse_stored(in, tensor, true, &d);
    if (st == FP4_OK && d.nelems != n)
        st = fp4_error(FP4_ERR_USAGE, "%s: %s: has %lld elements, the buffer %lld",
                       fp4_source_file(in->src), d.name ? d.name : tensor,
                       (long long)d.nelems, (long long)n);
    /* the whole tensor as one slab along dim 0 (a scalar: dim 0, start 0, count 1); an empty
     * tensor reads nothing */
    if (st == FP4_OK && n > 0)
        st = fp4_source_read_f32(in->src, &d, 0, 0, d.rank > 0 ? d.dims[0] : 1, out);
    fp4_tensor_desc_free(&d);
    return ret(st);
}

void fp4d_free(void *p) { free(p); }

int fp4d_recipe_keeps(const char *name, const char **kind, const char **glob)
{
    const fp4_recipe_rule *r = name ? fp4_recipe_keeps(name) : NULL;
    if (kind) *kind = r ? r->kind : NULL;
    if (glob) *glob = r ? r->glob : NULL;
    return !name ? -1 : r ? 1 : 0;
}

/* ------------------------------------------------------------------ analysis */

void fp4d_result_free(fp4d_result *r)
{
    if (!r) return;
    fp4_run_free(&r->run);
    free(r->json);
    free(r);
}

/* One tensor `name` of `src` under cfg, as `fp4diag sqnr [OPTIONS] FILE NAME` runs it: the
 * process-wide settings the CLI makes before its run, then the run of that one name. */
static fp4_status analyse(fp4_source *src, const char *name, const fp4d_config *cfg,
                          fp4d_result **out)
{
    const fp4_run_config *o = &cfg->cfg;
    const int threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    fp4_source_set_allow_external(o->allow_external);
    fp4_chunked_set_threads(threads);
    fp4_pario_set_threads(threads);
    fp4_chunked_set_memory(o->mem_limit / 2);
    fp4d_result *r = calloc(1, sizeof *r);
    if (!r) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    r->cfg = *o; /* the RHT signs are in the struct: the copy's qconfigs point at its own */
    const char *pat[1] = {name};
    fp4_status st = fp4_run_analysis_source(&r->cfg, src, pat, 1, &r->run);
    if (st == FP4_OK && r->run.nerrors > 0) {
        st = fp4_error(r->run.errors[0].status, "%s", r->run.errors[0].message);
    } else if (st == FP4_OK && r->run.ntensors != 1) {
        /* an already-quantized tensor (SPEC §10) is reported, not analysed: its reason */
        const char *why = r->run.ntensors > 0 ? "names a group, not one tensor"
                          : r->run.nskipped == 1 && r->run.skipped[0].quant
                              ? r->run.skipped[0].reason
                              : "no tensor analysed (a group with no tensors?)";
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s", fp4_source_file(src), name, why);
    }
    if (st == FP4_OK && !(r->json = fp4_report_tensor_json(&r->run, 0)))
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    if (st != FP4_OK) {
        fp4d_result_free(r);
        return st;
    }
    *out = r;
    return FP4_OK;
}

fp4d_status fp4d_analyze(fp4d_input *in, const char *tensor, const fp4d_config *cfg,
                         fp4d_result **out)
{
    fp4_error_clear();
    if (!out) return ret(fp4_error(FP4_ERR_USAGE, "fp4d_analyze: out is NULL"));
    *out = NULL;
    if (!in || !tensor || !cfg)
        return ret(fp4_error(FP4_ERR_USAGE, "fp4d_analyze: %s is NULL",
                             !in ? "the input" : !tensor ? "the tensor name" : "the config"));
    /* exactly one tensor: a group or a glob is refused before anything is read, and an
     * NVFP4/MXFP4 tensor or member as fp4d_read_f32 refuses it (its message; an FP8 weight
     * is analysed as `fp4diag sqnr FILE NAME` analyses it) */
    fp4_tensor_desc d;
    fp4_status st = refuse_stored(in, tensor, false, &d);
    fp4_tensor_desc_free(&d);
    if (st != FP4_OK) return ret(st);
    return ret(analyse(in->src, tensor, cfg, out));
}

#ifdef FP4_HAVE_CUDA
/* The bytes [lo, hi) element offsets around a strided device tensor, copied to the host:
 * *host is malloc'd, *origin points at element 0 within it. */
static fp4_status from_device(const void *data, int64_t lo, int64_t hi, size_t w,
                              cudaStream_t stream, void **host, const void **origin)
{
    size_t bytes = (size_t)(hi - lo) * w;
    unsigned char *h = malloc(bytes ? bytes : 1);
    if (!h) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    /* on the caller's stream, after its work (to pageable memory: done when it returns) */
    cudaError_t e = cudaMemcpyAsync(h, (const unsigned char *)data + lo * (int64_t)w, bytes,
                                    cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
        free(h);
        return fp4_error(FP4_ERR_DEVICE, "memory: cudaMemcpy: %s", cudaGetErrorString(e));
    }
    *host = h;
    *origin = h - lo * (int64_t)w;
    return FP4_OK;
}

/* The GPU of a device pointer (cudaMemoryTypeDevice or Managed), else FP4_ERR_USAGE. */
static fp4_status device_of(const char *name, const void *data, int *gpu)
{
    struct cudaPointerAttributes a;
    if (!data) return cudaGetDevice(gpu) == cudaSuccess ? FP4_OK
                                                        : fp4_error(FP4_ERR_DEVICE,
                                                                    "memory: %s: no CUDA device",
                                                                    name);
    if (cudaPointerGetAttributes(&a, data) != cudaSuccess ||
        (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)) {
        cudaGetLastError();
        return fp4_error(FP4_ERR_USAGE, "memory: %s: the data pointer is not CUDA device memory",
                         name);
    }
    *gpu = a.device;
    return FP4_OK;
}

/* The CUDA backend device tensors are analysed by, kept from call to call with its stream,
 * staging and per-configuration buffers (made once: cudaMalloc, cudaHostAlloc and cudaFree
 * synchronise the device, and CUDA's start costs milliseconds), for the GPU of the last
 * tensor. Analyses are one at a time per process (fp4diag.h), so one is enough. */
static fp4_backend *g_dev_be;
static int g_dev_gpu = -1;

static fp4_status device_backend(int gpu, fp4_backend **out)
{
    if (g_dev_be && g_dev_gpu == gpu) {
        *out = g_dev_be;
        return FP4_OK;
    }
    fp4_backend_close(g_dev_be);
    g_dev_be = NULL;
    g_dev_gpu = -1;
    const int was = fp4_cuda_backend_get_device();
    fp4_cuda_backend_set_device(gpu);
    fp4_status st = fp4_backend_open(FP4_DEVICE_CUDA, 1, &g_dev_be);
    fp4_cuda_backend_set_device(was);
    if (st != FP4_OK) return st;
    g_dev_gpu = gpu;
    fp4_trace("api: CUDA backend for device tensors opened on GPU %d", gpu);
    *out = g_dev_be;
    return FP4_OK;
}
#endif

/* A device tensor where it lies, on `stream`: the run of fp4_run_analysis_device, made a
 * result as analyse makes one. */
static fp4_status analyse_device(const fp4d_tensor_view *view, fp4_stored stored,
                                 const fp4d_config *cfg, void *stream, fp4d_result **out)
{
#ifdef FP4_HAVE_CUDA
    const char *name = view->name ? view->name : "tensor";
    int gpu = 0, was = -1;
    FP4_TRY(device_of(name, view->data, &gpu));
    if (cudaGetDevice(&was) != cudaSuccess) {
        cudaGetLastError();
        was = -1;
    }
    fp4_backend *be = NULL;
    fp4_status st = device_backend(gpu, &be);
    fp4_source *src = NULL;
    if (st == FP4_OK)
        st = fp4_source_open_memory("memory", name, stored, view->rank, view->shape,
                                    view->strides, view->data, &src);
    fp4d_result *r = NULL;
    if (st == FP4_OK && !(r = calloc(1, sizeof *r)))
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    int64_t host_bytes = 0;
    if (st == FP4_OK) {
        r->cfg = cfg->cfg; /* the copy's qconfigs point at its own RHT signs */
        st = fp4_run_analysis_device(&r->cfg, src, be, view->data, view->strides, stream,
                                     &host_bytes, &r->run);
    }
    if (st == FP4_OK && r->run.nerrors > 0)
        st = fp4_error(r->run.errors[0].status, "%s", r->run.errors[0].message);
    if (st == FP4_OK && !(r->json = fp4_report_tensor_json(&r->run, 0)))
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_trace("api: device tensor %s analysed in place; %lld bytes copied to the host", name,
              (long long)host_bytes);
    fp4_source_close(src);
    if (was >= 0) cudaSetDevice(was); /* the caller's current GPU, as it was */
    if (st == FP4_ERR_DEVICE) { /* a failed CUDA call: the next call starts afresh */
        fp4_backend_close(g_dev_be);
        g_dev_be = NULL;
        g_dev_gpu = -1;
    }
    if (st != FP4_OK) {
        fp4d_result_free(r);
        return st;
    }
    *out = r;
    return FP4_OK;
#else
    (void)stored;
    (void)cfg;
    (void)stream;
    (void)out;
    return fp4_error(FP4_ERR_DEVICE, "memory: %s: this library was built without CUDA",
                     view->name ? view->name : "tensor");
#endif
}

static fp4d_status analyze_view(const char *fn, const fp4d_tensor_view *view,
                                const fp4d_config *cfg, bool on_stream, void *stream,
                                fp4d_result **out)
{
    fp4_error_clear();
    if (!out) return ret(fp4_error(FP4_ERR_USAGE, "%s: out is NULL", fn));
    *out = NULL;
    if (!view || !cfg)
        return ret(fp4_error(FP4_ERR_USAGE, "%s: %s is NULL", fn,
                             !view ? "the view" : "the config"));
    const char *name = view->name ? view->name : "tensor";
    fp4_stored stored = view->dtype == FP4D_F32    ? FP4_STORED_F32
                        : view->dtype == FP4D_F16  ? FP4_STORED_F16
                        : view->dtype == FP4D_BF16 ? FP4_STORED_BF16
                                                   : FP4_STORED_OTHER;
    if (stored == FP4_STORED_OTHER)
        return ret(fp4_error(FP4_ERR_USAGE, "memory: %s: unknown dtype %d", name,
                             (int)view->dtype));
    if (view->memory != FP4D_MEM_HOST && view->memory != FP4D_MEM_CUDA)
        return ret(fp4_error(FP4_ERR_USAGE, "memory: %s: unknown memory kind %d", name,
                             (int)view->memory));
    if (on_stream && view->memory != FP4D_MEM_CUDA)
        return ret(fp4_error(FP4_ERR_USAGE, "memory: %s: %s takes CUDA device memory "
                                            "(FP4D_MEM_CUDA)", name, fn));
    /* shape and strides checked before any offset is computed (device copy included) */
    fp4_status vs = fp4_memory_view_check("memory", name, stored, view->rank, view->shape,
                                          view->strides, view->data, NULL);
    if (vs != FP4_OK) return ret(vs);
    const void *data = view->data;
    void *host = NULL;
    /* on the GPU where it lies, unless the configuration asks for the CPU */
    if (view->memory == FP4D_MEM_CUDA && cfg->cfg.device != FP4_DEVICE_CPU)
        return ret(analyse_device(view, stored, cfg, stream, out));
    if (view->memory == FP4D_MEM_CUDA) {
#ifdef FP4_HAVE_CUDA
        /* the span of element offsets the view reaches (strides may be negative) */
        int64_t lo = 0, hi = 1, step = 1;
        bool empty = false;
        for (int d = view->rank - 1; d >= 0 && view->shape && view->rank <= FP4D_MAX_RANK; d--) {
            int64_t n = view->shape[d], s = view->strides ? view->strides[d] : step;
            if (n <= 0) empty = true;
            else if (s < 0) lo += (n - 1) * s;
            else hi += (n - 1) * s;
            step *= n > 0 ? n : 1;
        }
        if (!empty && data) {
            int gpu = 0;
            fp4_status st = device_of(name, data, &gpu);
            if (st == FP4_OK)
                st = from_device(data, lo, hi, (size_t)fp4_stored_size(stored),
                                 (cudaStream_t)stream, &host, &data);
            if (st != FP4_OK) return ret(st);
        }
#else
        return ret(fp4_error(FP4_ERR_DEVICE, "memory: %s: this library was built without CUDA",
                             name));
#endif
    }
    fp4_source *src = NULL;
    fp4_status st = fp4_source_open_memory("memory", name, stored, view->rank, view->shape,
                                           view->strides, data, &src);
    fp4_tensor_desc *one = NULL;
    int n = 0;
    /* the name as the source keeps it (trailing '/' dropped), given exactly: analysed whatever
     * its rank, as a tensor named on the command line is */
    if (st == FP4_OK) st = fp4_source_select(src, NULL, 0, &one, &n);
    if (st == FP4_OK) st = analyse(src, one[0].name, cfg, out);
    if (one) fp4_tensor_desc_free_list(one, n);
    fp4_source_close(src);
    free(host);
    return ret(st);
}

fp4d_status fp4d_analyze_memory(const fp4d_tensor_view *view, const fp4d_config *cfg,
                                fp4d_result **out)
{
    return analyze_view("fp4d_analyze_memory", view, cfg, false, NULL, out);
}

fp4d_status fp4d_analyze_cuda(const fp4d_tensor_view *view, const fp4d_config *cfg,
                              void *stream, fp4d_result **out)
{
    return analyze_view("fp4d_analyze_cuda", view, cfg, true, stream, out);
}

int fp4d_result_count(const fp4d_result *r) { return r ? r->run.ncfg : 0; }

fp4d_status fp4d_result_sums(const fp4d_result *r, int i, double *sum_x2, double *sum_err2)
{
    fp4_error_clear();
    if (!r) return ret(fp4_error(FP4_ERR_USAGE, "fp4d_result_sums: NULL argument"));
    if (i < 0 || i >= r->run.ncfg)
        return ret(fp4_error(FP4_ERR_USAGE, "fp4d_result_sums: index %d is outside 0..%d", i,
                             r->run.ncfg - 1));
    const fp4_metrics *m = &r->run.tensors[0].metrics[i];
    if (sum_x2) *sum_x2 = m->sum_x2;
    if (sum_err2) *sum_err2 = m->sum_err2;
    return FP4D_OK;
}

const char *fp4d_result_json(const fp4d_result *r) { return r ? r->json : NULL; }

fp4d_status fp4d_result_tensor(const fp4d_result *r, fp4d_tensor_info *out, int *axis)
{
    fp4_error_clear();
    if (!r || !out) return ret(fp4_error(FP4_ERR_USAGE, "fp4d_result_tensor: NULL argument"));
    info_of(&r->run.tensors[0].info, out);
    if (axis) *axis = r->run.tensors[0].axis;
    return FP4D_OK;
}

static const char *sqnr_status_name(fp4_sqnr_status s)
{
    switch (s) {
    case FP4_SQNR_OK: return "ok";
    case FP4_SQNR_ZERO_SIGNAL: return "zero_signal";
    case FP4_SQNR_EXACT: return "exact";
    case FP4_SQNR_NONFINITE: return "nonfinite";
    }
    return "ok";
}

fp4d_status fp4d_result_metrics(const fp4d_result *r, int i, fp4d_metrics *out)
{
    fp4_error_clear();
    if (!r || !out) return ret(fp4_error(FP4_ERR_USAGE, "fp4d_result_metrics: NULL argument"));
    if (i < 0 || i >= r->run.ncfg)
        return ret(fp4_error(FP4_ERR_USAGE, "fp4d_result_metrics: index %d is outside 0..%d", i,
                             r->run.ncfg - 1));
    const fp4_qconfig *c = &r->run.cfgs[i];
    const fp4_metrics *m = &r->run.tensors[0].metrics[i];
    memset(out, 0, sizeof *out);
    fp4_format_name(c->format, out->format, sizeof out->format);
    snprintf(out->scale, sizeof out->scale, "%s", fp4_scale_name(c->scale));
    out->block = c->block;
    out->rht = c->rht ? c->rht->n : 0;
    snprintf(out->rounding, sizeof out->rounding, "%s", fp4_rounding_name(c->rounding));
    const bool ok = m->sqnr_status == FP4_SQNR_OK;
    out->sqnr_db = ok && isfinite(m->sqnr_db) ? m->sqnr_db : NAN;
    snprintf(out->sqnr_status, sizeof out->sqnr_status, "%s", sqnr_status_name(m->sqnr_status));
#define FIN(v) (isfinite(v) ? (v) : NAN)
    out->nmse = FIN(m->nmse);
    out->alpha = FIN(m->alpha);
    out->delta = FIN(m->delta);
    out->mean_signed_error = FIN(m->mean_signed_error);
    out->bucket_ratio_15 = FIN(m->bucket_ratio_15);
    out->bucket_ratio_8 = FIN(m->bucket_ratio_8);
    out->tensor_amax = FIN((double)m->tensor_amax);
#undef FIN
    out->elements = m->elements;
    out->zero = m->zero;
    out->nan = m->nan;
    out->inf = m->inf;
    out->saturated = m->saturated;
    out->clipped = m->clipped;
    out->blocks = m->blocks;
    return FP4D_OK;
}
