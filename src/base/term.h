/* term.h — text tables that fit the terminal (SPEC §9 "Terminal output"): the width a table
 * stream has, a tensor name elided in the middle to a number of columns, and free text lines
 * wrapped at spaces so that no line runs past the width and no number is split. */
#ifndef FP4_TERM_H
#define FP4_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Narrowest width honoured: a $COLUMNS or terminal below it is taken as this. */
enum { FP4_TERM_MIN_COLS = 40, FP4_TERM_MAX_COLS = 4096, FP4_TERM_DEFAULT_COLS = 80 };

/* The width, in columns, a table written to `out` must fit: $COLUMNS when it is a whole number
 * (clamped to [FP4_TERM_MIN_COLS, FP4_TERM_MAX_COLS]); else the terminal's width
 * (ioctl TIOCGWINSZ on fileno(out)) when `out` is a terminal that reports one;
 * FP4_TERM_DEFAULT_COLS when `out` is a terminal that reports no size (a pseudo-terminal made
 * without one, as mpirun's or script's under a batch job); else 0: no limit (a pipe or file
 * gets names in full). */
int fp4_term_width(FILE *out);

/* True when the locale's character set is UTF-8: the first of $LC_ALL, $LC_CTYPE, $LANG that is
 * set and non-empty names "UTF-8" or "utf8" (any case). The elision mark is then "…" (one
 * column), else "..." (three). */
bool fp4_term_utf8(void);

/* Columns of UTF-8 text `s` (one per character; no wide characters are assumed). */
int fp4_term_columns(const char *s);

/* `s` (UTF-8, already escaped) shortened to at most `cols` columns, the one rule of every table
 * (SPEC §9): whole components (split at '.', or '/' for a name with no '.') dropped, each run
 * of them one elision mark (fp4_term_utf8), until it fits — first those before the layer index
 * (the first all-digit component) from the right, then those between it and the module (the
 * component before the leaf) from the left, other indices (experts.7) kept, then the leaf:
 * "model…31.self_attn.q_proj.weight", "…31.self_attn.q_proj.weight", "…31…q_proj.weight",
 * "…31…q_proj"; a name with no index drops all but its last two components from the left.
 * When even that does not fit, two fifths of the characters from the head and three fifths
 * from the tail around one mark. `s` as it is when it fits. cols < 4 keeps the first `cols`
 * characters. Never splits a UTF-8 sequence. Returns a malloc'd string, NULL when out of
 * memory. */
char *fp4_term_elide(const char *s, int cols);

/* The mark a table row puts before its flag (KEEP, LAYOUT, "! non-finite input: ..."): the
 * row up to it keeps its columns; fp4_term_write joins the two when they fit the width, else
 * writes the row as it is and the flag on a continuation line under it. Only in text that
 * goes through fp4_term_write with a width (a table with none writes the flag in line). */
#define FP4_TERM_FLAG "\x1f"

/* Write `text` to `out`, each line that is longer than `width` columns wrapped at spaces onto
 * continuation lines indented two more than the line's own indent; a word longer than the room
 * is elided in the middle (never a number: the tables' numbers are short). A line holding
 * FP4_TERM_FLAG is a table row and its flag: the mark removed when the whole fits, else the
 * row unwrapped (its columns kept) and the flag, its leading spaces dropped, on the next line
 * indented two more than the row (itself wrapped at spaces). width <= 0 writes the text as it
 * is, the mark removed. */
void fp4_term_write(FILE *out, const char *text, int width);

#endif
