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
    if (strlen(re) > 1000) return false;
    double copies = 1;
    for (const char *p = re; *p; p++) {
        if (*p == '\\') {
            if (p[1] >= '1' && p[1] <= '9') return false; /* a backreference */
            if (p[1]) p++;
            continue;
        }
        if (*p == '[') { /* a bracket expression: braces and backslashes in it are literal */
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
            p = q;
            continue;
        }
        if (*p != '{') continue;
        const char *q = p + 1;
        double m = 0, n = -1;
        if (*q < '0' || *q > '9') continue; /* not an interval */
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
        copies *= (n > m ? n : m) > 1 ? (n > m ? n : m) : 1;
        if (copies > FP4_REGEX_MAX_COPIES) return false;
        p = q - 1;
    }
    return true;
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
