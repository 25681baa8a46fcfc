/* match.h — a POSIX extended regular expression matched in full against a name, bounded in
 * time and memory whatever the expression (the `re:` patterns of a checkpoint's exclude list:
 * io/quantized.c, run/recipe.c; SPEC §10 "Declarations"). */
#ifndef FP4_MATCH_H
#define FP4_MATCH_H

#include <stdbool.h>

/* The product of counted repetitions ({m}, {m,}, {m,n}) an expression may hold: each is
 * compiled as that many copies, and nested ones multiply. */
#define FP4_REGEX_MAX_COPIES 64

/* The longest expression, as written and with every counted repetition written out. */
#define FP4_REGEX_MAX_BYTES 1000

/* Whether `re` may be compiled and run without unbounded cost: no backreference (\1..\9:
 * matching with one is exponential in the name's length), the product of its counted
 * repetitions' bounds (a {m,} counts m + 1, a {,n} n) at most FP4_REGEX_MAX_COPIES, at most
 * FP4_REGEX_MAX_BYTES bytes as written and as compiled (each counted repetition written out
 * as that many copies of the atom or group it repeats: "([a-z]*){64}" counts 516). */
bool fp4_regex_bounded(const char *re);

/* Whether the POSIX extended regular expression `re` matches all of `s` ("^(re)$"). False when
 * `re` is invalid or not fp4_regex_bounded (it then matches nothing). */
bool fp4_regex_full(const char *re, const char *s);

#endif
