// Reflection as a mixture of two lobes: a GGX specular lobe (a visible normal sampled, wo mirrored about it)
// chosen with probability p, and a Lambertian lobe (cosine sampled) otherwise. The glTF metallic-roughness and
// the rough plastic families both reflect this way; they differ in f and in how they choose p.
#pragma once

#include "pathtracer/bsdf_interface.h"
#include "pathtracer/geometry.h"
#include "pathtracer/microfacet.h"
#include "pathtracer/vec_math.h"

namespace pt {

// The mixture's pdf of wi, from the GGX lobe's D G1(wo) / wo.z at the half vector h (0 when wo.h <= 0): the
// visible-normal density mapped through the mirror, valid where wi is on h's side, and the cosine density.
__forceinline__ __device__ float mixture_pdf(float p, float d_over_cos, float3 wi, float3 h) {
    return p * (dot(wi, h) > 0.0f ? d_over_cos * 0.25f : 0.0f) + (1.0f - p) * (wi.z * INV_PI);
}

// A direction of one lobe, the specular one or the Lambertian one, from two uniforms.
__forceinline__ __device__ float3 mixture_direction(float3 wo, const Ggx& ggx, bool specular, float u1, float u2) {
    return specular ? microfacet_reflect(wo, ggx.sample_visible(wo, u1, u2)) : sample_cosine_hemisphere(u1, u2);
}

// The sample at wi of a family whose eval_pdf(wo, wi, pdf) gives f cos and the mixture's pdf: weighted by
// f cos / pdf, so a direction either lobe could have produced is weighted the same whichever did.
template <typename Family>
__forceinline__ __device__ BsdfSample mixture_sample(const Family& family, float3 wo, float3 wi) {
    float pdf;
    const float3 f = family.eval_pdf(wo, wi, pdf);
    if (!(pdf > 0.0f)) return no_bsdf_sample(wi);
    return reflection_sample(wi, f * (1.0f / pdf), pdf);
}

}  // namespace pt
