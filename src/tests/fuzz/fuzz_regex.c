/* fuzz_regex.c — libFuzzer target over the "re:" matcher (base/match.c): the input up to its
 * first NUL is a pattern, the rest a name (up to its own NUL). A pattern compiles or is refused
 * with a one-line reason; a compiled one matches within its cost bound, (instructions + 1) x
 * (characters + 1) visits plus as many character tests, on the name and on 200 copies of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192) return 0;
    char *buf = malloc(size + 2);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    const char *pattern = buf, *name = buf + strlen(buf) + 1;
    char why[160];
    fp4_re *re = fp4_re_compile(pattern, why, sizeof why);
    if (!re) {
        if (!why[0] || strchr(why, '\n')) abort();
    } else {
        const size_t n = strlen(name);
        char *big = malloc(n * 200 + 1);
        const char *names[2] = {name, big};
        if (big) {
            for (int i = 0; i < 200; i++) memcpy(big + (size_t)i * n, name, n);
            big[n * 200] = '\0';
        }
        for (int k = 0; k < (big ? 2 : 1); k++) {
            uint64_t steps;
            const bool m = fp4_re_match(re, names[k], &steps);
            const uint64_t bound =
                2 * ((uint64_t)fp4_re_insns(re) + 1) * ((uint64_t)strlen(names[k]) + 1);
            if (steps > bound || m != fp4_regex_match(pattern, names[k])) abort();
        }
        free(big);
        fp4_re_free(re);
    }
    free(buf);
    return 0;
}
