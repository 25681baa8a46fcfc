/* cmd_ls.c — `fp4diag ls FILE [SELECT...]`: the tensors of a file (any source) with shape, on-disk
 * type, chunks, filters and sizes, as a table or (--json) as JSON. The JSON building sits in
 * one static function (ls_json) so that it can move into report.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cmd/commands.h"
#include "io/quantized.h"
#include "io/source.h"
#include "report/report.h"
#include "base/term.h"
#include "base/version.h"

const char fp4_usage_ls[] =
    "usage: fp4diag ls [--json] [--allow-external] [-q] [-v] FILE [SELECT...]\n"
    "\n"
    "List the datasets of an HDF5 file, a safetensors or PyTorch checkpoint (a file,\n"
    "an index .json or a directory of shards), a GGUF file, an .npy or an .npz: full\n"
    "name, shape, on-disk type (f16, bf16, f32, f64, f8_e4m3, f8_e5m2, i8..u64,\n"
    "float(1,e,m,bias) for other custom floats, GGUF's ggml type names; ' be' marks\n"
    "big-endian), chunk shape, filters, logical size and stored size; for\n"
    "safetensors, PyTorch, GGUF and NumPy files the byte offset and the shard (or\n"
    ".npz member), then the file's metadata (safetensors __metadata__, GGUF\n"
    "key/values) and a sharded checkpoint's index metadata (total_size). A dataset\n"
    "fp4diag cannot read (string, compound, opaque class; a filter not available\n"
    "here; BOOL, F8_E8M0, packed 4/6-bit types, GGUF's q4_0, q8_0, K- and I-quants)\n"
    "is listed with a note saying why. An already-quantized checkpoint (ModelOpt,\n"
    "compressed-tensors, gpt-oss NVFP4/MXFP4, GGUF MXFP4/NVFP4) is listed one row per\n"
    "logical tensor (codes + scales), dtype nvfp4/mxfp4, with its producer.\n"
    "\n"
    "SELECT is a dataset path, a group (every dataset below it) or a glob on the full\n"
    "path ('*' does not cross '/'; in safetensors, PyTorch, GGUF and NumPy names\n"
    "nor '.'): /blocks/0, '/blocks/*/fc1/weight', model.layers.3,\n"
    "'model.layers.*.mlp.*.weight'.\n"
    "Default: every dataset.\n"
    "\n"
    "options:\n"
    "  --json         print JSON instead of the table\n"
    "  --allow-external  read files FILE names outside its directory tree: HDF5\n"
    "                 external links/storage/virtual-dataset sources, safetensors and\n"
    "                 PyTorch shards, directory entries symlinked out\n"
    "                 (regular files only)\n"
    "  -q, --quiet    no table (the exit status says whether FILE and SELECT are\n"
    "                 readable)\n"
    "  -v, --verbose  the table (the default); -vv adds HDF5's own error stack\n"
    "  -h, --help     this text\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 missing file, not HDF5, or no such dataset.\n";

/* "1024x256", "scalar" for rank 0; "-" for no chunks. */
static void ls_shape(char *buf, size_t cap, int rank, const int64_t *dims, const char *none)
{
    if (rank == 0) {
        snprintf(buf, cap, "%s", none);
        return;
    }
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "x" : "", (long long)dims[i]);
}

static void ls_bytes(char *buf, size_t cap, int64_t b)
{
    if (b < 0) {
        snprintf(buf, cap, "?");
        return;
    }
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%lld B", (long long)b);
    else
        snprintf(buf, cap, "%.1f %s", v, unit[u]);
}

static void ls_dtype(char *buf, size_t cap, const fp4_tensor_desc *d)
{
    snprintf(buf, cap, "%s%s", d->dtype, strcmp(d->byte_order, "be") == 0 ? " be" : "");
}

static const char *ls_widening(const fp4_source *src, const fp4_tensor_desc *d)
{
    if (!d->numeric || d->problem[0]) return NULL;
    return fp4_source_widens(src, d) ? "fp4diag" : fp4_source_format(src)->name;
}
static void ls_note(char *buf, size_t cap, const fp4_source *src, const fp4_tensor_desc *d,
                    const fp4_qtensor *q, const fp4_qset *qs)
{
    const char *wd = ls_widening(src, d);
    if (!q && !d->problem[0] && fp4_quant_fp8_role(qs, d->name, buf, cap)) return;
    if (q && d->problem[0])
        snprintf(buf, cap, "%s: %s", fp4_qproducer_name(q->producer), d->problem);
    else if (q)
        snprintf(buf, cap, "%s, %s", fp4_qproducer_name(q->producer), q->layout);
    else if (d->problem[0])
        snprintf(buf, cap, "%s", d->problem);
    else if (wd && strcmp(wd, "fp4diag") != 0)
        snprintf(buf, cap, "converted by %s (a layout fp4diag does not widen: slower)", wd);
    else
        buf[0] = '\0';
}

