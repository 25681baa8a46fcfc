/* npy_parse.c — NumPy .npy header parsing (the Python dict literal numpy writes) and the zip
 * directory of .npz archives. Every read is bounds-checked against the buffer's size. */
#include "io/npy_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/st_parse.h" /* fp4_utf8_valid */

bool fp4_npy_probe(const uint8_t *buf, uint64_t size)
{
    return size >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0;
}

/* ---- the header: a Python dict literal ---------------------------------------------------- */

typedef struct {
    const char *p, *end;
} lit;

static void lit_ws(lit *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
        l->p++;
}

static bool lit_char(lit *l, char c)
{
    lit_ws(l);
    if (l->p < l->end && *l->p == c) {
        l->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes into out (at most cap-1 bytes, else false). */
static bool lit_string(lit *l, char *out, size_t cap)
{
    lit_ws(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"')) return false;
    char q = *l->p++;
    size_t n = 0;
    while (l->p < l->end && *l->p != q) {
        if (*l->p == '\\' || n + 1 >= cap) return false;
        out[n++] = *l->p++;
    }
    if (l->p >= l->end) return false;
    l->p++;
    out[n] = 0;
    return true;
}

static bool lit_word(lit *l, const char *w)
{
    lit_ws(l);
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) < n || memcmp(l->p, w, n) != 0) return false;
    l->p += n;
    return true;
}

/* Skip one value of a structured descr: strings, numbers, nested lists and tuples. */
static bool lit_skip(lit *l, int depth)
{
    lit_ws(l);
    if (depth > 32 || l->p >= l->end) return false;
    char c = *l->p;
    if (c == '\'' || c == '"') {
        l->p++;
        while (l->p < l->end && *l->p != c) l->p += (*l->p == '\\') ? 2 : 1;
        if (l->p >= l->end) return false;
        l->p++;
        return true;
    }
    if (c == '[' || c == '(') {
        char close = c == '[' ? ']' : ')';
        l->p++;
        for (;;) {
            if (lit_char(l, close)) return true;
            if (!lit_skip(l, depth + 1)) return false;
            if (lit_char(l, close)) return true;
            if (!lit_char(l, ',')) return false;
        }
    }
    const char *s = l->p;
    while (l->p < l->end && *l->p != ',' && *l->p != ')' && *l->p != ']' && *l->p != '}' &&
           *l->p != ' ')
        l->p++;
    return l->p > s;
}

/* A non-negative integer (Python 2 headers may carry an 'L'). */
static bool lit_int(lit *l, int64_t *out)
{
    lit_ws(l);
    const char *s = l->p;
    uint64_t v = 0;
    while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
        uint64_t d = (uint64_t)(*l->p - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10) return false;
        v = v * 10 + d;
        l->p++;
    }
    if (l->p == s) return false;
    if (l->p < l->end && *l->p == 'L') l->p++;
    *out = (int64_t)v;
    return true;
}

/* Fill kind/itemsize/big_endian/problem from a descr string ("<f4"). */
static void npy_descr(fp4_npy_header *h)
{
    const char *d = h->descr;
    char order = '|';
    if (*d == '<' || *d == '>' || *d == '|' || *d == '=') order = *d++;
    h->kind = *d ? *d++ : '?';
    int size = 0;
    bool digits = false;
    while (*d >= '0' && *d <= '9' && size < 100000) size = size * 10 + (*d++ - '0'), digits = true;
    h->itemsize = digits ? size : 0;
    h->big_endian = order == '>' && h->itemsize > 1;
    bool readable = !*d && ((h->kind == 'f' && (size == 2 || size == 4 || size == 8)) ||
                            ((h->kind == 'i' || h->kind == 'u') &&
                             (size == 1 || size == 2 || size == 4 || size == 8)));
    if (readable) return;
    const char *why;
    switch (h->kind) {
    case 'V': why = "raw void elements (bfloat16 saved through ml_dtypes is stored this way and "
                    "its type is lost; save it as float32)"; break;
    case 'O': why = "an object array (pickled Python objects), not numbers"; break;
    case 'b': why = "booleans, not numbers"; break;
    case 'c': why = "complex numbers"; break;
    case 'U': case 'S': case 'a': why = "strings, not numbers"; break;
    case 'M': case 'm': why = "dates or times, not numbers"; break;
    case 'f': why = "a float width other than 2, 4 or 8 bytes"; break;
    default: why = "an unknown element type"; break;
    }
    snprintf(h->problem, sizeof h->problem, "dtype %s is not supported: %s", h->descr, why);
    if (h->kind == 'O') h->itemsize = 0; /* pickled: no fixed size */
}

