/* io/npy.c — the NumPy tensor source: one .npy file (one tensor, named after the file) or an
 * .npz archive (one tensor per .npy member, in the archive's order). Files are mapped
 * read-only; .npy data and stored .npz members are read straight from the mapping. A deflated
 * member's header is read by inflating only its first bytes (zlib); its data is inflated whole
 * (libdeflate) when first read, and kept until another one is, only when it fits the decoding
 * memory --mem-limit leaves (fp4_chunked_memory); a larger one is the tensor's error, by name. */
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "io/chunked.h"
#include "io/mapguard.h"
#include "io/npy_parse.h"
#include "io/rawconv.h"
#include "io/source.h"

typedef struct npy_member {
    char *name;            /* tensor name: the member's name without ".npy" (owned) */
    int zi;                /* its zip member (-1 for a lone .npy) */
    bool parsed;           /* hdr/problem filled */
    fp4_npy_header hdr;
    char problem[192];     /* why it cannot be read (a bad header, not an .npy, ...) */
    char refused[192];     /* a readable array not read here (too large to inflate), or "" */
    bool crc_checked;      /* a stored member's bytes matched its CRC-32 (checked at the
                              first read of its data) */
} npy_member;

typedef struct npy_src {
    char *file;
    const uint8_t *map;
    uint64_t size;
    fp4_zip_member *zip; /* NULL for a lone .npy */
    int nzip;
    npy_member *m;
    int n;
    int *by_name;        /* member indices sorted by name */
    int cached;          /* member whose inflated bytes are in `buf` (-1: none) */
    uint8_t *buf;
    struct libdeflate_decompressor *dec;
} npy_src;

static bool npy_probe(const unsigned char *head, size_t n)
{
    return fp4_npy_probe(head, n) || fp4_zip_probe(head, n);
}

static void npy_close(void *impl)
{
    npy_src *s = impl;
    if (!s) return;
    if (s->map) munmap((void *)s->map, (size_t)s->size);
    fp4_zip_free(s->zip, s->nzip);
    for (int i = 0; i < s->n; i++) free(s->m[i].name);
    free(s->m);
    free(s->by_name);
    free(s->buf);
    if (s->dec) libdeflate_free_decompressor(s->dec);
    free(s->file);
    free(s);
}

static npy_src *g_sort_src; /* qsort has no context argument; open runs on one thread */

static int cmp_by_name(const void *a, const void *b)
{
    return strcmp(g_sort_src->m[*(const int *)a].name, g_sort_src->m[*(const int *)b].name);
}

static char *strip_npy(const char *name)
{
    size_t n = strlen(name);
    if (n > 4 && strcmp(name + n - 4, ".npy") == 0) n -= 4;
    return strndup(name, n);
}

/* ---- reads of the mapping under io/mapguard.h: a file shrunk meanwhile is an error -------- */

#define SHRANK "the file shrank while it was read (truncated)"

typedef struct parse_args {
    const char *file;
    const uint8_t *buf;
    uint64_t size;
    fp4_npy_header *h;
    int op; /* 0: probe, 1: parse, 2: zip list */
    fp4_zip_member **zip;
    int *nzip;
    bool yes;
    fp4_status st;
} parse_args;

static void parse_run(void *ctx)
{
    parse_args *a = ctx;
    if (a->op == 0) a->yes = fp4_npy_probe(a->buf, (size_t)a->size);
    else if (a->op == 1) a->st = fp4_npy_parse(a->file, a->buf, a->size, a->h);
    else a->st = fp4_zip_list(a->file, a->buf, a->size, a->zip, a->nzip);
}

/* op under the guard; a fault is FP4_ERR_INPUT "FILE: the file shrank ..." (a zip listing cut
 * short by it leaves the part it made in *zip, *nzip: freed here) */
static fp4_status parse_guarded(parse_args *a)
{
    if (!fp4_mapguard_call(parse_run, a)) {
        if (a->op == 2) {
            fp4_zip_free(*a->zip, *a->nzip);
            *a->zip = NULL;
            *a->nzip = 0;
        }
        return fp4_error(FP4_ERR_INPUT, "%s: " SHRANK, a->file);
    }
    return a->op == 0 ? FP4_OK : a->st;
}

