/* io/source_reg.c — the registry of tensor sources: the only file that names the formats.
 * A file is read as the first format whose probe recognises its first bytes; HDF5, last, is
 * the fallback (its open says "not an " FP4_INPUT_FORMATS " file" for anything it cannot open). */
#include "io/source.h"

extern const fp4_source_ops fp4_source_pytorch;
extern const fp4_source_ops fp4_source_safetensors;
extern const fp4_source_ops fp4_source_npy;
extern const fp4_source_ops fp4_source_gguf;
extern const fp4_source_ops fp4_source_hdf5;

const fp4_source_ops *const fp4_source_table[] = {
    /* further formats here, each before HDF5 */
    &fp4_source_pytorch, /* before safetensors (its index) and npy (a zip) */
    &fp4_source_safetensors,
    &fp4_source_npy,
    &fp4_source_gguf,
    &fp4_source_hdf5,
};

const int fp4_source_count = (int)(sizeof fp4_source_table / sizeof fp4_source_table[0]);
