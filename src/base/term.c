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

/* The components of a name (split at `sep`): at most this many are elided by components;
 * a name of more falls back to the character rule. */
enum { ELIDE_MAX_COMPS = 64 };

static bool all_digits(const char *p, size_t len)
{
    if (len == 0) return false;
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)p[i])) return false;
    return true;
}

/* `s` with the components not `keep`: each run of dropped ones (and the separators beside it)
 * one mark, none for a run at the end (the module then ends the name: "…31…q_proj");
 * malloc'd, NULL when out of memory. */
static char *elide_render(const char *s, const size_t *at, const size_t *len, const bool *keep,
                          int k, char sep, const char *mark)
{
    char *r = malloc(strlen(s) + (size_t)k * strlen(mark) + 1);
    if (!r) return NULL;
    size_t o = 0;
    bool prev_kept = false, first = true;
    int last = k - 1;
    while (last > 0 && !keep[last]) last--;
    for (int i = 0; i <= last; i++) {
        if (!keep[i]) {
            if (first || prev_kept) {
                memcpy(r + o, mark, strlen(mark));
                o += strlen(mark);
            }
            prev_kept = false;
            first = false;
            continue;
        }
        if (prev_kept) r[o++] = sep;
        memcpy(r + o, s + at[i], len[i]);
        o += len[i];
        prev_kept = true;
        first = false;
    }
    r[o] = '\0';
    return r;
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
    /* whole components (SPEC §9): a Hugging Face name model.layers.31.self_attn.q_proj.weight
     * keeps its layer index (the first all-digit component), later indices (experts.7), its
     * module (q_proj) and leaf (weight); dropped, one run to a mark, until it fits: the
     * components before the layer index from the right ("model…31.self_attn.q_proj.weight",
     * "…31.self_attn.q_proj.weight"), then those between it and the module from the left
     * ("…31…q_proj.weight"), then the leaf ("…31…q_proj"). A name with no index drops its
     * components but the last two from the left. */
    const char sep = strchr(s, '.') || !strchr(s, '/') ? '.' : '/';
    size_t at[ELIDE_MAX_COMPS], len[ELIDE_MAX_COMPS];
    bool keep[ELIDE_MAX_COMPS];
    int k = 0;
    for (size_t p = 0;; k++) {
        if (k == ELIDE_MAX_COMPS) {
            k = 0;
            break;
        }
        const char *e = strchr(s + p, sep);
        at[k] = p;
        len[k] = e ? (size_t)(e - (s + p)) : strlen(s + p);
        keep[k] = true;
        if (!e) {
            k++;
            break;
        }
        p = (size_t)(e - s) + 1;
    }
    int order[ELIDE_MAX_COMPS], no = 0, L = -1;
    for (int i = 0; i < k && L < 0; i++)
        if (all_digits(s + at[i], len[i])) L = i;
    if (k >= 3 && L >= 0) {
        for (int i = L - 1; i >= 0; i--) order[no++] = i;
        for (int i = L + 1; i < k - 2; i++)
            if (!all_digits(s + at[i], len[i])) order[no++] = i;
        if (k - 1 > L + 1) order[no++] = k - 1;
    } else if (k >= 3) {
        for (int i = 0; i < k - 2; i++) order[no++] = i;
    }
    for (int d = 0; d < no; d++) {
        keep[order[d]] = false;
        if (len[order[d]] == 0) continue; /* an empty component ("/a" or "a..b"): no step */
        char *r = elide_render(s, at, len, keep, k, sep, mark);
        if (!r || fp4_term_columns(r) <= cols) return r;
        free(r);
    }
    /* the characters: two fifths head, three fifths tail */
    int keepc = cols - markc, head = keepc * 2 / 5, tail = keepc - head;
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

/* A row and its flag (FP4_TERM_FLAG at `at` within the line of `len` bytes). */
static void write_flagged(FILE *out, const char *line, size_t at, size_t len, int width)
{
    char *row = strndup(line, at), *flag = strndup(line + at + 1, len - at - 1);
    if (!row || !flag) {
        free(row);
        free(flag);
        return;
    }
    if (width <= 0 || fp4_term_columns(row) + fp4_term_columns(flag) <= width) {
        fputs(row, out);
        fputs(flag, out);
        fputc('\n', out);
    } else {
        int indent = 0;
        while (row[indent] == ' ') indent++;
        fputs(row, out);
        fputc('\n', out);
        const char *f = flag;
        while (*f == ' ') f++;
        size_t fl = strlen(f);
        char *cont = malloc((size_t)indent + 2 + fl + 1);
        if (cont) {
            memset(cont, ' ', (size_t)indent + 2);
            memcpy(cont + indent + 2, f, fl + 1);
            write_line(out, cont, strlen(cont), width);
            free(cont);
        }
    }
    free(row);
    free(flag);
}

void fp4_term_write(FILE *out, const char *text, int width)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        const char *fm = memchr(text, FP4_TERM_FLAG[0], len);
        if (fm) {
            write_flagged(out, text, (size_t)(fm - text), len, width);
        } else if (width <= 0) {
            fwrite(text, 1, len, out);
            if (nl) fputc('\n', out);
        } else {
            write_line(out, text, len, width);
        }
        text += len + (nl ? 1 : 0);
    }
}
