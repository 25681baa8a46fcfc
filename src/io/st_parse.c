/* st_parse.c — the safetensors header and sharded-index parsers: strict checks on bytes in
 * memory (cJSON parses the JSON; the checks it does not make — UTF-8, NUL and control
 * characters, exact integers, duplicate names, offsets — are made here). */
#include "io/st_parse.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int bits;
    bool readable;
} st_types[FP4_ST_NDTYPES] = {
    [FP4_ST_UNKNOWN] = {"", 0, false},
    [FP4_ST_BOOL] = {"BOOL", 8, false},
    [FP4_ST_U8] = {"U8", 8, true},
    [FP4_ST_I8] = {"I8", 8, true},
    [FP4_ST_U16] = {"U16", 16, true},
    [FP4_ST_I16] = {"I16", 16, true},
    [FP4_ST_U32] = {"U32", 32, true},
    [FP4_ST_I32] = {"I32", 32, true},
    [FP4_ST_U64] = {"U64", 64, true},
    [FP4_ST_I64] = {"I64", 64, true},
    [FP4_ST_F16] = {"F16", 16, true},
    [FP4_ST_BF16] = {"BF16", 16, true},
    [FP4_ST_F32] = {"F32", 32, true},
    [FP4_ST_F64] = {"F64", 64, true},
    [FP4_ST_F8_E4M3] = {"F8_E4M3", 8, true},
    [FP4_ST_F8_E5M2] = {"F8_E5M2", 8, true},
    [FP4_ST_F8_E8M0] = {"F8_E8M0", 8, false},
    [FP4_ST_F4] = {"F4", 4, false},
    [FP4_ST_F6_E2M3] = {"F6_E2M3", 6, false},
    [FP4_ST_F6_E3M2] = {"F6_E3M2", 6, false},
    [FP4_ST_C64] = {"C64", 64, false},
};

fp4_st_dtype fp4_st_dtype_from_name(const char *name)
{
    for (int t = 1; t < FP4_ST_NDTYPES; t++)
        if (strcmp(name, st_types[t].name) == 0) return (fp4_st_dtype)t;
    return FP4_ST_UNKNOWN;
}

int fp4_st_dtype_bits(fp4_st_dtype t)
{
    return t > 0 && t < FP4_ST_NDTYPES ? st_types[t].bits : 0;
}

bool fp4_st_dtype_readable(fp4_st_dtype t)
{
    return t > 0 && t < FP4_ST_NDTYPES && st_types[t].readable;
}

bool fp4_utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t min, cp;
        if ((c & 0xE0) == 0xC0) len = 2, min = 0x80, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0) len = 3, min = 0x800, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0) len = 4, min = 0x10000, cp = c & 0x07;
        else return false;
        if (n - i < len) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

/* What cJSON does not check: NUL and control characters inside strings (raw or escaped as
 * \u0000..\u001f would still be JSON, but a NUL would silently cut a name short; control
 * characters raw are not JSON). Returns NULL or what is wrong. */
static const char *json_prescan(const char *s, size_t n)
{
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0) return "holds a NUL byte";
        if (!in_str) {
            if (c == '"') in_str = true;
            continue;
        }
        if (c == '"') {
            in_str = false;
        } else if (c < 0x20) {
            return "holds a control character inside a string";
        } else if (c == '\\') {
            if (i + 1 >= n) return "ends inside a string";
            if (s[i + 1] == 'u' && i + 5 < n && s[i + 2] == '0' && s[i + 3] == '0' &&
                s[i + 4] == '0' && s[i + 5] == '0')
                return "holds a NUL (\\u0000) inside a string";
            i++;
        }
    }
    return NULL;
}

static int cmp_key_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A key twice in any object of the document (the reference reader refuses "duplicate field";
 * cJSON keeps both and a lookup finds the first, while another reader may take the last: one
 * file, two readings). Checked at every depth; the message says where, in the words the
 * specific checks use: "tensor name K appears twice" (a header's top level), "__metadata__:
 * key K", "weight_map: tensor K", else "PARENT: key K appears twice" (PARENT the enclosing
 * object's key; "key K appears twice" at an index's top level). */
