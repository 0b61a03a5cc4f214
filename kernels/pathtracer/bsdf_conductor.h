// A metal: smooth (a mirror) or rough (GGX microfacets), its colour from the conductor Fresnel reflectance of a
// complex IOR eta + i k per RGB channel. The models of the reference renderer's `conductor` and `roughconductor`
// (distribution "ggx", sample_visible true), one-sided: reflection above the surface only. Local frame
// (bsdf_interface.h). Parameters: params[0..2] eta, [3..5] k (relative to the exterior), [6] alpha; the
// specular tint is the material's colour.
#pragma once

#include "pathtracer/bsdf_interface.h"
#include "pathtracer/fresnel.h"
#include "pathtracer/microfacet.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

struct ConductorBsdf {
    float3 eta;       // real part of the IOR of the metal relative to the outside medium, per channel
    float3 k;         // its imaginary part (absorption)
    float3 specular;  // a tint on the reflectance (1 for a physical metal)
    float alpha;      // GGX roughness; 0 is a smooth mirror (a delta lobe), other values are at least 1e-4

    static constexpr bool kTransmits = false;

    static __forceinline__ __device__ ConductorBsdf make(const MaterialRecord& m, float2, float3 color) {
        ConductorBsdf b;
        b.eta = make_float3(m.params[0], m.params[1], m.params[2]);
        b.k = make_float3(m.params[3], m.params[4], m.params[5]);
        b.specular = color;
        b.alpha = m.params[6];
        return b;
    }

    __forceinline__ __device__ bool is_delta() const { return alpha == 0.0f; }

    // Rough: f cos = specular F(wo.h) D(h) G1(wo, h) G1(wi, h) / (4 wo.z), h the half vector. The colour is
    // specular * F and the scale the microfacet term; a mirror has no value for light sampling to find.
    __forceinline__ __device__ BsdfValue eval(float3 wo, float3 wi) const {
        if (alpha == 0.0f || !(wo.z > 0.0f) || !(wi.z > 0.0f)) return BsdfValue{make_float3(0.0f, 0.0f, 0.0f), 0.0f};
        const Ggx ggx = make_ggx(alpha);
        const float3 h = normalize(wo + wi);
        const float scale = ggx.D(h) * ggx.g1_over_cos(wo) * ggx.G1(wi, h) * 0.25f;
        return BsdfValue{specular * fresnel_conductor(dot(wo, h), eta, k), scale};
    }

    // Visible-normal sampling of h, mapped to wi by the mirror (Jacobian 1 / (4 wo.h)):
    // D_wo(h) / (4 wo.h) = D(h) G1(wo, h) / (4 wo.z).
    __forceinline__ __device__ float pdf(float3 wo, float3 wi) const {
        if (alpha == 0.0f || !(wo.z > 0.0f) || !(wi.z > 0.0f)) return 0.0f;
        const Ggx ggx = make_ggx(alpha);
        const float3 h = normalize(wo + wi);
        return dot(wo, h) > 0.0f && dot(wi, h) > 0.0f ? ggx.D(h) * ggx.g1_over_cos(wo) * 0.25f : 0.0f;
    }

    // Smooth: the mirror direction with weight specular * F(cos). Rough: a visible normal m, wi its mirror image
    // of wo; f cos / pdf reduces to specular F(wo.m) G1(wi, m), 0 when wi is below the surface.
    __forceinline__ __device__ BsdfSample sample(float3 wo, Pcg32& rng) const {
        const float u1 = rng.uniform();
        const float u2 = rng.uniform();
        if (alpha == 0.0f) {
            const float3 wi = make_float3(-wo.x, -wo.y, wo.z);
            if (!(wo.z > 0.0f)) return no_bsdf_sample(wi);
            return reflection_sample(wi, specular * fresnel_conductor(wo.z, eta, k), 1.0f, true);
        }
        if (!(wo.z > 0.0f)) return no_bsdf_sample(make_float3(-wo.x, -wo.y, wo.z));
        const Ggx ggx = make_ggx(alpha);
        const float3 m = ggx.sample_visible(wo, u1, u2);
        const float3 wi = microfacet_reflect(wo, m);
        const float pdf = ggx.D(m) * ggx.g1_over_cos(wo) * 0.25f;
        const float g1 = ggx.G1(wi, m);
        if (!(pdf > 0.0f) || !(wi.z > 0.0f) || !(g1 > 0.0f)) return no_bsdf_sample(wi);
        return reflection_sample(wi, specular * fresnel_conductor(dot(wo, m), eta, k) * g1, pdf);
    }
};

}  // namespace pt
