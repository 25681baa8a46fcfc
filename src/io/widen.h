/* io/widen.h — stored words -> fp32 in our own code: IEEE f16, bf16, f32, f64 and the integer
 * classes, in either byte order, giving exactly the bits HDF5's own conversion to
 * H5T_NATIVE_FLOAT gives (NaN included: sign kept, every mantissa bit set, as HDF5 writes it)
 * (SPEC §8, reading). On the hot path of every read: loops the compiler vectorises, f16 through
 * F16C when the CPU has it. */
#ifndef FP4_IO_WIDEN_H
#define FP4_IO_WIDEN_H

#include <stdbool.h>
#include <stddef.h>

#include "io/source.h"

/* Whether fp4_widen handles `s` (every fp4_stored but FP4_STORED_OTHER). */
bool fp4_widen_supported(fp4_stored s);

/* Widen n words of type s at src (any alignment; swap: their byte order is the opposite of
 * the host's) into dst[0..n). src and dst must not overlap. Conversions: f16 and bf16 exact;
 * f64 rounded to nearest even, beyond ±FLT_MAX ±inf (HDF5's rule: also the values a cast would
 * round down to FLT_MAX); integers rounded to nearest even. Returns false (nothing written)
 * for FP4_STORED_OTHER. */
bool fp4_widen(fp4_stored s, bool swap, const void *src, float *dst, size_t n);

/* The same in place: buf holds n floats, and the n stored words (n * fp4_stored_size(s)
 * bytes, at most 4 each) were read into its last bytes, at (char *)buf + n * (4 - size).
 * Words of 8 bytes do not fit: false, nothing written. */
bool fp4_widen_inplace(fp4_stored s, bool swap, float *buf, size_t n);

/* Reverse the bytes of each of the nwords words of es bytes at p, in place (any alignment):
 * stored words of the other byte order made host-order (SPEC §8). es 1: nothing to do. */
void fp4_swap_words(void *p, size_t nwords, size_t es);

/* One IEEE half (host-order bits) as fp32 bits, the portable exact path (tests, fallbacks). */
unsigned fp4_f16_bits_to_f32_bits(unsigned short h);

/* Whether this CPU takes the F16C path for f16 (for -v and the benchmarks). */
bool fp4_widen_f16c(void);

#endif
