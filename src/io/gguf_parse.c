/* io/gguf_parse.c — the GGUF header parser (see io/gguf_parse.h). Layout and checks follow
 * ggml's own reader (ggml-org/ggml src/gguf.cpp gguf_init_from_file_impl) and gguf-py
 * (gguf_reader.py). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf_parse.h"

#define TEXT_MAX_STRING 512
#define TEXT_MAX_ELEMS 8

const char *fp4_ggml_type_name(uint32_t type, int *block, int *bytes)
{
    static const struct {
        uint32_t id;
        const char *name;
        int block, bytes;
    } tt[] = {
        {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
        {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
        {8, "q8_0", 32, 34},      {9, "q8_1", 32, 40},      {10, "q2_K", 256, 84},
        {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
        {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66},
        {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
        {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
        {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
        {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
        {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {31, "q4_0_4_4", 32, 18},
        {32, "q4_0_4_8", 32, 18}, {33, "q4_0_8_8", 32, 18}, {34, "tq1_0", 256, 54},
        {35, "tq2_0", 256, 66},   {36, "iq4_nl_4_4", 32, 18}, {37, "iq4_nl_4_8", 32, 18},
        {38, "iq4_nl_8_8", 32, 18}, {39, "mxfp4", 32, 17}, {40, "nvfp4", 64, 36},
        {41, "q1_0", 128, 18},
    };
    for (size_t i = 0; i < sizeof tt / sizeof tt[0]; i++) {
        if (tt[i].id == type) {
            if (block) *block = tt[i].block;
            if (bytes) *bytes = tt[i].bytes;
            return tt[i].name;
        }
    }
    if (block) *block = 0;
    if (bytes) *bytes = 0;
    return NULL;
}

const char *fp4_gguf_value_type_name(uint32_t type)
{
    static const char *const n[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                    "bool", "string", "array", "u64", "i64", "f64"};
    return type < sizeof n / sizeof n[0] ? n[type] : NULL;
}

/* Bytes of one scalar value of `type` (0 for string/array/unknown). */
static int scalar_size(uint32_t type)
{
    switch (type) {
    case FP4_GGUF_U8: case FP4_GGUF_I8: case FP4_GGUF_BOOL: return 1;
    case FP4_GGUF_U16: case FP4_GGUF_I16: return 2;
    case FP4_GGUF_U32: case FP4_GGUF_I32: case FP4_GGUF_F32: return 4;
    case FP4_GGUF_U64: case FP4_GGUF_I64: case FP4_GGUF_F64: return 8;
    }
    return 0;
}

typedef struct rd {
    const char *file;
    const uint8_t *buf;
    uint64_t len, size, pos;
    bool *need_more;
} rd;

/* Whether n more bytes are there; when not, the error (truncated file, or more bytes
 * needed). `what` names what was being read. */