static fp4_status json_dup_keys(const char *file, const char *what, bool header, const cJSON *obj,
                                const char *parent, int depth)
{
    int n = 0;
    for (const cJSON *c = obj->child; c; c = c->next) n++;
    fp4_status st = FP4_OK;
    if (cJSON_IsObject(obj) && n > 1) {
        const char **k = malloc((size_t)n * sizeof *k);
        if (!k) return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the %s", file, what);
        int i = 0;
        for (const cJSON *c = obj->child; c; c = c->next) k[i++] = c->string ? c->string : "";
        qsort(k, (size_t)n, sizeof *k, cmp_key_ptr);
        const char *dup = NULL;
        for (i = 1; i < n && !dup; i++)
            if (strcmp(k[i - 1], k[i]) == 0) dup = k[i];
        if (dup) {
            if (depth == 0 && header && strcmp(dup, "__metadata__") == 0)
                st = fp4_error(FP4_ERR_INPUT, "%s: __metadata__ appears twice", file);
            else if (depth == 0 && header)
                st = fp4_error(FP4_ERR_INPUT, "%s: tensor name %s appears twice", file, dup);
            else if (depth == 0)
                st = fp4_error(FP4_ERR_INPUT, "%s: %s: key %s appears twice", file, what, dup);
            else if (depth == 1 && header && strcmp(parent, "__metadata__") == 0)
                st = fp4_error(FP4_ERR_INPUT, "%s: __metadata__: key %s appears twice", file, dup);
            else if (depth == 1 && !header && strcmp(parent, "weight_map") == 0)
                st = fp4_error(FP4_ERR_INPUT, "%s: weight_map: tensor %s appears twice", file, dup);
            else
                st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s: key %s appears twice", file, what,
                               parent, dup);
        }
        free(k);
    }
    /* cJSON's nesting limit (1000) bounds the recursion */
    for (const cJSON *c = obj->child; st == FP4_OK && c; c = c->next)
        if (cJSON_IsObject(c) || cJSON_IsArray(c))
            st = json_dup_keys(file, what, header, c,
                               cJSON_IsObject(obj) ? (c->string ? c->string : "") : parent,
                               depth + 1);
    return st;
}

/* Parse n JSON bytes (a copy is made, NUL-terminated for cJSON) requiring an object and
 * nothing but JSON whitespace after it, and no key twice in any object (json_dup_keys;
 * `header`: a safetensors header, else an index). */
static fp4_status json_parse_object(const char *file, const char *what, bool header,
                                    const char *s, size_t n, cJSON **out)
{
    *out = NULL;
    if (!fp4_utf8_valid((const uint8_t *)s, n))
        return fp4_error(FP4_ERR_INPUT, "%s: %s is not valid UTF-8", file, what);
    const char *bad = json_prescan(s, n);
    if (bad) return fp4_error(FP4_ERR_INPUT, "%s: %s %s", file, what, bad);
    size_t lead = 0;
    while (lead < n && (s[lead] == ' ' || s[lead] == '\t' || s[lead] == '\n' || s[lead] == '\r'))
        lead++;
    if (lead == n || s[lead] != '{')
        return fp4_error(FP4_ERR_INPUT, "%s: %s is not a JSON object (does not start with '{')",
                         file, what);
    char *copy = malloc(n + 1);
    if (!copy) return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the %s", file, what);
    memcpy(copy, s, n);
    copy[n] = 0;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(copy, n + 1, &end, 0);
    fp4_status st = FP4_OK;
    if (!j) {
        size_t at = end && end >= copy && end <= copy + n ? (size_t)(end - copy) : 0;
        st = fp4_error(FP4_ERR_INPUT, "%s: %s is not valid JSON (near byte %zu)", file, what, at);
    } else if (!cJSON_IsObject(j)) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s is not a JSON object", file, what);
    } else {
        for (const char *p = end; p && p < copy + n; p++)
            if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
                st = fp4_error(FP4_ERR_INPUT, "%s: %s has bytes after its JSON object", file,
                               what);
                break;
            }
        if (st == FP4_OK) st = json_dup_keys(file, what, header, j, "", 0);
    }
    free(copy);
    if (st != FP4_OK) {
        cJSON_Delete(j);
        return st;
    }
    *out = j;
    return FP4_OK;
}

