/* io/pytorch.c — the PyTorch tensor source: a torch.save zip checkpoint (.bin, .pt, .pth:
 * PREFIX/data.pkl, PREFIX/data/KEY storages, PREFIX/byteorder), a sharded one through its
 * pytorch_model.bin.index.json, or a directory holding either. data.pkl is read by our own
 * strict pickle reader (io/pickle.h), never executed; storages are read from the mapping. The
 * legacy (pre-1.6, non-zip) format is refused with how to convert it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/ckpt_index.h"
#include "io/mapguard.h"
#include "io/npy_parse.h" /* the zip directory */
#include "io/pickle.h"
#include "io/rawconv.h"
#include "io/source.h"
#include "io/st_parse.h" /* the sharded index (same JSON as safetensors') */

typedef struct pt_tensor {
    fp4_pkl_tensor *p;     /* in its file's list */
    fp4_raw k;
    const uint8_t *base;   /* its first element in the mapping; NULL when `problem` */
    bool fortran;          /* a column-major view (a transposed matrix): strides (1, d0, ...) */
    uint64_t file_offset;
    char part[128];
    char problem[160];
    bool dropped;          /* a second entry of one name: not listed (pt_refuse_twice) */
} pt_tensor;

typedef struct pt_file {
    char *path;
    const uint8_t *map;
    uint64_t size;
    fp4_zip_member *zip;
    int nzip;
    fp4_zip_member **zorder; /* [nzip] the members by name (find_member's binary search) */
    fp4_pkl_tensor *t;
    int n;
    bool big_endian;
    int pkl;               /* the zip member data.pkl */
    size_t plen;           /* bytes of its prefix ("archive/": 8) */
} pt_file;

typedef struct pt_entry {
    const char *name;
    int f, t;
} pt_entry;

typedef struct pt_src {
    char *file;
    pt_file *files;
    int nfiles;
    pt_tensor **tt;       /* per file, per tensor */
    pt_entry *list;       /* listing order */
    int n;
    pt_entry *by_name;
    fp4_st_index imeta;
    char *root; /* the input's tree (fp4_source_tree): files outside it need --allow-external */
} pt_src;

static bool pt_allow_external;

static void pt_set_allow_external(bool allow) { pt_allow_external = allow; }

/* ---- probing ---------------------------------------------------------------------------- */

/* The pickle torch.save wrote before 1.6: PROTO 2, LONG1 of the magic number 0x1950a86a20f9469cfc6c. */
static const unsigned char legacy_magic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                             0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t b = strlen(suffix);
    return n >= b && memcmp(s + n - b, suffix, b) == 0;
}

/* A zip whose first member is data.pkl or PREFIX/data.pkl (torch.save writes it first). */
static bool pt_probe_zip(const unsigned char *h, size_t n)
{
    if (n < 30 || memcmp(h, "PK\3\4", 4) != 0) return false;
    size_t nl = (size_t)(h[26] | h[27] << 8);
    if (30 + nl > n) return false;
    const char *name = (const char *)h + 30;
    if (nl == 8 && memcmp(name, "data.pkl", 8) == 0) return true;
    if (!ends_with(name, nl, "/data.pkl")) return false;
    return memchr(name, '/', nl - 9) == NULL; /* one level: PREFIX/data.pkl */
}

/* A sharded index (the safetensors index's JSON) whose shards are .bin/.pt/.pth files: the
 * first shard name after "weight_map" in the first bytes ends so. */
static bool pt_probe_index(const unsigned char *h, size_t n)
{
    size_t i = 0;
    while (i < n && (h[i] == ' ' || h[i] == '\n' || h[i] == '\r' || h[i] == '\t')) i++;
    if (i >= n || h[i] != '{') return false;
    static const char key[] = "\"weight_map\"";
    const unsigned char *w = NULL;
    for (size_t k = i; !w && k + sizeof key - 1 <= n; k++)
        if (memcmp(h + k, key, sizeof key - 1) == 0) w = h + k + sizeof key - 1;
    if (!w) return false;
    /* "weight_map": { "NAME": "SHARD" : the fourth quote after the brace closes SHARD */
    const unsigned char *end = h + n, *b = memchr(w, '{', (size_t)(end - w));
    if (!b) return false;
    int q = 0;
    for (const unsigned char *c = b; c < end; c++) {
        if (*c == '\\') {
            c++;
            continue;
        }
        if (*c == '"' && ++q == 4) {
            size_t len = (size_t)(c - h);
            return ends_with((const char *)h, len, ".bin") || ends_with((const char *)h, len, ".pt") ||
                   ends_with((const char *)h, len, ".pth");
        }
    }
    return false;
}

