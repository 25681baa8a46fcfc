/* fuzz_pickle.c — libFuzzer target over the strict torch.save pickle reader (io/pickle.c): the
 * input bytes as a data.pkl. Every entry it returns must keep the key rules (io/pickle.h): a
 * name that is valid UTF-8 without a NUL or control character (C0, DEL, C1); a storage key (it names the
 * zip member data/KEY) of [A-Za-z0-9_.-] only, never "..", empty exactly for an entry with a
 * problem; sizes and element count non-negative, and strides and offset too unless the entry
 * has a problem (a negative stride or offset is that view's problem, not the file's). Nothing is
 * ever run, so any crash, leak or read past the input is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/pickle.h"
#include "io/st_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fp4_pkl_tensor *t;
    int n;
    if (fp4_pickle_state_dict("fuzz.pkl", data, size, &t, &n) == FP4_OK) {
        for (int i = 0; i < n; i++) {
            const bool problem = t[i].problem[0] != 0;
            if (!t[i].name || !t[i].storage_key || t[i].rank < 0 ||
                (t[i].offset < 0 && !problem) || t[i].storage_numel < 0)
                abort();
            const char *k = t[i].storage_key, *nm = t[i].name;
            if (!fp4_utf8_valid((const uint8_t *)nm, strlen(nm))) abort();
            for (const unsigned char *c = (const unsigned char *)nm; *c; c++)
                if (*c < 0x20 || *c == 0x7f || (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f))
                    abort(); /* C0, DEL and C1 controls are escaped */
            if (strstr(k, "..") || (!*k && !t[i].problem[0])) abort();
            for (const char *c = k; *c; c++)
                if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                      (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-'))
                    abort();
            for (int d = 0; d < t[i].rank && d < FP4_PKL_MAX_RANK; d++)
                if (t[i].size[d] < 0 || (t[i].stride[d] < 0 && !problem)) abort();
        }
        fp4_pkl_free(t, n);
    }
    return 0;
}
