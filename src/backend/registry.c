/* registry.c — the one file that names the backends: one row per device, in the order
 * --device auto tries them (the CPU last: it always opens). A new backend is one file plus one
 * row here; backend.c opens them through this table only. */
#include "backend/impl.h"

static fp4_status open_cpu(int threads, bool asked, fp4_backend **out)
{
    (void)asked;
    return fp4_cpu_backend_open(threads, out);
}

#ifdef FP4_HAVE_CUDA_BACKEND
static fp4_status open_cuda(int threads, bool asked, fp4_backend **out)
{
    (void)threads;
    return fp4_cuda_backend_open(asked, out); /* asked: the early start (impl.h) */
}
#define CUDA_OPEN open_cuda
#else
#define CUDA_OPEN NULL
#endif

const fp4_backend_entry fp4_backends[] = {
    {FP4_DEVICE_CUDA, CUDA_OPEN,
     "CUDA requested but this build has no CUDA support (rebuild with nvcc present, CUDA=1)"},
    {FP4_DEVICE_CPU, open_cpu, NULL},
};
const int fp4_nbackends = (int)(sizeof fp4_backends / sizeof *fp4_backends);