static bool pt_probe(const unsigned char *head, size_t n)
{
    return pt_probe_zip(head, n) || pt_probe_index(head, n) ||
           (n >= sizeof legacy_magic && memcmp(head, legacy_magic, sizeof legacy_magic) == 0);
}

static bool name_is_ckpt(const char *s)
{
    size_t n = strlen(s);
    return ends_with(s, n, ".bin") || ends_with(s, n, ".pt") || ends_with(s, n, ".pth");
}

static bool name_is_index(const char *s) { return ends_with(s, strlen(s), ".bin.index.json"); }

/* A directory holding a *.bin.index.json or .bin/.pt/.pth files and no safetensors (a folder
 * with both is read as safetensors). */
static bool pt_probe_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false, st = false;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (ends_with(e->d_name, n, ".safetensors") || ends_with(e->d_name, n, ".safetensors.index.json"))
            st = true;
        else if (name_is_index(e->d_name) || name_is_ckpt(e->d_name))
            found = true;
    }
    closedir(d);
    return found && !st;
}

/* ---- one checkpoint file ----------------------------------------------------------------- */

static const struct {
    const char *cls;
    fp4_raw k;
} storage_types[] = {
    {"FloatStorage", FP4_RAW_F32},  {"HalfStorage", FP4_RAW_F16},  {"BFloat16Storage", FP4_RAW_BF16},
    {"DoubleStorage", FP4_RAW_F64}, {"LongStorage", FP4_RAW_I64},  {"IntStorage", FP4_RAW_I32},
    {"ShortStorage", FP4_RAW_I16},  {"CharStorage", FP4_RAW_I8},   {"ByteStorage", FP4_RAW_U8},
};

static fp4_raw storage_raw(const char *cls)
{
    for (size_t i = 0; i < sizeof storage_types / sizeof *storage_types; i++)
        if (strcmp(storage_types[i].cls, cls) == 0) return storage_types[i].k;
    return FP4_RAW_NONE;
}

/* The member named name, or -1: a binary search of zorder (a linear one per tensor made the
 * open quadratic: 20,000 tensors took seconds). */
