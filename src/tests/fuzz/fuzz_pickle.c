/* fuzz_pickle.c — libFuzzer target over the strict torch.save pickle reader (io/pickle.c): the
 * input bytes as a data.pkl. Every tensor it returns must have a name without NUL, a storage
 * key without '/' and a rank it recorded; nothing is ever run, so any crash, leak or read past
 * the input is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fp4_pkl_tensor *t;
    int n;
    if (fp4_pickle_state_dict("fuzz.pkl", data, size, &t, &n) == FP4_OK) {
        for (int i = 0; i < n; i++) {
            if (!t[i].name || !t[i].storage_key || strchr(t[i].storage_key, '/') ||
                t[i].rank < 0 || t[i].offset < 0 || t[i].storage_numel < 0)
                abort();
            for (int d = 0; d < t[i].rank && d < FP4_PKL_MAX_RANK; d++)
                if (t[i].size[d] < 0 || t[i].stride[d] < 0) abort();
        }
        fp4_pkl_free(t, n);
    }
    return 0;
}
