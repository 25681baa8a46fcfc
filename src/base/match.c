/* base/match.c — see base/match.h. */
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/match.h"

bool fp4_regex_bounded(const char *re)
{
    const size_t len = strlen(re);
    if (len > FP4_REGEX_MAX_BYTES) return false;
    /* per open group: its size written out so far, and the size of its last atom (what a
     * following counted repetition repeats); [0] is the whole expression */
    double total[FP4_REGEX_MAX_BYTES + 2], last[FP4_REGEX_MAX_BYTES + 2];
    int depth = 0;
    total[0] = last[0] = 0;
    double copies = 1;
    for (const char *p = re; *p; p++) {
        double atom = 1;
        if (*p == '\\') {
            if (p[1] >= '1' && p[1] <= '9') return false; /* a backreference */
            if (p[1]) p++, atom = 2;
        } else if (*p == '[') { /* a bracket expression: braces and backslashes in it are literal */
            const char *q = p + 1;
            if (*q == '^') q++;
            if (*q == ']') q++;
            while (*q && *q != ']') {
                if (q[0] == '[' && (q[1] == ':' || q[1] == '.' || q[1] == '=')) {
                    const char *e = strchr(q + 2, q[1]);
                    while (e && e[1] != ']') e = strchr(e + 1, q[1]);
                    if (!e) return false;
                    q = e + 2;
                } else {
                    q++;
                }
            }
            if (!*q) return false; /* unterminated: invalid anyway */
            atom = (double)(q - p + 1);
            p = q;
        } else if (*p == '(') {
            depth++;
            total[depth] = last[depth] = 0;
            continue;
        } else if (*p == ')' && depth > 0) {
            atom = total[depth] + 2;
            depth--;
        } else if (*p == '|') {
            total[depth] += 1;
            last[depth] = 0;
            continue;
        } else if (*p == '{' && ((p[1] >= '0' && p[1] <= '9') || p[1] == ',')) {
            /* an interval {m}, {m,}, {m,n} or {,n} (glibc: {0,n}): what it repeats is
             * compiled as max(m, n) copies ({m,}: m + 1) */
            const char *q = p + 1;
            double m = 0, n;
            while (*q >= '0' && *q <= '9') m = m * 10 + (*q++ - '0');
            if (*q == ',') {
                q++;
                if (*q >= '0' && *q <= '9') {
                    n = 0;
                    while (*q >= '0' && *q <= '9') n = n * 10 + (*q++ - '0');
                } else {
                    n = m + 1; /* {m,}: m copies and a star */
                }
            } else {
                n = m;
            }
            const double k = (n > m ? n : m) > 1 ? (n > m ? n : m) : 1;
            copies *= k;
            if (copies > FP4_REGEX_MAX_COPIES) return false;
            total[depth] += last[depth] * (k - 1) + (double)(q - p + (*q == '}'));
            last[depth] *= k;
            if (total[depth] > FP4_REGEX_MAX_BYTES) return false;
            p = *q == '}' ? q : q - 1;
            continue;
        } else if (*p == '*' || *p == '+' || *p == '?') {
            total[depth] += 1;
            continue;
        }
        total[depth] += atom;
        last[depth] = atom;
        if (total[depth] > FP4_REGEX_MAX_BYTES) return false;
    }
    return total[0] <= FP4_REGEX_MAX_BYTES;
}

/* Compiled expressions, kept for the process: an exclude list's patterns are matched against
 * every tensor's name, and compiling dominates (~5 us each). Open addressing on the pattern
 * text; once full, patterns are compiled per call. Guarded by one mutex; regexec on a shared
 * regex_t is safe (glibc locks inside). */
#define RX_SLOTS 8192
#define RX_KEEP 4096
typedef struct rx_slot {
    char *re;    /* NULL: empty */
    bool ok;     /* compiled */
    regex_t rx;
} rx_slot;
static rx_slot rx_cache[RX_SLOTS];
static int rx_kept;
static pthread_mutex_t rx_lock = PTHREAD_MUTEX_INITIALIZER;

static bool rx_compile(const char *re, regex_t *rx)
{
    char full[1100];
    if ((size_t)snprintf(full, sizeof full, "^(%s)$", re) >= sizeof full) return false;
    return regcomp(rx, full, REG_EXTENDED | REG_NOSUB) == 0;
}

/* The cached slot of `re` (compiled now when new), or NULL when the cache is full. */
static const rx_slot *rx_lookup(const char *re)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)re; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    const rx_slot *hit = NULL;
    pthread_mutex_lock(&rx_lock);
    for (size_t i = (size_t)(h % RX_SLOTS), k = 0; k < RX_SLOTS; i = (i + 1) % RX_SLOTS, k++) {
        rx_slot *e = &rx_cache[i];
        if (e->re && !strcmp(e->re, re)) {
            hit = e;
            break;
        }
        if (!e->re) {
            if (rx_kept >= RX_KEEP || !(e->re = strdup(re))) break;
            e->ok = rx_compile(re, &e->rx);
            rx_kept++;
            hit = e;
            break;
        }
    }
    pthread_mutex_unlock(&rx_lock);
    return hit;
}

bool fp4_regex_full(const char *re, const char *s)
{
    if (!fp4_regex_bounded(re)) return false;
    const rx_slot *c = rx_lookup(re);
    if (c) return c->ok && regexec(&c->rx, s, 0, NULL, 0) == 0;
    regex_t rx;
    if (!rx_compile(re, &rx)) return false;
    const bool m = regexec(&rx, s, 0, NULL, 0) == 0;
    regfree(&rx);
    return m;
}