typedef struct ls_row {
    char shape[160], dtype[64], chunks[160], size[32], stored[32];
    char *name; /* the path, control characters and invalid UTF-8 escaped (owned) */
    char offset[24];
    char note[200];
} ls_row;

static int ls_max(int a, int b) { return a > b ? a : b; }

/* The shard (member) names shortened to what tells them apart, for a table under a width: the
 * leading part they all share up to a '-', '_' or '.', and an extension they all end with, left
 * out ("model-00001-of-00002.safetensors" -> "00001-of-00002"). *pre and *suf are the bytes to
 * leave out; 0 and 0 when that would empty a name or there is nothing to drop. */
static void ls_part_trim(const fp4_tensor_desc *ds, int n, size_t *pre, size_t *suf)
{
    *pre = *suf = 0;
    const char *first = NULL;
    size_t p = 0;
    for (int i = 0; i < n; i++) {
        const char *s = ds[i].part;
        if (!s[0]) continue;
        if (!first) {
            first = s;
            p = strlen(s);
            continue;
        }
        size_t k = 0;
        while (k < p && s[k] == first[k]) k++;
        p = k;
    }
    if (!first) return;
    while (p > 0 && !strchr("-_.", first[p - 1])) p--;
    const char *dot = strrchr(first, '.');
    size_t q = dot ? strlen(dot) : 0;
    for (int i = 0; i < n; i++) {
        const char *s = ds[i].part;
        if (!s[0]) continue;
        size_t l = strlen(s);
        if (q && (l < q || strcmp(s + l - q, dot) != 0)) q = 0;
    }
    for (int i = 0; i < n; i++) {
        size_t l = strlen(ds[i].part);
        if (ds[i].part[0] && l <= p + q) return;
    }
    *pre = p;
    *suf = q;
}

/* `s` left-aligned in `w` columns: elided in the middle to them when `elide`, padded to them
 * when `pad` (the last column is not padded). */
static void ls_cell(FILE *out, const char *s, int w, bool elide, bool pad)
{
    char *e = elide && fp4_term_columns(s) > w ? fp4_term_elide(s, w) : NULL;
    if (e) s = e;
    fputs(s, out);
    for (int c = fp4_term_columns(s); pad && c < w; c++) fputc(' ', out);
    free(e);
}

/* The table. With a width (`cols` > 0, fp4_term_width, SPEC §9 "Terminal output") it fits it:
 * columns with nothing in them (chunks and filters all "-", stored equal to size on every row,
 * one shard for all) are left out, then the offset; then the shard names are shortened to what tells them apart
 * (ls_part_trim); then the name and the shard are elided in the middle (not below 24 and 12
 * columns); then one space between columns, and the name down to 12 columns. A note goes on a line of its own under its row ("    note: ..."), wrapped by the
 * caller. */
