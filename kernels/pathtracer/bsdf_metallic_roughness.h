// The glTF 2.0 metallic-roughness BRDF, as the specification's appendix B defines it (its "implementation"
// form), with V = wo and L = wi in the local frame (bsdf_interface.h); one-sided, reflection only:
//
//   c_diff = mix(base, 0, metallic)      F0 = mix(0.04, base, metallic)      F = F0 + (1 - F0) (1 - |V.H|)^5
//   f = (1 - F) c_diff / pi + F D G / (4 |N.L| |N.V|)
//
// with the GGX D of alpha = roughness^2 (the caller squares) and the separable Smith G = G1(L) G1(V) that the
// appendix writes out (not the height-correlated form some viewers use).
//
// Energy: the model weights the diffuse term by 1 - F of each microfacet, not by what the specular lobe takes
// in total, and its directional albedo exceeds 1 at grazing views. For base colour 1 and metallic 0 it is 1.05-1.44
// at cos theta_o = 0.1 (roughness 0.6-0.2) and ~1.03 at 0.5; at normal incidence, and for metallic >= 0.5, it
// stays below 1 (tests/render/test_bsdf_host.py pins both). A white furnace only holds where it stays below 1.
#pragma once

#include "pathtracer/bsdf_interface.h"
#include "pathtracer/bsdf_mixture.h"
#include "pathtracer/fresnel.h"
#include "pathtracer/geometry.h"
#include "pathtracer/microfacet.h"
#include "pathtracer/records.h"
#include "pathtracer/texture.h"
#include "pathtracer/vec_math.h"

namespace pt {

// The smallest alpha used: 1e-3 (roughness ~0.03). glTF allows roughness 0, a mirror, which this model has no
// delta lobe for; below about 1e-3 the lobe is narrower than float directions resolve near the peak, and light
// sampling could never hit it anyway. The highlight of a smoother surface is that of alpha = 1e-3.
constexpr float METALLIC_ROUGHNESS_MIN_ALPHA = 1e-3f;

// Parameters: params[0] roughness, [1] metallic (glTF's factors); the roughness texture's green channel scales
// the roughness and its blue the metalness; the base colour is the material's colour.
struct MetallicRoughnessBsdf {
    float3 base;     // base colour (linear)
    float metallic;  // 0 dielectric .. 1 metal
    float alpha;     // roughness^2

    static constexpr bool kTransmits = false;

    static __forceinline__ __device__ MetallicRoughnessBsdf make(const MaterialRecord& m, float2 uv, float3 color) {
        // glTF: green is roughness and blue metalness, each multiplying its factor; alpha = roughness^2.
        const float4 mr = sample_texture(m.roughness_texture, uv, make_float4(1.0f, 1.0f, 1.0f, 1.0f));
        const float roughness = m.params[0] * mr.y;
        MetallicRoughnessBsdf b;
        b.base = color;
        b.metallic = m.params[1] * mr.z;
        b.alpha = roughness * roughness;
        return b;
    }

    __forceinline__ __device__ bool is_delta() const { return false; }

    __forceinline__ __device__ float3 f0() const {
        return make_float3(0.04f + (base.x - 0.04f) * metallic, 0.04f + (base.y - 0.04f) * metallic,
                           0.04f + (base.z - 0.04f) * metallic);
    }

    __forceinline__ __device__ float3 c_diff() const { return base * (1.0f - metallic); }

    // The probability of sampling the specular lobe: an estimate of its share of the reflected energy, from the
    // Fresnel term at wo's angle to the normal (mean over channels) against the diffuse albedo under it. A metal
    // (c_diff = 0) samples only the specular lobe. Any choice in [0, 1] leaves sampling unbiased; this one keeps
    // the weight of a specular direction, about F / p, bounded by 1 + mean(c_diff).
    __forceinline__ __device__ float specular_probability(float cos_o) const {
        const float3 f = fresnel_schlick(f0(), cos_o);
        const float3 c = c_diff();
        const float s = (f.x + f.y + f.z) * (1.0f / 3.0f);
        const float d = (c.x + c.y + c.z) * (1.0f / 3.0f) * (1.0f - s);
        return s + d > 0.0f ? s / (s + d) : 1.0f;
    }

    // f cos and the pdf of sample() together.
    __forceinline__ __device__ float3 eval_pdf(float3 wo, float3 wi, float& pdf) const {
        pdf = 0.0f;
        if (!(wo.z > 0.0f) || !(wi.z > 0.0f)) return make_float3(0.0f, 0.0f, 0.0f);
        const Ggx ggx{fmaxf(alpha, METALLIC_ROUGHNESS_MIN_ALPHA)};
        const float3 h = normalize(wo + wi);
        const float cos_oh = dot(wo, h);
        const float d_over_cos = cos_oh > 0.0f ? ggx.D(h) * ggx.g1_over_cos(wo) : 0.0f;  // D G1(V) / |N.V|
        const float specular = d_over_cos * ggx.G1(wi, h) * 0.25f;                      // D G |N.L| / (4 |N.L| |N.V|)
        const float3 F = fresnel_schlick(f0(), fabsf(cos_oh));
        const float3 c = c_diff();
        const float lambert = wi.z * INV_PI;
        const float p = specular_probability(wo.z);
        pdf = mixture_pdf(p, d_over_cos, wi, h);
        return make_float3((1.0f - F.x) * c.x * lambert + F.x * specular, (1.0f - F.y) * c.y * lambert + F.y * specular,
                           (1.0f - F.z) * c.z * lambert + F.z * specular);
    }

    __forceinline__ __device__ BsdfValue eval(float3 wo, float3 wi) const {
        float pdf;
        return BsdfValue{eval_pdf(wo, wi, pdf), 1.0f};
    }

    // A mixture of visible-normal sampling of the specular lobe and cosine sampling of the diffuse one.
    __forceinline__ __device__ float pdf(float3 wo, float3 wi) const {
        float pdf;
        eval_pdf(wo, wi, pdf);
        return pdf;
    }

    // One lobe chosen with specular_probability; the weight is f cos / pdf of the mixture.
    __forceinline__ __device__ BsdfSample sample(float3 wo, Pcg32& rng) const {
        const float u_lobe = rng.uniform();
        const float u1 = rng.uniform();
        const float u2 = rng.uniform();
        if (!(wo.z > 0.0f)) return no_bsdf_sample(make_float3(-wo.x, -wo.y, wo.z));
        const Ggx ggx{fmaxf(alpha, METALLIC_ROUGHNESS_MIN_ALPHA)};
        return mixture_sample(*this, wo, mixture_direction(wo, ggx, u_lobe < specular_probability(wo.z), u1, u2));
    }
};

}  // namespace pt
