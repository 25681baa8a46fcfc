/* widen_f8.h — exact widening of the 8-bit float types safetensors stores (F8_E4M3, the
 * "fn" variant: no infinities, NaN only at S.1111.111; F8_E5M2: IEEE-like, the upper byte of
 * an IEEE half) to fp32. Every F8 value is exactly representable in fp32. */
#ifndef FP4_WIDEN_F8_H
#define FP4_WIDEN_F8_H

#include <stdint.h>

/* One byte -> fp32. E4M3: bias 7, subnormals m * 2^-9, max 448, 0x7F/0xFF NaN. E5M2: bias 15,
 * subnormals m * 2^-16, max 57344, 0x7C/0xFC infinities, 0x7D-0x7F/0xFD-0xFF NaN. */
float fp4_f8e4m3_to_f32(uint8_t b);
float fp4_f8e5m2_to_f32(uint8_t b);

/* Widen n bytes at src into dst (n floats); src needs no alignment. */
void fp4_widen_f8e4m3(const uint8_t *src, int64_t n, float *dst);
void fp4_widen_f8e5m2(const uint8_t *src, int64_t n, float *dst);

#endif