static int find_member(const pt_file *f, const char *name)
{
    int lo = 0, hi = f->nzip;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        const int c = strcmp(f->zorder[mid]->name, name);
        if (!c) return (int)(f->zorder[mid] - f->zip);
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static int cmp_member(const void *a, const void *b)
{
    return strcmp((*(fp4_zip_member *const *)a)->name, (*(fp4_zip_member *const *)b)->name);
}

/* zorder: the members sorted by name (names are unique: fp4_zip_list checks). */
static fp4_status sort_members(pt_file *f)
{
    if (!(f->zorder = malloc(((size_t)f->nzip + 1) * sizeof *f->zorder)))
        return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", f->path);
    for (int i = 0; i < f->nzip; i++) f->zorder[i] = &f->zip[i];
    qsort(f->zorder, (size_t)f->nzip, sizeof *f->zorder, cmp_member);
    return FP4_OK;
}

static void pt_unmap(pt_file *f)
{
    if (f->map) munmap((void *)f->map, (size_t)f->size);
    fp4_zip_free(f->zip, f->nzip);
    free(f->zorder);
    fp4_pkl_free(f->t, f->n);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* ---- the open-time parse, from the mapping under io/mapguard.h --------------------------- */

#define SHRANK "the file shrank while it was read (truncated)"

/* n bytes of the mapping copied into dst (the caller's), or the zip directory listed; op 0:
 * copy, 1: list (the part listed stays in f->zip, f->nzip when a fault abandons it) */
typedef struct pt_guarded {
    int op;
    void *dst;
    const uint8_t *src;
    size_t n;
    const char *path;
    pt_file *f;
    fp4_status st;
} pt_guarded;

static void pt_guarded_run(void *ctx)
{
    pt_guarded *g = ctx;
    if (g->op == 0) memcpy(g->dst, g->src, g->n);
    else g->st = fp4_zip_list(g->path, g->f->map, g->f->size, &g->f->zip, &g->f->nzip);
}

/* n bytes at src of f's mapping into dst: false (an error set) when the file shrank. */
static bool pt_copy(pt_file *f, void *dst, const uint8_t *src, size_t n)
{
    pt_guarded g = {.op = 0, .dst = dst, .src = src, .n = n};
    if (fp4_mapguard_call(pt_guarded_run, &g)) return true;
    fp4_error(FP4_ERR_INPUT, "%s: " SHRANK, f->path);
    return false;
}

/* Map and parse one checkpoint file: its zip directory, byteorder and data.pkl, every byte
 * read under the guard (a file cut short meanwhile is an error, never SIGBUS): the directory
 * listed from the mapping, the byteorder and data.pkl copied out of it and parsed there. */
static fp4_status pt_map(const char *path, const char *named_by, pt_file *f)
{
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    struct stat sb;
    const char *why;
    int fd = fp4_open_regular(path, &sb, &why); /* a FIFO shard is refused, never waited on */
    if (fd < 0) {
        if (named_by)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: %s (a shard the index names)", named_by,
                             path, why);
        return fp4_error(FP4_ERR_INPUT, "%s: %s", path, why);
    }
    f->size = (uint64_t)sb.st_size;
    if (f->size > 0) {
        void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            return fp4_error(FP4_ERR_INPUT, "%s: cannot map: %s", path, strerror(errno));
        }
        f->map = m;
    }
    close(fd);
    unsigned char head[sizeof legacy_magic];
    if (f->size >= sizeof head && !pt_copy(f, head, f->map, sizeof head)) return FP4_ERR_INPUT;
    if (f->size >= sizeof head && memcmp(head, legacy_magic, sizeof legacy_magic) == 0)
        return fp4_error(FP4_ERR_INPUT,
                         "%s: a PyTorch checkpoint in the legacy (pre-1.6, non-zip) format, not "
                         "read: save it again with torch.save(obj, f, "
                         "_use_new_zipfile_serialization=True), or as safetensors "
                         "(safetensors.torch.save_file)", path);
    pt_guarded g = {.op = 1, .path = path, .f = f};
    if (!fp4_mapguard_call(pt_guarded_run, &g)) {
        fp4_zip_free(f->zip, f->nzip); /* the part listed before the fault */
        f->zip = NULL;
        f->nzip = 0;
        return fp4_error(FP4_ERR_INPUT, "%s: " SHRANK, path);
    }
    FP4_TRY(g.st);
    FP4_TRY(sort_members(f));
    /* the one PREFIX/data.pkl (or data.pkl) */
    int pk = -1;
    size_t plen = 0;
    for (int i = 0; i < f->nzip; i++) {
        const char *nm = f->zip[i].name, *sl = strchr(nm, '/');
        size_t pl = sl ? (size_t)(sl - nm) + 1 : 0;
        if (strcmp(nm + pl, "data.pkl") != 0 || (sl && strchr(sl + 1, '/'))) continue;
        if (pk >= 0)
            return fp4_error(FP4_ERR_INPUT, "%s: holds two pickles (%s, %s): not a torch.save file",
                             path, f->zip[pk].name, nm);
        pk = i;
        plen = pl;
    }
    if (pk < 0)
        return fp4_error(FP4_ERR_INPUT, "%s: a zip archive without data.pkl: not a torch.save "
                         "checkpoint", path);
    const fp4_zip_member *z = &f->zip[pk];
    if (z->problem[0] || z->method != 0)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", path, z->name,
                         z->problem[0] ? z->problem : "compressed: torch.save stores it plainly");
    char prefix[256];
    if (plen >= sizeof prefix - 16)
        return fp4_error(FP4_ERR_INPUT, "%s: archive prefix longer than %zu bytes", path,
                         sizeof prefix - 16);
    memcpy(prefix, z->name, plen);
    prefix[plen] = 0;
    f->pkl = pk;
    f->plen = plen;
    char bo[300];
    snprintf(bo, sizeof bo, "%sbyteorder", prefix);
    int bi = find_member(f, bo);
    if (bi >= 0) {
        const fp4_zip_member *b = &f->zip[bi];
        char v[6] = {0};
        if (b->method == 0 && !b->problem[0] && (b->usize == 6 || b->usize == 3) &&
            !pt_copy(f, v, f->map + b->data_offset, (size_t)b->usize))
            return FP4_ERR_INPUT;
        if (b->method != 0 || b->problem[0] ||
            !((b->usize == 6 && memcmp(v, "little", 6) == 0) ||
              (b->usize == 3 && memcmp(v, "big", 3) == 0)))
            return fp4_error(FP4_ERR_INPUT, "%s: %s is not 'little' or 'big'", path, bo);
        f->big_endian = b->usize == 3;
    }
    uint8_t *pkl = malloc(z->usize ? (size_t)z->usize : 1);
    if (!pkl) return fp4_error(FP4_ERR_INTERNAL, "%s: out of memory for %s", path, z->name);
    if (!pt_copy(f, pkl, f->map + z->data_offset, (size_t)z->usize)) {
        free(pkl);
        return FP4_ERR_INPUT;
    }
    const fp4_status st = fp4_pickle_state_dict(path, pkl, (size_t)z->usize, &f->t, &f->n);
    free(pkl);
    return st;
}

