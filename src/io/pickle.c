/* io/pickle.c — the strict torch.save pickle reader (pickle.h): a small stack machine over
 * passive values. No opcode here calls, imports or constructs anything outside this file. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/pickle.h"
#include "io/st_parse.h" /* fp4_utf8_valid */

typedef enum vkind {
    V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_TUPLE, V_LIST, V_DICT,
    V_GLOBAL, V_STORAGE, V_TENSOR
} vkind;

/* The globals a state dict's pickle names. */
typedef enum gkind { G_ODICT, G_REBUILD, G_PARAM, G_STORAGE, G_DTYPE } gkind;

typedef struct val val;
struct val {
    vkind kind;
    int64_t i;        /* V_INT, V_BOOL; V_STORAGE: numel */
    char *s;          /* V_STR (owned, NUL-terminated; len below); V_GLOBAL: the class name
                         (owned); V_STORAGE: the key (owned) */
    size_t len;
    bool bad_utf8;    /* V_STR: not valid UTF-8 (Python writes a lone surrogate so) */
    val **items;      /* V_TUPLE, V_LIST: n items; V_DICT: n keys then... see vals */
    val **vals;       /* V_DICT: values (n of them) */
    int n, cap;
    gkind g;          /* V_GLOBAL */
    val *ref;         /* V_STORAGE: its class (a V_GLOBAL); V_TENSOR: its storage */
    val *first;       /* V_STORAGE: the first persistent id of its key in the stream (itself
                         or an earlier one): torch.load builds the key's storage from that one
                         and reuses it for every later id of the key */
    int user;         /* V_STORAGE, a key's first: 1 + the first listed tensor whose id agrees
                         with it (0: none) */
    char loc[32];     /* V_STORAGE: location */
    fp4_pkl_tensor *t; /* V_TENSOR: the view (storage fields filled when flattened) */
};

typedef struct pkl {
    const char *file;
    const uint8_t *b;
    size_t n, pos;
    val **all;         /* every value made, for freeing */
    size_t nall, capall;
    val **stack;
    size_t sp, capstack;
    size_t *marks;
    size_t nmarks, capmarks;
    val **memo;
    size_t nmemo;
    size_t nput;       /* distinct memo entries put */
    fp4_pkl_tensor *out;
    const val **outs;  /* [capout] each entry's storage (NULL: none) */
    int nout, capout;
    size_t budget;     /* entries the flattening may still visit */
} pkl;

static const char *op_name(uint8_t op)
{
    switch (op) {
    case 'c': return "GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 'P': return "PERSID";
    case 'S': return "STRING";
    case 'V': return "UNICODE";
    case 'I': return "INT";
    case 'L': return "LONG";
    case 'F': return "FLOAT";
    case 'd': return "DICT";
    case 'l': return "LIST";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'p': return "PUT";
    case 'g': return "GET";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x8b: return "LONG4";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 'B': return "BINBYTES";
    case 'C': return "SHORT_BINBYTES";
    case 0x8e: return "BINBYTES8";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    default: return "unknown";
    }
}

static fp4_status oom(void) { return fp4_error(FP4_ERR_INTERNAL, "out of memory"); }

static val *mk(pkl *p, vkind k)
{
    if (p->nall == p->capall) {
        size_t nc = p->capall ? p->capall * 2 : 64;
        val **a = realloc(p->all, nc * sizeof *a);
        if (!a) return NULL;
        p->all = a;
        p->capall = nc;
    }
    val *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->kind = k;
    p->all[p->nall++] = v;
    return v;
}

static void val_free(val *v)
{
    free(v->s);
    free(v->items);
    free(v->vals);
    if (v->t) free(v->t);
    free(v);
}

static fp4_status bad(pkl *p, const char *what)
{
    return fp4_error(FP4_ERR_INPUT, "%s: pickle: %s at byte %zu", p->file, what, p->pos);
}

static fp4_status push(pkl *p, val *v)
{
    if (!v) return oom();
    if (p->sp == p->capstack) {
        size_t nc = p->capstack ? p->capstack * 2 : 64;
        val **a = realloc(p->stack, nc * sizeof *a);
        if (!a) return oom();
        p->stack = a;
        p->capstack = nc;
    }
    p->stack[p->sp++] = v;
    return FP4_OK;
}

/* The bottom of the current frame: the last MARK, or 0. */
static size_t frame_base(const pkl *p) { return p->nmarks ? p->marks[p->nmarks - 1] : 0; }

static val *pop(pkl *p)
{
    if (p->sp <= frame_base(p)) return NULL;
    return p->stack[--p->sp];
}

