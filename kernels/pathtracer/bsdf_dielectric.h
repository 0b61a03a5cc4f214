// Glass: a dielectric interface that reflects and refracts, smooth (delta lobes) or rough (GGX microfacets,
// Walter et al. 2007, "Microfacet Models for Refraction through Rough Surfaces"). The models of the reference
// renderer's `dielectric` and `roughdielectric` (distribution "ggx", sample_visible true) in its Radiance mode.
// Local frame (bsdf_interface.h).
//
// Sides: wo.z > 0 is the exterior (ext_ior), wo.z < 0 the interior (int_ior); eta = int_ior / ext_ior is the IOR
// of the interior relative to the exterior, so a ray from wo crosses into a medium of relative IOR eta when
// wo.z > 0 and 1 / eta when wo.z < 0 (fresnel_dielectric's eta_it).
//
// Radiance transport: a refracted ray's weight carries (n on wo's side / n on wi's side)^2 = eta_ti^2, the
// compression of solid angle across the interface, so that radiance inside a denser medium is eta^2 times the
// radiance outside. Light paths (importance) would not carry it; this path tracer only traces radiance.
//
// Parameters: params[0] eta, [1] alpha. Always two-sided: both sides are the same interface.
#pragma once

#include "pathtracer/bsdf_interface.h"
#include "pathtracer/fresnel.h"
#include "pathtracer/microfacet.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

struct DielectricBsdf {
    float eta;    // int_ior / ext_ior
    float alpha;  // GGX roughness; 0 is a smooth interface (delta lobes), other values are at least 1e-4

    static constexpr bool kTransmits = true;

    static __forceinline__ __device__ DielectricBsdf make(const MaterialRecord& m, float2, float3) {
        DielectricBsdf b;
        b.eta = m.params[0];
        b.alpha = m.params[1];
        return b;
    }

    __forceinline__ __device__ bool is_delta() const { return alpha == 0.0f; }

    // Rough only (smooth lobes are deltas). wo and wi on one side: reflection through the half vector h; on
    // opposite sides: refraction, with the generalised half vector h ~ wo + eta' wi (eta' the relative IOR of
    // wi's side, flipped to the upper hemisphere). Walter's BTDF times |wi.z|:
    //   F D G / (4 |wo.z|)                                                           reflection
    //   (1 - F) D G eta'^2 |wo.h| |wi.h| / (|wo.z| (wo.h + eta' wi.h)^2) / eta'^2     refraction
    // where the last 1 / eta'^2 is the radiance scaling (it cancels the eta'^2 of Walter's Jacobian).
    __forceinline__ __device__ BsdfValue eval(float3 wo, float3 wi) const {
        const float3 white = make_float3(1.0f, 1.0f, 1.0f);
        if (alpha == 0.0f || wo.z == 0.0f) return BsdfValue{white, 0.0f};
        const Ggx ggx = make_ggx(alpha);
        const bool reflect = wo.z * wi.z > 0.0f;
        const float eta_w = wo.z > 0.0f ? eta : 1.0f / eta;  // relative IOR of wi's side when refracting
        float3 h = reflect ? wo + wi : wo + wi * eta_w;
        const float len2 = dot(h, h);
        if (!(len2 > 0.0f)) return BsdfValue{white, 0.0f};  // wi = -wo through a matched interface
        h = h * (copysignf(1.0f, h.z) * rsqrtf(len2));
        const float cos_oh = dot(wo, h);
        const float cos_ih = dot(wi, h);
        // G1 of wo, divided by |wo.z|, with G1's test of sides; G1 of wi tests its own.
        const float g_wo = cos_oh * wo.z > 0.0f ? ggx.g1_over_cos(wo) : 0.0f;
        const float dg = ggx.D(h) * g_wo * ggx.G1(wi, h);
        const float F = fresnel_dielectric(cos_oh, eta).reflectance;
        if (reflect) return BsdfValue{white, F * dg * 0.25f};
        const float denom = cos_oh + eta_w * cos_ih;
        const float value = (1.0f - F) * dg * fabsf(cos_oh * cos_ih) / (denom * denom);
        return BsdfValue{white, denom != 0.0f ? value : 0.0f};
    }

