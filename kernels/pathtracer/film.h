// How samples become pixels: which samples are kept, and the 8-bit sRGB encoding of the running mean.
#pragma once

namespace pt {

// False for NaN and +-Inf (all exponent bits set), tested on the bits as an integer.
__forceinline__ __device__ bool is_finite(float x) { return (__float_as_uint(x) & 0x7F800000u) != 0x7F800000u; }

// sRGB transfer function of a linear value, clamped to [0, 1], as an 8-bit code. The host's
// optixasync.render.tonemap_srgb computes the same curve, within one code.
__forceinline__ __device__ unsigned char srgb8(float linear) {
    const float c = fminf(fmaxf(linear, 0.0f), 1.0f);  // fmaxf(NaN, 0) = 0
    const float s = c <= 0.0031308f ? 12.92f * c : 1.055f * __powf(c, 1.0f / 2.4f) - 0.055f;
    return static_cast<unsigned char>(fminf(fmaxf(s, 0.0f), 1.0f) * 255.0f + 0.5f);
}

}  // namespace pt