fp4_status fp4_json_parse_object(const char *file, const char *what, const char *s, size_t n,
                                 cJSON **out)
{
    return json_parse_object(file, what, false, s, n, out);
}

fp4_status fp4_json_doc_check(const char *file, const char *what, const char *s, size_t n,
                              const cJSON *doc)
{
    if (!fp4_utf8_valid((const uint8_t *)s, n))
        return fp4_error(FP4_ERR_INPUT, "%s: %s is not valid UTF-8", file, what);
    const char *bad = json_prescan(s, n);
    if (bad) return fp4_error(FP4_ERR_INPUT, "%s: %s %s", file, what, bad);
    return json_dup_keys(file, what, false, doc, "", 0);
}

/* Each number of a header keeps its text: cJSON keeps only a double (2^53 + 1 read as 2^53,
 * 3.2e1 and -0.0 as integers), while the reference reader (serde, u64/usize) takes only plain
 * decimal integers, exactly. The number tokens of s[0..n) (the JSON cJSON parsed into j), in
 * document order, are the number nodes of j in pre-order: each gets its token as valuestring
 * (cJSON_Delete frees it). A number starts with '-' or a digit outside a string, as in cJSON,
 * and runs over [0-9+-.eE]. */
typedef struct num_tokens {
    const char *s;
    size_t n, at;
} num_tokens;

static bool next_number(num_tokens *k, const char **tok, size_t *len)
{
    bool in_str = false;
    for (; k->at < k->n; k->at++) {
        const char c = k->s[k->at];
        if (in_str) {
            if (c == '\\') k->at++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t e = k->at;
            while (e < k->n && k->s[e] && strchr("0123456789+-.eE", k->s[e])) e++;
            *tok = k->s + k->at;
            *len = e - k->at;
            k->at = e;
            return true;
        }
    }
    return false;
}

static fp4_status attach_numbers(const char *file, num_tokens *k, cJSON *v)
{
    for (; v; v = v->next) {
        if (cJSON_IsNumber(v)) {
            const char *tok;
            size_t len;
            if (!next_number(k, &tok, &len) || v->valuestring)
                return fp4_error(FP4_ERR_INTERNAL, "%s: header numbers out of step", file);
            if (!(v->valuestring = malloc(len + 1)))
                return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", file);
            memcpy(v->valuestring, tok, len);
            v->valuestring[len] = 0;
        }
        if (v->child) FP4_TRY(attach_numbers(file, k, v->child)); /* cJSON's nesting limit */
    }
    return FP4_OK;
}

/* The exact value of a JSON number as the reference reader takes a u64: plain decimal digits,
 * no sign, fraction, exponent or leading zero, at most `max`. NULL, or what is wrong with it. */
static const char *json_uint(const cJSON *v, uint64_t max, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !v->valuestring) return "not a number";
    const char *t = v->valuestring;
    if (!t[0] || (t[0] == '0' && t[1]) || strspn(t, "0123456789") != strlen(t))
        return "not a plain decimal integer (the safetensors format takes no other)";
    uint64_t x = 0;
    for (; *t; t++) {
        const uint64_t d = (uint64_t)(*t - '0');
        if (x > (UINT64_MAX - d) / 10) return "over 2^64 - 1";
        x = x * 10 + d;
    }
    if (x > max) return "over 2^63 - 1, the largest dimension read";
    *out = x;
    return NULL;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first name that appears twice among n names (sorted copy), or NULL. */