static fp4_status need(rd *r, uint64_t n, const char *what)
{
    if (n <= r->len - r->pos) return FP4_OK;
    if (n <= r->size - r->pos) {
        *r->need_more = true;
        return fp4_error(FP4_ERR_INPUT, "%s: header continues past the bytes read", r->file);
    }
    return fp4_error(FP4_ERR_INPUT,
                     "%s: %s at byte %" PRIu64 " runs past the end of the file (%" PRIu64
                     " bytes): truncated or not GGUF",
                     r->file, what, r->pos, r->size);
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static fp4_status get_u32(rd *r, uint32_t *v, const char *what)
{
    FP4_TRY(need(r, 4, what));
    *v = (uint32_t)le(r->buf + r->pos, 4);
    r->pos += 4;
    return FP4_OK;
}

static fp4_status get_u64(rd *r, uint64_t *v, const char *what)
{
    FP4_TRY(need(r, 8, what));
    *v = le(r->buf + r->pos, 8);
    r->pos += 8;
    return FP4_OK;
}

/* A string's bytes in place: *p, *n (after the checks). */
static fp4_status get_str(rd *r, const uint8_t **p, uint64_t *n, const char *what)
{
    FP4_TRY(get_u64(r, n, what));
    if (*n > r->size - r->pos)
        return fp4_error(FP4_ERR_INPUT,
                         "%s: %s of %" PRIu64 " bytes at byte %" PRIu64
                         " runs past the end of the file (%" PRIu64 " bytes)",
                         r->file, what, *n, r->pos, r->size);
    FP4_TRY(need(r, *n, what));
    *p = r->buf + r->pos;
    r->pos += *n;
    return FP4_OK;
}

/* A malloc'd copy of bytes safe to show: control characters (NUL included) and bytes that
 * are not UTF-8 as \xNN (base/status.h fp4_text_escape), cut at `max` bytes (then "..."). */
static char *clean_copy(const uint8_t *p, uint64_t n, uint64_t max)
{
    const bool cut = n > max;
    const uint64_t k = cut ? max : n;
    char *s = malloc((size_t)k * 4 + 4);
    if (!s) return NULL;
    size_t o = 0;
    for (uint64_t i = 0; i < k; i++) {
        if (p[i] < 0x20 || p[i] == 0x7F) o += (size_t)sprintf(s + o, "\\x%02X", p[i]);
        else s[o++] = (char)p[i];
    }
    if (cut) memcpy(s + o, "...", 3), o += 3;
    s[o] = '\0';
    char *e = fp4_text_escape(s, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    free(s);
    return e;
}

/* A text buffer that grows (at most a few KiB: arrays show 8 elements). */
typedef struct tbuf {
    char *s;
    size_t n, cap;
    bool oom;
} tbuf;

static void tb_add(tbuf *t, const char *s, size_t n)
{
    if (t->oom) return;
    if (t->n + n + 1 > t->cap) {
        size_t nc = t->cap ? t->cap : 64;
        while (nc < t->n + n + 1) nc *= 2;
        char *ns = realloc(t->s, nc);
        if (!ns) {
            t->oom = true;
            return;
        }
        t->s = ns;
        t->cap = nc;
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
}

static void tb_str(tbuf *t, const char *s) { tb_add(t, s, strlen(s)); }

/* One scalar at p as text. */
static void scalar_text(uint32_t type, const uint8_t *p, char *out, size_t cap)
{
    uint64_t u = le(p, scalar_size(type));
    switch (type) {
    case FP4_GGUF_U8: case FP4_GGUF_U16: case FP4_GGUF_U32: case FP4_GGUF_U64:
        snprintf(out, cap, "%" PRIu64, u);
        break;
    case FP4_GGUF_I8: snprintf(out, cap, "%d", (int)(int8_t)u); break;
    case FP4_GGUF_I16: snprintf(out, cap, "%d", (int)(int16_t)u); break;
    case FP4_GGUF_I32: snprintf(out, cap, "%" PRId32, (int32_t)u); break;
    case FP4_GGUF_I64: snprintf(out, cap, "%" PRId64, (int64_t)u); break;
    case FP4_GGUF_BOOL: snprintf(out, cap, "%s", u ? "true" : "false"); break;
    case FP4_GGUF_F32: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        snprintf(out, cap, "%.9g", (double)f);
        break;
    }
    case FP4_GGUF_F64: {
        double d;
        memcpy(&d, &u, 8);
        snprintf(out, cap, "%.17g", d);
        break;
    }
    default: snprintf(out, cap, "?");
    }
}

/* One value of `type` at the read position: checked, skipped over, its text appended to t
 * when `show`. */
static fp4_status value(rd *r, uint32_t type, int depth, tbuf *t, bool show, fp4_gguf_kv *kv)
{
    const char *tn = fp4_gguf_value_type_name(type);
    if (!tn)
        return fp4_error(FP4_ERR_INPUT, "%s: unknown metadata value type %" PRIu32
                         " at byte %" PRIu64, r->file, type, r->pos - 4);
    if (type == FP4_GGUF_STRING) {
        const uint8_t *p;
        uint64_t n;
        FP4_TRY(get_str(r, &p, &n, "a string value"));
        if (show) {
            char *s = clean_copy(p, n, TEXT_MAX_STRING);
            if (!s) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
            tb_str(t, s);
            free(s);
        }
        return FP4_OK;
    }
    if (type == FP4_GGUF_ARRAY) {
        if (depth >= FP4_GGUF_MAX_DEPTH)
            return fp4_error(FP4_ERR_INPUT, "%s: arrays nested deeper than %d at byte %" PRIu64,
                             r->file, FP4_GGUF_MAX_DEPTH, r->pos);
        uint32_t et;
        uint64_t n;
        FP4_TRY(get_u32(r, &et, "an array's element type"));
        FP4_TRY(get_u64(r, &n, "an array's length"));
        const char *en = fp4_gguf_value_type_name(et);
        if (!en)
            return fp4_error(FP4_ERR_INPUT, "%s: unknown array element type %" PRIu32
                             " at byte %" PRIu64, r->file, et, r->pos - 12);
        /* every element takes at least its scalar size, a string or array 8 bytes */
        const uint64_t least = scalar_size(et) ? (uint64_t)scalar_size(et)
                               : et == FP4_GGUF_STRING ? 8 : 12;
        if (n > (r->size - r->pos) / least)
            return fp4_error(FP4_ERR_INPUT,
                             "%s: an array of %" PRIu64 " %s at byte %" PRIu64
                             " cannot fit in the file (%" PRIu64 " bytes)",
                             r->file, n, en, r->pos - 12, r->size);
        if (kv && depth == 0) {
            kv->elem_type = et;
            kv->count = n;
        }
        if (show) tb_str(t, "[");
        if (scalar_size(et)) { /* one check for the whole run of scalars */
            const uint64_t bytes = n * least;
            FP4_TRY(need(r, bytes, "an array"));
            for (uint64_t i = 0; show && i < n && i < TEXT_MAX_ELEMS; i++) {
                char one[48];
                scalar_text(et, r->buf + r->pos + i * least, one, sizeof one);
                if (i) tb_str(t, ", ");
                tb_str(t, one);
            }
            r->pos += bytes;
        } else {
            for (uint64_t i = 0; i < n; i++) {
                const bool sh = show && i < TEXT_MAX_ELEMS;
                if (sh && i) tb_str(t, ", ");
                FP4_TRY(value(r, et, depth + 1, t, sh, NULL));
            }
        }
        if (show) {
            char tail[64];
            if (n > TEXT_MAX_ELEMS) {
                snprintf(tail, sizeof tail, ", ... (%" PRIu64 " %s)]", n, en);
            } else {
                snprintf(tail, sizeof tail, "]");
            }
            tb_str(t, tail);
        }
        return FP4_OK;
    }
    const int sz = scalar_size(type);
    FP4_TRY(need(r, (uint64_t)sz, "a metadata value"));
    const uint8_t *p = r->buf + r->pos;
    if (kv && depth == 0) {
        uint64_t u = le(p, sz);
        kv->u = u;
        switch (type) {
        case FP4_GGUF_I8: kv->i = (int8_t)u; break;
        case FP4_GGUF_I16: kv->i = (int16_t)u; break;
        case FP4_GGUF_I32: kv->i = (int32_t)u; break;
        case FP4_GGUF_I64: kv->i = (int64_t)u; break;
        case FP4_GGUF_F32: {
            uint32_t w = (uint32_t)u;
            float f;
            memcpy(&f, &w, 4);
            kv->f = f;
            break;
        }
        case FP4_GGUF_F64: memcpy(&kv->f, &u, 8); break;
        default: kv->i = (int64_t)u;
        }
    }
    if (show) {
        char one[48];
        scalar_text(type, p, one, sizeof one);
        tb_str(t, one);
    }
    r->pos += (uint64_t)sz;
    return FP4_OK;
}

void fp4_gguf_header_free(fp4_gguf_header *h)
{
    for (int i = 0; i < h->nkv; i++) {
        free(h->kv[i].key);
        free(h->kv[i].text);
    }
    for (int i = 0; i < h->n; i++) free(h->t[i].name);
    free(h->kv);
    free(h->t);
    memset(h, 0, sizeof *h);
}

const fp4_gguf_kv *fp4_gguf_find_kv(const fp4_gguf_header *h, const char *key)
{
    for (int i = 0; i < h->nkv; i++)
        if (strcmp(h->kv[i].key, key) == 0) return &h->kv[i];
    return NULL;
}

typedef struct name_ix {
    const char *name;
    int i;
} name_ix;

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const name_ix *)a)->name, ((const name_ix *)b)->name);
}