static fp4_status npy_open(const char *file, void **impl)
{
    *impl = NULL;
    npy_src *s = calloc(1, sizeof *s);
    if (!s || !(s->file = strdup(file))) {
        free(s);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    s->cached = -1;
    fp4_status st = FP4_OK;
    struct stat sb;
    const char *why;
    int fd = fp4_open_regular(file, &sb, &why); /* a FIFO is refused, never waited on */
    if (fd < 0) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s", file, why);
        goto out;
    }
    s->size = (uint64_t)sb.st_size;
    if (s->size > 0) {
        void *m = mmap(NULL, (size_t)s->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            st = fp4_error(FP4_ERR_INPUT, "%s: cannot map: %s", file, strerror(errno));
            goto out;
        }
        s->map = m;
    }
    close(fd);
    parse_args pa = {.file = file, .buf = s->map, .size = s->size, .op = 0};
    if ((st = parse_guarded(&pa)) != FP4_OK) goto out;
    if (pa.yes) {
        s->m = calloc(1, sizeof *s->m);
        if (!s->m) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        const char *base = strrchr(file, '/');
        s->m[0].name = strip_npy(base ? base + 1 : file);
        s->m[0].zi = -1;
        s->n = 1;
        if (!s->m[0].name) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        /* A lone .npy with a bad header is a bad file, not one bad tensor among others. */
        pa.op = 1;
        pa.h = &s->m[0].hdr;
        st = parse_guarded(&pa);
        if (st != FP4_OK) goto out;
        s->m[0].parsed = true;
    } else {
        pa.op = 2;
        pa.zip = &s->zip;
        pa.nzip = &s->nzip;
        st = parse_guarded(&pa);
        if (st != FP4_OK) goto out;
        s->m = calloc((size_t)s->nzip + 1, sizeof *s->m);
        if (!s->m) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        for (int i = 0; i < s->nzip; i++) {
            if (s->zip[i].name[0] && s->zip[i].name[strlen(s->zip[i].name) - 1] == '/')
                continue; /* a directory entry */
            npy_member *m = &s->m[s->n];
            if (!(m->name = strip_npy(s->zip[i].name))) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                goto out;
            }
            m->zi = i;
            s->n++;
        }
    }
    s->by_name = malloc(((size_t)s->n + 1) * sizeof *s->by_name);
    if (!s->by_name) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int i = 0; i < s->n; i++) s->by_name[i] = i;
    g_sort_src = s;
    qsort(s->by_name, (size_t)s->n, sizeof *s->by_name, cmp_by_name);
    for (int i = 1; i < s->n; i++)
        if (strcmp(s->m[s->by_name[i - 1]].name, s->m[s->by_name[i]].name) == 0) {
            st = fp4_error(FP4_ERR_INPUT, "%s: tensor %s appears twice", file,
                           s->m[s->by_name[i]].name);
            goto out;
        }
out:
    if (st != FP4_OK) {
        npy_close(s);
        return st;
    }
    *impl = s;
    return FP4_OK;
}

static fp4_status npy_list(void *impl, char ***names, int *n)
{
    npy_src *s = impl;
    *names = calloc((size_t)s->n + 1, sizeof **names);
    if (!*names) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < s->n; i++)
        if (!((*names)[i] = strdup(s->m[i].name))) {
            for (int k = 0; k < i; k++) free((*names)[k]);
            free(*names);
            *names = NULL;
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        }
    *n = s->n;
    return FP4_OK;
}

