/* base/match.c — see base/match.h. A pattern is parsed into a small tree (parse_*), its size
 * checked, then compiled into a Pike VM program (emit); fp4_re_match runs the program over
 * the name's code points, all threads in step, each instruction visited at most once per
 * position. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/match.h"

/* ---- the tree ---------------------------------------------------------------------------- */

enum { N_EMPTY, N_CHAR, N_ANY, N_CLASS, N_CAT, N_ALT, N_REP, N_ASSERT };
enum { A_BEGIN, A_END, A_ENDSTR, A_WORDB, A_NWORDB }; /* ^ \A; $; \Z; \b; \B */

typedef struct node {
    uint8_t kind, sub;  /* sub: the assertion (N_ASSERT) */
    int kid, next;      /* first child (N_CAT, N_ALT, N_REP), next sibling; -1: none */
    int min, max;       /* N_REP: bounds, max -1 unbounded */
    uint32_t c;         /* N_CHAR: the code point; N_CLASS: the class's index */
} node;

typedef struct range {
    uint32_t lo, hi;
} range;

typedef struct cclass {
    int first, n; /* ranges [first, first + n) */
    bool neg;
} cclass;

/* code points above Unicode: a byte that is not UTF-8 (0x110000 + byte), "no character" */
#define CP_BAD 0x110000u
#define CP_NONE 0xFFFFFFFFu

typedef struct parser {
    const unsigned char *p, *end;
    node *nodes;
    int nn, ncap;
    range *rng;
    int nr, rcap;
    cclass *cls;
    int nc, ccap;
    char *why;
    size_t nwhy;
    bool failed;
} parser;

static void fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(parser *ps, const char *fmt, ...)
{
    if (ps->failed) return;
    ps->failed = true;
    if (!ps->why || ps->nwhy == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->why, ps->nwhy, fmt, ap);
    va_end(ap);
}

static void *grow(void *a, int *cap, int need, size_t each)
{
    if (need <= *cap) return a;
    int c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *b = realloc(a, (size_t)c * each);
    if (b) *cap = c;
    return b;
}

static int new_node(parser *ps, int kind)
{
    node *n = grow(ps->nodes, &ps->ncap, ps->nn + 1, sizeof *n);
    if (!n) {
        fail(ps, "out of memory");
        return -1;
    }
    ps->nodes = n;
    n[ps->nn] = (node){.kind = (uint8_t)kind, .kid = -1, .next = -1};
    return ps->nn++;
}

static void add_range(parser *ps, uint32_t lo, uint32_t hi)
{
    range *r = grow(ps->rng, &ps->rcap, ps->nr + 1, sizeof *r);
    if (!r) {
        fail(ps, "out of memory");
        return;
    }
    ps->rng = r;
    r[ps->nr++] = (range){lo, hi};
}

/* One code point of UTF-8 at *p (p < end); a byte that does not start a well-formed sequence
 * is CP_BAD + that byte, one character. */
static uint32_t utf8(const unsigned char **p, const unsigned char *end)
{
    const unsigned char *s = *p;
    const unsigned c = s[0];
    int len;
    uint32_t cp, min;
    if (c < 0x80) {
        *p = s + 1;
        return c;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        *p = s + 1;
        return CP_BAD + c;
    }
    if (end - s < len) {
        *p = s + 1;
        return CP_BAD + c;
    }
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *p = s + 1;
            return CP_BAD + c;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *p = s + 1;
        return CP_BAD + c;
    }
    *p = s + len;
    return cp;
}