static fp4_status ls_table(FILE *out, const fp4_source *src, const fp4_tensor_desc *ds, int n,
                           const fp4_qset *qs, const int *qidx, int cols)
{
    ls_row *rows = calloc((size_t)n + 1, sizeof *rows);
    if (!rows) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    int w[8] = {4, 5, 5, 6, 7, 4, 6, 5}; /* name shape dtype chunks filters size offset part */
    bool notes = false, offsets = false, parts = false;
    bool any_chunks = false, any_filters = false, stored_differs = false;
    for (int i = 0; i < n; i++) {
        const fp4_tensor_desc *d = &ds[i];
        ls_row *r = &rows[i];
        if (d->nelems < 0) /* unknown: a tensor whose header cannot be read */
            snprintf(r->shape, sizeof r->shape, "%s",
                     strcmp(d->dtype, "unknown") ? "(too large)" : "?");
        else
            ls_shape(r->shape, sizeof r->shape, d->rank, d->dims, "scalar");
        ls_dtype(r->dtype, sizeof r->dtype, d);
        ls_shape(r->chunks, sizeof r->chunks, d->chunk_rank, d->chunk, "-");
        ls_bytes(r->size, sizeof r->size, d->logical_bytes);
        ls_bytes(r->stored, sizeof r->stored, d->stored_bytes);
        r->name = fp4_text_escape(d->name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        if (!r->name) {
            for (int k = 0; k < i; k++) free(rows[k].name);
            free(rows);
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        }
        w[0] = ls_max(w[0], fp4_term_columns(r->name));
        w[1] = ls_max(w[1], (int)strlen(r->shape));
        w[2] = ls_max(w[2], (int)strlen(r->dtype));
        w[3] = ls_max(w[3], (int)strlen(r->chunks));
        w[4] = ls_max(w[4], (int)strlen(d->codec[0] ? d->codec : "-"));
        w[5] = ls_max(w[5], (int)strlen(r->size));
        ls_note(r->note, sizeof r->note, src, d, qidx && qidx[i] >= 0 ? &qs->t[qidx[i]] : NULL,
                qs);
        notes = notes || r->note[0];
        offsets = offsets || d->file_offset >= 0;
        parts = parts || d->part[0];
        any_chunks = any_chunks || d->chunk_rank > 0;
        any_filters = any_filters || d->codec[0];
        stored_differs = stored_differs || strcmp(r->size, r->stored) != 0;
        snprintf(r->offset, sizeof r->offset, "%lld", (long long)d->file_offset);
        w[6] = ls_max(w[6], (int)strlen(r->offset));
        w[7] = ls_max(w[7], fp4_term_columns(d->part));
    }
    bool chunks = true, filters = true, stored = true;
    size_t ppre = 0, psuf = 0; /* the shard names shortened (ls_part_trim) */
    int g = 2, ws = 10;         /* the space between columns; the stored column's width */
    bool record = false;
    if (cols > 0) {
        chunks = any_chunks;
        filters = any_filters;
        stored = stored_differs;
        bool one_part = true; /* one shard (member) for every row: the column says nothing */
        for (int i = 1; i < n; i++) one_part = one_part && !strcmp(ds[i].part, ds[0].part);
        if (one_part) parts = false;
        ws = 6;
        for (int i = 0; i < n; i++) ws = ls_max(ws, (int)strlen(rows[i].stored));
#define LS_TOTAL                                                                                 \
    (w[0] + g + w[1] + g + w[2] + (chunks ? g + w[3] : 0) + (filters ? g + w[4] : 0) + g + w[5] + \
     (stored ? g + ws : 0) + (offsets ? g + w[6] : 0) + (parts ? g + w[7] : 0))
        if (LS_TOTAL > cols && offsets) offsets = false;
        if (LS_TOTAL > cols && parts) {
            ls_part_trim(ds, n, &ppre, &psuf);
            w[7] = 5;
            for (int i = 0; i < n; i++)
                if (ds[i].part[0])
                    w[7] = ls_max(w[7], fp4_term_columns(ds[i].part + ppre) - (int)psuf);
        }
        if (LS_TOTAL > cols && w[0] > 24) w[0] = ls_max(24, w[0] - (LS_TOTAL - cols));
        if (LS_TOTAL > cols && parts && w[7] > 12) w[7] = ls_max(12, w[7] - (LS_TOTAL - cols));
        if (LS_TOTAL > cols) g = 1;
        if (LS_TOTAL > cols && w[0] > 12) w[0] = ls_max(12, w[0] - (LS_TOTAL - cols));
        /* narrower still (a width of 40): one record per tensor (SPEC 9) */
        record = LS_TOTAL > cols;
#undef LS_TOTAL
    }
    if (record) {
        for (int i = 0; i < n; i++) {
            const fp4_tensor_desc *d = &ds[i];
            const ls_row *r = &rows[i];
            char *e = fp4_term_columns(r->name) > cols ? fp4_term_elide(r->name, cols) : NULL;
            fprintf(out, "%s\n  shape=%s dtype=%s", e ? e : r->name, r->shape, r->dtype);
            free(e);
            if (chunks) fprintf(out, " chunks=%s", r->chunks);
            if (filters) fprintf(out, " filters=%s", d->codec[0] ? d->codec : "-");
            /* "8.0KiB": one word, so that a wrap never parts the number from its unit */
            const char *num = r->size, *unit = strchr(num, ' ');
            fprintf(out, " size=%.*s%s", unit ? (int)(unit - num) : (int)strlen(num), num,
                    unit ? unit + 1 : "");
            num = r->stored, unit = strchr(num, ' ');
            if (stored)
                fprintf(out, " stored=%.*s%s", unit ? (int)(unit - num) : (int)strlen(num), num,
                        unit ? unit + 1 : "");
            if (parts && d->part[0]) /* shortened to what tells the shards apart */
                fprintf(out, " %s=%.*s",
                        strcmp(fp4_source_format(src)->name, "npy") ? "shard" : "member",
                        (int)(strlen(d->part) - ppre - psuf), d->part + ppre);
            fputc('\n', out);
            if (r->note[0]) fprintf(out, "    note: %s\n", r->note);
        }
        for (int i = 0; i < n; i++) free(rows[i].name);
        free(rows);
        return FP4_OK;
    }
    /* under a width a note goes on its own line below its row: "    note: ..." */
    const bool note_col = notes && cols <= 0;
    const char *sp = g == 2 ? "  " : " ";
    ls_cell(out, "name", w[0], false, true);
    fprintf(out, "%s%-*s%s%-*s", sp, w[1], "shape", sp, w[2], "dtype");
    if (chunks) fprintf(out, "%s%-*s", sp, w[3], "chunks");
    if (filters) fprintf(out, "%s%-*s", sp, w[4], "filters");
    fprintf(out, "%s%*s", sp, w[5], "size");
    if (stored) fprintf(out, "%s%*s", sp, ws, "stored");
    if (offsets) fprintf(out, "%s%*s", sp, w[6], "offset");
    /* an .npz names the archive member holding the tensor; safetensors its shard file */
    const char *part_head = strcmp(fp4_source_format(src)->name, "npy") ? "shard" : "member";
    if (parts) {
        fputs(sp, out);
        ls_cell(out, part_head, w[7], false, note_col);
    }
    fprintf(out, "%s\n", note_col ? "  note" : "");
    for (int i = 0; i < n; i++) {
        const fp4_tensor_desc *d = &ds[i];
        const ls_row *r = &rows[i];
        ls_cell(out, r->name, w[0], cols > 0, true);
        fprintf(out, "%s%-*s%s%-*s", sp, w[1], r->shape, sp, w[2], r->dtype);
        if (chunks) fprintf(out, "%s%-*s", sp, w[3], r->chunks);
        if (filters) fprintf(out, "%s%-*s", sp, w[4], d->codec[0] ? d->codec : "-");
        fprintf(out, "%s%*s", sp, w[5], r->size);
        if (stored) fprintf(out, "%s%*s", sp, ws, r->stored);
        if (offsets) fprintf(out, "%s%*s", sp, w[6], d->file_offset >= 0 ? r->offset : "-");
        if (parts) {
            fputs(sp, out);
            char *pt = d->part[0] ? strndup(d->part + ppre, strlen(d->part) - ppre - psuf)
                                  : NULL;
            ls_cell(out, pt ? pt : d->part[0] ? d->part : "-", w[7], cols > 0, note_col);
            free(pt);
        }
        if (note_col || !r->note[0])
            fprintf(out, "%s%s\n", r->note[0] ? "  " : "", r->note);
        else
            fprintf(out, "\n    note: %s\n", r->note);
    }
    for (int i = 0; i < n; i++) free(rows[i].name);
    free(rows);
    return FP4_OK;
}

static cJSON *ls_json_dims(int rank, const int64_t *dims)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < rank; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)dims[i]));
    return a;
}

