// Lambertian reflection: f = albedo / pi above the surface, nothing below it. Local frame (bsdf_interface.h).
// No parameters of its own: the albedo is the material's colour.
#pragma once

#include "pathtracer/bsdf_interface.h"
#include "pathtracer/geometry.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

struct DiffuseBsdf {
    float3 albedo;

    static constexpr bool kTransmits = false;

    static __forceinline__ __device__ DiffuseBsdf make(const MaterialRecord&, float2, float3 color) {
        return DiffuseBsdf{color};
    }

    __forceinline__ __device__ bool is_delta() const { return false; }

    // f cos = albedo * (cos / pi), which is also the pdf of sample().
    __forceinline__ __device__ BsdfValue eval(float3 wo, float3 wi) const {
        return BsdfValue{albedo, wo.z > 0.0f && wi.z > 0.0f ? wi.z * INV_PI : 0.0f};
    }

    __forceinline__ __device__ float pdf(float3 wo, float3 wi) const {
        return wo.z > 0.0f && wi.z > 0.0f ? wi.z * INV_PI : 0.0f;
    }

    // Cosine-weighted sampling matches f cos up to the albedo, so the weight f cos / pdf is the albedo itself,
    // with no division and no noise from the direction. The sampled z is at least 2^-12 (u1 < 1), never 0.
    __forceinline__ __device__ BsdfSample sample(float3 wo, Pcg32& rng) const {
        const float u1 = rng.uniform();
        const float u2 = rng.uniform();
        const float3 wi = sample_cosine_hemisphere(u1, u2);
        if (!(wo.z > 0.0f)) return no_bsdf_sample(wi);
        return reflection_sample(wi, albedo, wi.z * INV_PI);
    }
};

}  // namespace pt
