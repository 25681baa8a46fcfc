/* status.c — the thread-local one-line error detail behind fp4_error(), and the escaping of
 * file-supplied text (names) for stderr and JSON. */
#include "base/status.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char fp4_err_buf[FP4_ERROR_MAX];
/* A longer detail keeps its head and its tail (where the reason is), the middle elided. */
#define ERR_HEAD 1024
#define ERR_MARK " [...] "

fp4_status fp4_error(fp4_status st, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(fp4_err_buf, sizeof fp4_err_buf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof fp4_err_buf) {
        char *full = malloc((size_t)n + 1);
        if (full) {
            vsnprintf(full, (size_t)n + 1, fmt, ap2);
            const size_t mark = sizeof ERR_MARK - 1;
            const size_t tail = sizeof fp4_err_buf - 1 - ERR_HEAD - mark;
            memcpy(fp4_err_buf, full, ERR_HEAD);
            memcpy(fp4_err_buf + ERR_HEAD, ERR_MARK, mark);
            memcpy(fp4_err_buf + ERR_HEAD + mark, full + (size_t)n - tail, tail + 1);
            free(full);
        }
    }
    va_end(ap2);
    return st;
}

const char *fp4_last_error(void) { return fp4_err_buf; }

void fp4_error_clear(void) { fp4_err_buf[0] = '\0'; }

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when s[0] does not start one. */
static int utf8_len(const unsigned char *s)
{
    const unsigned c = s[0];
    if (c < 0x80) return 1;
    int n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
    else return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0; /* also stops at the terminating NUL */
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

char *fp4_text_escape(const char *s, int flags, bool *changed)
{
    if (changed) *changed = false;
    if (!s) s = "";
    const size_t n = strlen(s);
    char *out = malloc(4 * n + 1); /* each byte becomes at most \xNN */
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    while (*p) {
        int len = utf8_len(p);
        bool esc = false;
        if (len == 0) esc = (flags & FP4_ESC_UTF8) != 0, len = 1;
        else if (len == 1) esc = (flags & FP4_ESC_CONTROL) && (*p < 0x20 || *p == 0x7F);
        else if (len == 2) esc = (flags & FP4_ESC_CONTROL) && p[0] == 0xC2 && p[1] < 0xA0;
        if (esc) {
            for (int i = 0; i < len; i++)
                o += (size_t)snprintf(out + o, 5, "\\x%02X", p[i]);
            if (changed) *changed = true;
        } else {
            memcpy(out + o, p, (size_t)len);
            o += (size_t)len;
        }
        p += len;
    }
    out[o] = '\0';
    return out;
}