static bool is_word(uint32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool is_digit(uint32_t c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(uint32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int hexval(unsigned c)
{
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

/* The ranges of \d \w \s (ASCII), or of their negations \D \W \S (everything else). */
static void add_category(parser *ps, unsigned letter)
{
    static const range d[] = {{'0', '9'}};
    static const range w[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    static const range s[] = {{'\t', '\r'}, {' ', ' '}};
    const range *r;
    int n;
    switch (letter | 0x20) {
    case 'd': r = d, n = 1; break;
    case 'w': r = w, n = 4; break;
    default: r = s, n = 2; break;
    }
    if (!(letter & 0x20)) { /* upper case: the complement, up to the last "bad byte" */
        uint32_t lo = 0;
        for (int i = 0; i < n; i++) {
            if (r[i].lo > lo) add_range(ps, lo, r[i].lo - 1);
            lo = r[i].hi + 1;
        }
        add_range(ps, lo, CP_BAD + 0xFF);
        return;
    }
    for (int i = 0; i < n; i++) add_range(ps, r[i].lo, r[i].hi);
}

/* \x \u \U: exactly k hex digits after the letter at ps->p[-1]. */
static uint32_t hex_escape(parser *ps, int k, unsigned letter)
{
    uint32_t v = 0;
    for (int i = 0; i < k; i++) {
        const int h = ps->p < ps->end ? hexval(*ps->p) : -1;
        if (h < 0) {
            fail(ps, "incomplete escape \\%c", letter);
            return 0;
        }
        v = v << 4 | (uint32_t)h;
        ps->p++;
    }
    if (v > 0x10FFFF) fail(ps, "bad escape \\%c: not a code point", letter);
    return v;
}

/* An escape's character (the backslash already read), for the escapes that stand for one in
 * and out of a class; *cat gets d/w/s/D/W/S for a category (in and out of a class), *assert
 * one of A_* (out of a class), else they are left alone. */
static uint32_t escape(parser *ps, bool in_class, unsigned *cat, int *assert)
{
    if (ps->p >= ps->end) {
        fail(ps, "bad escape (end of pattern)");
        return 0;
    }
    const unsigned c = *ps->p;
    if (c >= 0x80) return utf8(&ps->p, ps->end); /* \é: é */
    ps->p++;
    switch (c) {
    case 'a': return 7;
    case 'f': return 12;
    case 'n': return 10;
    case 'r': return 13;
    case 't': return 9;
    case 'v': return 11;
    case 'x': return hex_escape(ps, 2, c);
    case 'u': return hex_escape(ps, 4, c);
    case 'U': return hex_escape(ps, 8, c);
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
        *cat = c;
        return 0;
    case 'b':
        if (in_class) return 8;
        *assert = A_WORDB;
        return 0;
    case 'B': case 'A': case 'Z':
        if (in_class) break;
        *assert = c == 'B' ? A_NWORDB : c == 'A' ? A_BEGIN : A_ENDSTR;
        return 0;
    case 'N':
        fail(ps, "named character escape \\N{...} is not supported");
        return 0;
    default:
        break;
    }
    if (is_digit(c)) {
        if (in_class || c == '0')
            fail(ps, "octal escape \\%c... is not supported", c);
        else
            fail(ps, "backreference \\%c is not supported", c);
        return 0;
    }
    if (is_alpha(c)) {
        fail(ps, "bad escape \\%c", c);
        return 0;
    }
    return c; /* \. \\ \( ...: the character */
}

/* [...]: the class, as an N_CLASS node. ps->p is past the '['. */
static int parse_class(parser *ps)
{
    cclass *cl = grow(ps->cls, &ps->ccap, ps->nc + 1, sizeof *cl);
    if (!cl) {
        fail(ps, "out of memory");
        return -1;
    }
    ps->cls = cl;
    cclass *me = &ps->cls[ps->nc];
    *me = (cclass){.first = ps->nr};
    if (ps->p < ps->end && *ps->p == '^') me->neg = true, ps->p++;
    const int idx = ps->nc++;
    bool first = true;
    for (;;) {
        if (ps->p >= ps->end) {
            fail(ps, "unterminated character set");
            return -1;
        }
        if (*ps->p == ']' && !first) {
            ps->p++;
            break;
        }
        first = false;
        unsigned cat = 0;
        int as = -1;
        uint32_t lo;
        if (*ps->p == '\\') {
            ps->p++;
            lo = escape(ps, true, &cat, &as);
        } else {
            lo = utf8(&ps->p, ps->end);
        }
        if (ps->failed) return -1;
        if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') { /* a range */
            ps->p++;
            unsigned cat2 = 0;
            uint32_t hi;
            if (*ps->p == '\\') {
                ps->p++;
                hi = escape(ps, true, &cat2, &as);
            } else {
                hi = utf8(&ps->p, ps->end);
            }
            if (ps->failed) return -1;
            if (cat || cat2 || hi < lo) {
                fail(ps, "bad character range");
                return -1;
            }
            add_range(ps, lo, hi);
        } else if (cat) {
            add_category(ps, cat);
        } else {
            add_range(ps, lo, lo);
        }
        if (ps->failed) return -1;
    }
    ps->cls[idx].n = ps->nr - ps->cls[idx].first;
    const int n = new_node(ps, N_CLASS);
    if (n >= 0) ps->nodes[n].c = (uint32_t)idx;
    return n;
}

/* Whether a counted repetition {m}, {m,}, {,n}, {m,n} or {,} starts at p (Python: else the
 * brace is a literal). Its bounds in *min, *max (-1 unbounded; values over 10^9 saturate),
 * its end in *after. */
static bool counted(const unsigned char *p, const unsigned char *end, int *min, int *max,
                    const unsigned char **after)
{
    if (p >= end || *p != '{') return false;
    p++;
    if (p < end && *p == '}') return false;
    long lo = 0, hi = -1;
    bool has_lo = false, has_hi = false;
    while (p < end && is_digit(*p)) {
        lo = lo < 1000000000 ? lo * 10 + (*p - '0') : lo;
        has_lo = true;
        p++;
    }
    if (p < end && *p == ',') {
        p++;
        hi = 0;
        while (p < end && is_digit(*p)) {
            hi = hi < 1000000000 ? hi * 10 + (*p - '0') : hi;
            has_hi = true;
            p++;
        }
        if (!has_hi) hi = -1;
    } else {
        hi = lo;
        if (!has_lo) return false;
    }
    if (p >= end || *p != '}') return false;
    *min = (int)(lo > 1000000000 ? 1000000000 : lo);
    *max = hi < 0 ? -1 : (int)(hi > 1000000000 ? 1000000000 : hi);
    *after = p + 1;
    return true;
}

static int parse_alt(parser *ps, int depth);

/* One atom and what follows it: a group, a class, ., an anchor, an escape or a literal, then
 * at most one quantifier (with ? for lazy). -1 on failure; ps->p is at the atom. */
static int parse_piece(parser *ps, int depth)
{
    const unsigned c = *ps->p;
    int n = -1, qmin, qmax;
    const unsigned char *after;
    bool is_assert = false;
    if (c == '*' || c == '+' || c == '?' || counted(ps->p, ps->end, &qmin, &qmax, &after)) {
        fail(ps, "nothing to repeat");
        return -1;
    }
    if (c == '(') {
        if (depth >= FP4_RE_MAX_DEPTH) {
            fail(ps, "groups nested deeper than %d", FP4_RE_MAX_DEPTH);
            return -1;
        }
        ps->p++;
        if (ps->p < ps->end && *ps->p == '?') {
            const unsigned char *q = ps->p + 1;
            const unsigned k = q < ps->end ? *q : 0;
            const unsigned k2 = q + 1 < ps->end ? q[1] : 0;
            if (k == ':') {
                ps->p = q + 1;
            } else if (k == 'P' && k2 == '<') {
                q += 2;
                const unsigned char *name = q;
                while (q < ps->end && (is_word(*q) || *q >= 0x80)) q++;
                if (q == name || q >= ps->end || *q != '>' || is_digit(*name)) {
                    fail(ps, "bad group name");
                    return -1;
                }
                ps->p = q + 1;
            } else if (k == 'P' && k2 == '=') {
                fail(ps, "backreference (?P=...) is not supported");
                return -1;
            } else if (k == '=' || k == '!') {
                fail(ps, "lookahead (?%c...) is not supported", k);
                return -1;
            } else if (k == '<' && (k2 == '=' || k2 == '!')) {
                fail(ps, "lookbehind (?<%c...) is not supported", k2);
                return -1;
            } else if (k == '#') {
                fail(ps, "comment (?#...) is not supported");
                return -1;
            } else if (k == '>') {
                fail(ps, "atomic group (?>...) is not supported");
                return -1;
            } else if (k == '(') {
                fail(ps, "conditional (?(...)...) is not supported");
                return -1;
            } else if (k && strchr("aiLmsux-", (int)k)) {
                fail(ps, "inline flags (?%c...) are not supported", k);
                return -1;
            } else {
                if (k > ' ' && k < 0x7F)
                    fail(ps, "unknown extension (?%c", k);
                else /* the reason stays one printable line */
                    fail(ps, "unknown extension (? followed by byte 0x%02X", k);
                return -1;
            }
        }
        n = parse_alt(ps, depth + 1);
        if (n < 0) return -1;
        if (ps->p >= ps->end || *ps->p != ')') {
            fail(ps, "missing ), unterminated subpattern");
            return -1;
        }
        ps->p++;
    } else if (c == '[') {
        ps->p++;
        n = parse_class(ps);
    } else if (c == '.') {
        ps->p++;
        n = new_node(ps, N_ANY);
    } else if (c == '^' || c == '$') {
        ps->p++;
        n = new_node(ps, N_ASSERT);
        if (n >= 0) ps->nodes[n].sub = c == '^' ? A_BEGIN : A_END;
        is_assert = true;
    } else if (c == '\\') {
        ps->p++;
        unsigned cat = 0;
        int as = -1;
        const uint32_t ch = escape(ps, false, &cat, &as);
        if (ps->failed) return -1;
        if (cat) {
            cclass *cl = grow(ps->cls, &ps->ccap, ps->nc + 1, sizeof *cl);
            if (!cl) {
                fail(ps, "out of memory");
                return -1;
            }
            ps->cls = cl;
            ps->cls[ps->nc] = (cclass){.first = ps->nr};
            add_category(ps, cat);
            ps->cls[ps->nc].n = ps->nr - ps->cls[ps->nc].first;
            n = new_node(ps, N_CLASS);
            if (n >= 0) ps->nodes[n].c = (uint32_t)ps->nc;
            ps->nc++;
        } else if (as >= 0) {
            n = new_node(ps, N_ASSERT);
            if (n >= 0) ps->nodes[n].sub = (uint8_t)as;
            is_assert = true;
        } else {
            n = new_node(ps, N_CHAR);
            if (n >= 0) ps->nodes[n].c = ch;
        }
    } else {
        const uint32_t ch = utf8(&ps->p, ps->end);
        n = new_node(ps, N_CHAR);
        if (n >= 0) ps->nodes[n].c = ch;
    }
    if (n < 0 || ps->failed) return -1;
    /* the quantifier */
    if (ps->p >= ps->end) return n;
    const unsigned q = *ps->p;
    if (q == '*' || q == '+' || q == '?')
        qmin = q == '+', qmax = q == '?' ? 1 : -1, after = ps->p + 1;
    else if (!counted(ps->p, ps->end, &qmin, &qmax, &after))
        return n;
    if (is_assert) {
        fail(ps, "nothing to repeat (an anchor)");
        return -1;
    }
    if (qmax >= 0 && qmax < qmin) {
        fail(ps, "min repeat greater than max repeat");
        return -1;
    }
    ps->p = after;
    if (ps->p < ps->end && *ps->p == '?') {
        ps->p++; /* lazy: the same yes or no */
    } else if (ps->p < ps->end && *ps->p == '+') {
        fail(ps, "possessive quantifier is not supported");
        return -1;
    }
    int m2, x2;
    const unsigned char *a2;
    if (ps->p < ps->end && (*ps->p == '*' || *ps->p == '+' || *ps->p == '?' ||
                            counted(ps->p, ps->end, &m2, &x2, &a2))) {
        fail(ps, "multiple repeat");
        return -1;
    }
    const int r = new_node(ps, N_REP);
    if (r < 0) return -1;
    ps->nodes[r].kid = n;
    ps->nodes[r].min = qmin;
    ps->nodes[r].max = qmax;
    return r;
}

/* A sequence of pieces up to | or ) or the end, as one N_CAT (N_EMPTY when none). */
static int parse_seq(parser *ps, int depth)
{
    const int cat = new_node(ps, N_CAT);
    if (cat < 0) return -1;
    int last = -1;
    while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
        const int k = parse_piece(ps, depth);
        if (k < 0) return -1;
        if (last < 0)
            ps->nodes[cat].kid = k;
        else
            ps->nodes[last].next = k;
        last = k;
    }
    if (last < 0) ps->nodes[cat].kind = N_EMPTY;
    return cat;
}

static int parse_alt(parser *ps, int depth)
{
    const int first = parse_seq(ps, depth);
    if (first < 0 || ps->p >= ps->end || *ps->p != '|') return first;
    const int alt = new_node(ps, N_ALT);
    if (alt < 0) return -1;
    ps->nodes[alt].kid = first;
    int last = first;
    while (ps->p < ps->end && *ps->p == '|') {
        ps->p++;
        const int k = parse_seq(ps, depth);
        if (k < 0) return -1;
        ps->nodes[last].next = k;
        last = k;
    }
    return alt;
}

/* ---- the program ------------------------------------------------------------------------- */

enum { I_CHAR, I_ANY, I_CLASS, I_SPLIT, I_JMP, I_ASSERT, I_MATCH };

typedef struct insn {
    uint8_t op, arg; /* arg: the assertion (I_ASSERT) */
    int32_t x, y;    /* I_SPLIT: both targets; I_JMP: x; I_CLASS: x the class */
    uint32_t c;      /* I_CHAR */
} insn;

struct fp4_re {
    insn *prog;
    int n;
    range *rng;
    cclass *cls;
    char *prefix;  /* what every match starts with (UTF-8, owned), plen bytes */
    size_t plen;
    int literal;   /* 1: the pattern is the prefix, 2: the prefix then $, 3: then \Z */
};

/* Instructions node k compiles to, saturating above FP4_RE_MAX_INSNS. */
static long size_of(const parser *ps, int k)
{
    const node *nd = &ps->nodes[k];
    long s = 0;
    switch (nd->kind) {
    case N_EMPTY: return 0;
    case N_CHAR: case N_ANY: case N_CLASS: case N_ASSERT: return 1;
    case N_CAT:
        for (int c = nd->kid; c >= 0 && s <= FP4_RE_MAX_INSNS; c = ps->nodes[c].next)
            s += size_of(ps, c);
        return s;
    case N_ALT:
        for (int c = nd->kid; c >= 0 && s <= FP4_RE_MAX_INSNS; c = ps->nodes[c].next)
            s += size_of(ps, c) + 2;
        return s;
    default: { /* N_REP */
        const long e = size_of(ps, nd->kid);
        const long copies = nd->max < 0 ? (long)nd->min + 1 : (long)nd->max;
        if (copies > 0 && e + 2 > (FP4_RE_MAX_INSNS + 1) / copies + 1) return FP4_RE_MAX_INSNS + 1;
        return copies * (e + 2);
    }
    }
}

typedef struct emitter {
    insn *prog;
    int n;
} emitter;

static int put(emitter *em, int op)
{
    em->prog[em->n] = (insn){.op = (uint8_t)op, .x = -1, .y = -1};
    return em->n++;
}

static void emit(emitter *em, const parser *ps, int k)
{
    const node *nd = &ps->nodes[k];
    switch (nd->kind) {
    case N_EMPTY: break;
    case N_CHAR: em->prog[put(em, I_CHAR)].c = nd->c; break;
    case N_ANY: put(em, I_ANY); break;
    case N_CLASS: em->prog[put(em, I_CLASS)].x = (int32_t)nd->c; break;
    case N_ASSERT: em->prog[put(em, I_ASSERT)].arg = nd->sub; break;
    case N_CAT:
        for (int c = nd->kid; c >= 0; c = ps->nodes[c].next) emit(em, ps, c);
        break;
    case N_ALT: {
        /* split L1, next; L1: first; jmp end; next: split L2, next2; ... last; end: the jmps
         * are chained through their x until patched */
        int jumps = -1;
        for (int c = nd->kid; c >= 0; c = ps->nodes[c].next) {
            if (ps->nodes[c].next < 0) {
                emit(em, ps, c);
                break;
            }
            const int sp = put(em, I_SPLIT);
            em->prog[sp].x = sp + 1;
            emit(em, ps, c);
            const int j = put(em, I_JMP);
            em->prog[j].x = jumps;
            jumps = j;
            em->prog[sp].y = em->n;
        }
        while (jumps >= 0) {
            const int nx = em->prog[jumps].x;
            em->prog[jumps].x = em->n;
            jumps = nx;
        }
        break;
    }
    default: /* N_REP */
        for (int i = 0; i < nd->min; i++) emit(em, ps, nd->kid);
        if (nd->max < 0) { /* L: split L+1, out; the atom; jmp L; out: */
            const int sp = put(em, I_SPLIT);
            em->prog[sp].x = sp + 1;
            emit(em, ps, nd->kid);
            em->prog[put(em, I_JMP)].x = sp;
            em->prog[sp].y = em->n;
        } else {
            for (int i = nd->min; i < nd->max; i++) { /* split next, past this copy */
                const int sp = put(em, I_SPLIT);
                em->prog[sp].x = sp + 1;
                emit(em, ps, nd->kid);
                em->prog[sp].y = em->n;
            }
        }
        break;
    }
}

/* The literal start of the pattern (the characters every match begins with), and whether the
 * pattern is nothing else (then matched without the VM). */
static void find_prefix(fp4_re *re, const parser *ps, int root)
{
    const node *top = &ps->nodes[root];
    if (top->kind != N_CAT) return;
    char *buf = malloc((size_t)ps->nn * 4 + 1);
    if (!buf) return;
    size_t len = 0;
    int c = top->kid;
    while (c >= 0 && ps->nodes[c].kind == N_ASSERT && ps->nodes[c].sub == A_BEGIN)
        c = ps->nodes[c].next; /* ^ and \A hold at the start, where re.match begins */
    for (; c >= 0 && ps->nodes[c].kind == N_CHAR && ps->nodes[c].c < 0x110000;
         c = ps->nodes[c].next) {
        const uint32_t cp = ps->nodes[c].c;
        if (cp < 0x80) {
            buf[len++] = (char)cp;
        } else if (cp < 0x800) {
            buf[len++] = (char)(0xC0 | cp >> 6);
            buf[len++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            buf[len++] = (char)(0xE0 | cp >> 12);
            buf[len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            buf[len++] = (char)(0x80 | (cp & 0x3F));
        } else {
            buf[len++] = (char)(0xF0 | cp >> 18);
            buf[len++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            buf[len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            buf[len++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    buf[len] = '\0';
    re->prefix = buf;
    re->plen = len;
    if (c < 0)
        re->literal = 1;
    else if (ps->nodes[c].next < 0 && ps->nodes[c].kind == N_ASSERT &&
             (ps->nodes[c].sub == A_END || ps->nodes[c].sub == A_ENDSTR))
        re->literal = ps->nodes[c].sub == A_END ? 2 : 3;
}

fp4_re *fp4_re_compile(const char *pattern, char *why, size_t nwhy)
{
    if (why && nwhy) why[0] = '\0';
    const size_t len = strlen(pattern);
    if (len > FP4_RE_MAX_BYTES) {
        if (why) snprintf(why, nwhy, "longer than %d bytes", FP4_RE_MAX_BYTES);
        return NULL;
    }
    parser ps = {.p = (const unsigned char *)pattern,
                 .end = (const unsigned char *)pattern + len,
                 .why = why,
                 .nwhy = nwhy};
    int root = parse_alt(&ps, 0);
    if (root >= 0 && ps.p < ps.end) fail(&ps, "unbalanced parenthesis");
    fp4_re *re = NULL;
    if (!ps.failed) {
        const long size = size_of(&ps, root) + 1;
        if (size > FP4_RE_MAX_INSNS)
            fail(&ps, "over %d instructions once its counted repetitions are written out",
                 FP4_RE_MAX_INSNS);
        else if (!(re = calloc(1, sizeof *re)) ||
                 !(re->prog = malloc((size_t)size * sizeof *re->prog)))
            fail(&ps, "out of memory");
        if (!ps.failed) {
            emitter em = {re->prog, 0};
            emit(&em, &ps, root);
            put(&em, I_MATCH);
            re->n = em.n;
            re->rng = ps.rng;
            re->cls = ps.cls;
            ps.rng = NULL;
            ps.cls = NULL;
            find_prefix(re, &ps, root);
        }
    }
    free(ps.nodes);
    free(ps.rng);
    free(ps.cls);
    if (ps.failed) {
        fp4_re_free(re);
        return NULL;
    }
    return re;
}

void fp4_re_free(fp4_re *re)
{
    if (!re) return;
    free(re->prog);
    free(re->rng);
    free(re->cls);
    free(re->prefix);
    free(re);
}

int fp4_re_insns(const fp4_re *re)
{
    return re->n;
}

/* ---- the VM ------------------------------------------------------------------------------ */

/* Where the VM stands: the characters before and at the position (CP_NONE at either end),
 * and whether $ holds (the end, or a final \n). */
typedef struct at {
    uint32_t prev, cur;
    bool end, dollar;
} at;

static bool in_class(const fp4_re *re, int k, uint32_t c)
{
    const cclass *cl = &re->cls[k];
    bool in = false;
    for (int i = 0; i < cl->n && !in; i++)
        in = c >= re->rng[cl->first + i].lo && c <= re->rng[cl->first + i].hi;
    return in != cl->neg;
}

static bool holds(int kind, const at *a)
{
    switch (kind) {
    case A_BEGIN: return a->prev == CP_NONE;
    case A_END: return a->dollar;
    case A_ENDSTR: return a->end;
    case A_WORDB: return is_word(a->prev) != is_word(a->cur);
    default: return is_word(a->prev) == is_word(a->cur);
    }
}

typedef struct vm {
    const fp4_re *re;
    int *mark, *stack;
    uint64_t steps;
} vm;

/* Adds pc and what it reaches without a character to `list` (marks: this position's id);
 * true when that reaches I_MATCH. */
static bool add(vm *v, int *list, int *n, int pc, int id, const at *a)
{
    int sp = 0;
    v->stack[sp++] = pc;
    while (sp > 0) {
        pc = v->stack[--sp];
        if (v->mark[pc] == id) continue;
        v->mark[pc] = id;
        v->steps++;
        const insn *in = &v->re->prog[pc];
        switch (in->op) {
        case I_MATCH: return true;
        case I_JMP: v->stack[sp++] = in->x; break;
        case I_SPLIT:
            v->stack[sp++] = in->y;
            v->stack[sp++] = in->x;
            break;
        case I_ASSERT:
            if (holds(in->arg, a)) v->stack[sp++] = pc + 1;
            break;
        default: list[(*n)++] = pc; break;
        }
    }
    return false;
}

static void at_from(at *a, uint32_t prev, const unsigned char *p, const unsigned char *e)
{
    a->prev = prev;
    a->end = p == e;
    if (p == e) {
        a->cur = CP_NONE;
        a->dollar = true;
        return;
    }
    const unsigned char *q = p;
    a->cur = utf8(&q, e);
    a->dollar = a->cur == '\n' && q == e;
}

bool fp4_re_match(const fp4_re *re, const char *s, uint64_t *steps)
{
    if (steps) *steps = 0;
    const size_t slen = strlen(s);
    if (re->plen && (slen < re->plen || memcmp(s, re->prefix, re->plen) != 0)) return false;
    switch (re->literal) {
    case 1: return true;
    case 2: return slen == re->plen || (slen == re->plen + 1 && s[re->plen] == '\n');
    case 3: return slen == re->plen;
    default: break;
    }
    const int n = re->n;
    int *buf = malloc((size_t)n * 5 * sizeof *buf + 2 * sizeof *buf);
    if (!buf) return false; /* out of memory: matches nothing */
    vm v = {.re = re, .mark = buf, .stack = buf + n};
    int *clist = buf + 3 * n + 2, *nlist = buf + 4 * n + 2;
    for (int i = 0; i < n; i++) v.mark[i] = 0;
    const unsigned char *p = (const unsigned char *)s, *e = p + slen;
    int nc = 0, id = 1;
    at a;
    at_from(&a, CP_NONE, p, e);
    bool found = add(&v, clist, &nc, 0, id, &a);
    while (!found && nc > 0 && p < e) {
        const uint32_t c = utf8(&p, e);
        at_from(&a, c, p, e);
        id++;
        int nn = 0;
        for (int i = 0; i < nc && !found; i++) {
            const insn *in = &re->prog[clist[i]];
            v.steps++;
            bool ok;
            switch (in->op) {
            case I_CHAR: ok = in->c == c; break;
            case I_ANY: ok = c != '\n'; break;
            default: ok = in_class(re, in->x, c); break;
            }
            if (ok) found = add(&v, nlist, &nn, clist[i] + 1, id, &a);
        }
        int *t = clist;
        clist = nlist;
        nlist = t;
        nc = nn;
    }
    free(buf);
    if (steps) *steps = v.steps;
    return found;
}

/* ---- kept patterns ----------------------------------------------------------------------- */

/* Compiled patterns, kept for the process: an exclude list's patterns (at most 65536) are
 * matched against every tensor's name. Open addressing on the pattern's text, allocated on
 * first use; once RX_KEEP are kept, patterns are compiled per call. One mutex guards the
 * table; matching runs outside it (a kept program is never changed or freed). */
#define RX_SLOTS (1 << 18)
#define RX_KEEP (1 << 17)
typedef struct rx_slot {
    char *text;  /* NULL: empty */
    fp4_re *re;  /* NULL: refused */
} rx_slot;
static rx_slot *rx_table;
static int rx_kept;
static pthread_mutex_t rx_lock = PTHREAD_MUTEX_INITIALIZER;

/* The kept slot of `text` (compiled now when new), or NULL when the table is full. */
static const rx_slot *rx_lookup(const char *text)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    const rx_slot *hit = NULL;
    pthread_mutex_lock(&rx_lock);
    if (!rx_table) rx_table = calloc(RX_SLOTS, sizeof *rx_table);
    for (size_t i = (size_t)(h % RX_SLOTS), k = 0; rx_table && k < RX_SLOTS;
         i = (i + 1) % RX_SLOTS, k++) {
        rx_slot *e = &rx_table[i];
        if (e->text && !strcmp(e->text, text)) {
            hit = e;
            break;
        }
        if (!e->text) {
            if (rx_kept >= RX_KEEP || !(e->text = strdup(text))) break;
            e->re = fp4_re_compile(text, NULL, 0);
            rx_kept++;
            hit = e;
            break;
        }
    }
    pthread_mutex_unlock(&rx_lock);
    return hit;
}

bool fp4_regex_match(const char *text, const char *s)
{
    const rx_slot *c = rx_lookup(text);
    if (c) return c->re && fp4_re_match(c->re, s, NULL);
    fp4_re *re = fp4_re_compile(text, NULL, 0);
    const bool m = re && fp4_re_match(re, s, NULL);
    fp4_re_free(re);
    return m;
}
