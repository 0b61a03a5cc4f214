// Texture lookups: a material's texture at a surface point's UV.
//
// Textures are CUDA texture objects over CUDA arrays, so wrapping (repeat, clamp, mirror), bilinear filtering
// and the sRGB decoding of 8-bit colour images happen in the texture unit; every lookup returns linear values
// as float4. The UV is first moved by the slot's affine transform (KHR_texture_transform). There is no
// mip-mapping: a texture seen from far away is point-sampled by the path's jittered rays, which converges to
// the filtered result as samples accumulate (aliasing shows only at low sample counts).
#pragma once

#include "pathtracer/features.h"
#include "pathtracer/records.h"

namespace pt {

// Compiled out (false) in a program for a scene without textures (features.h).
__forceinline__ __device__ bool has_texture(const TextureSlot& slot) { return kTextures && slot.texture != 0ull; }

// The texel of `slot` at `uv` (linear rgba), or `fallback` when the slot is empty.
__forceinline__ __device__ float4 sample_texture(const TextureSlot& slot, float2 uv, float4 fallback) {
    if (!has_texture(slot)) return fallback;
    const float u = slot.uv[0] * uv.x + slot.uv[1] * uv.y + slot.uv[2];
    const float v = slot.uv[3] * uv.x + slot.uv[4] * uv.y + slot.uv[5];
    return tex2D<float4>(slot.texture, u, v);
}

}  // namespace pt
