/* fuzz_stsource.c — libFuzzer target over the safetensors and NumPy sources as a run reads them
 * (io/safetensors.c, io/npy.c), not only their header parsers (fuzz_tsparse): the input bytes
 * as (1) a model.safetensors.index.json beside two fixed shards, opened named and as its
 * directory (a shard it names that is missing fails only its tensors); (2) an .npz archive
 * (stored and deflated members: CRC-32 checks, inflating, member headers, sizes against the
 * directory); (3) a .safetensors file, alone and (4) beside the two shards in a directory
 * without an index (a file cut inside its header: one entry "[FILE]"). Every tensor is
 * selected, described and read in slabs (fp32 and stored words into buffers of their exact
 * size), plus the -o check's list of input files. Nothing may crash, leak, hang or read
 * outside a buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzzutil.h"
#include "io/source.h"

#define FZ_MAX_READ_ELEMS ((int64_t)1 << 20) /* elements read per tensor */
#define FZ_SLAB_ELEMS ((int64_t)1 << 14)     /* target elements per slab */

static void fz_read(fp4_source *src, const fp4_tensor_desc *d)
{
    if (d->problem[0] || !d->numeric || d->nelems <= 0) {
        float one;
        (void)fp4_source_read_f32(src, d, 0, 0, d->rank ? 1 : 1, &one); /* refused, not read */
        return;
    }
    const int64_t extent = d->rank == 0 ? 1 : d->dims[0];
    const int64_t row = extent ? d->nelems / extent : 0;
    if (row <= 0 || row > FZ_SLAB_ELEMS * 16) return;
    int64_t per = FZ_SLAB_ELEMS / row > 0 ? FZ_SLAB_ELEMS / row : 1;
    if (per > extent) per = extent;
    float *buf = malloc((size_t)(per * row) * sizeof *buf);
    if (!buf) return;
    int64_t done = 0;
    for (int64_t s = 0; s < extent && done < FZ_MAX_READ_ELEMS; s += per) {
        const int64_t c = extent - s < per ? extent - s : per;
        if (fp4_source_read_f32(src, d, 0, s, c, buf) != FP4_OK) break;
        const int w = fp4_stored_size(d->stored);
        if (w > 0) { /* the stored words into a buffer of exactly their size */
            unsigned char *exact = malloc((size_t)(c * row * w));
            if (exact) (void)fp4_source_read_raw(src, d, 0, s, c, exact);
            free(exact);
        }
        done += c * row;
    }
    if (d->rank >= 2 && d->dims[1] > 0 && extent * 1 <= FZ_SLAB_ELEMS) /* along dimension 1 */
        (void)fp4_source_read_f32(src, d, 1, 0, 1, buf);
    (void)fp4_source_read_f32(src, d, 0, extent, 1, buf); /* past the end: a usage error */
    free(buf);
}

static void fz_source(const char *path)
{
    char **files = NULL;
    int nf = 0;
    if (fp4_source_input_files(path, &files, &nf) == FP4_OK) fp4_source_files_free(files, nf);
    fp4_source *src = NULL;
    if (fp4_source_open(path, &src) != FP4_OK) return;
    fp4_tensor_desc *ds = NULL;
    int n = 0;
    if (fp4_source_select(src, NULL, 0, &ds, &n) == FP4_OK) {
        for (int i = 0; i < n; i++) fz_read(src, &ds[i]);
        fp4_tensor_desc_free_list(ds, n);
    }
    char **k = NULL, **v = NULL;
    int nm = 0;
    if (fp4_source_index_metadata(src, &k, &v, &nm) == FP4_OK) fp4_source_metadata_free(k, v, nm);
    if (fp4_source_metadata(src, &k, &v, &nm) == FP4_OK) fp4_source_metadata_free(k, v, nm);
    fp4_source_close(src);
}

/* A small valid shard holding tensors `a` (4x4 F32) and `b` (8 BF16). */
static void fz_shard(const char *name, char a)
{
    char hdr[256];
    int n = snprintf(hdr, sizeof hdr,
                     "{\"%c\":{\"dtype\":\"F32\",\"shape\":[4,4],\"data_offsets\":[0,64]},"
                     "\"%c2\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[64,80]}}",
                     a, a);
    while (n % 8) hdr[n++] = ' ';
    uint8_t img[8 + 256 + 80];
    for (int i = 0; i < 8; i++) img[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(img + 8, hdr, (size_t)n);
    for (int i = 0; i < 80; i++) img[8 + n + i] = (uint8_t)(i * 7 + 1);
    fz_write_file(name, img, (size_t)(8 + n + 80));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int shards;
    if (!shards) { /* beside the index: names an index may use */
        fz_shard("s1.safetensors", 'a');
        fz_shard("s2.safetensors", 'b');
        shards = 1;
    }
    /* (1) the bytes as an index, named and as its directory */
    fz_source(fz_write_file("model.safetensors.index.json", data, size));
    fz_source(fz_scratch());
    char p[4200];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", fz_scratch());
    remove(p);
    /* (2) as an .npz (and a lone .npy when it is one), (3) as a .safetensors file */
    fz_source(fz_write_file("input.npz", data, size));
    snprintf(p, sizeof p, "%s/input.npz", fz_scratch());
    remove(p);
    fz_source(fz_write_file("input.safetensors", data, size));
    fz_source(fz_scratch()); /* (4) s1, s2 and it, no index */
    snprintf(p, sizeof p, "%s/input.safetensors", fz_scratch());
    remove(p);
    return 0;
}