/* The JSON document of `ls` (moves to report.c later): {schema, tool, command, file,
 * datasets: [{name, shape, dtype, byte_order, numeric, exact_fp32, chunks, filters,
 * filters_available, logical_bytes, stored_bytes, offset, shard, problem, widening}], metadata: {key:
 * value}, index_metadata: {key: the index's JSON value}}. Sizes of -1 (overflow) are null; offset is null where the tensor is not one plain
 * range of the file (HDF5), shard null for a one-file source. */
static cJSON *ls_json(const char *file, const fp4_source *src, const fp4_tensor_desc *ds, int n,
                      const fp4_qset *qs, const int *qidx, char **mk, char **mv, int nm,
                      char **ik, char **iv, int ni)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "schema", "fp4diag.ls/1");
    cJSON *tool = cJSON_AddObjectToObject(root, "tool");
    if (tool) {
        cJSON_AddStringToObject(tool, "name", FP4DIAG_NAME);
        cJSON_AddStringToObject(tool, "version", FP4DIAG_VERSION);
    }
    cJSON_AddStringToObject(root, "command", "ls");
    cJSON_AddStringToObject(root, "file", file);
    cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
    for (int i = 0; meta && i < nm; i++) cJSON_AddStringToObject(meta, mk[i], mv[i]);
    cJSON *imeta = cJSON_AddObjectToObject(root, "index_metadata");
    for (int i = 0; imeta && i < ni; i++) {
        cJSON *v = cJSON_Parse(iv[i]); /* the index's own JSON value */
        cJSON_AddItemToObject(imeta, ik[i], v ? v : cJSON_CreateString(iv[i]));
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "datasets");
    for (int i = 0; arr && i < n; i++) {
        const fp4_tensor_desc *d = &ds[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "name", d->name);
        if (d->nelems < 0)
            cJSON_AddNullToObject(o, "shape");
        else
            cJSON_AddItemToObject(o, "shape", ls_json_dims(d->rank, d->dims));
        cJSON_AddStringToObject(o, "dtype", d->dtype);
        if (d->byte_order[0])
            cJSON_AddStringToObject(o, "byte_order", d->byte_order);
        else
            cJSON_AddNullToObject(o, "byte_order");
        cJSON_AddBoolToObject(o, "numeric", d->numeric);
        cJSON_AddBoolToObject(o, "exact_fp32", d->exact_fp32);
        if (d->chunk_rank)
            cJSON_AddItemToObject(o, "chunks", ls_json_dims(d->chunk_rank, d->chunk));
        else
            cJSON_AddNullToObject(o, "chunks");
        cJSON *fl = cJSON_AddArrayToObject(o, "filters");
        char tmp[sizeof d->codec];
        memcpy(tmp, d->codec, sizeof tmp);
        for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); fl && tok;
             tok = strtok_r(NULL, ",", &save))
            cJSON_AddItemToArray(fl, cJSON_CreateString(tok));
        cJSON_AddBoolToObject(o, "filters_available", d->codec_available);
        if (d->logical_bytes < 0)
            cJSON_AddNullToObject(o, "logical_bytes");
        else
            cJSON_AddNumberToObject(o, "logical_bytes", (double)d->logical_bytes);
        cJSON_AddNumberToObject(o, "stored_bytes", (double)d->stored_bytes);
        if (d->file_offset >= 0)
            cJSON_AddNumberToObject(o, "offset", (double)d->file_offset);
        else
            cJSON_AddNullToObject(o, "offset");
        if (d->part[0])
            cJSON_AddStringToObject(o, "shard", d->part);
        else
            cJSON_AddNullToObject(o, "shard");
        if (d->problem[0])
            cJSON_AddStringToObject(o, "problem", d->problem);
        else
            cJSON_AddNullToObject(o, "problem");
        const char *wd = ls_widening(src, d);
        if (wd)
            cJSON_AddStringToObject(o, "widening", wd);
        else
            cJSON_AddNullToObject(o, "widening");
        const fp4_qtensor *q = qidx && qidx[i] >= 0 ? &qs->t[qidx[i]] : NULL;
        if (!q) {
            cJSON_AddNullToObject(o, "quant");
            continue;
        }
        cJSON *qo = cJSON_AddObjectToObject(o, "quant");
        if (!qo) break;
        cJSON_AddStringToObject(qo, "format", fp4_qformat_name(q->format));
        cJSON_AddStringToObject(qo, "producer", fp4_qproducer_name(q->producer));
        cJSON_AddStringToObject(qo, "layout", q->layout);
        cJSON_AddNumberToObject(qo, "block", q->block);
        cJSON *mo = cJSON_AddObjectToObject(qo, "members");
        const char *role[4] = {"codes", "block_scales", "tensor_scale", "input_scale"};
        const char *who[4] = {q->packed, q->scale, q->global, q->input_scale};
        for (int k = 0; mo && k < 4; k++) {
            if (who[k])
                cJSON_AddStringToObject(mo, role[k], who[k]);
            else
                cJSON_AddNullToObject(mo, role[k]);
        }
    }
    return root;
}

