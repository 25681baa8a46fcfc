/* io/mapguard.c — SIGBUS from a shrunk mapping turned into a failed call (mapguard.h). */
#include "io/mapguard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

/* The innermost active call of this thread (its jump buffer), or NULL. */
static __thread sigjmp_buf *volatile tl_guard;
static struct sigaction g_prev; /* SIGBUS's action before ours */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
    sigjmp_buf *jb = tl_guard;
    if (jb) siglongjmp(*jb, 1);
    /* not a guarded read: the previous action takes this signal and the ones after; returning
     * runs the faulting instruction again under it */
    (void)info, (void)uctx;
    sigaction(sig, &g_prev, NULL);
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_prev);
}

bool fp4_mapguard_call(void (*fn)(void *ctx), void *ctx)
{
    pthread_once(&g_once, install);
    sigjmp_buf jb;
    sigjmp_buf *volatile outer = tl_guard;
    if (sigsetjmp(jb, 1)) { /* SIGBUS inside fn (the signal mask restored) */
        tl_guard = outer;
        return false;
    }
    tl_guard = &jb;
    fn(ctx);
    tl_guard = outer;
    return true;
}
