/* status.h — errors as values: the status enum every function returns and the one-line detail
 * recorded with it. Only main.c turns a status into an exit code (SPEC §9). */
#ifndef FP4_STATUS_H
#define FP4_STATUS_H

#include <stdbool.h>

/* Values equal the process exit codes of SPEC §9. */
typedef enum fp4_status {
    FP4_OK = 0,
    FP4_ERR_THRESHOLD = 1, /* a `compare` threshold failed */
    FP4_ERR_USAGE = 2,     /* bad command line */
    FP4_ERR_INPUT = 3,     /* input or data error: missing file, bad dataset, unwritable output */
    FP4_ERR_DEVICE = 4,    /* CUDA requested but unavailable, or a CUDA call failed */
    FP4_ERR_INTERNAL = 5   /* a bug or out of memory */
} fp4_status;

/* Record a one-line error detail (printf-style, no trailing newline) and return `st`, so that
 * callers can write `return fp4_error(FP4_ERR_INPUT, "%s: %s: not found", file, dset);`.
 * The detail is thread-local; the latest call wins. */
fp4_status fp4_error(fp4_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The longest detail kept, terminating NUL included: a longer one keeps its first 1024 bytes
 * and its end (the reason), the middle replaced by " [...] ". */
#define FP4_ERROR_MAX 4096

/* The detail recorded by the latest fp4_error() on this thread ("" if none). */
const char *fp4_last_error(void);

/* Clear the recorded detail. */
void fp4_error_clear(void);

/* Text from a file (dataset names, paths) made safe to show: with FP4_ESC_CONTROL every ASCII
 * control character (0x00-0x1F, 0x7F: newlines, terminal escapes) and every C1 control
 * (U+0080-U+009F) becomes the four characters \xNN; with FP4_ESC_UTF8 every byte that is not
 * part of valid UTF-8 (RFC 3629: no overlongs, surrogates or code points past U+10FFFF) does.
 * Returns a malloc'd copy (NULL when out of memory); *changed (may be NULL) says whether
 * anything was escaped. */
enum { FP4_ESC_CONTROL = 1, FP4_ESC_UTF8 = 2 };
char *fp4_text_escape(const char *s, int flags, bool *changed);

/* Propagate a non-OK status: `FP4_TRY(f(x));` */
#define FP4_TRY(expr)                                                                          \
    do {                                                                                       \
        fp4_status fp4_try_st_ = (expr);                                                       \
        if (fp4_try_st_ != FP4_OK) return fp4_try_st_;                                         \
    } while (0)

#endif