fp4_status fp4_npy_parse(const char *file, const uint8_t *buf, uint64_t size,
                         fp4_npy_header *out)
{
    return fp4_npy_parse_prefix(file, buf, size, size, out);
}

fp4_status fp4_npy_parse_prefix(const char *file, const uint8_t *buf, uint64_t have,
                                uint64_t total, fp4_npy_header *out)
{
    memset(out, 0, sizeof *out);
    uint64_t size = have < total ? have : total; /* the bytes the header may be read from */
    if (!fp4_npy_probe(buf, size))
        return fp4_error(FP4_ERR_INPUT, "%s: not a .npy file (no \\x93NUMPY magic)", file);
    if (size < 10) return fp4_error(FP4_ERR_INPUT, "%s: .npy header truncated", file);
    out->major = buf[6];
    out->minor = buf[7];
    if (out->minor != 0 || out->major < 1 || out->major > 3)
        return fp4_error(FP4_ERR_INPUT, "%s: .npy format version %d.%d is not 1.0, 2.0 or 3.0",
                         file, out->major, out->minor);
    uint64_t hlen, hstart;
    if (out->major == 1) {
        hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
        hstart = 10;
    } else {
        if (size < 12) return fp4_error(FP4_ERR_INPUT, "%s: .npy header truncated", file);
        hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8 | (uint64_t)buf[10] << 16 |
               (uint64_t)buf[11] << 24;
        hstart = 12;
    }
    if (hlen > size - hstart)
        return fp4_error(FP4_ERR_INPUT, "%s: .npy header length %llu runs past the end (%llu "
                         "bytes)", file, (unsigned long long)hlen, (unsigned long long)size);
    out->data_offset = hstart + hlen;
    const char *h = (const char *)buf + hstart;
    if (out->major == 3 && !fp4_utf8_valid((const uint8_t *)h, (size_t)hlen))
        return fp4_error(FP4_ERR_INPUT, "%s: .npy header is not valid UTF-8", file);
    lit l = {h, h + hlen};
    bool has_descr = false, has_fo = false, has_shape = false;
    if (!lit_char(&l, '{')) goto bad;
    for (;;) {
        if (lit_char(&l, '}')) break;
        char key[32];
        if (!lit_string(&l, key, sizeof key) || !lit_char(&l, ':')) goto bad;
        if (strcmp(key, "descr") == 0 && !has_descr) {
            has_descr = true;
            lit_ws(&l);
            if (l.p < l.end && *l.p == '[') {
                if (!lit_skip(&l, 0)) goto bad;
                snprintf(out->descr, sizeof out->descr, "[structured]");
            } else if (!lit_string(&l, out->descr, sizeof out->descr)) {
                goto bad;
            }
        } else if (strcmp(key, "fortran_order") == 0 && !has_fo) {
            has_fo = true;
            if (lit_word(&l, "True")) out->fortran_order = true;
            else if (!lit_word(&l, "False")) goto bad;
        } else if (strcmp(key, "shape") == 0 && !has_shape) {
            has_shape = true;
            if (!lit_char(&l, '(')) goto bad;
            out->rank = 0;
            for (;;) {
                if (lit_char(&l, ')')) break;
                int64_t v;
                if (!lit_int(&l, &v)) goto bad;
                if (out->rank >= FP4_NPY_MAX_RANK)
                    return fp4_error(FP4_ERR_INPUT, "%s: .npy shape has more than %d dimensions",
                                     file, FP4_NPY_MAX_RANK);
                out->dims[out->rank++] = v;
                if (lit_char(&l, ')')) break;
                if (!lit_char(&l, ',')) goto bad;
            }
        } else {
            return fp4_error(FP4_ERR_INPUT, "%s: .npy header has an unexpected or repeated key "
                             "'%s'", file, key);
        }
        if (lit_char(&l, '}')) break;
        if (!lit_char(&l, ',')) goto bad;
    }
    lit_ws(&l);
    if (l.p != l.end) goto bad;
    if (!has_descr || !has_fo || !has_shape)
        return fp4_error(FP4_ERR_INPUT, "%s: .npy header lacks '%s'", file,
                         !has_descr ? "descr" : !has_fo ? "fortran_order" : "shape");
    if (strcmp(out->descr, "[structured]") == 0) {
        out->kind = 'V';
        snprintf(out->problem, sizeof out->problem,
                 "a structured dtype (record fields) is not supported");
    } else {
        npy_descr(out);
    }
    uint64_t n = 1;
    for (int i = 0; i < out->rank; i++) {
        uint64_t d = (uint64_t)out->dims[i];
        if (d != 0 && n > (uint64_t)INT64_MAX / d)
            return fp4_error(FP4_ERR_INPUT, "%s: .npy shape's element count overflows 64 bits",
                             file);
        n *= d;
    }
    out->nelems = (int64_t)n;
    if (out->itemsize) {
        if (n > UINT64_MAX / (uint64_t)out->itemsize)
            return fp4_error(FP4_ERR_INPUT, "%s: .npy data size overflows 64 bits", file);
        out->data_bytes = n * (uint64_t)out->itemsize;
        if (out->data_bytes > total - out->data_offset)
            return fp4_error(FP4_ERR_INPUT, "%s: .npy data truncated: the shape needs %llu bytes, "
                             "%llu follow the header", file, (unsigned long long)out->data_bytes,
                             (unsigned long long)(total - out->data_offset));
    }
    return FP4_OK;
bad:
    return fp4_error(FP4_ERR_INPUT, "%s: .npy header is not {'descr': …, 'fortran_order': …, "
                     "'shape': (…)} (near byte %ld of the header)", file,
                     (long)(l.p - h));
}

