// The GGX (Trowbridge-Reitz) microfacet distribution, isotropic, in the local shading frame (z = normal).
//
// What the rough families share: the normal distribution D(m), Smith's masking G1 and the separable
// shadowing-masking G = G1(wo, m) G1(wi, m) (the reference renderer's choice for GGX, not the height-correlated
// form), and sampling of the normals visible from a direction with the density
//   D_wo(m) = G1(wo, m) max(0, wo.m) D(m) / wo.z
// (Heitz 2018, "Sampling the GGX Distribution of Visible Normals", JCGT 7(4)). Sampling visible normals only
// puts every sample where the lobe is seen, which leaves G1 of the outgoing direction as the whole weight of a
// mirror reflection.
//
// Several quantities are divided by a cosine (f cos = D G / (4 cos_o) for a reflection). G1(v) / |v.z| is
// computed as one expression, 2 / (|v.z| + sqrt(v.z^2 + alpha^2 (v.x^2 + v.y^2))), which stays finite at v.z = 0,
// instead of dividing by a cosine that may be 0.
#pragma once

#include "pathtracer/vec_math.h"

namespace pt {

// The smallest roughness: smaller alphas are raised to it, as the reference renderer does. At 1e-4 the peak of D
// is 3e7 and every intermediate stays far from the float range; below it a lobe is a mirror to float precision
// and should use the smooth (delta) model.
constexpr float GGX_MIN_ALPHA = 1e-4f;

struct Ggx {
    float alpha;  // the width of the distribution, >= GGX_MIN_ALPHA (make_ggx enforces it)

    // D(m): 1 / (pi alpha^2 ((m.x^2 + m.y^2) / alpha^2 + m.z^2)^2) on the upper hemisphere. Values whose product
    // with m.z is below 1e-20 (the far tail, or m.z <= 0) are cut to 0, as the reference renderer does, so that
    // later stages never see a vanishing density they would divide by.
    __forceinline__ __device__ float D(float3 m) const {
        const float a2 = alpha * alpha;
        const float t = (m.x * m.x + m.y * m.y) / a2 + m.z * m.z;
        const float d = 1.0f / (PI * a2 * (t * t));
        return d * m.z > 1e-20f ? d : 0.0f;
    }

    // G1(v, m) / |v.z|, without the test of sides (see G1).
    __forceinline__ __device__ float g1_over_cos(float3 v) const {
        const float z2 = v.z * v.z;
        return 2.0f / (fabsf(v.z) + sqrtf(z2 + alpha * alpha * (v.x * v.x + v.y * v.y)));
    }

    // Smith's masking of direction v by microfacets of normal m: 2 / (1 + sqrt(1 + alpha^2 tan^2 theta_v)),
    // and 0 when v sees the back of the facet from the front of the surface or the other way round.
    __forceinline__ __device__ float G1(float3 v, float3 m) const {
        return dot(v, m) * v.z > 0.0f ? fabsf(v.z) * g1_over_cos(v) : 0.0f;
    }

    // The separable shadowing-masking term.
    __forceinline__ __device__ float G(float3 wo, float3 wi, float3 m) const { return G1(wo, m) * G1(wi, m); }

    // D_wo(m), the density of sample_visible(wo, ...) per unit solid angle of m (wo.z > 0; 0 otherwise).
    __forceinline__ __device__ float pdf_visible(float3 wo, float3 m) const {
        const float c = dot(wo, m);
        return c > 0.0f && wo.z > 0.0f ? D(m) * g1_over_cos(wo) * c : 0.0f;
    }

    // A normal m distributed as D_wo(m), from two uniforms (wo.z >= 0). Heitz 2018: stretch wo to the
    // configuration alpha = 1, where the visible normals are uniform on the projected hemisphere: a uniform
    // point on the unit disk, squeezed onto the part of the disk the hemisphere shows to wo (s = (1 + cos) / 2),
    // lifted to the hemisphere around the stretched wo and unstretched. The result can be horizontal (m.z = 0)
    // where the lifted point lies on the hemisphere's rim; D is 0 there and so is the pdf: a rejected sample.
    __forceinline__ __device__ float3 sample_visible(float3 wo, float u1, float u2) const {
        const float3 vh = normalize(make_float3(alpha * wo.x, alpha * wo.y, fmaxf(wo.z, 0.0f)));
        const float len2 = vh.x * vh.x + vh.y * vh.y;
        const float3 t1 = len2 > 0.0f ? make_float3(-vh.y, vh.x, 0.0f) * rsqrtf(len2) : make_float3(1.0f, 0.0f, 0.0f);
        const float3 t2 = cross(vh, t1);
        const float r = sqrtf(u1);
        float sin_phi, cos_phi;
        __sincosf(2.0f * PI * u2, &sin_phi, &cos_phi);
        const float p1 = r * cos_phi;
        const float s = 0.5f * (1.0f + vh.z);
        const float p2 = (1.0f - s) * sqrtf(fmaxf(0.0f, 1.0f - p1 * p1)) + s * (r * sin_phi);
        const float pz = sqrtf(fmaxf(0.0f, 1.0f - p1 * p1 - p2 * p2));
        const float3 nh = t1 * p1 + t2 * p2 + vh * pz;
        return normalize(make_float3(alpha * nh.x, alpha * nh.y, fmaxf(nh.z, 0.0f)));
    }
};

__forceinline__ __device__ Ggx make_ggx(float alpha) { return Ggx{fmaxf(alpha, GGX_MIN_ALPHA)}; }

// wo mirrored about the unit normal m.
__forceinline__ __device__ float3 microfacet_reflect(float3 wo, float3 m) { return m * (2.0f * dot(wo, m)) - wo; }

// wo refracted through a facet of unit normal m, given what fresnel_dielectric(dot(wo, m), eta) returned for it:
// the tangential part scales by eta_ti and the normal part becomes cos_t.
__forceinline__ __device__ float3 microfacet_refract(float3 wo, float3 m, float cos_t, float eta_ti) {
    return m * (dot(wo, m) * eta_ti + cos_t) - wo * eta_ti;
}

}  // namespace pt