/* Where tensor t of file f lies, or why it cannot be read. */
static void pt_resolve(const pt_file *f, fp4_pkl_tensor *p, pt_tensor *o, bool sharded)
{
    memset(o, 0, sizeof *o);
    o->p = p;
    char member[300];
    snprintf(member, sizeof member, "%.*sdata/%.200s", (int)f->plen, f->zip[f->pkl].name,
             p->storage_key);
    if (sharded) {
        const char *b = strrchr(f->path, '/');
        snprintf(o->part, sizeof o->part, "%.127s", b ? b + 1 : f->path);
    } else if (!p->storage_key[0]) { /* no storage (pickle.h): the pickle says what is wrong */
        snprintf(o->part, sizeof o->part, "%.127s", f->zip[f->pkl].name);
    } else {
        snprintf(o->part, sizeof o->part, "%.127s", member);
    }
    o->k = storage_raw(p->storage_type);
    if (p->problem[0]) {
        snprintf(o->problem, sizeof o->problem, "%s", p->problem);
        return;
    }
    if (o->k == FP4_RAW_NONE) {
        snprintf(o->problem, sizeof o->problem, "storage type torch.%s is not read (%s)",
                 p->storage_type,
                 strcmp(p->storage_type, "BoolStorage") == 0 ? "not numeric"
                                                             : "not a float or integer type");
        return;
    }
    int mi = find_member(f, member);
    if (mi < 0) {
        snprintf(o->problem, sizeof o->problem, "its storage %.100s is not in the archive", member);
        return;
    }
    const fp4_zip_member *z = &f->zip[mi];
    if (z->problem[0] || z->method != 0) {
        snprintf(o->problem, sizeof o->problem, "storage %.60s: %.80s", member,
                 z->problem[0] ? z->problem : "compressed (torch.save stores storages plainly)");
        return;
    }
    uint64_t isz = (uint64_t)fp4_raw_size(o->k);
    if ((uint64_t)p->storage_numel > z->usize / isz) {
        snprintf(o->problem, sizeof o->problem,
                 "storage %.80s holds %llu bytes, fewer than its %lld elements need", member,
                 (unsigned long long)z->usize, (long long)p->storage_numel);
        return;
    }
    int64_t nel = 1;
    bool overflow = false;
    for (int d = 0; d < p->rank; d++) {
        if (p->size[d] && nel > INT64_MAX / p->size[d]) overflow = true;
        else nel *= p->size[d];
    }
    if (overflow) {
        snprintf(o->problem, sizeof o->problem, "size overflows 64 bits");
        return;
    }
    if (nel == 0) { /* nothing to read: any offset will do */
        o->base = f->map + z->data_offset;
        o->file_offset = z->data_offset;
        return;
    }
    /* row-major (C-contiguous), or column-major (a transpose: read as Fortran order) */
    bool c_ok = true, f_ok = true;
    int64_t want = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
        if (p->size[d] != 1 && p->stride[d] != want) c_ok = false;
        want *= p->size[d];
    }
    want = 1;
    for (int d = 0; d < p->rank; d++) {
        if (p->size[d] != 1 && p->stride[d] != want) f_ok = false;
        want *= p->size[d];
    }
    if (!c_ok && !f_ok) {
        char s[96] = "";
        size_t at = 0;
        for (int k = 0; k < p->rank && at < sizeof s - 24; k++)
            at += (size_t)snprintf(s + at, sizeof s - at, "%s%lld", k ? ", " : "",
                                   (long long)p->stride[k]);
        snprintf(o->problem, sizeof o->problem,
                 "a view with strides (%s) (neither row- nor column-major) into a shared "
                 "storage: not read; save tensor.contiguous() instead", s);
        return;
    }
    o->fortran = !c_ok;
    if (p->offset > p->storage_numel || nel > p->storage_numel - p->offset) {
        snprintf(o->problem, sizeof o->problem,
                 "view [%lld, +%lld) lies outside its storage of %lld elements",
                 (long long)p->offset, (long long)nel, (long long)p->storage_numel);
        return;
    }
    o->file_offset = z->data_offset + (uint64_t)p->offset * isz;
    o->base = f->map + o->file_offset;
}

