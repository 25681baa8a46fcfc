/* cleanup.c — removes the temporary report file in flight when a signal ends the process, so
 * that -o FILE is never left half-written (SPEC §9). The handler only calls unlink, sigaction
 * and raise, all async-signal-safe. */
#include "report/cleanup.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};
#define CLEANUP_NSIG ((int)(sizeof cleanup_signals / sizeof cleanup_signals[0]))

/* The path is copied in while `armed` is 0, then armed: the handler sees a whole path or none. */
static char cleanup_path[PATH_MAX];
static volatile sig_atomic_t cleanup_armed;
static bool cleanup_installed;
static struct sigaction cleanup_default; /* SIG_DFL, prepared outside the handler */

static void cleanup_handler(int sig)
{
    int saved = errno;
    if (cleanup_armed) {
        cleanup_armed = 0;
        unlink(cleanup_path);
    }
    sigaction(sig, &cleanup_default, NULL);
    /* The signal stays blocked while the handler runs; on return it takes its default action
     * (terminate), and the parent sees the process killed by it. */
    raise(sig);
    errno = saved;
}

static fp4_status cleanup_install(void)
{
    if (cleanup_installed) return FP4_OK;
    cleanup_default.sa_handler = SIG_DFL;
    sigemptyset(&cleanup_default.sa_mask);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cleanup_handler;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < CLEANUP_NSIG; i++) sigaddset(&sa.sa_mask, cleanup_signals[i]);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < CLEANUP_NSIG; i++) {
        struct sigaction old;
        if (sigaction(cleanup_signals[i], NULL, &old) != 0)
            return fp4_error(FP4_ERR_INTERNAL, "sigaction: %s", strerror(errno));
        /* Ignored (nohup, a background job) or already handled by someone else: leave it. */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        if (sigaction(cleanup_signals[i], &sa, NULL) != 0)
            return fp4_error(FP4_ERR_INTERNAL, "sigaction: %s", strerror(errno));
    }
    cleanup_installed = true;
    return FP4_OK;
}

fp4_status fp4_cleanup_register(const char *path)
{
    cleanup_armed = 0;
    size_t n = strlen(path);
    if (n >= sizeof cleanup_path)
        return fp4_error(FP4_ERR_INTERNAL, "%s: path too long to register", path);
    fp4_status st = cleanup_install();
    if (st != FP4_OK) return st;
    memcpy(cleanup_path, path, n + 1);
    atomic_signal_fence(memory_order_seq_cst); /* the path is whole before it is armed */
    cleanup_armed = 1;
    return FP4_OK;
}

int fp4_cleanup_mkstemp(char *tmpl)
{
    sigset_t block, old;
    sigemptyset(&block);
    for (int i = 0; i < CLEANUP_NSIG; i++) sigaddset(&block, cleanup_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &old);
    int fd = mkstemp(tmpl);
    int err = errno;
    if (fd >= 0 && fp4_cleanup_register(tmpl) != FP4_OK) {
        /* Too long to register (cannot happen for names mkstemp accepted) or no handlers:
         * the file is still usable, only not protected. */
        fp4_error_clear();
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    errno = err;
    return fd;
}

void fp4_cleanup_unregister(void) { cleanup_armed = 0; }

const char *fp4_cleanup_registered(void) { return cleanup_armed ? cleanup_path : NULL; }