/* ---- zip ---------------------------------------------------------------------------------- */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

bool fp4_zip_probe(const uint8_t *buf, uint64_t size)
{
    return size >= 4 && buf[0] == 'P' && buf[1] == 'K' &&
           ((buf[2] == 3 && buf[3] == 4) || (buf[2] == 5 && buf[3] == 6));
}

void fp4_zip_free(fp4_zip_member *m, int n)
{
    if (!m) return;
    for (int i = 0; i < n; i++) free(m[i].name);
    free(m);
}

static int cmp_member_name(const void *a, const void *b)
{
    return strcmp((*(fp4_zip_member *const *)a)->name, (*(fp4_zip_member *const *)b)->name);
}

fp4_status fp4_zip_list(const char *file, const uint8_t *buf, uint64_t size,
                        fp4_zip_member **out, int *n)
{
    *out = NULL;
    *n = 0;
    if (size < 22) return fp4_error(FP4_ERR_INPUT, "%s: too short for a zip archive", file);
    /* The end-of-central-directory record: the last one whose comment ends the file. */
    uint64_t eocd = UINT64_MAX;
    uint64_t lo = size > 22 + 65535 ? size - 22 - 65535 : 0;
    for (uint64_t p = size - 22 + 1; p-- > lo;) {
        if (rd32(buf + p) == 0x06054b50 && p + 22 + rd16(buf + p + 20) == size) {
            eocd = p;
            break;
        }
    }
    if (eocd == UINT64_MAX)
        return fp4_error(FP4_ERR_INPUT, "%s: zip end-of-central-directory record not found", file);
    const uint8_t *e = buf + eocd;
    uint64_t count = rd16(e + 10), cd_size = rd32(e + 12), cd_off = rd32(e + 16);
    uint16_t disk = rd16(e + 4), cd_disk = rd16(e + 6);
    if ((disk != 0 && disk != 0xFFFF) || (cd_disk != 0 && cd_disk != 0xFFFF) ||
        rd16(e + 8) != rd16(e + 10))
        return fp4_error(FP4_ERR_INPUT, "%s: multi-disk zip archives are not supported", file);
    if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
        if (eocd < 20 || rd32(buf + eocd - 20) != 0x07064b50)
            return fp4_error(FP4_ERR_INPUT, "%s: zip64 end-of-directory locator missing", file);
        uint64_t z = rd64(buf + eocd - 20 + 8);
        if (z > eocd - 20 || eocd - 20 - z < 56 || rd32(buf + z) != 0x06064b50)
            return fp4_error(FP4_ERR_INPUT, "%s: zip64 end-of-directory record missing or out of "
                             "bounds", file);
        if (rd32(buf + z + 16) != 0 || rd32(buf + z + 20) != 0 ||
            rd64(buf + z + 24) != rd64(buf + z + 32))
            return fp4_error(FP4_ERR_INPUT, "%s: multi-disk zip archives are not supported", file);
        count = rd64(buf + z + 32);
        cd_size = rd64(buf + z + 40);
        cd_off = rd64(buf + z + 48);
    }
    if (cd_off > size || cd_size > size - cd_off)
        return fp4_error(FP4_ERR_INPUT, "%s: zip central directory lies outside the file", file);
    if (count > cd_size / 46 || count > 0x7FFFFFFF)
        return fp4_error(FP4_ERR_INPUT, "%s: zip central directory too small for %llu entries",
                         file, (unsigned long long)count);
    fp4_zip_member *m = calloc(count ? (size_t)count : 1, sizeof *m);
    if (!m) return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the zip directory", file);
    fp4_status st = FP4_OK;
    int got = 0;
    /* the list so far is the caller's from here (*out, *n): a read of a mapping the file no
     * longer holds (io/mapguard.h) abandons this call anywhere, and leaves it to free */
    *out = m;
    uint64_t p = cd_off, cd_end = cd_off + cd_size;
    for (uint64_t i = 0; i < count; i++) {
        if (cd_end - p < 46 || rd32(buf + p) != 0x02014b50) {
            st = fp4_error(FP4_ERR_INPUT, "%s: zip central directory entry %llu is damaged", file,
                           (unsigned long long)i);
            goto out;
        }
        const uint8_t *c = buf + p;
        uint16_t flags = rd16(c + 8), method = rd16(c + 10);
        uint64_t csize = rd32(c + 20), usize = rd32(c + 24), lho = rd32(c + 42);
        uint32_t crc = rd32(c + 16);
        uint64_t nlen = rd16(c + 28), xlen = rd16(c + 30), clen = rd16(c + 32);
        if (cd_end - p - 46 < nlen + xlen + clen) {
            st = fp4_error(FP4_ERR_INPUT, "%s: zip central directory entry %llu runs past the "
                           "directory", file, (unsigned long long)i);
            goto out;
        }
        const uint8_t *name = c + 46;
        if (!fp4_utf8_valid(name, (size_t)nlen) || memchr(name, 0, (size_t)nlen)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: zip member %llu has a name that is not UTF-8 or "
                           "holds a NUL", file, (unsigned long long)i);
            goto out;
        }
        fp4_zip_member *z = &m[got];
        if (!(z->name = calloc((size_t)nlen + 1, 1))) {
            st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for the zip directory", file);
            goto out;
        }
        *n = ++got; /* before the name's bytes are copied from buf */
        memcpy(z->name, name, (size_t)nlen);
        /* zip64 extra field: the overflowed fields, in this order. */
        for (const uint8_t *x = name + nlen, *xe = x + xlen; xe - x >= 4;) {
            uint16_t id = rd16(x), len = rd16(x + 2);
            if ((uint64_t)(xe - x - 4) < len) break;
            if (id == 0x0001) {
                const uint8_t *f = x + 4, *fe = f + len;
                if (usize == 0xFFFFFFFF && fe - f >= 8) usize = rd64(f), f += 8;
                if (csize == 0xFFFFFFFF && fe - f >= 8) csize = rd64(f), f += 8;
                if (lho == 0xFFFFFFFF && fe - f >= 8) lho = rd64(f), f += 8;
            }
            x += 4 + len;
        }
        p += 46 + nlen + xlen + clen;
        z->method = method;
        z->csize = csize;
        z->usize = usize;
        z->crc32 = crc;
        if (lho > size || size - lho < 30 || rd32(buf + lho) != 0x04034b50) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: zip local header missing or out of bounds",
                           file, z->name);
            goto out;
        }
        uint64_t lnlen = rd16(buf + lho + 26), lxlen = rd16(buf + lho + 28);
        if (lnlen != nlen || size - lho - 30 < lnlen + lxlen ||
            memcmp(buf + lho + 30, name, (size_t)nlen) != 0) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: zip local header does not match the directory",
                           file, z->name);
            goto out;
        }
        z->data_offset = lho + 30 + lnlen + lxlen;
        if (csize > size - z->data_offset) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: zip member data runs past the end of the file",
                           file, z->name);
            goto out;
        }
        if (flags & 1)
            snprintf(z->problem, sizeof z->problem, "zip member is encrypted");
        else if (method != 0 && method != 8)
            snprintf(z->problem, sizeof z->problem,
                     "zip compression method %d is not supported (stored or deflated only)",
                     method);
        else if (method == 0 && csize != usize) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: stored zip member with sizes %llu != %llu",
                           file, z->name, (unsigned long long)csize, (unsigned long long)usize);
            goto out;
        }
    }
    if (got > 1) {
        fp4_zip_member **s = malloc((size_t)got * sizeof *s);
        if (!s) {
            st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", file);
            goto out;
        }
        for (int i = 0; i < got; i++) s[i] = &m[i];
        qsort(s, (size_t)got, sizeof *s, cmp_member_name);
        for (int i = 1; i < got && st == FP4_OK; i++)
            if (strcmp(s[i - 1]->name, s[i]->name) == 0)
                st = fp4_error(FP4_ERR_INPUT, "%s: zip member %s appears twice", file, s[i]->name);
        free(s);
        if (st != FP4_OK) goto out;
    }
    return FP4_OK;
out:
    fp4_zip_free(m, got);
    *out = NULL;
    *n = 0;
    return st;
}