static const char *first_duplicate(char **names, int n, bool *oom)
{
    *oom = false;
    if (n < 2) return NULL;
    char **s = malloc((size_t)n * sizeof *s);
    if (!s) {
        *oom = true;
        return NULL;
    }
    memcpy(s, names, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_str_ptr);
    const char *dup = NULL;
    for (int i = 1; i < n && !dup; i++)
        if (strcmp(s[i - 1], s[i]) == 0) dup = s[i];
    free(s);
    return dup;
}

void fp4_st_header_free(fp4_st_header *h)
{
    if (!h) return;
    for (int i = 0; i < h->n; i++) free(h->t[i].name);
    free(h->t);
    for (int i = 0; i < h->nmeta; i++) {
        free(h->meta_keys[i]);
        free(h->meta_vals[i]);
    }
    free(h->meta_keys);
    free(h->meta_vals);
    memset(h, 0, sizeof *h);
}

/* Tensors sorted by (begin, end), ties in header order (kept in `pos`). */
typedef struct {
    fp4_st_tensor t;
    int pos;
} st_sorted;

static int cmp_offsets(const void *a, const void *b)
{
    const st_sorted *x = a, *y = b;
    if (x->t.begin != y->t.begin) return x->t.begin < y->t.begin ? -1 : 1;
    if (x->t.end != y->t.end) return x->t.end < y->t.end ? -1 : 1;
    return x->pos - y->pos;
}

static fp4_status st_tensor(const char *file, const cJSON *item, uint64_t data_len,
                            fp4_st_tensor *t)
{
    const char *name = item->string;
    if (!cJSON_IsObject(item))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: tensor entry is not a JSON object", file, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dt))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"dtype\" missing or not a string", file, name);
    if (!cJSON_IsArray(sh))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"shape\" missing or not an array", file, name);
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"data_offsets\" missing or not [begin, end]",
                         file, name);
    snprintf(t->dtype, sizeof t->dtype, "%s", dt->valuestring);
    t->type = fp4_st_dtype_from_name(dt->valuestring);
    uint64_t b, e;
    for (int i = 0; i < 2; i++) {
        const cJSON *o = cJSON_GetArrayItem(off, i);
        const char *bad = json_uint(o, UINT64_MAX, i ? &e : &b);
        if (bad)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: data_offsets hold %.40s: %s", file, name,
                             cJSON_IsNumber(o) ? o->valuestring : "a value", bad);
    }
    if (e < b)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: data_offsets [%llu, %llu] end before they begin",
                         file, name, (unsigned long long)b, (unsigned long long)e);
    t->begin = b;
    t->end = e;
    uint64_t prod = 1;
    int rank = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh)
    {
        uint64_t v;
        const char *bad = json_uint(d, INT64_MAX, &v);
        if (bad)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: shape holds %.40s: %s", file, name,
                             cJSON_IsNumber(d) ? d->valuestring : "a value", bad);
        if (rank < FP4_ST_MAX_RANK) t->dims[rank] = (int64_t)v;
        rank++;
        if (v != 0 && prod > UINT64_MAX / v)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: the shape's element count overflows 64 bits",
                             file, name);
        prod *= v;
    }
    t->rank = rank;
    if (prod > (uint64_t)INT64_MAX)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the shape's element count overflows 64 bits",
                         file, name);
    t->nelems = (int64_t)prod;
    int bits = fp4_st_dtype_bits(t->type);
    if (bits) {
        if (prod > UINT64_MAX / (uint64_t)bits)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: the size of the shape in %s overflows 64 "
                             "bits", file, name, t->dtype);
        uint64_t nbits = prod * (uint64_t)bits;
        if (nbits % 8)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: %llu elements of %s are not a whole number "
                             "of bytes", file, name, (unsigned long long)prod, t->dtype);
        if (nbits / 8 != e - b)
            return fp4_error(FP4_ERR_INPUT,
                             "%s: %s: data_offsets [%llu, %llu] hold %llu bytes; %llu elements of "
                             "%s take %llu",
                             file, name, (unsigned long long)b, (unsigned long long)e,
                             (unsigned long long)(e - b), (unsigned long long)prod, t->dtype,
                             (unsigned long long)(nbits / 8));
    }
    if (t->type == FP4_ST_UNKNOWN)
        snprintf(t->problem, sizeof t->problem, "unknown stored type %s", t->dtype);
    else if (!fp4_st_dtype_readable(t->type))
        snprintf(t->problem, sizeof t->problem, "stored type %s is not supported (%s)", t->dtype,
                 t->type == FP4_ST_BOOL      ? "not numeric"
                 : t->type == FP4_ST_F8_E8M0 ? "scale exponents, not values"
                 : t->type == FP4_ST_C64     ? "complex"
                                             : "packed 4/6-bit elements");
    else if (rank > FP4_ST_MAX_RANK)
        snprintf(t->problem, sizeof t->problem, "rank %d exceeds %d", rank, FP4_ST_MAX_RANK);
    t->cut = e > data_len;
    if (t->cut)
        snprintf(t->problem, sizeof t->problem, "data_offsets [%llu, %llu] past the file's end "
                 "(truncated to %llu data bytes)",
                 (unsigned long long)b, (unsigned long long)e, (unsigned long long)data_len);
    return FP4_OK;
}

