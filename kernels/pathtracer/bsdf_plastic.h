// Rough plastic: a Lambertian base under a GGX rough dielectric coating, the model of the reference renderer's
// `roughplastic` (distribution "ggx", sample_visible true, specular_reflectance 1, nonlinear false). One-sided:
// reflection above the surface only. Local frame (bsdf_interface.h).
//
//   f cos = F(wo.h) D G / (4 wo.z)                                                 the coating's reflection
//         + diffuse / (1 - internal_reflectance) T(wo.z) T(wi.z) wi.z / (pi eta^2)  light through the coating
//
// T is the coating's external transmittance (how much light from a direction gets through a rough interface,
// single scattering), internal_reflectance how much diffuse light from the base the coating sends back down
// (summed as a geometric series), and 1 / eta^2 the radiance scaling of light leaving the denser medium. These
// are integrals of the microfacet model that depend on (eta, alpha) only: optixasync/render/_plastic.py
// computes them on the host (plastic_constants), with the reference renderer's own quadrature.
//
// The transmittance table stays in global memory and the struct points at it. It is indexed by a cosine known
// only at run time, and an array copied into the BSDF (a local variable, a member of the dispatcher's union)
// and indexed so goes to local memory: measured with NVRTC, a 64-entry copy did.
#pragma once

#include "pathtracer/bsdf_interface.h"
#include "pathtracer/bsdf_mixture.h"
#include "pathtracer/fresnel.h"
#include "pathtracer/geometry.h"
#include "pathtracer/microfacet.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

// Entries of the transmittance table, at cos theta = i / (PLASTIC_TABLE_SIZE - 1): the reference renderer's
// resolution, whose table (and linear interpolation) this reproduces exactly; 16 or 48 entries would be off by up
// to 7% or 0.8% near grazing angles at alpha = 0.05. PLASTIC_TABLE_SIZE in optixasync/render/_plastic.py is the
// same number; change both together.
constexpr unsigned int PLASTIC_TABLE_SIZE = 64u;

// Parameters: params[0] eta, [1] alpha, [2] the internal reflectance; the material's table is the transmittance
// table; the base's reflectance is the material's colour.
struct PlasticBsdf {
    float3 diffuse;              // reflectance of the base
    float eta;                   // IOR of the coating relative to the outside, != 1
    float alpha;                 // GGX roughness of the coating, raised to at least 1e-4 (the table's alpha too)
    float internal_reflectance;  // plastic_constants(...).internal_reflectance
    float specular_weight;       // plastic_constants(...).specular_weight: 1 / (1 + mean(diffuse))
    const float* transmittance;  // PLASTIC_TABLE_SIZE floats in global memory: plastic_constants(...).transmittance

    static constexpr bool kTransmits = false;

    static __forceinline__ __device__ PlasticBsdf make(const MaterialRecord& m, float2, float3 color) {
        PlasticBsdf b;
        b.diffuse = color;
        b.eta = m.params[0];
        b.alpha = fmaxf(m.params[1], 1e-4f);
        b.internal_reflectance = m.params[2];
        // The coating's share of the samples: its mean reflectance (1) over the sum of both lobes'.
        b.specular_weight = 1.0f / (1.0f + (color.x + color.y + color.z) * (1.0f / 3.0f));
        b.transmittance = m.table;
        return b;
    }

    __forceinline__ __device__ bool is_delta() const { return false; }

    // T(cos), linear between the table's entries.
    __forceinline__ __device__ float external_transmittance(float cos_theta) const {
        const float x = fminf(fmaxf(cos_theta, 0.0f), 1.0f) * static_cast<float>(PLASTIC_TABLE_SIZE - 1u);
        const unsigned int below = static_cast<unsigned int>(x);
        const unsigned int i = below < PLASTIC_TABLE_SIZE - 2u ? below : PLASTIC_TABLE_SIZE - 2u;
        const float t0 = __ldg(transmittance + i);
        const float t1 = __ldg(transmittance + i + 1u);
        return t0 + (t1 - t0) * (x - static_cast<float>(i));
    }

    // The probability of sampling the coating rather than the base: the light the coating reflects,
    // 1 - T(wo.z), against what the base may return, T(wo.z), weighted by specular_weight.
    __forceinline__ __device__ float specular_probability(float t_o) const {
        const float s = (1.0f - t_o) * specular_weight;
        const float d = t_o * (1.0f - specular_weight);
        return s + d > 0.0f ? s / (s + d) : 1.0f;
    }

    // f cos and the pdf of sample() together: they share the half vector, D and the table look-ups.
    __forceinline__ __device__ float3 eval_pdf(float3 wo, float3 wi, float& pdf) const {
        pdf = 0.0f;
        if (!(wo.z > 0.0f) || !(wi.z > 0.0f)) return make_float3(0.0f, 0.0f, 0.0f);
        const Ggx ggx = make_ggx(alpha);
        const float3 h = normalize(wo + wi);
        const float cos_oh = dot(wo, h);
        const float d_over_cos = cos_oh > 0.0f ? ggx.D(h) * ggx.g1_over_cos(wo) : 0.0f;  // D G1(wo) / wo.z
        const float specular = fresnel_dielectric(cos_oh, eta).reflectance * d_over_cos * ggx.G1(wi, h) * 0.25f;
        const float t_o = external_transmittance(wo.z);
        const float t_i = external_transmittance(wi.z);
        const float base = t_o * t_i * wi.z * INV_PI / ((1.0f - internal_reflectance) * (eta * eta));
        const float p = specular_probability(t_o);
        pdf = mixture_pdf(p, d_over_cos, wi, h);
        return make_float3(specular + diffuse.x * base, specular + diffuse.y * base, specular + diffuse.z * base);
    }

    __forceinline__ __device__ BsdfValue eval(float3 wo, float3 wi) const {
        float pdf;
        return BsdfValue{eval_pdf(wo, wi, pdf), 1.0f};
    }

    // The coating's visible-normal density mapped through the mirror, mixed with the base's cosine density.
    __forceinline__ __device__ float pdf(float3 wo, float3 wi) const {
        float pdf;
        eval_pdf(wo, wi, pdf);
        return pdf;
    }

    // One of the two lobes, chosen with specular_probability (bsdf_mixture.h).
    __forceinline__ __device__ BsdfSample sample(float3 wo, Pcg32& rng) const {
        const float u_lobe = rng.uniform();
        const float u1 = rng.uniform();
        const float u2 = rng.uniform();
        if (!(wo.z > 0.0f)) return no_bsdf_sample(make_float3(-wo.x, -wo.y, wo.z));
        const bool coating = u_lobe < specular_probability(external_transmittance(wo.z));
        return mixture_sample(*this, wo, mixture_direction(wo, make_ggx(alpha), coating, u1, u2));
    }
};

}  // namespace pt