static val *top(pkl *p) { return p->sp > frame_base(p) ? p->stack[p->sp - 1] : NULL; }

static bool need(pkl *p, size_t k) { return p->n - p->pos >= k; }

static uint64_t rd_le(const uint8_t *b, int k)
{
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

/* Items from the last MARK to the top, as a new tuple/list/items array; the MARK popped. */
static fp4_status pop_mark(pkl *p, val ***items, size_t *count)
{
    *items = NULL;
    *count = 0;
    if (!p->nmarks) return bad(p, "no MARK for the opcode");
    size_t base = p->marks[--p->nmarks];
    *count = p->sp - base;
    *items = NULL;
    if (*count) {
        if (!(*items = malloc(*count * sizeof **items))) return oom();
        memcpy(*items, p->stack + base, *count * sizeof **items);
    }
    p->sp = base;
    return FP4_OK;
}

static fp4_status make_tuple(pkl *p, val **items, size_t count, vkind k)
{
    val *t = mk(p, k);
    if (!t) {
        free(items);
        return oom();
    }
    t->items = items;
    t->n = t->cap = (int)count;
    return push(p, t);
}

static fp4_status dict_add(pkl *p, val *d, val *k, val *v)
{
    if (!d || d->kind != V_DICT) return bad(p, "SETITEM on something that is not a dict");
    if (!k || !v) return bad(p, "SETITEM without a key and a value");
    if (d->n == d->cap) {
        int nc = d->cap ? d->cap * 2 : 8;
        if (nc < d->cap) return oom();
        val **a = realloc(d->items, (size_t)nc * sizeof *a);
        if (!a) return oom();
        d->items = a;
        val **b = realloc(d->vals, (size_t)nc * sizeof *b);
        if (!b) return oom();
        d->vals = b;
        d->cap = nc;
    }
    d->items[d->n] = k;
    d->vals[d->n++] = v;
    return FP4_OK;
}

static fp4_status list_add(pkl *p, val *l, val *v)
{
    if (!l || l->kind != V_LIST) return bad(p, "APPEND on something that is not a list");
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 8;
        val **a = realloc(l->items, (size_t)nc * sizeof *a);
        if (!a) return oom();
        l->items = a;
        l->cap = nc;
    }
    l->items[l->n++] = v;
    return FP4_OK;
}