    // The density of sample(): the visible-normal density of h for wo seen from its own side, times the
    // probability of the lobe (F or 1 - F), times the Jacobian of the map from h to wi:
    // 1 / (4 wi.h) for a reflection, eta'^2 |wi.h| / (wo.h + eta' wi.h)^2 for a refraction.
    __forceinline__ __device__ float pdf(float3 wo, float3 wi) const {
        if (alpha == 0.0f || wo.z == 0.0f) return 0.0f;
        const Ggx ggx = make_ggx(alpha);
        const bool reflect = wo.z * wi.z > 0.0f;
        const float eta_w = wo.z > 0.0f ? eta : 1.0f / eta;
        float3 h = reflect ? wo + wi : wo + wi * eta_w;
        const float len2 = dot(h, h);
        if (!(len2 > 0.0f)) return 0.0f;
        h = h * (copysignf(1.0f, h.z) * rsqrtf(len2));
        const float cos_oh = dot(wo, h);
        const float cos_ih = dot(wi, h);
        if (!(cos_oh * wo.z > 0.0f) || !(cos_ih * wi.z > 0.0f)) return 0.0f;
        const float F = fresnel_dielectric(cos_oh, eta).reflectance;
        // D_wo(h) = D G1(wo) |wo.h| / |wo.z|; for a reflection |wo.h| = |wi.h| cancels the Jacobian's.
        const float d = ggx.D(h) * ggx.g1_over_cos(wo);
        if (reflect) return F * d * 0.25f;
        const float denom = cos_oh + eta_w * cos_ih;
        if (denom == 0.0f) return 0.0f;
        return (1.0f - F) * d * fabsf(cos_oh) * (eta_w * eta_w) * fabsf(cos_ih) / (denom * denom);
    }

    // Smooth: reflect with probability F, else refract (Snell); weight 1 for the reflection and eta_ti^2 (the
    // radiance scaling) for the refraction, as F and 1 - F cancel the selection probabilities. Rough: a visible
    // normal m for wo mirrored to the upper side, the lobe chosen with probability F(wo.m), and the weight
    // f cos / pdf = G1(wi, m) (times eta_ti^2 for a refraction).
    __forceinline__ __device__ BsdfSample sample(float3 wo, Pcg32& rng) const {
        const float u_lobe = rng.uniform();
        const float u1 = rng.uniform();
        const float u2 = rng.uniform();
        BsdfSample s;
        s.delta = alpha == 0.0f;
        if (s.delta) {
            const DielectricFresnel fr = fresnel_dielectric(wo.z, eta);
            if (u_lobe < fr.reflectance) {
                s.wi = make_float3(-wo.x, -wo.y, wo.z);
                s.weight = make_float3(1.0f, 1.0f, 1.0f);
                s.pdf = fr.reflectance;
                s.eta = 1.0f;
            } else {
                s.wi = make_float3(-wo.x * fr.eta_ti, -wo.y * fr.eta_ti, fr.cos_t);
                const float scale = fr.eta_ti * fr.eta_ti;
                s.weight = make_float3(scale, scale, scale);
                s.pdf = 1.0f - fr.reflectance;
                s.eta = fr.eta_it;
            }
            return s;
        }
        if (wo.z == 0.0f) return no_bsdf_sample(wo);
        const Ggx ggx = make_ggx(alpha);
        const float side = copysignf(1.0f, wo.z);
        const float3 m = ggx.sample_visible(wo * side, u1, u2);  // upper hemisphere, as h in eval and pdf
        const float cos_om = dot(wo, m);
        const DielectricFresnel fr = fresnel_dielectric(cos_om, eta);
        const float d = ggx.D(m) * ggx.g1_over_cos(wo);  // D_wo(m) / |wo.m|
        const bool reflected = u_lobe < fr.reflectance;
        float pdf;
        float scale;
        if (reflected) {
            s.wi = microfacet_reflect(wo, m);
            pdf = fr.reflectance * d * 0.25f;
            scale = 1.0f;
            s.eta = 1.0f;
        } else {
            s.wi = microfacet_refract(wo, m, fr.cos_t, fr.eta_ti);
            const float cos_im = dot(s.wi, m);
            const float denom = cos_om + fr.eta_it * cos_im;
            pdf = denom != 0.0f ? (1.0f - fr.reflectance) * d * fabsf(cos_om) * (fr.eta_it * fr.eta_it) *
                                      fabsf(cos_im) / (denom * denom)
                                : 0.0f;
            scale = fr.eta_ti * fr.eta_ti;
            s.eta = fr.eta_it;
        }
        // G1 of wi tests that wi is on the side its lobe puts it: a reflection that went below the surface, or a
        // refraction that came back up, gets 0.
        const float g1 = ggx.G1(s.wi, m);
        if (!(cos_om * wo.z > 0.0f) || !(pdf > 0.0f) || !(g1 > 0.0f) || (wo.z * s.wi.z > 0.0f) != reflected)
            return no_bsdf_sample(s.wi);
        s.weight = make_float3(g1 * scale, g1 * scale, g1 * scale);
        s.pdf = pdf;
        return s;
    }
};

}  // namespace pt