/* The first duplicate among n names, or NULL. */
static fp4_status first_dup(const char *const *names, int n, const char **dup)
{
    *dup = NULL;
    if (n < 2) return FP4_OK;
    name_ix *ix = malloc((size_t)n * sizeof *ix);
    if (!ix) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < n; i++) ix[i] = (name_ix){names[i], i};
    qsort(ix, (size_t)n, sizeof *ix, name_cmp);
    for (int i = 1; i < n && !*dup; i++)
        if (strcmp(ix[i - 1].name, ix[i].name) == 0) *dup = ix[i].name;
    free(ix);
    return FP4_OK;
}

typedef struct off_ix {
    uint64_t begin, end;
    int i;
} off_ix;

static int off_cmp(const void *a, const void *b)
{
    const off_ix *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->i - y->i;
}

/* Tensor checks: type, blocks, size, alignment, bounds; then overlaps. */
static fp4_status check_tensors(fp4_gguf_header *h, uint64_t size)
{
    const uint64_t data_len = h->data_start <= size ? size - h->data_start : 0;
    off_ix *ox = calloc((size_t)h->n + 1, sizeof *ox);
    if (!ox) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    int no = 0;
    for (int i = 0; i < h->n; i++) {
        fp4_gguf_tensor *t = &h->t[i];
        int block, bytes;
        const char *tn = fp4_ggml_type_name(t->type, &block, &bytes);
        t->nbytes = -1;
        if (!tn) {
            snprintf(t->problem, sizeof t->problem, "unknown ggml type %" PRIu32, t->type);
            continue;
        }
        if (t->nelems < 0) {
            snprintf(t->problem, sizeof t->problem, "element count overflows 64 bits");
            continue;
        }
        if (t->ne[0] % (uint64_t)block != 0) {
            snprintf(t->problem, sizeof t->problem,
                     "ne[0] = %" PRIu64 " is not a whole number of %d-element %s blocks",
                     t->ne[0], block, tn);
            continue;
        }
        const uint64_t nb = (uint64_t)t->nelems / (uint64_t)block;
        if (nb > (uint64_t)INT64_MAX / (uint64_t)bytes) {
            snprintf(t->problem, sizeof t->problem, "size overflows 64 bits");
            continue;
        }
        t->nbytes = (int64_t)(nb * (uint64_t)bytes);
        if (t->offset % h->alignment != 0) {
            snprintf(t->problem, sizeof t->problem,
                     "data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                     t->offset, h->alignment);
            continue;
        }
        if (t->offset > data_len || (uint64_t)t->nbytes > data_len - t->offset) {
            snprintf(t->problem, sizeof t->problem,
                     "data [%" PRIu64 ", %" PRIu64 ") lies past the end of the file (%" PRIu64
                     " bytes of data): truncated",
                     t->offset, t->offset + (uint64_t)t->nbytes, data_len);
            continue;
        }
        if (t->nbytes > 0) ox[no++] = (off_ix){t->offset, t->offset + (uint64_t)t->nbytes, i};
    }
    qsort(ox, (size_t)no, sizeof *ox, off_cmp);
    uint64_t end = 0;
    int last = -1;
    for (int k = 0; k < no; k++) {
        if (last >= 0 && ox[k].begin < end) {
            fp4_gguf_tensor *t = &h->t[ox[k].i];
            snprintf(t->problem, sizeof t->problem, "data overlaps %.100s's", h->t[last].name);
            continue;
        }
        end = ox[k].end;
        last = ox[k].i;
    }
    free(ox);
    return FP4_OK;
}

fp4_status fp4_gguf_parse(const char *file, const uint8_t *buf, uint64_t len, uint64_t size,
                          fp4_gguf_header *out, bool *need_more)
{
    memset(out, 0, sizeof *out);
    *need_more = false;
    if (len > size) len = size;
    rd r = {file, buf, len, size, 0, need_more};
    fp4_gguf_header h = {0};
    fp4_status st = FP4_OK;
    uint64_t nt = 0, nkv = 0;
    const char **names = NULL;

    if (size >= 4 && len < 4) {
        *need_more = true;
        return fp4_error(FP4_ERR_INPUT, "%s: header continues past the bytes read", file);
    }
    if (size < 4 || memcmp(buf, "GGUF", 4) != 0)
        return fp4_error(FP4_ERR_INPUT, "%s: not a GGUF file (no \"GGUF\" magic)", file);
    r.pos = 4;
    FP4_TRY(get_u32(&r, &h.version, "the version"));
    if ((h.version & 0xFFFFu) == 0 && h.version != 0)
        return fp4_error(FP4_ERR_INPUT, "%s: a big-endian GGUF file (version bytes %02x %02x "
                         "%02x %02x): only little-endian GGUF is read", file, buf[4], buf[5],
                         buf[6], buf[7]);
    if (h.version == 1)
        return fp4_error(FP4_ERR_INPUT, "%s: GGUF version 1 is not read (versions 2 and 3 are)",
                         file);
    if (h.version < 2 || h.version > 3)
        return fp4_error(FP4_ERR_INPUT, "%s: GGUF version %" PRIu32
                         " is not read (versions 2 and 3 are)", file, h.version);
    FP4_TRY(get_u64(&r, &nt, "the tensor count"));
    FP4_TRY(get_u64(&r, &nkv, "the metadata count"));
    /* a key/value takes at least 13 bytes (8 length + 1 key + 4 type), a tensor info 29 */
    if (nkv > (size - r.pos) / 13 || nkv > (uint64_t)INT32_MAX)
        return fp4_error(FP4_ERR_INPUT, "%s: %" PRIu64 " metadata entries cannot fit in the "
                         "file (%" PRIu64 " bytes)", file, nkv, size);
    if (nt > (size - r.pos) / 29 || nt > (uint64_t)INT32_MAX)
        return fp4_error(FP4_ERR_INPUT, "%s: %" PRIu64 " tensors cannot fit in the file (%"
                         PRIu64 " bytes)", file, nt, size);
    h.kv = calloc((size_t)nkv + 1, sizeof *h.kv);
    h.t = calloc((size_t)nt + 1, sizeof *h.t);
    names = calloc((size_t)(nkv > nt ? nkv : nt) + 1, sizeof *names);
    if (!h.kv || !h.t || !names) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto fail;
    }
    h.alignment = FP4_GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t k = 0; k < nkv; k++) {
        fp4_gguf_kv *kv = &h.kv[h.nkv];
        const uint8_t *p;
        uint64_t n;
        uint32_t type;
        if ((st = get_str(&r, &p, &n, "a metadata key")) != FP4_OK) goto fail;
        if (n == 0 || n > FP4_GGUF_MAX_KEY) {
            st = fp4_error(FP4_ERR_INPUT, "%s: metadata key %" PRIu64 " has %" PRIu64
                           " bytes (1 to %u allowed)", file, k, n, FP4_GGUF_MAX_KEY);
            goto fail;
        }
        if (!(kv->key = clean_copy(p, n, FP4_GGUF_MAX_KEY))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto fail;
        }
        h.nkv++;
        if ((st = get_u32(&r, &type, "a metadata value type")) != FP4_OK) goto fail;
        kv->type = type;
        tbuf t = {0};
        st = value(&r, type, 0, &t, true, kv);
        if (st == FP4_OK && t.oom) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        if (st != FP4_OK) {
            free(t.s);
            if (st == FP4_ERR_INPUT && !*need_more) {
                char why[1024];
                snprintf(why, sizeof why, "%s", fp4_last_error());
                st = fp4_error(FP4_ERR_INPUT, "%s (metadata %.200s)", why, kv->key);
            }
            goto fail;
        }
        kv->text = t.s ? t.s : strdup("");
        if (!kv->text) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto fail;
        }
        names[k] = kv->key;
    }
    const char *dup;
    if ((st = first_dup(names, h.nkv, &dup)) != FP4_OK) goto fail;
    if (dup) {
        st = fp4_error(FP4_ERR_INPUT, "%s: metadata key %.200s appears twice", file, dup);
        goto fail;
    }
    const fp4_gguf_kv *al = fp4_gguf_find_kv(&h, "general.alignment");
    if (al) {
        if (al->type != FP4_GGUF_U32 || al->u == 0 || (al->u & (al->u - 1)) != 0) {
            st = fp4_error(FP4_ERR_INPUT, "%s: general.alignment is %s %s, expected a u32 power "
                           "of two", file, fp4_gguf_value_type_name(al->type), al->text);
            goto fail;
        }
        h.alignment = al->u;
    }
    for (uint64_t k = 0; k < nt; k++) {
        fp4_gguf_tensor *t = &h.t[h.n];
        const uint8_t *p;
        uint64_t n;
        uint32_t nd;
        if ((st = get_str(&r, &p, &n, "a tensor name")) != FP4_OK) goto fail;
        if (n == 0 || n > FP4_GGUF_MAX_KEY || memchr(p, 0, (size_t)n)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: tensor %" PRIu64 "'s name has %" PRIu64
                           " bytes%s (1 to %u allowed, no NUL)", file, k, n,
                           n && n <= FP4_GGUF_MAX_KEY ? " with a NUL" : "", FP4_GGUF_MAX_KEY);
            goto fail;
        }
        if (!(t->name = malloc((size_t)n + 1))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto fail;
        }
        memcpy(t->name, p, (size_t)n);
        t->name[n] = '\0';
        h.n++;
        names[k] = t->name;
        if ((st = get_u32(&r, &nd, "a tensor's n_dims")) != FP4_OK) goto fail;
        if (nd < 1 || nd > FP4_GGUF_MAX_DIMS) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %.200s: n_dims %" PRIu32 " (1 to %d allowed)",
                           file, t->name, nd, FP4_GGUF_MAX_DIMS);
            goto fail;
        }
        t->n_dims = (int)nd;
        t->nelems = 1;
        for (uint32_t d = 0; d < nd; d++) {
            if ((st = get_u64(&r, &t->ne[d], "a tensor dimension")) != FP4_OK) goto fail;
            if (t->ne[d] > ((uint64_t)1 << 62)) {
                st = fp4_error(FP4_ERR_INPUT, "%s: %.200s: ne[%" PRIu32 "] = %" PRIu64
                               " is not a size", file, t->name, d, t->ne[d]);
                goto fail;
            }
            if (t->nelems >= 0) {
                if (t->ne[d] != 0 && (uint64_t)t->nelems > (uint64_t)INT64_MAX / t->ne[d])
                    t->nelems = -1;
                else
                    t->nelems *= (int64_t)t->ne[d];
            }
        }
        if ((st = get_u32(&r, &t->type, "a tensor's type")) != FP4_OK) goto fail;
        if ((st = get_u64(&r, &t->offset, "a tensor's offset")) != FP4_OK) goto fail;
    }
    if ((st = first_dup(names, h.n, &dup)) != FP4_OK) goto fail;
    if (dup) {
        st = fp4_error(FP4_ERR_INPUT, "%s: tensor %.200s appears twice", file, dup);
        goto fail;
    }
    h.header_bytes = r.pos;
    h.data_start = (r.pos + h.alignment - 1) / h.alignment * h.alignment;
    if (h.data_start > size) {
        bool any = false;
        for (int i = 0; i < h.n; i++) any = any || h.t[i].nelems != 0;
        if (any) {
            st = fp4_error(FP4_ERR_INPUT, "%s: the data section (at byte %" PRIu64
                           ") begins past the end of the file (%" PRIu64 " bytes): truncated",
                           file, h.data_start, size);
            goto fail;
        }
    }
    if ((st = check_tensors(&h, size)) != FP4_OK) goto fail;
    free(names);
    *out = h;
    return FP4_OK;
fail:
    free(names);
    fp4_gguf_header_free(&h);
    return st;
}