static bool json_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Whether the 8 bytes where the header length belongs are JSON text opening an object (an
 * index or another JSON file named as safetensors). */
static bool length_is_json(const uint8_t *buf)
{
    bool text = true;
    for (int i = 0; i < 8 && text; i++) text = (buf[i] >= 0x20 && buf[i] < 0x7f) || json_ws(buf[i]);
    int i = 0;
    while (i < 8 && json_ws(buf[i])) i++;
    return text && i < 8 && buf[i] == '{';
}

bool fp4_st_header_cut(const uint8_t *buf, uint64_t size)
{
    if (size < 8) return true;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    return n <= FP4_ST_MAX_HEADER && n > size - 8 && !length_is_json(buf);
}

fp4_status fp4_st_parse(const char *file, const uint8_t *buf, uint64_t size, fp4_st_header *out)
{
    memset(out, 0, sizeof *out);
    if (size < 8)
        return fp4_error(FP4_ERR_INPUT, "%s: %llu bytes: too short for a safetensors header", file,
                         (unsigned long long)size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    if ((n > FP4_ST_MAX_HEADER || n > size - 8) && length_is_json(buf))
        return fp4_error(FP4_ERR_INPUT, "%s is not a safetensors file (it looks like JSON: "
                         "an index?)", file);
    if (n > FP4_ST_MAX_HEADER)
        return fp4_error(FP4_ERR_INPUT, "%s: header size %llu exceeds the 100 MB limit", file,
                         (unsigned long long)n);
    if (n > size - 8)
        return fp4_error(FP4_ERR_INPUT,
                         "%s: header size %llu runs past the end of the file (%llu bytes)", file,
                         (unsigned long long)n, (unsigned long long)size);
    cJSON *j = NULL;
    FP4_TRY(json_parse_object(file, "header", true, (const char *)buf + 8, (size_t)n, &j));
    num_tokens k = {(const char *)buf + 8, (size_t)n, 0};
    fp4_status st = attach_numbers(file, &k, j->child);
    if (st != FP4_OK) {
        cJSON_Delete(j);
        return st;
    }
    uint64_t data_len = size - 8 - n;
    int cap = cJSON_GetArraySize(j);
    st_sorted *s = calloc((size_t)(cap > 0 ? cap : 1), sizeof *s);
    char **names = calloc((size_t)(cap > 0 ? cap : 1), sizeof *names);
    char **mk = NULL, **mv = NULL;
    int nt = 0, nm = 0;
    bool seen_meta = false;
    if (!s || !names) {
        st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", file);
        goto out;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, j)
    {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (seen_meta) {
                st = fp4_error(FP4_ERR_INPUT, "%s: __metadata__ appears twice", file);
                goto out;
            }
            seen_meta = true;
            if (cJSON_IsNull(item)) continue;
            if (!cJSON_IsObject(item)) {
                st = fp4_error(FP4_ERR_INPUT, "%s: __metadata__ is not a JSON object", file);
                goto out;
            }
            int m = cJSON_GetArraySize(item);
            mk = calloc((size_t)m + 1, sizeof *mk);
            mv = calloc((size_t)m + 1, sizeof *mv);
            if (!mk || !mv) {
                st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", file);
                goto out;
            }
            const cJSON *kv;
            cJSON_ArrayForEach(kv, item)
            {
                if (!cJSON_IsString(kv)) {
                    st = fp4_error(FP4_ERR_INPUT, "%s: __metadata__: %s: value is not a string",
                                   file, kv->string);
                    goto out;
                }
                mk[nm] = strdup(kv->string);
                mv[nm] = strdup(kv->valuestring);
                nm++;
                if (!mk[nm - 1] || !mv[nm - 1]) {
                    st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", file);
                    goto out;
                }
            }
            bool oom;
            const char *dup = first_duplicate(mk, nm, &oom);
            if (oom || dup) {
                st = oom ? fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", file)
                         : fp4_error(FP4_ERR_INPUT, "%s: __metadata__: key %s appears twice",
                                     file, dup);
                goto out;
            }
            continue;
        }
        names[nt] = item->string;
        s[nt].pos = nt;
        st = st_tensor(file, item, data_len, &s[nt].t);
        if (st != FP4_OK) goto out;
        nt++;
    }
    bool oom;
    const char *dup = first_duplicate(names, nt, &oom);
    if (oom || dup) {
        st = oom ? fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", file)
                 : fp4_error(FP4_ERR_INPUT, "%s: tensor name %s appears twice", file, dup);
        goto out;
    }
    qsort(s, (size_t)nt, sizeof *s, cmp_offsets);
    uint64_t at = 0;
    for (int i = 0; i < nt; i++) {
        if (s[i].t.begin < at) {
            st = fp4_error(FP4_ERR_INPUT, "%s: tensors %s and %s overlap (data_offsets [%llu, "
                           "%llu] begin inside [%llu, %llu])",
                           file, names[s[i - 1].pos], names[s[i].pos],
                           (unsigned long long)s[i].t.begin, (unsigned long long)s[i].t.end,
                           (unsigned long long)s[i - 1].t.begin, (unsigned long long)at);
            goto out;
        }
        if (s[i].t.begin > at) {
            st = fp4_error(FP4_ERR_INPUT, "%s: bytes [%llu, %llu) of the data section belong to no "
                           "tensor (before %s)", file, (unsigned long long)at,
                           (unsigned long long)s[i].t.begin, names[s[i].pos]);
            goto out;
        }
        at = s[i].t.end;
    }
    if (at < data_len) { /* at > data_len: the file is cut short, the tensors past its end cut */
        st = fp4_error(FP4_ERR_INPUT, "%s: %llu bytes after the last tensor's end (%llu) belong to "
                       "no tensor", file, (unsigned long long)(data_len - at),
                       (unsigned long long)at);
        goto out;
    }
    out->t = calloc((size_t)(nt > 0 ? nt : 1), sizeof *out->t);
    if (!out->t) {
        st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", file);
        goto out;
    }
    for (int i = 0; i < nt; i++) {
        out->t[i] = s[i].t;
        out->t[i].name = strdup(names[s[i].pos]);
        out->n = i + 1;
        if (!out->t[i].name) {
            st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the header", file);
            goto out;
        }
    }
    out->header_len = n;
    out->data_start = 8 + n;
    out->data_len = data_len;
    out->meta_keys = mk;
    out->meta_vals = mv;
    out->nmeta = nm;
    mk = mv = NULL;
    nm = 0;
out:
    for (int i = 0; i < nm; i++) {
        free(mk[i]);
        free(mv[i]);
    }
    free(mk);
    free(mv);
    free(s);
    free(names);
    cJSON_Delete(j);
    if (st != FP4_OK) fp4_st_header_free(out);
    return st;
}

