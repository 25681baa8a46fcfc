/* term.c — tables that fit the terminal (term.h, SPEC §9). */
#include "base/term.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int fp4_term_width(FILE *out)
{
    const char *c = getenv("COLUMNS");
    if (c && *c) {
        char *end = NULL;
        long v = strtol(c, &end, 10);
        if (end && *end == '\0' && end != c && v > 0)
            return v < FP4_TERM_MIN_COLS ? FP4_TERM_MIN_COLS
                   : v > FP4_TERM_MAX_COLS ? FP4_TERM_MAX_COLS
                                           : (int)v;
    }
    int fd = out ? fileno(out) : -1;
    struct winsize ws;
    if (fd < 0 || !isatty(fd)) return 0;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col < FP4_TERM_MIN_COLS ? FP4_TERM_MIN_COLS : ws.ws_col;
    return FP4_TERM_DEFAULT_COLS; /* a terminal that reports no size (mpirun's pty, script) */
}

static bool names_utf8(const char *v)
{
    for (const char *p = v; *p; p++) {
        if (tolower((unsigned char)p[0]) != 'u' || tolower((unsigned char)p[1]) != 't' ||
            tolower((unsigned char)p[2]) != 'f')
            continue;
        const char *q = p + 3;
        if (*q == '-') q++;
        if (q[0] == '8') return true;
    }
    return false;
}

bool fp4_term_utf8(void)
{
    static const char *const vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return names_utf8(v);
    }
    return false;
}

int fp4_term_columns(const char *s)
{
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Byte offset of the start of character number `k` of `s` (or its end). */
static size_t char_offset(const char *s, int k)
{
    size_t i = 0;
    int n = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80) continue;
        if (n++ == k) return i;
    }
    return i;
}

char *fp4_term_elide(const char *s, int cols)
{
    int n = fp4_term_columns(s);
    if (cols < 1) cols = 1;
    if (n <= cols) return strdup(s);
    const bool utf8 = fp4_term_utf8();
    const char *mark = utf8 ? "\xE2\x80\xA6" : "...";
    const int markc = utf8 ? 1 : 3;
    if (cols < markc + 2) return strndup(s, char_offset(s, cols));
    int keep = cols - markc, head = keep * 2 / 5, tail = keep - head;
    /* a Hugging Face name (model.layers.31.self_attn.q_proj.weight): the end from its first
     * all-digit component on (the layer number) kept whole when it fits with a head of 1+,
     * else with no head; when it does not fit at all, the number between two marks and as
     * much of the end as the rest leaves (at least 6 columns): "…31…_attn.q_proj.weight" */
    for (int k = 0, at = 0; s[at]; k += ((unsigned char)s[at] & 0xC0) != 0x80, at++) {
        if (!isdigit((unsigned char)s[at]) || (at > 0 && s[at - 1] != '.')) continue;
        int e = at;
        while (isdigit((unsigned char)s[e])) e++;
        if (s[e] != '.' && s[e] != '\0') continue;
        if (n - k <= keep) {
            tail = n - k;
            head = keep - tail;
            break;
        }
        const int digits = e - at, end = keep - markc - digits;
        if (end < 6) break;
        /* the most telling end: the module (q_proj) before a ".weight" that leaves no room
         * for it, and no sliver of a component (the "n" of self_attn) at the cut */
        size_t sl = strlen(s);
        const char *last = strrchr(s + e, '.');
        if (last && !strcmp(last, ".weight") && last > s + e) {
            const char *mod = last - 1;
            while (mod > s + e && *mod != '.') mod--;
            bool drop = fp4_term_columns(mod + 1) > end;
            /* a later index (experts.7) kept rather than ".weight" */
            for (const char *c = last - 1; !drop && c > s + e; c--) {
                if (c[-1] != '.' || !isdigit((unsigned char)*c)) continue;
                const char *d = c;
                while (isdigit((unsigned char)*d)) d++;
                if (*d != '.') continue;
                drop = fp4_term_columns(c) > end && fp4_term_columns(c) - 7 <= end;
                break;
            }
            if (drop) sl = (size_t)(last - s);
        }
        const char *base = s + e + (s[e] == '.'); /* the part after the number */
        char *src = strndup(base, sl - (size_t)(base - s));
        if (!src) return NULL;
        const int sn = fp4_term_columns(src);
        size_t eb = char_offset(src, sn > end ? sn - end : 0);
        const char *dot = eb > 0 && src[eb - 1] != '.' ? strchr(src + eb, '.') : NULL;
        if (dot) { /* the cut inside a component: a sliver of under 4 columns goes */
            int kept = 0;
            for (const char *c = src + eb; c < dot; c++) kept += ((unsigned char)*c & 0xC0) != 0x80;
            if (kept < 4 && fp4_term_columns(dot + 1) >= 6) eb = (size_t)(dot + 1 - src);
        }
        size_t ml = strlen(mark), el = strlen(src + eb);
        char *r = malloc(2 * ml + (size_t)digits + el + 1);
        if (!r) {
            free(src);
            return NULL;
        }
        memcpy(r, mark, ml);
        memcpy(r + ml, s + at, (size_t)digits);
        memcpy(r + ml + digits, mark, ml);
        memcpy(r + 2 * ml + digits, src + eb, el + 1);
        free(src);
        return r;
    }
    size_t hb = char_offset(s, head), tb = char_offset(s, n - tail);
    size_t tl = strlen(s + tb), ml = strlen(mark);
    char *r = malloc(hb + ml + tl + 1);
    if (!r) return NULL;
    memcpy(r, s, hb);
    memcpy(r + hb, mark, ml);
    memcpy(r + hb + ml, s + tb, tl + 1);
    return r;
}

/* One line (no '\n') of `len` bytes, wrapped to `width`. */
static void write_line(FILE *out, const char *line, size_t len, int width)
{
    char *l = strndup(line, len);
    if (!l) {
        fwrite(line, 1, len, out);
        fputc('\n', out);
        return;
    }
    if (width <= 0 || fp4_term_columns(l) <= width) {
        fputs(l, out);
        fputc('\n', out);
        free(l);
        return;
    }
    int indent = 0;
    while (l[indent] == ' ') indent++;
    int cont = indent + 2;
    if (cont > width / 2) cont = width / 2;
    int col = 0;
    bool first = true;
    char *p = l;
    for (int i = 0; i < indent; i++) fputc(' ', out);
    col = indent;
    p += indent;
    while (*p) {
        size_t wl = strcspn(p, " ");
        char *word = strndup(p, wl);
        if (!word) break;
        int wc = fp4_term_columns(word);
        int need = (first ? 0 : 1) + wc;
        if (!first && col + need > width) {
            fputc('\n', out);
            for (int i = 0; i < cont; i++) fputc(' ', out);
            col = cont;
            first = true;
            need = wc;
        }
        if (col + need > width) { /* a word wider than the room: elided in the middle */
            char *e = fp4_term_elide(word, width - col - (first ? 0 : 1));
            if (e) {
                free(word);
                word = e;
                wc = fp4_term_columns(word);
            }
        }
        if (!first) fputc(' ', out);
        fputs(word, out);
        col += (first ? 0 : 1) + wc;
        first = false;
        free(word);
        p += wl;
        while (*p == ' ') p++;
    }
    fputc('\n', out);
    free(l);
}

void fp4_term_write(FILE *out, const char *text, int width)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        if (width <= 0) {
            fwrite(text, 1, len, out);
            if (nl) fputc('\n', out);
        } else {
            write_line(out, text, len, width);
        }
        text += len + (nl ? 1 : 0);
    }
}