static int npy_find(const npy_src *s, const char *name)
{
    int lo = 0, hi = s->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(s->m[s->by_name[mid]].name, name);
        if (c == 0) return s->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

typedef struct crc_args {
    const uint8_t *p;
    size_t n;
    uint32_t crc;
} crc_args;

static void crc_run(void *ctx)
{
    crc_args *c = ctx;
    c->crc = libdeflate_crc32(0, c->p, c->n);
}

typedef struct inflate_args {
    struct libdeflate_decompressor *dec;
    const uint8_t *in;
    size_t nin;
    uint8_t *out;
    size_t nout, got;
    enum libdeflate_result r;
} inflate_args;

static void inflate_run(void *ctx)
{
    inflate_args *a = ctx;
    a->r = libdeflate_deflate_decompress(a->dec, a->in, a->nin, a->out, a->nout, &a->got);
}

/* The bytes of member i's .npy (the mapping, or its inflated copy), or NULL with why in
 * m->problem. `verify`: the data is about to be used (a stored member's CRC-32 is checked;
 * reading only its header does not read the whole member). */
static const uint8_t *npy_bytes(npy_src *s, int i, uint64_t *len, bool verify)
{
    npy_member *m = &s->m[i];
    if (m->zi < 0) {
        *len = s->size;
        return s->map;
    }
    const fp4_zip_member *z = &s->zip[m->zi];
    *len = z->usize;
    if (z->problem[0]) {
        snprintf(m->problem, sizeof m->problem, "%s", z->problem);
        return NULL;
    }
    if (z->method == 0) {
        /* a stored member is read from the mapping: its CRC-32 checked once, before its data
         * is first used (as numpy does; a deflated member's is checked as it is inflated) */
        if (verify && !m->crc_checked) {
            crc_args c = {s->map + z->data_offset, (size_t)z->usize, 0};
            if (!fp4_mapguard_call(crc_run, &c)) {
                snprintf(m->problem, sizeof m->problem, SHRANK);
                return NULL;
            }
            if (c.crc != z->crc32) {
                snprintf(m->problem, sizeof m->problem,
                         "stored zip member fails its CRC-32 check");
                return NULL;
            }
            m->crc_checked = true;
        }
        return s->map + z->data_offset;
    }
    if (s->cached == i) return s->buf;
    free(s->buf);
    s->buf = NULL;
    s->cached = -1;
    if (!s->dec && !(s->dec = libdeflate_alloc_decompressor())) {
        snprintf(m->problem, sizeof m->problem, "out of memory for the decompressor");
        return NULL;
    }
    if (z->usize > (uint64_t)SIZE_MAX / 2 || !(s->buf = malloc(z->usize ? (size_t)z->usize : 1))) {
        snprintf(m->problem, sizeof m->problem, "out of memory inflating %llu bytes",
                 (unsigned long long)z->usize);
        return NULL;
    }
    inflate_args ia = {s->dec, s->map + z->data_offset, (size_t)z->csize, s->buf,
                       (size_t)z->usize, 0, LIBDEFLATE_BAD_DATA};
    if (!fp4_mapguard_call(inflate_run, &ia)) { /* libdeflate keeps no state between calls */
        snprintf(m->problem, sizeof m->problem, SHRANK);
        return NULL;
    }
    const size_t got = ia.got;
    const enum libdeflate_result r = ia.r;
    if (r != LIBDEFLATE_SUCCESS || got != z->usize) {
        snprintf(m->problem, sizeof m->problem,
                 "deflated zip member is corrupt or does not inflate to its %llu bytes",
                 (unsigned long long)z->usize);
        return NULL;
    }
    if (libdeflate_crc32(0, s->buf, (size_t)z->usize) != z->crc32) {
        snprintf(m->problem, sizeof m->problem, "zip member fails its CRC-32 check");
        return NULL;
    }
    s->cached = i;
    return s->buf;
}

typedef struct zinf_args {
    z_stream *zs;
    int r;
} zinf_args;

static void zinf_run(void *ctx)
{
    zinf_args *a = ctx;
    while (a->zs->avail_out > 0 && a->r == Z_OK) a->r = inflate(a->zs, Z_SYNC_FLUSH);
}

/* The first min(usize, cap) bytes of deflated member z inflated into buf (zlib, raw deflate,
 * stopping there); *got the count. False when the stream is corrupt before that. */
static bool inflate_prefix(const npy_src *s, const fp4_zip_member *z, uint8_t *buf, size_t cap,
                           size_t *got)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return false;
    zs.next_in = (Bytef *)(s->map + z->data_offset);
    zs.avail_in = z->csize > UINT_MAX ? UINT_MAX : (uInt)z->csize;
    zs.next_out = buf;
    zs.avail_out = (uInt)cap;
    zinf_args a = {&zs, Z_OK};
    const bool whole = fp4_mapguard_call(zinf_run, &a); /* false: the file shrank */
    *got = cap - zs.avail_out;
    inflateEnd(&zs); /* zlib's state stays whole between its reads of the input */
    const int r = a.r;
    return whole && (r == Z_OK || r == Z_STREAM_END || (r == Z_BUF_ERROR && zs.avail_out == 0));
}

