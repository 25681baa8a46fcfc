/* widen_f8.c — F8_E4M3 and F8_E5M2 to fp32, exactly (bit constructions, no rounding). */
#include "io/widen_f8.h"

#include <string.h>

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float fp4_f8e4m3_to_f32(uint8_t b)
{
    uint32_t s = (uint32_t)(b & 0x80) << 24, e = (b >> 3) & 15u, m = b & 7u;
    if ((b & 0x7F) == 0x7F) return bits_f32(s | 0x7FC00000u);
    if (e == 0) { /* m * 2^-9, exact in fp32 */
        float v = (float)m * (1.0f / 512.0f);
        return s ? -v : v;
    }
    return bits_f32(s | ((e - 7u + 127u) << 23) | (m << 20));
}

float fp4_f8e5m2_to_f32(uint8_t b)
{
    uint32_t s = (uint32_t)(b & 0x80) << 24, e = (b >> 2) & 31u, m = b & 3u;
    if (e == 31) return bits_f32(s | 0x7F800000u | (m ? 0x00400000u | (m << 21) : 0));
    if (e == 0) { /* m * 2^-16 */
        float v = (float)m * (1.0f / 65536.0f);
        return s ? -v : v;
    }
    return bits_f32(s | ((e - 15u + 127u) << 23) | (m << 21));
}

void fp4_widen_f8e4m3(const uint8_t *src, int64_t n, float *dst)
{
    for (int64_t i = 0; i < n; i++) dst[i] = fp4_f8e4m3_to_f32(src[i]);
}

void fp4_widen_f8e5m2(const uint8_t *src, int64_t n, float *dst)
{
    for (int64_t i = 0; i < n; i++) dst[i] = fp4_f8e5m2_to_f32(src[i]);
}