/* ---- the source ---------------------------------------------------------------------------- */

static void pt_close(void *impl)
{
    pt_src *s = impl;
    if (!s) return;
    for (int i = 0; i < s->nfiles; i++) {
        if (s->tt) free(s->tt[i]);
        pt_unmap(&s->files[i]);
    }
    free(s->tt);
    free(s->files);
    free(s->list);
    free(s->by_name);
    fp4_st_index_free(&s->imeta);
    free(s->root);
    free(s->file);
    free(s);
}

static int cmp_entry(const void *a, const void *b)
{
    const pt_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->f != y->f ? x->f - y->f : x->t - y->t;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* By name and file only: the index's look-up (the tensor's position not known). */
static int cmp_name_file(const void *a, const void *b)
{
    const pt_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->f - y->f;
}

/* A name listed more than once (a dict key set twice in one pickle, "a.b" beside
 * {"a": {"b": ...}}, two files holding it) is ambiguous: its first entry becomes an error
 * naming where it appears, the others leave the list (SPEC §8). by_name is sorted. */
static void pt_refuse_twice(pt_src *s)
{
    int drop = 0;
    for (int i = 0; i < s->n;) {
        int j = i + 1;
        while (j < s->n && strcmp(s->by_name[i].name, s->by_name[j].name) == 0) j++;
        if (j - i > 1) {
            const pt_entry *a = &s->by_name[i], *b = &s->by_name[i + 1];
            pt_tensor *t = &s->tt[a->f][a->t];
            if (a->f == b->f)
                snprintf(t->problem, sizeof t->problem, "the name appears %d times in the "
                         "pickle (a dict key set twice, or keys that join to one name): not read",
                         j - i);
            else
                snprintf(t->problem, sizeof t->problem, "the name appears in %.60s and %.60s: "
                         "not read", base_name(s->files[a->f].path),
                         base_name(s->files[b->f].path));
            t->base = NULL;
            for (int k = i + 1; k < j; k++) s->tt[s->by_name[k].f][s->by_name[k].t].dropped = true;
            drop += j - i - 1;
        }
        i = j;
    }
    if (!drop) return;
    int n = 0, m = 0;
    for (int i = 0; i < s->n; i++) {
        if (!s->tt[s->list[i].f][s->list[i].t].dropped) s->list[n++] = s->list[i];
        if (!s->tt[s->by_name[i].f][s->by_name[i].t].dropped) s->by_name[m++] = s->by_name[i];
    }
    s->n = n;
}

/* Map files paths[0..n) (named by `index` when sharded) into s->files. */
static fp4_status pt_map_all(pt_src *s, char **paths, int n, const char *index)
{
    s->files = calloc((size_t)n + 1, sizeof *s->files);
    s->tt = calloc((size_t)n + 1, sizeof *s->tt);
    if (!s->files || !s->tt) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    bool sharded = n > 1 || index;
    for (int i = 0; i < n; i++) {
        /* a shard or directory entry resolving (symlinks) outside the input's tree */
        if (!pt_allow_external && fp4_source_outside_tree(paths[i], s->root)) {
            s->nfiles = i;
            if (index)
                return fp4_error(FP4_ERR_INPUT, "%s: %s: resolves outside the checkpoint's "
                                 "directory %s (a shard the index names; --allow-external "
                                 "reads it)", index, paths[i], s->root);
            return fp4_error(FP4_ERR_INPUT, "%s: resolves outside the checkpoint's directory %s "
                             "(--allow-external reads it)", paths[i], s->root);
        }
        fp4_status st = pt_map(paths[i], index, &s->files[i]);
        s->nfiles = i + 1;
        if (st != FP4_OK) return st;
        pt_file *f = &s->files[i];
        if (!(s->tt[i] = calloc((size_t)f->n + 1, sizeof **s->tt)))
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        for (int t = 0; t < f->n; t++) pt_resolve(f, &f->t[t], &s->tt[i][t], sharded);
    }
    return FP4_OK;
}

static fp4_status pt_list_files(pt_src *s)
{
    int total = 0;
    for (int f = 0; f < s->nfiles; f++) total += s->files[f].n;
    if (!(s->list = calloc((size_t)total + 1, sizeof *s->list)))
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int f = 0; f < s->nfiles; f++)
        for (int t = 0; t < s->files[f].n; t++)
            s->list[s->n++] = (pt_entry){s->files[f].t[t].name, f, t};
    return FP4_OK;
}

