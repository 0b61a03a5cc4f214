// Lambertian reflection: f = albedo / pi on the side of n, nothing below it.
#pragma once

#include "pathtracer/bsdf_interface.h"
#include "pathtracer/geometry.h"
#include "pathtracer/vec_math.h"

namespace pt {

struct DiffuseBsdf {
    float3 albedo;

    // f cos = albedo * (cos / pi), which is also the pdf of sample().
    __forceinline__ __device__ BsdfValue eval(float3 n, float3 /*wo*/, float3 wi) const {
        return BsdfValue{albedo, dot(n, wi) * INV_PI};
    }

    __forceinline__ __device__ float pdf(float3 n, float3 /*wo*/, float3 wi) const { return dot(n, wi) * INV_PI; }

    // Cosine-weighted sampling matches f cos up to the albedo, so the weight f cos / pdf is the albedo itself,
    // with no division and no noise from the direction.
    __forceinline__ __device__ BsdfSample sample(float3 n, float3 /*wo*/, Pcg32& rng) const {
        const float u1 = rng.uniform();
        const float u2 = rng.uniform();
        const float3 local = sample_cosine_hemisphere(u1, u2);
        BsdfSample s;
        s.wi = frame_from_normal(n).to_world(local);
        s.weight = albedo;
        s.pdf = local.z * INV_PI;
        s.delta = false;
        return s;
    }
};

}  // namespace pt