static void npy_parse_member(npy_src *s, int i)
{
    npy_member *m = &s->m[i];
    if (m->parsed) return;
    m->parsed = true;
    const fp4_zip_member *z = &s->zip[m->zi];
    const char *zname = z->name;
    size_t zl = strlen(zname);
    if (zl < 4 || strcmp(zname + zl - 4, ".npy") != 0) {
        snprintf(m->problem, sizeof m->problem, "zip member is not an .npy array");
        return;
    }
    fp4_status st;
    if (z->method == 8 && !z->problem[0]) { /* the header from the first bytes only */
        enum { HEAD = 1 << 20 };            /* an .npy header longer than 1 MiB is refused */
        size_t cap = z->usize < HEAD ? (size_t)z->usize : HEAD, got = 0;
        uint8_t *head = malloc(cap ? cap : 1);
        if (!head) {
            snprintf(m->problem, sizeof m->problem, "out of memory reading its header");
            return;
        }
        if (!inflate_prefix(s, z, head, cap, &got)) {
            free(head);
            snprintf(m->problem, sizeof m->problem, "deflated zip member is corrupt");
            return;
        }
        st = fp4_npy_parse_prefix(zname, head, got, z->usize, &m->hdr);
        free(head);
        int64_t budget = fp4_chunked_memory();
        if (st == FP4_OK && budget > 0 && z->usize > (uint64_t)budget)
            snprintf(m->refused, sizeof m->refused,
                     "deflated member inflates to %llu bytes, over the %lld of --mem-limit for "
                     "decoding (half); raise --mem-limit or save with numpy.savez",
                     (unsigned long long)z->usize, (long long)budget);
    } else {
        uint64_t len;
        const uint8_t *b = npy_bytes(s, i, &len, false);
        if (!b) return;
        parse_args pa = {.file = zname, .buf = b, .size = len, .h = &m->hdr, .op = 1};
        st = parse_guarded(&pa);
    }
    if (st != FP4_OK) {
        snprintf(m->problem, sizeof m->problem, "%s", fp4_last_error());
        memset(&m->hdr, 0, sizeof m->hdr);
    }
}

static fp4_raw npy_raw(const fp4_npy_header *h)
{
    if (h->problem[0]) return FP4_RAW_NONE;
    switch (h->kind) {
    case 'f': return h->itemsize == 2 ? FP4_RAW_F16 : h->itemsize == 4 ? FP4_RAW_F32 : FP4_RAW_F64;
    case 'i':
        return h->itemsize == 1 ? FP4_RAW_I8 : h->itemsize == 2 ? FP4_RAW_I16
               : h->itemsize == 4 ? FP4_RAW_I32 : FP4_RAW_I64;
    case 'u':
        return h->itemsize == 1 ? FP4_RAW_U8 : h->itemsize == 2 ? FP4_RAW_U16
               : h->itemsize == 4 ? FP4_RAW_U32 : FP4_RAW_U64;
    default: return FP4_RAW_NONE;
    }
}

extern const fp4_source_ops fp4_source_npy;