static fp4_status pt_open_index(pt_src *s, const char *index)
{
    if (!pt_allow_external && fp4_source_outside_tree(index, s->root))
        return fp4_error(FP4_ERR_INPUT, "%s: resolves outside the checkpoint's directory %s "
                         "(--allow-external reads it)", index, s->root);
    fp4_st_index ix;
    FP4_TRY(fp4_ckpt_index_load(index, &ix, &s->imeta)); /* metadata kept for index_metadata */
    char **paths = NULL;
    pt_entry *all = NULL;
    bool *used = NULL;
    fp4_status st = fp4_ckpt_index_paths(index, &ix, &paths);
    if (st != FP4_OK) goto out;
    st = pt_map_all(s, paths, ix.nshards, index);
    if (st != FP4_OK) goto out;
    int nall = 0;
    for (int f = 0; f < s->nfiles; f++) nall += s->files[f].n;
    all = calloc((size_t)nall + 1, sizeof *all);
    used = calloc((size_t)nall + 1, sizeof *used);
    s->list = calloc((size_t)nall + 1, sizeof *s->list); /* every entry at most once */
    if (!all || !used || !s->list) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    nall = 0;
    for (int f = 0; f < s->nfiles; f++)
        for (int t = 0; t < s->files[f].n; t++) all[nall++] = (pt_entry){s->files[f].t[t].name, f, t};
    qsort(all, (size_t)nall, sizeof *all, cmp_entry);
    for (int i = 0; i < ix.n; i++) {
        pt_entry key = {ix.names[i], ix.shard[i], 0};
        pt_entry *hit = bsearch(&key, all, (size_t)nall, sizeof *all, cmp_name_file);
        if (!hit) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: listed in %s, which does not hold it", index,
                           ix.names[i], s->files[ix.shard[i]].path);
            goto out;
        }
        if ((hit > all && cmp_name_file(hit - 1, hit) == 0) ||
            (hit + 1 < all + nall && cmp_name_file(hit + 1, hit) == 0)) {
            pt_tensor *t = &s->tt[hit->f][hit->t];
            snprintf(t->problem, sizeof t->problem, "the name appears more than once in the "
                     "pickle (a dict key set twice, or keys that join to one name): not read");
            t->base = NULL;
        }
        const int h = (int)(hit - all); /* it and its twins in one pickle: handled above */
        for (int e = h; e >= 0 && cmp_name_file(&all[e], hit) == 0; e--) used[e] = true;
        for (int e = h + 1; e < nall && cmp_name_file(&all[e], hit) == 0; e++) used[e] = true;
        s->list[s->n++] = *hit;
    }
    /* a tensor a shard holds that the index does not list is read too, after the listed ones
     * in file order (transformers loads every tensor of the shards an index names): never
     * left out silently; a name held twice (two shards, the index naming one or none) is
     * ambiguous and refused */
    for (int j = 0; j < nall;) {
        int k = j + 1, o = -1;
        bool listed = used[j];
        while (k < nall && !strcmp(all[k].name, all[j].name)) {
            listed = listed || used[k];
            if (o < 0 && all[k].f != all[j].f) o = k;
            k++;
        }
        if (o >= 0) {
            st = fp4_error(FP4_ERR_INPUT, "%s: tensor %s is held by both %s and %s", index,
                           all[j].name, s->files[all[j].f].path, s->files[all[o].f].path);
            goto out;
        }
        if (k - j > 1 && !listed) { /* unlisted, twice in one pickle: the first an error */
            pt_tensor *t = &s->tt[all[j].f][all[j].t];
            snprintf(t->problem, sizeof t->problem, "the name appears %d times in the pickle (a "
                     "dict key set twice, or keys that join to one name): not read", k - j);
            t->base = NULL;
            for (int m = j + 1; m < k; m++) used[m] = true;
        }
        j = k;
    }
    for (int f = 0; f < s->nfiles; f++)
        for (int t = 0; t < s->files[f].n; t++) {
            pt_entry key = {s->files[f].t[t].name, f, t};
            pt_entry *hit = bsearch(&key, all, (size_t)nall, sizeof *all, cmp_entry);
            if (hit && !used[hit - all]) s->list[s->n++] = *hit;
        }
out:
    free(used);
    for (int i = 0; paths && i < ix.nshards; i++) free(paths[i]);
    free(paths);
    free(all);
    fp4_st_index_free(&ix);
    return st;
}

static bool pt_name_is_file(const char *name) { return name_is_ckpt(name); }