void fp4_st_index_free(fp4_st_index *ix)
{
    if (!ix) return;
    for (int i = 0; i < ix->n; i++) free(ix->names[i]);
    for (int i = 0; i < ix->nshards; i++) free(ix->shards[i]);
    for (int i = 0; i < ix->nmeta; i++) {
        free(ix->meta_keys[i]);
        cJSON_free(ix->meta_vals[i]);
    }
    free(ix->meta_keys);
    free(ix->meta_vals);
    free(ix->names);
    free(ix->shard);
    free(ix->shards);
    memset(ix, 0, sizeof *ix);
}

/* A shard name stays inside the index's directory: relative, no ".." component, not empty. */
static bool shard_name_ok(const char *s)
{
    if (!*s || s[0] == '/') return false;
    for (const char *p = s; *p;) {
        const char *q = strchr(p, '/');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len == 0 || (len == 2 && p[0] == '.' && p[1] == '.')) return false;
        if (!q) break;
        p = q + 1;
    }
    return true;
}

fp4_status fp4_st_index_parse(const char *file, const char *buf, size_t size, fp4_st_index *out)
{
    memset(out, 0, sizeof *out);
    if (size > FP4_ST_MAX_HEADER)
        return fp4_error(FP4_ERR_INPUT, "%s: index file of %zu bytes exceeds the 100 MB limit",
                         file, size);
    cJSON *j = NULL;
    FP4_TRY(json_parse_object(file, "index", false, buf, size, &j));
    fp4_status st = FP4_OK;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
    if (!cJSON_IsObject(wm)) {
        st = fp4_error(FP4_ERR_INPUT, "%s: index has no \"weight_map\" object", file);
        goto out;
    }
    int cap = cJSON_GetArraySize(wm);
    out->names = calloc((size_t)cap + 1, sizeof *out->names);
    out->shard = calloc((size_t)cap + 1, sizeof *out->shard);
    out->shards = calloc((size_t)cap + 1, sizeof *out->shards);
    if (!out->names || !out->shard || !out->shards) {
        st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the index", file);
        goto out;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, wm)
    {
        if (!cJSON_IsString(e)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: weight_map: %s: shard is not a string", file,
                           e->string);
            goto out;
        }
        if (!shard_name_ok(e->valuestring)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: weight_map: %s: shard name \"%s\" is not a file "
                           "beside the index", file, e->string, e->valuestring);
            goto out;
        }
        int k = 0;
        /* Shards are few (and repeat in runs): search from the latest first. */
        for (k = out->nshards - 1; k >= 0; k--)
            if (strcmp(out->shards[k], e->valuestring) == 0) break;
        if (k < 0) {
            k = out->nshards;
            if (!(out->shards[k] = strdup(e->valuestring))) {
                st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the index", file);
                goto out;
            }
            out->nshards++;
        }
        if (!(out->names[out->n] = strdup(e->string))) {
            st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the index", file);
            goto out;
        }
        out->shard[out->n++] = k;
    }
    bool oom;
    const char *dup = first_duplicate(out->names, out->n, &oom);
    if (oom || dup) {
        st = oom ? fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", file)
                 : fp4_error(FP4_ERR_INPUT, "%s: weight_map: tensor %s appears twice", file, dup);
        goto out;
    }
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
    int nm = cJSON_IsObject(md) ? cJSON_GetArraySize(md) : 0;
    out->meta_keys = calloc((size_t)nm + 1, sizeof *out->meta_keys);
    out->meta_vals = calloc((size_t)nm + 1, sizeof *out->meta_vals);
    if (!out->meta_keys || !out->meta_vals) {
        st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the index", file);
        goto out;
    }
    for (const cJSON *m = nm ? md->child : NULL; m; m = m->next) {
        out->meta_keys[out->nmeta] = strdup(m->string ? m->string : "");
        out->meta_vals[out->nmeta] = cJSON_PrintUnformatted(m);
        out->nmeta++;
        if (!out->meta_keys[out->nmeta - 1] || !out->meta_vals[out->nmeta - 1]) {
            st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the index", file);
            goto out;
        }
    }
out:
    cJSON_Delete(j);
    if (st != FP4_OK) fp4_st_index_free(out);
    return st;
}