static fp4_status npy_describe(void *impl, const char *name, fp4_tensor_desc *out,
                               fp4_name_kind *kind)
{
    npy_src *s = impl;
    memset(out, 0, sizeof *out);
    int i = npy_find(s, name);
    if (i < 0) {
        size_t n = strlen(name);
        for (int k = 0; k < s->n; k++) {
            const char *t = s->m[k].name;
            if (n == 0 || (strncmp(t, name, n) == 0 && t[n] &&
                           strchr(fp4_source_npy.separators, t[n]))) {
                *kind = FP4_NAME_GROUP;
                return fp4_error(FP4_ERR_INPUT, "%s: %s: is a group, not a dataset", s->file,
                                 name);
            }
        }
        *kind = FP4_NAME_NONE;
        return fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor", s->file, name);
    }
    *kind = FP4_NAME_TENSOR;
    npy_member *m = &s->m[i];
    npy_parse_member(s, i);
    if (!(out->name = strdup(m->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    const fp4_npy_header *h = &m->hdr;
    out->rank = h->rank;
    for (int d = 0; d < h->rank; d++) out->dims[d] = h->dims[d];
    out->nelems = m->problem[0] ? 0 : h->nelems;
    fp4_raw k = m->problem[0] ? FP4_RAW_NONE : npy_raw(h);
    /* a member that cannot be read at all (encrypted, bzip2/lzma, a corrupt stream, a bad
     * .npy header, sizes that contradict the directory) is of an unknown type: an errors
     * entry with its reason, never skipped as "not numeric ()" */
    snprintf(out->dtype, sizeof out->dtype, "%s",
             k ? fp4_raw_name(k) : m->problem[0] || !h->descr[0] ? "unknown" : h->descr);
    snprintf(out->byte_order, sizeof out->byte_order, "%s",
             h->itemsize > 1 && k ? (h->big_endian ? "be" : "le") : "");
    out->stored = fp4_raw_stored(k);
    out->numeric = k != FP4_RAW_NONE;
    out->exact_fp32 = fp4_raw_exact(k);
    out->codec_available = true;
    if (m->zi >= 0 && s->zip[m->zi].method == 8) snprintf(out->codec, sizeof out->codec, "deflate");
    out->logical_bytes = (int64_t)h->data_bytes;
    out->stored_bytes = m->zi >= 0 ? (int64_t)s->zip[m->zi].csize : (int64_t)s->size;
    out->file_offset = m->zi >= 0 ? (int64_t)s->zip[m->zi].data_offset : 0;
    if (m->zi < 0 || s->zip[m->zi].method == 0) out->file_offset += (int64_t)h->data_offset;
    if (m->zi >= 0) snprintf(out->part, sizeof out->part, "%s", s->zip[m->zi].name);
    if (m->problem[0]) snprintf(out->problem, sizeof out->problem, "%.159s", m->problem);
    else if (h->problem[0]) snprintf(out->problem, sizeof out->problem, "%.159s", h->problem);
    else if (m->refused[0]) snprintf(out->problem, sizeof out->problem, "%.159s", m->refused);
    return FP4_OK;
}

static fp4_status npy_read(void *impl, const fp4_tensor_desc *d, int dim, int64_t start,
                           int64_t count, bool raw, void *buf)
{
    npy_src *s = impl;
    int i = npy_find(s, d->name);
    if (i < 0) return fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor", s->file, d->name);
    npy_member *m = &s->m[i];
    npy_parse_member(s, i);
    const fp4_npy_header *h = &m->hdr;
    if (m->problem[0] || h->problem[0] || m->refused[0])
        return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", s->file, d->name,
                         m->problem[0] ? m->problem : h->problem[0] ? h->problem : m->refused);
    FP4_TRY(fp4_raw_slab_check(s->file, d->name, h->rank, h->dims, dim, start, count));
    if (h->nelems == 0 || count == 0) return FP4_OK;
    uint64_t len;
    const uint8_t *b = npy_bytes(s, i, &len, true);
    if (!b) return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", s->file, d->name, m->problem);
    /* a stored member or a lone .npy is read from the mapping (an inflated one from memory) */
    if (!fp4_raw_slab_mapped(b + h->data_offset, npy_raw(h), h->big_endian, h->rank, h->dims,
                             h->fortran_order, dim, start, count, raw, buf))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: " SHRANK, s->file, d->name);
    return FP4_OK;
}

static fp4_status npy_read_raw(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                               int64_t count, void *buf)
{
    return npy_read(impl, t, dim, start, count, true, buf);
}

static fp4_status npy_read_f32(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                               int64_t count, float *buf)
{
    return npy_read(impl, t, dim, start, count, false, buf);
}

const fp4_source_ops fp4_source_npy = {
    .name = "npy",
    .separators = "./",
    .rooted = false,
    .probe = npy_probe,
    .open = npy_open,
    .close = npy_close,
    .list = npy_list,
    .describe = npy_describe,
    .read_raw = npy_read_raw,
    .read_f32 = npy_read_f32,
};
