/* base/match.c — see base/match.h. */
#include <regex.h>
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

bool fp4_regex_full(const char *re, const char *s)
{
    if (!fp4_regex_bounded(re)) return false;
    char full[1100];
    if ((size_t)snprintf(full, sizeof full, "^(%s)$", re) >= sizeof full) return false;
    regex_t rx;
    if (regcomp(&rx, full, REG_EXTENDED | REG_NOSUB) != 0) return false;
    const bool m = regexec(&rx, s, 0, NULL, 0) == 0;
    regfree(&rx);
    return m;
}