static fp4_status pt_open_dir(pt_src *s, const char *dir)
{
    char *index = NULL, **names = NULL;
    int nn = 0;
    FP4_TRY(fp4_ckpt_dir_scan(dir, ".bin.index.json", pt_name_is_file,
                              ".bin/.pt/.pth file or index", &index, &names, &nn));
    fp4_status st;
    if (index) {
        st = pt_open_index(s, index);
        free(index);
        return st;
    }
    st = pt_map_all(s, names, nn, NULL);
    if (st == FP4_OK) st = pt_list_files(s);
    for (int i = 0; i < nn; i++) free(names[i]);
    free(names);
    return st;
}

static fp4_status pt_open(const char *file, void **impl)
{
    *impl = NULL;
    pt_src *s = calloc(1, sizeof *s);
    if (!s || !(s->file = strdup(file))) {
        free(s);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    fp4_status st;
    struct stat sb;
    s->root = fp4_source_tree(file); /* NULL: the open below says why */
    if (stat(file, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        st = pt_open_dir(s, file);
    } else {
        unsigned char head[4096];
        size_t n = 0;
        struct stat fb;
        const char *why;
        int fd = fp4_open_regular(file, &fb, &why); /* else pt_map below says why */
        if (fd >= 0) {
            ssize_t r;
            while (n < sizeof head && (r = read(fd, head + n, sizeof head - n)) > 0) n += (size_t)r;
            close(fd);
        }
        if (pt_probe_index(head, n)) {
            st = pt_open_index(s, file);
        } else {
            char *one = (char *)file;
            st = pt_map_all(s, &one, 1, NULL);
            if (st == FP4_OK) st = pt_list_files(s);
        }
    }
    if (st == FP4_OK) {
        if (!(s->by_name = malloc(((size_t)s->n + 1) * sizeof *s->by_name))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        } else {
            memcpy(s->by_name, s->list, (size_t)s->n * sizeof *s->by_name);
            qsort(s->by_name, (size_t)s->n, sizeof *s->by_name, cmp_entry);
            pt_refuse_twice(s);
        }
    }
    if (st != FP4_OK) {
        pt_close(s);
        return st;
    }
    *impl = s;
    return FP4_OK;
}

static fp4_status pt_list(void *impl, char ***names, int *n)
{
    pt_src *s = impl;
    *names = calloc((size_t)s->n + 1, sizeof **names);
    if (!*names) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < s->n; i++)
        if (!((*names)[i] = strdup(s->list[i].name))) {
            for (int k = 0; k < i; k++) free((*names)[k]);
            free(*names);
            *names = NULL;
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        }
    *n = s->n;
    return FP4_OK;
}

static const pt_entry *pt_find(const pt_src *s, const char *name)
{
    int lo = 0, hi = s->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(s->by_name[mid].name, name);
        if (c == 0) return &s->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

extern const fp4_source_ops fp4_source_pytorch;

static fp4_status pt_describe(void *impl, const char *name, fp4_tensor_desc *out,
                              fp4_name_kind *kind)
{
    pt_src *s = impl;
    memset(out, 0, sizeof *out);
    const pt_entry *e = pt_find(s, name);
    if (!e) {
        size_t n = strlen(name);
        for (int i = 0; i < s->n; i++) {
            const char *t = s->list[i].name;
            if (n == 0 || (strncmp(t, name, n) == 0 && t[n] &&
                           strchr(fp4_source_pytorch.separators, t[n]))) {
                *kind = FP4_NAME_GROUP;
                return fp4_error(FP4_ERR_INPUT, "%s: %s: is a group, not a dataset", s->file, name);
            }
        }
        *kind = FP4_NAME_NONE;
        return fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor", s->file, name);
    }
    *kind = FP4_NAME_TENSOR;
    const pt_tensor *t = &s->tt[e->f][e->t];
    const fp4_pkl_tensor *p = t->p;
    if (!(out->name = strdup(p->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    out->rank = p->rank < FP4_MAX_RANK ? p->rank : FP4_MAX_RANK;
    int64_t nel = 1;
    for (int i = 0; i < out->rank; i++) {
        out->dims[i] = p->size[i];
        if (nel >= 0 && p->size[i] && nel > INT64_MAX / p->size[i]) nel = -1;
        else if (nel >= 0) nel *= p->size[i];
    }
    out->nelems = nel;
    if (t->k) snprintf(out->dtype, sizeof out->dtype, "%s", fp4_raw_name(t->k));
    else if (!p->storage_type[0]) /* no storage: a key that names no tensor (pickle.h) */
        snprintf(out->dtype, sizeof out->dtype, "unknown");
    else snprintf(out->dtype, sizeof out->dtype, "%s",
                  strcmp(p->storage_type, "BoolStorage") == 0 ? "bool" : p->storage_type);
    snprintf(out->byte_order, sizeof out->byte_order, "%s",
             fp4_raw_size(t->k) > 1 ? (s->files[e->f].big_endian ? "be" : "le") : "");
    fp4_raw k = t->problem[0] ? FP4_RAW_NONE : t->k;
    out->stored = fp4_raw_stored(k);
    out->numeric = t->k != FP4_RAW_NONE;
    out->exact_fp32 = fp4_raw_exact(t->k);
    out->codec_available = true;
    int isz = fp4_raw_size(t->k);
    out->logical_bytes = nel >= 0 && isz && nel <= INT64_MAX / isz ? nel * isz : -1;
    out->stored_bytes = out->logical_bytes;
    out->file_offset = t->base ? (int64_t)t->file_offset : -1;
    snprintf(out->part, sizeof out->part, "%s", t->part);
    snprintf(out->problem, sizeof out->problem, "%s", t->problem);
    if (t->base && p->rank <= FP4_PKL_MAX_RANK) { /* file, first byte, type, order, shape */
        size_t at = (size_t)snprintf(out->view, sizeof out->view, "%d:%llu:%d:%c", e->f,
                                     (unsigned long long)t->file_offset, (int)t->k,
                                     t->fortran ? 'F' : 'C');
        for (int i = 0; i < p->rank && at < sizeof out->view; i++)
            at += (size_t)snprintf(out->view + at, sizeof out->view - at, ":%lld",
                                   (long long)p->size[i]);
        if (at >= sizeof out->view) out->view[0] = 0; /* too long to compare: never shared */
    }
    return FP4_OK;
}

static fp4_status pt_read(void *impl, const fp4_tensor_desc *d, int dim, int64_t start,
                          int64_t count, bool raw, void *buf)
{
    pt_src *s = impl;
    const pt_entry *e = pt_find(s, d->name);
    if (!e) return fp4_error(FP4_ERR_INPUT, "%s: %s: no such tensor", s->file, d->name);
    const pt_tensor *t = &s->tt[e->f][e->t];
    if (t->problem[0] || !t->base)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", s->file, d->name,
                         t->problem[0] ? t->problem : "cannot be read");
    FP4_TRY(fp4_raw_slab_check(s->file, d->name, t->p->rank, t->p->size, dim, start, count));
    if (count == 0 || d->nelems == 0) return FP4_OK;
    /* read from the mapping under io/mapguard.h: a file shrunk meanwhile is this tensor's
     * error, never SIGBUS */
    if (!fp4_raw_slab_mapped(t->base, t->k, s->files[e->f].big_endian, t->p->rank, t->p->size,
                             t->fortran, dim, start, count, raw, buf))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the file shrank while it was read (truncated)",
                         s->files[e->f].path, d->name);
    return FP4_OK;
}

static fp4_status pt_read_raw(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                              int64_t count, void *buf)
{
    return pt_read(impl, t, dim, start, count, true, buf);
}

static fp4_status pt_read_f32(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                              int64_t count, float *buf)
{
    return pt_read(impl, t, dim, start, count, false, buf);
}

static bool pt_is_index(const char *path, const unsigned char *head, size_t n)
{
    (void)path;
    return pt_probe_index(head, n);
}

/* The shards an index names (given, or the one *.bin.index.json of a directory). */
static fp4_status pt_files(const char *path, char ***files, int *n)
{
    return fp4_ckpt_index_files(path, ".bin.index.json", pt_is_index, files, n);
}

static fp4_status pt_index_metadata(void *impl, char ***keys, char ***vals, int *n)
{
    return fp4_ckpt_index_metadata(&((pt_src *)impl)->imeta, keys, vals, n);
}

const fp4_source_ops fp4_source_pytorch = {
    .name = "pytorch",
    .separators = "./",
    .rooted = false,
    .probe = pt_probe,
    .probe_dir = pt_probe_dir,
    .open = pt_open,
    .close = pt_close,
    .list = pt_list,
    .describe = pt_describe,
    .read_raw = pt_read_raw,
    .read_f32 = pt_read_f32,
    .files = pt_files,
    .index_metadata = pt_index_metadata,
    .set_allow_external = pt_set_allow_external,
};