static bool is_ident(const char *s, size_t n)
{
    if (!n) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

static const char *const dtypes[] = {
    "float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "uint8",
    "int16", "short", "int32", "int", "int64", "long", "bool", "uint16", "uint32", "uint64",
    "float8_e4m3fn", "float8_e5m2", "complex64", "complex128",
};

/* The global module.name as a value, or an error naming it. */
static fp4_status global(pkl *p, const char *mod, size_t ml, const char *name, size_t nl)
{
    gkind g;
    bool ok = false;
#define IS(str, s, l) (strlen(str) == (l) && memcmp((str), (s), (l)) == 0)
    if (IS("collections", mod, ml) && IS("OrderedDict", name, nl)) {
        g = G_ODICT;
        ok = true;
    } else if (IS("torch._utils", mod, ml) && IS("_rebuild_tensor_v2", name, nl)) {
        g = G_REBUILD;
        ok = true;
    } else if (IS("torch._utils", mod, ml) && IS("_rebuild_parameter", name, nl)) {
        g = G_PARAM;
        ok = true;
    } else if (IS("torch", mod, ml) && nl > 7 && nl < 40 && is_ident(name, nl) &&
               memcmp(name + nl - 7, "Storage", 7) == 0) {
        g = G_STORAGE;
        ok = true;
    } else if (IS("torch", mod, ml)) {
        for (size_t i = 0; !ok && i < sizeof dtypes / sizeof *dtypes; i++)
            if (IS(dtypes[i], name, nl)) {
                g = G_DTYPE;
                ok = true;
            }
    }
#undef IS
    if (!ok) {
        /* name it, made safe to print: at most 60 bytes of each part, controls escaped */
        char m[64], nm[64];
        snprintf(m, sizeof m, "%.*s", (int)(ml < 60 ? ml : 60), mod);
        snprintf(nm, sizeof nm, "%.*s", (int)(nl < 60 ? nl : 60), name);
        char *em = fp4_text_escape(m, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        char *en = fp4_text_escape(nm, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        fp4_status st = fp4_error(FP4_ERR_INPUT, "%s: pickle global %s.%s refused (only a "
                                  "state dict's tensors are read; nothing in it is run)",
                                  p->file, em ? em : "?", en ? en : "?");
        free(em);
        free(en);
        return st;
    }
    val *v = mk(p, V_GLOBAL);
    if (!v || !(v->s = strndup(name, nl))) return oom();
    v->len = nl;
    v->g = g;
    return push(p, v);
}

static bool as_int(const val *v, int64_t *out)
{
    if (!v || (v->kind != V_INT && v->kind != V_BOOL)) return false;
    *out = v->i;
    return true;
}

/* A tuple of ints (size or stride) into dims[]; rank returned in *rank. A negative one is
 * refused, or with `neg` accepted and *neg set (a stride: that view's problem, not the
 * file's). */
static bool int_tuple(const val *v, int *rank, int64_t *dims, int cap, bool *neg)
{
    if (!v || (v->kind != V_TUPLE && v->kind != V_LIST)) return false;
    *rank = v->n;
    if (neg) *neg = false;
    for (int i = 0; i < v->n; i++) {
        int64_t x;
        if (!as_int(v->items[i], &x) || (x < 0 && !neg)) return false;
        if (x < 0) *neg = true;
        if (i < cap) dims[i] = x;
    }
    return true;
}

static fp4_status reduce(pkl *p)
{
    val *args = pop(p), *fn = pop(p);
    if (!args || !fn) return bad(p, "REDUCE with an empty stack");
    if (fn->kind != V_GLOBAL || args->kind != V_TUPLE) return bad(p, "REDUCE of something not a known callable");
    switch (fn->g) {
    case G_ODICT:
        if (args->n != 0) return bad(p, "OrderedDict with arguments refused");
        return push(p, mk(p, V_DICT));
    case G_PARAM: {
        int64_t rg;
        if (args->n != 3 || args->items[0]->kind != V_TENSOR || !as_int(args->items[1], &rg))
            return bad(p, "_rebuild_parameter with arguments other than (tensor, bool, hooks)");
        return push(p, args->items[0]);
    }
    case G_REBUILD: {
        if (args->n != 6 && args->n != 7)
            return bad(p, "_rebuild_tensor_v2 with other than 6 or 7 arguments");
        val *stor = args->items[0];
        if (stor->kind != V_STORAGE) return bad(p, "_rebuild_tensor_v2 of something not a storage");
        val *t = mk(p, V_TENSOR);
        if (!t || !(t->t = calloc(1, sizeof *t->t))) return oom();
        t->ref = stor;
        int64_t off, rg;
        int rank_s = 0, rank_t = 0;
        int64_t stride[FP4_PKL_MAX_RANK] = {0};
        bool neg = false;
        if (!as_int(args->items[1], &off))
            return bad(p, "_rebuild_tensor_v2: storage offset not an integer");
        if (!int_tuple(args->items[2], &rank_s, t->t->size, FP4_PKL_MAX_RANK, NULL))
            return bad(p, "_rebuild_tensor_v2: size not a tuple of integers >= 0");
        if (!int_tuple(args->items[3], &rank_t, stride, FP4_PKL_MAX_RANK, &neg))
            return bad(p, "_rebuild_tensor_v2: stride not a tuple of integers");
        if (rank_s != rank_t) return bad(p, "_rebuild_tensor_v2: size and stride differ in rank");
        if (!as_int(args->items[4], &rg)) return bad(p, "_rebuild_tensor_v2: requires_grad not a bool");
        t->t->offset = off;
        t->t->rank = rank_s;
        memcpy(t->t->stride, stride, sizeof stride);
        /* a negative stride or offset (torch.save writes neither): this view is not read, the
         * file's other tensors are */
        if (neg || off < 0) {
            char sv[96] = "";
            size_t at = 0;
            for (int k = 0; k < rank_t && k < FP4_PKL_MAX_RANK && at < sizeof sv - 24; k++)
                at += (size_t)snprintf(sv + at, sizeof sv - at, "%s%lld", k ? ", " : "",
                                       (long long)stride[k]);
            if (neg)
                snprintf(t->t->problem, sizeof t->t->problem,
                         "a view with strides (%s): a negative stride is not read", sv);
            else
                snprintf(t->t->problem, sizeof t->t->problem,
                         "a view at storage offset %lld: a negative offset is not read",
                         (long long)off);
        }
        if (rank_s > FP4_PKL_MAX_RANK)
            snprintf(t->t->problem, sizeof t->t->problem, "rank %d exceeds %d", rank_s,
                     FP4_PKL_MAX_RANK);
        return push(p, t);
    }
    default: return bad(p, "REDUCE of a storage class or dtype refused");
    }
}

static fp4_status persid(pkl *p)
{
    val *pid = pop(p);
    if (!pid) return bad(p, "BINPERSID with an empty stack");
    if (pid->kind != V_TUPLE || pid->n != 5 || pid->items[0]->kind != V_STR ||
        strcmp(pid->items[0]->s, "storage") != 0)
        return bad(p, "persistent id other than ('storage', class, key, location, numel)");
    val *cls = pid->items[1], *key = pid->items[2], *loc = pid->items[3];
    int64_t numel;
    if (cls->kind != V_GLOBAL || cls->g != G_STORAGE)
        return bad(p, "persistent id whose storage class is not torch.*Storage");
    if (key->kind != V_STR || !key->len || loc->kind != V_STR || loc->bad_utf8 ||
        !as_int(pid->items[4], &numel) || numel < 0)
        return bad(p, "persistent id with a bad key, location or element count");
    for (size_t i = 0; i < key->len; i++) /* the key names a zip member: no path tricks */
        if (!is_ident(key->s + i, 1) && key->s[i] != '.' && key->s[i] != '-')
            return bad(p, "storage key with characters other than [A-Za-z0-9_.-]");
    if (strstr(key->s, "..")) return bad(p, "storage key holding '..'");
    val *s = mk(p, V_STORAGE);
    if (!s || !(s->s = strdup(key->s))) return oom();
    s->ref = cls;
    s->i = numel;
    snprintf(s->loc, sizeof s->loc, "%s", loc->s);
    return push(p, s);
}

static fp4_status memo_put(pkl *p, uint64_t idx)
{
    val *v = top(p);
    if (!v) return bad(p, "memo put with an empty stack");
    if (idx > p->n) return bad(p, "memo index beyond any the stream can use");
    if (idx >= p->nmemo) {
        size_t nc = (size_t)idx + 1 > p->nmemo * 2 ? (size_t)idx + 1 : p->nmemo * 2;
        val **a = realloc(p->memo, nc * sizeof *a);
        if (!a) return oom();
        memset(a + p->nmemo, 0, (nc - p->nmemo) * sizeof *a);
        p->memo = a;
        p->nmemo = nc;
    }
    if (!p->memo[idx]) p->nput++;
    p->memo[idx] = v;
    return FP4_OK;
}

static fp4_status memo_get(pkl *p, uint64_t idx)
{
    if (idx >= p->nmemo || !p->memo[idx]) return bad(p, "memo get of an index never put");
    return push(p, p->memo[idx]);
}

static fp4_status str_value(pkl *p, size_t len)
{
    if (!need(p, len)) return bad(p, "string past the end");
    val *v = mk(p, V_STR);
    if (!v || !(v->s = malloc(len + 1))) return oom();
    memcpy(v->s, p->b + p->pos, len);
    v->s[len] = 0;
    v->len = len;
    v->bad_utf8 = !fp4_utf8_valid(p->b + p->pos, len); /* a dict key's problem; refused elsewhere */
    p->pos += len;
    return push(p, v);
}

/* One run of the machine to STOP; *result the value it returns. */
static fp4_status run(pkl *p, val **result)
{
    bool seen_proto = false;
    while (p->pos < p->n) {
        size_t at = p->pos;
        uint8_t op = p->b[p->pos++];
        fp4_status st = FP4_OK;
        switch (op) {
        case 0x80: /* PROTO */
            if (!need(p, 1)) return bad(p, "PROTO past the end");
            if (p->b[p->pos] < 2 || p->b[p->pos] > 5) return bad(p, "pickle protocol not 2 to 5");
            if (at != 0 && seen_proto) return bad(p, "a second PROTO");
            seen_proto = true;
            p->pos++;
            break;
        case 0x95: /* FRAME: an 8-byte length, then opcodes (we read them in place) */
            if (!need(p, 8)) return bad(p, "FRAME past the end");
            if (rd_le(p->b + p->pos, 8) > p->n - p->pos - 8) return bad(p, "FRAME past the end");
            p->pos += 8;
            break;
        case '.': /* STOP */
            if (p->nmarks) return bad(p, "STOP inside a MARK");
            if (p->sp != 1) return bad(p, "STOP without exactly one value on the stack");
            *result = p->stack[0];
            return FP4_OK;
        case '(': /* MARK */
            if (p->nmarks == p->capmarks) {
                size_t nc = p->capmarks ? p->capmarks * 2 : 16;
                size_t *a = realloc(p->marks, nc * sizeof *a);
                if (!a) return oom();
                p->marks = a;
                p->capmarks = nc;
            }
            p->marks[p->nmarks++] = p->sp;
            break;
        case '}': st = push(p, mk(p, V_DICT)); break;
        case ']': st = push(p, mk(p, V_LIST)); break;
        case ')': st = push(p, mk(p, V_TUPLE)); break;
        case 'N': st = push(p, mk(p, V_NONE)); break;
        case 0x88: case 0x89: { /* NEWTRUE, NEWFALSE */
            val *v = mk(p, V_BOOL);
            if (v) v->i = op == 0x88;
            st = push(p, v);
            break;
        }
        case 't': { /* TUPLE */
            val **items;
            size_t c;
            st = pop_mark(p, &items, &c);
            if (st == FP4_OK) st = make_tuple(p, items, c, V_TUPLE);
            break;
        }
        case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
            size_t c = (size_t)(op - 0x84);
            if (p->sp < frame_base(p) + c) return bad(p, "TUPLE with too few items");
            val **items = malloc(c * sizeof *items);
            if (!items) return oom();
            memcpy(items, p->stack + p->sp - c, c * sizeof *items);
            p->sp -= c;
            st = make_tuple(p, items, c, V_TUPLE);
            break;
        }
        case 's': { /* SETITEM */
            val *v = pop(p), *k = pop(p);
            st = dict_add(p, top(p), k, v);
            break;
        }
        case 'u': { /* SETITEMS */
            val **items;
            size_t c;
            st = pop_mark(p, &items, &c);
            if (st == FP4_OK && c % 2) st = bad(p, "SETITEMS with an odd number of items");
            for (size_t i = 0; st == FP4_OK && i < c; i += 2)
                st = dict_add(p, top(p), items[i], items[i + 1]);
            free(items);
            break;
        }
        case 'a': { /* APPEND */
            val *v = pop(p);
            st = v ? list_add(p, top(p), v) : bad(p, "APPEND with an empty stack");
            break;
        }
        case 'e': { /* APPENDS */
            val **items;
            size_t c;
            st = pop_mark(p, &items, &c);
            for (size_t i = 0; st == FP4_OK && i < c; i++) st = list_add(p, top(p), items[i]);
            free(items);
            break;
        }
        case 'K': case 'M': case 'J': { /* BININT1, BININT2, BININT */
            int k = op == 'K' ? 1 : op == 'M' ? 2 : 4;
            if (!need(p, (size_t)k)) return bad(p, "integer past the end");
            uint64_t u = rd_le(p->b + p->pos, k);
            p->pos += (size_t)k;
            val *v = mk(p, V_INT);
            if (v) v->i = op == 'J' ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
            st = push(p, v);
            break;
        }
        case 0x8a: { /* LONG1: n bytes, two's complement, little-endian; at most 8 here */
            if (!need(p, 1)) return bad(p, "LONG1 past the end");
            size_t k = p->b[p->pos++];
            if (k > 8) return bad(p, "integer wider than 64 bits");
            if (!need(p, k)) return bad(p, "LONG1 past the end");
            uint64_t u = k ? rd_le(p->b + p->pos, (int)k) : 0;
            if (k && k < 8 && (p->b[p->pos + k - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * k);
            p->pos += k;
            val *v = mk(p, V_INT);
            if (v) v->i = (int64_t)u;
            st = push(p, v);
            break;
        }
        case 'G': { /* BINFLOAT: big-endian double, kept only as "a number" */
            if (!need(p, 8)) return bad(p, "BINFLOAT past the end");
            p->pos += 8;
            st = push(p, mk(p, V_FLOAT));
            break;
        }
        case 'X': case 0x8c: case 0x8d: { /* BINUNICODE, SHORT_BINUNICODE, BINUNICODE8 */
            int k = op == 'X' ? 4 : op == 0x8c ? 1 : 8;
            if (!need(p, (size_t)k)) return bad(p, "string length past the end");
            uint64_t len = rd_le(p->b + p->pos, k);
            p->pos += (size_t)k;
            if (len > p->n - p->pos) return bad(p, "string past the end");
            st = str_value(p, (size_t)len);
            break;
        }
        case 'q': case 'r': { /* BINPUT, LONG_BINPUT */
            int k = op == 'q' ? 1 : 4;
            if (!need(p, (size_t)k)) return bad(p, "memo index past the end");
            uint64_t idx = rd_le(p->b + p->pos, k);
            p->pos += (size_t)k;
            st = memo_put(p, idx);
            break;
        }
        case 0x94: /* MEMOIZE */
            st = memo_put(p, p->nput); /* Python's len(memo) */
            break;
        case 'h': case 'j': { /* BINGET, LONG_BINGET */
            int k = op == 'h' ? 1 : 4;
            if (!need(p, (size_t)k)) return bad(p, "memo index past the end");
            uint64_t idx = rd_le(p->b + p->pos, k);
            p->pos += (size_t)k;
            st = memo_get(p, idx);
            break;
        }
        case 'c': { /* GLOBAL: "module\nname\n" */
            const uint8_t *s = p->b + p->pos, *end = p->b + p->n;
            const uint8_t *nl1 = memchr(s, '\n', (size_t)(end - s));
            const uint8_t *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(end - nl1 - 1)) : NULL;
            if (!nl2) return bad(p, "GLOBAL past the end");
            p->pos = (size_t)(nl2 + 1 - p->b);
            st = global(p, (const char *)s, (size_t)(nl1 - s), (const char *)nl1 + 1,
                        (size_t)(nl2 - nl1 - 1));
            break;
        }
        case 0x93: { /* STACK_GLOBAL */
            val *name = pop(p), *mod = pop(p);
            if (!name || !mod || name->kind != V_STR || mod->kind != V_STR)
                return bad(p, "STACK_GLOBAL without two strings");
            if (name->bad_utf8 || mod->bad_utf8) return bad(p, "STACK_GLOBAL name not valid UTF-8");
            st = global(p, mod->s, mod->len, name->s, name->len);
            break;
        }
        case 'R': st = reduce(p); break;
        case 'Q': st = persid(p); break;
        case 'b': { /* BUILD: only an OrderedDict's attributes (state_dict's _metadata) */
            val *state = pop(p), *obj = top(p);
            if (!state || !obj) return bad(p, "BUILD with too few values");
            if (obj->kind != V_DICT || (state->kind != V_DICT && state->kind != V_NONE))
                return bad(p, "BUILD on something other than an OrderedDict refused");
            break;
        }
        default: {
            char what[96];
            snprintf(what, sizeof what, "opcode 0x%02x (%s) refused", op, op_name(op));
            p->pos = at;
            return bad(p, what);
        }
        }
        if (st != FP4_OK) return st;
    }
    return bad(p, "no STOP before the end");
}

/* ---- the dict's tensors ---------------------------------------------------------------- */

/* Room for one more entry. */
static fp4_status out_grow(pkl *p)
{
    if (p->nout < p->capout) return FP4_OK;
    int nc = p->capout ? p->capout * 2 : 16;
    fp4_pkl_tensor *a = realloc(p->out, (size_t)nc * sizeof *a);
    if (!a) return oom();
    p->out = a;
    const val **o = realloc(p->outs, (size_t)nc * sizeof *o);
    if (!o) return oom();
    p->outs = o;
    p->capout = nc;
    return FP4_OK;
}

static fp4_status out_add(pkl *p, const char *name, const val *tv)
{
    FP4_TRY(out_grow(p));
    p->outs[p->nout] = NULL;
    fp4_pkl_tensor *t = &p->out[p->nout];
    *t = *tv->t;
    const val *s = tv->ref;
    t->name = strdup(name);
    t->storage_key = strdup(s->s);
    if (!t->name || !t->storage_key) {
        free(t->name);
        free(t->storage_key);
        return oom();
    }
    p->nout++;
    snprintf(t->storage_type, sizeof t->storage_type, "%s", s->ref->s);
    snprintf(t->location, sizeof t->location, "%s", s->loc);
    t->storage_numel = s->i;
    p->outs[p->nout - 1] = s;
    return FP4_OK;
}

/* Each storage's first: the first persistent id of its key (p->all holds the values in the
 * order the stream made them, so in BINPERSID order: the sort keeps it within a key). */
typedef struct ranked {
    val *v;
    size_t rank;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    const int c = strcmp(x->v->s, y->v->s);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static fp4_status link_storages(pkl *p)
{
    size_t ns = 0;
    for (size_t i = 0; i < p->nall; i++) ns += p->all[i]->kind == V_STORAGE;
    ranked *r = malloc((ns ? ns : 1) * sizeof *r);
    if (!r) return oom();
    ns = 0;
    for (size_t i = 0; i < p->nall; i++)
        if (p->all[i]->kind == V_STORAGE) {
            r[ns].v = p->all[i];
            r[ns].rank = ns;
            ns++;
        }
    qsort(r, ns, sizeof *r, cmp_ranked);
    for (size_t i = 0, j; i < ns; i = j) {
        for (j = i + 1; j < ns && strcmp(r[j].v->s, r[i].v->s) == 0; j++) {}
        for (size_t k = i; k < j; k++) r[k].v->first = r[i].v;
    }
    free(r);
    return FP4_OK;
}

/* Whether storage s agrees with its key's first persistent id in class and element count. */
static bool agrees(const val *s)
{
    return s->first->i == s->i && strcmp(s->first->ref->s, s->ref->s) == 0;
}

/* A tensor whose persistent id names its key with another class or element count than the
 * key's first id: torch.load would read it as the first id's class, within the first id's
 * count (a view outside it refused). Its problem names the key, both classes and counts and
 * a tensor read through the first id, if one is listed. */
static void refuse_disagreeing(pkl *p)
{
    for (int i = 0; i < p->nout; i++)
        if (p->outs[i] && agrees(p->outs[i]) && !p->outs[i]->first->user)
            p->outs[i]->first->user = i + 1;
    for (int i = 0; i < p->nout; i++) {
        const val *s = p->outs[i];
        if (!s || agrees(s)) continue;
        const val *f = s->first;
        const char *other = f->user ? p->out[f->user - 1].name : NULL;
        fp4_pkl_tensor *t = &p->out[i];
        char m[320];
        snprintf(m, sizeof m, "storage key %.32s: torch.%.20s of %lld elements here, torch.%.20s "
                 "of %lld %s%.50s (torch.load uses the first): not read", s->s, s->ref->s,
                 (long long)s->i, f->ref->s, (long long)f->i,
                 other ? "for " : "in its first persistent id", other ? other : "");
        snprintf(t->problem, sizeof t->problem, "%.*s", (int)sizeof t->problem - 1, m);
    }
}

/* prefix + sep + key into a new string; NULL when out of memory. */
static char *join_name(const char *prefix, const char *key, size_t klen)
{
    size_t a = strlen(prefix);
    char *r = malloc(a + klen + 2);
    if (!r) return NULL;
    memcpy(r, prefix, a);
    size_t at = a;
    if (a) r[at++] = '.';
    memcpy(r + at, key, klen);
    r[at + klen] = 0;
    return r;
}

/* An entry that names what cannot be read (a key that names no tensor, nesting too deep):
 * no storage, `problem` says why. */
static fp4_status out_problem(pkl *p, const char *name, const char *why)
{
    FP4_TRY(out_grow(p));
    p->outs[p->nout] = NULL;
    fp4_pkl_tensor *t = &p->out[p->nout];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    t->storage_key = strdup("");
    if (!t->name || !t->storage_key) {
        free(t->name);
        free(t->storage_key);
        return oom();
    }
    snprintf(t->problem, sizeof t->problem, "%s", why);
    p->nout++;
    return FP4_OK;
}

static fp4_status too_many(const pkl *p)
{
    return fp4_error(FP4_ERR_INPUT, "%s: pickle: shared objects would list more entries than "
                     "the pickle has bytes", p->file);
}

/* Whether v is a tensor or holds one (dicts, lists, tuples), looking `depth` levels down at
 * most; deeper, it may: true. Each entry looked at spends budget. */
static fp4_status holds_tensor(pkl *p, const val *v, int depth, bool *yes)
{
    *yes = v->kind == V_TENSOR;
    if (*yes || (v->kind != V_DICT && v->kind != V_LIST && v->kind != V_TUPLE)) return FP4_OK;
    if (depth <= 0) {
        *yes = true;
        return FP4_OK;
    }
    for (int i = 0; i < v->n && !*yes; i++) {
        if (p->budget == 0) return too_many(p);
        p->budget--;
        FP4_TRY(holds_tensor(p, v->kind == V_DICT ? v->vals[i] : v->items[i], depth - 1, yes));
    }
    return FP4_OK;
}

static const char *kind_name(vkind k)
{
    switch (k) {
    case V_NONE: return "None";
    case V_BOOL: return "a bool";
    case V_FLOAT: return "a float";
    case V_TUPLE: return "a tuple";
    case V_LIST: return "a list";
    case V_DICT: return "a dict";
    case V_TENSOR: return "a tensor";
    default: return "not a string or an integer";
    }
}

/* Entry i of dict d: its key's name part into num/key/klen, or why it names no tensor (the
 * name then shows it safely: escaped, or "[key I: KIND]"). *esc (owned) when escaped. */
static const char *key_part(const val *k, int i, char *num, size_t numsz, const char **key,
                            size_t *klen, char **esc, char *why, size_t whysz)
{
    *esc = NULL;
    if (k->kind == V_INT) {
        *klen = (size_t)snprintf(num, numsz, "%lld", (long long)k->i);
        *key = num;
        return NULL;
    }
    if (k->kind == V_STR && k->len) {
        bool ctl = k->bad_utf8 || memchr(k->s, 0, k->len) != NULL;
        for (size_t j = 0; !ctl && j < k->len; j++) {
            const unsigned char c = (unsigned char)k->s[j];
            ctl = c < 0x20 || c == 0x7f ||
                  (c == 0xc2 && j + 1 < k->len && (unsigned char)k->s[j + 1] >= 0x80 &&
                   (unsigned char)k->s[j + 1] <= 0x9f);
        }
        if (!ctl) {
            *key = k->s;
            *klen = k->len;
            return NULL;
        }
        /* a NUL would cut the name short: escape from a copy with NULs spelled out */
        char *tmp = malloc(k->len * 4 + 1);
        if (tmp) {
            size_t at = 0;
            for (size_t j = 0; j < k->len; j++) {
                if (k->s[j]) tmp[at++] = k->s[j];
                else {
                    memcpy(tmp + at, "\\x00", 4);
                    at += 4;
                }
            }
            tmp[at] = 0;
            *esc = fp4_text_escape(tmp, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
            free(tmp);
        }
        *key = *esc ? *esc : "?";
        *klen = strlen(*key);
        snprintf(why, whysz, "its dict key holds %s (shown as \\xNN): not read",
                 k->bad_utf8 ? "bytes that are not valid UTF-8" : "control characters");
        return why;
    }
    *klen = (size_t)snprintf(num, numsz, "[key %d: %s]", i,
                             k->kind == V_STR ? "empty" : kind_name(k->kind));
    *key = num;
    snprintf(why, whysz, "its dict key is %s, not a tensor name (a non-empty string or an "
             "integer): not read", k->kind == V_STR ? "an empty string" : kind_name(k->kind));
    return why;
}

/* Collect the tensors under v named prefix. What cannot be named (an odd key, nesting deeper
 * than 32) is an entry with a problem, once per key, when a tensor lies under it. */
static fp4_status walk(pkl *p, const val *v, const char *prefix, int depth)
{
    if (v->kind == V_TENSOR) return out_add(p, prefix, v);
    if (v->kind != V_DICT && v->kind != V_LIST && v->kind != V_TUPLE) return FP4_OK;
    if (depth > 32) {
        bool yes;
        FP4_TRY(holds_tensor(p, v, 32, &yes));
        return yes ? out_problem(p, prefix, "dicts nested deeper than 32 levels: not read")
                   : FP4_OK;
    }
    for (int i = 0; i < v->n; i++) {
        if (p->budget == 0) return too_many(p);
        p->budget--;
        const val *child = v->kind == V_DICT ? v->vals[i] : v->items[i];
        if (child->kind != V_TENSOR && child->kind != V_DICT && child->kind != V_LIST &&
            child->kind != V_TUPLE)
            continue;
        char num[64], why[128];
        const char *key, *problem = NULL;
        size_t klen;
        char *esc = NULL;
        if (v->kind == V_DICT) {
            problem = key_part(v->items[i], i, num, sizeof num, &key, &klen, &esc, why,
                               sizeof why);
        } else {
            klen = (size_t)snprintf(num, sizeof num, "%d", i);
            key = num;
        }
        char *name = join_name(prefix, key, klen);
        free(esc);
        if (!name) return oom();
        fp4_status st = FP4_OK;
        if (problem) {
            bool yes;
            st = holds_tensor(p, child, 32, &yes);
            if (st == FP4_OK && yes) st = out_problem(p, name, problem);
        } else {
            st = walk(p, child, name, depth + 1);
        }
        free(name);
        if (st != FP4_OK) return st;
    }
    return FP4_OK;
}

void fp4_pkl_free(fp4_pkl_tensor *t, int n)
{
    if (!t) return;
    for (int i = 0; i < n; i++) {
        free(t[i].name);
        free(t[i].storage_key);
    }
    free(t);
}

fp4_status fp4_pickle_state_dict(const char *file, const uint8_t *buf, size_t size,
                                 fp4_pkl_tensor **out, int *n)
{
    *out = NULL;
    *n = 0;
    pkl p = {.file = file, .b = buf, .n = size, .budget = size + 16};
    val *result = NULL;
    fp4_status st = run(&p, &result);
    if (st == FP4_OK && result->kind != V_DICT)
        st = fp4_error(FP4_ERR_INPUT, "%s: pickle: holds no dict of tensors (a state dict)", file);
    if (st == FP4_OK) st = link_storages(&p);
    if (st == FP4_OK) st = walk(&p, result, "", 0);
    if (st == FP4_OK) refuse_disagreeing(&p);
    for (size_t i = 0; i < p.nall; i++) val_free(p.all[i]);
    free(p.all);
    free(p.stack);
    free(p.marks);
    free(p.memo);
    free(p.outs);
    if (st != FP4_OK) {
        fp4_pkl_free(p.out, p.nout);
        return st;
    }
    *out = p.out;
    *n = p.nout;
    return FP4_OK;
}
