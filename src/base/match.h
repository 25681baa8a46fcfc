/* match.h — the "re:" patterns of a checkpoint's exclude list (io/quantized.c, run/recipe.c;
 * SPEC §9 "Default selection" and §10 "Declarations"), matched as compressed-tensors does:
 * Python's re.match(pattern, name), anchored at the start of the name and not at its end
 * unless the pattern says so ($ or \Z). Our own matcher, linear in the name's length whatever
 * the pattern (a Pike VM over a Thompson NFA: each instruction is visited at most once per
 * character), over the subset of Python's syntax such configs use:
 *   literals (any character; \ before a non-alphanumeric one; \a \f \n \r \t \v \xhh \uhhhh
 *   \Uhhhhhhhh), . (any character but \n), [...] and [^...] (ranges, \d \w \s \D \W \S in
 *   them), \d \w \s \D \W \S, * + ? {m} {m,} {,n} {m,n} and their lazy forms (*? ...; lazy
 *   or greedy gives the same yes or no), | , (...) , (?:...) , (?P<name>...), ^ $ \A \Z \b \B.
 * Anything else valid in Python — backreferences (\1, (?P=name)), lookaround ((?=, (?!, (?<=,
 * (?<!), inline flags ((?i)), atomic groups and possessive quantifiers, conditionals,
 * comments, octal and \N{} escapes — is refused with the reason; so is everything Python
 * refuses (its re.error). \d \w \s \b are ASCII only (Python's re.ASCII: a non-ASCII letter
 * or digit in a name is not \w or \d); the name and the pattern are read as UTF-8, one
 * character per code point (a byte that is not UTF-8 is one character of its own). */
#ifndef FP4_MATCH_H
#define FP4_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest pattern, in bytes as written. */
#define FP4_RE_MAX_BYTES 4096

/* The most instructions a pattern compiles to: each counted repetition is written out as that
 * many copies of what it repeats ("(a{100}){100}" needs 10,000). A name of L characters costs
 * at most (instructions + 1) x (L + 1) steps. */
#define FP4_RE_MAX_INSNS 16384

/* The deepest nesting of groups and repetitions. */
#define FP4_RE_MAX_DEPTH 64

typedef struct fp4_re fp4_re;

/* `pattern` (NUL-terminated, without the "re:" prefix) compiled. NULL when it is refused or
 * out of memory, with the reason in `why` (one line, at most `nwhy` bytes, e.g. "lookahead
 * (?=...) is not supported"). Free with fp4_re_free. */
fp4_re *fp4_re_compile(const char *pattern, char *why, size_t nwhy);

/* Whether `re` matches a prefix of `s` (Python's re.match(pattern, s) is not None). `steps`,
 * when not NULL, gets the number of VM steps taken (thread visits; for the tests' cost
 * bound). Safe to call from several threads on one compiled `re`. */
bool fp4_re_match(const fp4_re *re, const char *s, uint64_t *steps);

/* The number of instructions `re` compiled to. */
int fp4_re_insns(const fp4_re *re);

void fp4_re_free(fp4_re *re);

/* Whether pattern `re` (as fp4_re_compile) matches `s` as fp4_re_match; false when `re` is
 * refused. Compiled patterns are kept for the process (an exclude list's patterns are matched
 * against every tensor's name); thread-safe. */
bool fp4_regex_match(const char *re, const char *s);

#endif
