/* progress.c — the progress line of long commands (progress.h, SPEC §9). */
#include "base/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/status.h"
#include "base/term.h"

fp4_progress_mode fp4_progress_mode_for(int verbosity, bool stderr_tty, const char *term)
{
    if (verbosity < 0) return FP4_PROGRESS_OFF;
    if (!stderr_tty) return verbosity > 0 ? FP4_PROGRESS_LINES : FP4_PROGRESS_SPARSE;
    return !term || !*term || !strcmp(term, "dumb") ? FP4_PROGRESS_LINES : FP4_PROGRESS_REDRAW;
}

void fp4_progress_bytes(char *buf, size_t size, double bytes)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, size, u == 0 ? "%.0f %s" : "%.1f %s", bytes, unit[u]);
}

char *fp4_progress_format(char *buf, size_t size, int i, int n, int64_t done, int64_t total,
                          double elapsed, const char *name, int width)
{
    char d[32], t[32], r[32], head[160], rate[64] = "";
    fp4_progress_bytes(d, sizeof d, (double)done);
    if (total > 0) {
        fp4_progress_bytes(t, sizeof t, (double)total);
        snprintf(head, sizeof head, "[%d/%d] %s/%s", i + 1, n, d, t);
    } else {
        snprintf(head, sizeof head, "[%d/%d] %s read", i + 1, n, d);
    }
    if (elapsed >= 1.0 && done > 0) {
        const double per_s = (double)done / elapsed;
        double left = total > 0 ? (double)(total - done) / per_s
                      : i > 0   ? elapsed / i * (n - i)
                                : 0;
        if (left < 0) left = 0;
        const long s = (long)(left + 0.5);
        fp4_progress_bytes(r, sizeof r, per_s);
        snprintf(rate, sizeof rate, " %s/s ETA %ld:%02ld", r, s / 60, s % 60);
    }
    const char *nm = name ? name : "";
    char *shown = NULL;
    if (width > 0 && (int)(strlen(head) + strlen(rate)) > width - 1) rate[0] = '\0';
    if (width > 0 && (int)strlen(head) > width - 1) head[width - 1 > 0 ? width - 1 : 0] = '\0';
    if (width > 0) {
        const int room = width - 1 - (int)strlen(head) - (int)strlen(rate) - 1;
        shown = room >= 8 ? fp4_term_elide(nm, room) : NULL;
        if (room < 8) nm = "";
        else if (shown) nm = shown;
    }
    snprintf(buf, size, "%s%s%s%s", head, rate, *nm ? " " : "", nm);
    free(shown);
    return buf;
}

char *fp4_progress_format_end(char *buf, size_t size, int n, int64_t done, int64_t total,
                              double elapsed)
{
    char d[32], t[32], r[32], rate[48] = "";
    fp4_progress_bytes(d, sizeof d, (double)done);
    if (elapsed >= 1.0 && done > 0) {
        fp4_progress_bytes(r, sizeof r, (double)done / elapsed);
        snprintf(rate, sizeof rate, ", %s/s", r);
    }
    const long s = elapsed > 0 ? (long)(elapsed + 0.5) : 0;
    if (total > 0) {
        fp4_progress_bytes(t, sizeof t, (double)total);
        snprintf(buf, size, "[%d/%d] %s/%s done in %ld:%02ld%s", n, n, d, t, s / 60, s % 60, rate);
    } else {
        snprintf(buf, size, "[%d/%d] %s read, done in %ld:%02ld%s", n, n, d, s / 60, s % 60,
                 rate);
    }
    return buf;
}

bool fp4_progress_due(double elapsed, double last, double delay, double every)
{
    return elapsed >= delay && (last < 0 || elapsed - last >= every);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void fp4_progress_start(fp4_progress *p, int verbosity, int n, int64_t total)
{
    memset(p, 0, sizeof *p);
    p->mode = fp4_progress_mode_for(verbosity, isatty(STDERR_FILENO), getenv("TERM"));
    p->n = n;
    p->total = total;
    p->out = stderr;
    p->clock = now_s;
    p->t0 = now_s();
    p->last = -1;
    p->delay = FP4_PROGRESS_DELAY;
    p->every = FP4_PROGRESS_EVERY;
    const char *e = getenv("FP4DIAG_PROGRESS_EVERY");
    if (e && *e) { /* the CLI refused a malformed value (cmd/env.c); elsewhere it is ignored */
        char *end;
        const double v = strtod(e, &end);
        if (*end == '\0' && v >= 0 && v <= 1e9) p->delay = p->every = v;
    }
}

void fp4_progress_share(fp4_progress *p, int index, int count)
{
    p->share = count > 0 ? index : 0;
    p->shares = count > 0 ? count : 0;
}

static void emit(fp4_progress *p, const char *line)
{
    const bool redraw = p->mode == FP4_PROGRESS_REDRAW;
    char share[48] = "";
    if (p->shares > 0) snprintf(share, sizeof share, "shard %d/%d ", p->share, p->shares);
    fprintf(p->out, redraw ? "\r\033[K%s%s" : "%s%s\n", share, line);
    fflush(p->out);
    p->drawn = redraw;
}

void fp4_progress_step(fp4_progress *p, int i, const char *name, int64_t done)
{
    if (p->mode == FP4_PROGRESS_OFF) return;
    const double now = p->clock();
    if (p->mode == FP4_PROGRESS_SPARSE) {
        if (!fp4_progress_due(now - p->t0, p->last < 0 ? -1 : p->last - p->t0, p->delay,
                              p->every))
            return;
        p->last = now;
    }
    char *esc = fp4_text_escape(name ? name : "", FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    char line[1024];
    int width = fp4_term_width(p->out); /* plain lines too: $COLUMNS or the terminal's */
    if (width > 0 && p->shares > 0) { /* the share's "shard I/N " takes its columns */
        char share[48];
        width -= snprintf(share, sizeof share, "shard %d/%d ", p->share, p->shares);
        if (width < 20) width = 20;
    }
    fp4_progress_format(line, sizeof line, i, p->n, done, p->total, now - p->t0,
                        esc ? esc : "", width);
    free(esc);
    emit(p, line);
}

void fp4_progress_finish(fp4_progress *p, int64_t done)
{
    if (p->mode == FP4_PROGRESS_SPARSE) {
        const double elapsed = p->clock() - p->t0;
        if (p->last >= 0 || elapsed >= p->delay) {
            char line[256];
            emit(p, fp4_progress_format_end(line, sizeof line, p->n, done, p->total, elapsed));
        }
    }
    fp4_progress_end(p);
}

void fp4_progress_end(fp4_progress *p)
{
    if (p->drawn) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
    }
    p->drawn = false;
    p->mode = FP4_PROGRESS_OFF;
}
