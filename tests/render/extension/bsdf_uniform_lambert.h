// A test family outside the package: Lambertian reflection scaled by a parameter of its own, `gain`, and
// sampled uniformly over the hemisphere (pdf 1 / (2 pi)) rather than by the cosine, so that its weight is not
// its albedo. Loaded by tests/render/extension/descriptors.py through the public registry only.
#pragma once

#include "pathtracer/bsdf_interface.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

struct UniformLambertBsdf {
    float3 albedo;  // colour * gain

    static constexpr bool kTransmits = false;

    static __forceinline__ __device__ UniformLambertBsdf make(const MaterialRecord& m, float2, float3 color) {
        return UniformLambertBsdf{color * m.params[0]};
    }

    __forceinline__ __device__ bool is_delta() const { return false; }

    __forceinline__ __device__ BsdfValue eval(float3 wo, float3 wi) const {
        return BsdfValue{albedo, wo.z > 0.0f && wi.z > 0.0f ? wi.z * (1.0f / 3.14159265358979f) : 0.0f};
    }

    __forceinline__ __device__ float pdf(float3 wo, float3 wi) const {
        return wo.z > 0.0f && wi.z > 0.0f ? 1.0f / (2.0f * 3.14159265358979f) : 0.0f;
    }

    // Uniform on the hemisphere: z = u1, azimuth 2 pi u2; weight f cos / pdf = albedo * 2 z.
    __forceinline__ __device__ BsdfSample sample(float3 wo, Pcg32& rng) const {
        const float z = rng.uniform();
        const float phi = 2.0f * 3.14159265358979f * rng.uniform();
        const float r = sqrtf(fmaxf(0.0f, 1.0f - z * z));
        const float3 wi = make_float3(r * cosf(phi), r * sinf(phi), z);
        if (!(wo.z > 0.0f) || !(z > 0.0f)) return no_bsdf_sample(wi);
        return reflection_sample(wi, albedo * (2.0f * z), 1.0f / (2.0f * 3.14159265358979f));
    }
};

}  // namespace pt