fp4_status cmd_ls(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"allow-external", no_argument, NULL, 'X'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, allow_external = false;
    int verbosity = 0; /* -q: -1; -v: +1 each (-vv: HDF5 error stack), as for the other commands */
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "qvh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'X': allow_external = true; break;
        case 'q': verbosity = -1; break;
        case 'v': verbosity = verbosity < 0 ? 1 : verbosity + 1; break;
        case 'h': fputs(fp4_usage_ls, stdout); return FP4_OK;
        default:
            return fp4_error(FP4_ERR_USAGE, "unknown option '%s'; see 'fp4diag ls --help'",
                             argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return fp4_error(FP4_ERR_USAGE, "missing FILE; see 'fp4diag ls --help'");
    const char *file = argv[optind];
    const char *const *sel = (const char *const *)argv + optind + 1;
    int nsel = argc - optind - 1;
    FP4_TRY(fp4_select_check(sel, nsel)); /* '' is a usage error, not "every tensor" */

    fp4_source_set_verbose(verbosity > 1);
    fp4_source_set_allow_external(allow_external);
    fp4_source *f = NULL;
    fp4_tensor_desc *ds = NULL;
    int n = 0;
    FP4_TRY(fp4_source_open(file, &f));
    char **mk = NULL, **mv = NULL, **ik = NULL, **iv = NULL;
    int nm = 0, ni = 0;
    fp4_qset qs = {0};
    int *qidx = NULL;
    /* a quantized tensor's members are listed as one row (io/quantized.h), also selected by
     * its logical name */
    fp4_status st = fp4_quant_scan(f, &qs);
    if (st == FP4_OK) {
        const char **pats = NULL;
        st = fp4_quant_patterns(&qs, sel, nsel, &pats);
        if (st == FP4_OK) st = fp4_source_select(f, pats, nsel, &ds, &n);
        free(pats);
    }
    if (st == FP4_OK && (qs.n > 0 || qs.nfp8 > 0)) st = fp4_quant_fold(&qs, ds, &n, &qidx);
    if (st == FP4_OK) st = fp4_source_metadata(f, &mk, &mv, &nm);
    if (st == FP4_OK) st = fp4_source_index_metadata(f, &ik, &iv, &ni);
    if (st == FP4_OK) {
        if (json) {
            cJSON *doc = ls_json(file, f, ds, n, &qs, qidx, mk, mv, nm, ik, iv, ni);
            if (doc) fp4_json_make_valid(doc);
            char *text = doc ? cJSON_Print(doc) : NULL;
            if (text)
                printf("%s\n", text);
            else
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory building JSON");
            cJSON_free(text);
            cJSON_Delete(doc);
        } else if (verbosity >= 0) {
            /* under a width the text goes through fp4_term_write: a long note or metadata value
             * wraps at spaces */
            int cols = fp4_term_width(stdout);
            char *buf = NULL;
            size_t blen = 0;
            FILE *o = cols > 0 ? open_memstream(&buf, &blen) : NULL;
            if (!o) o = stdout;
            st = ls_table(o, f, ds, n, &qs, qidx, cols);
            for (int i = 0; st == FP4_OK && i < nm; i++) {
                char *k = fp4_text_escape(mk[i], FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
                char *v = fp4_text_escape(mv[i], FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
                if (k && v) fprintf(o, "%s  %s: %s\n", i ? "" : "metadata\n", k, v);
                else st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                free(k);
                free(v);
            }
            for (int i = 0; st == FP4_OK && i < ni; i++) {
                cJSON *j = cJSON_Parse(iv[i]); /* a string shown without its quotes */
                const char *raw = cJSON_IsString(j) ? j->valuestring : iv[i];
                char *k = fp4_text_escape(ik[i], FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
                char *v = fp4_text_escape(raw, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
                if (k && v) fprintf(o, "%s  %s: %s\n", i ? "" : "index metadata\n", k, v);
                else st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                free(k);
                free(v);
                cJSON_Delete(j);
            }
            if (o != stdout) {
                if (fclose(o) == 0 && buf) fp4_term_write(stdout, buf, cols);
                free(buf);
            }
        }
    }
    if (st == FP4_OK && (fflush(stdout) != 0 || ferror(stdout)))
        st = fp4_error(FP4_ERR_INPUT, "stdout: write error: %s",
                       errno == EPIPE ? "the reading end of the pipe was closed"
                                      : strerror(errno));
    fp4_source_metadata_free(mk, mv, nm);
    fp4_source_metadata_free(ik, iv, ni);
    fp4_tensor_desc_free_list(ds, n);
    free(qidx);
    fp4_qset_free(&qs);
    fp4_source_close(f);
    return st;
}
