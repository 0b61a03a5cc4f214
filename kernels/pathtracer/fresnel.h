// Fresnel reflectance: exact for a dielectric interface and for a conductor, and Schlick's approximation.
//
// Conventions are those of the reference renderer (Mitsuba 3), so that the BSDFs built on them agree with it:
// the relative IOR eta of an interface is n(inside) / n(outside), the normal points outside, and cos_i > 0 means
// the light is on the outside.
#pragma once

#include "pathtracer/vec_math.h"

namespace pt {

// The unpolarised reflectance of a dielectric interface for a direction at cosine cos_i (either sign) to the
// normal, and what refraction through it does.
struct DielectricFresnel {
    float reflectance;  // F in [0, 1]; 1 under total internal reflection
    float cos_t;        // signed cosine of the refracted direction, on the other side from cos_i (0 under TIR)
    float eta_it;       // relative IOR in the direction of travel: n(far side) / n(near side)
    float eta_ti;       // 1 / eta_it, which is also the factor that scales the tangential part of the direction
};

// Average of the s and p reflectances, r_s = (ci - eta ct) / (ci + eta ct) and r_p = (ct - eta ci) / (ct + eta ci),
// with ci, ct the absolute cosines of the incident and refracted directions (Snell: the sines scale by eta_ti).
// Total internal reflection gives ct = 0, hence r_s = 1, r_p = -1 and F = 1, with no special case. Two cases
// would divide 0 by 0 and get their limits instead: a matched interface (eta = 1) reflects nothing, and a
// grazing direction (ci = 0) is reflected whole.
__forceinline__ __device__ DielectricFresnel fresnel_dielectric(float cos_i, float eta) {
    const bool outside = cos_i >= 0.0f;
    const float inv_eta = 1.0f / eta;
    DielectricFresnel r;
    r.eta_it = outside ? eta : inv_eta;
    r.eta_ti = outside ? inv_eta : eta;
    const float cos_t2 = 1.0f - (1.0f - cos_i * cos_i) * (r.eta_ti * r.eta_ti);
    const float ci = fabsf(cos_i);
    const float ct = sqrtf(fmaxf(cos_t2, 0.0f));
    if (eta == 1.0f || ci == 0.0f) {
        r.reflectance = eta == 1.0f ? 0.0f : 1.0f;
    } else {
        const float a_s = (ci - r.eta_it * ct) / (ci + r.eta_it * ct);
        const float a_p = (ct - r.eta_it * ci) / (ct + r.eta_it * ci);
        r.reflectance = 0.5f * (a_s * a_s + a_p * a_p);
    }
    r.cos_t = outside ? -ct : ct;
    return r;
}

// The unpolarised reflectance of a conductor of complex relative IOR eta + i k, light arriving from outside at
// cosine cos_i (its sign is ignored). The closed form of the s and p reflectances for a complex IOR (Moeller,
// "Optics", 1988), with a^2 + b^2 = |eta^2 - sin^2| and 2ab its imaginary part:
//   r_s = (a^2 + b^2 + cos^2 - 2 a cos) / (a^2 + b^2 + cos^2 + 2 a cos)
//   r_p = r_s ((a^2 + b^2) cos^2 + sin^4 - 2 a cos sin^2) / ((a^2 + b^2) cos^2 + sin^4 + 2 a cos sin^2)
// Both denominators vanish only for an IOR of 1 + 0i at grazing incidence or 0 + 0i at normal incidence, where
// the limit (total reflection) is returned. Near an IOR of 1 + 0i the numerators cancel and round to a few ulps
// below 0: the result is clamped to [0, 1].
__forceinline__ __device__ float fresnel_conductor(float cos_i, float eta, float k) {
    const float c = fminf(fabsf(cos_i), 1.0f);
    const float c2 = c * c;
    const float s2 = 1.0f - c2;
    const float s4 = s2 * s2;
    const float t0 = eta * eta - k * k - s2;
    const float a2b2 = sqrtf(fmaxf(t0 * t0 + 4.0f * eta * eta * k * k, 0.0f));
    const float a = sqrtf(fmaxf(0.5f * (a2b2 + t0), 0.0f));
    const float t1 = a2b2 + c2;
    const float t2 = 2.0f * c * a;
    const float r_s = t1 + t2 > 0.0f ? (t1 - t2) / (t1 + t2) : 1.0f;
    const float t3 = a2b2 * c2 + s4;
    const float t4 = t2 * s2;
    const float r_p = t3 + t4 > 0.0f ? r_s * (t3 - t4) / (t3 + t4) : r_s;
    return fminf(fmaxf(0.5f * (r_s + r_p), 0.0f), 1.0f);
}

// Per RGB channel.
__forceinline__ __device__ float3 fresnel_conductor(float cos_i, float3 eta, float3 k) {
    return make_float3(fresnel_conductor(cos_i, eta.x, k.x), fresnel_conductor(cos_i, eta.y, k.y),
                       fresnel_conductor(cos_i, eta.z, k.z));
}

// Schlick's approximation F0 + (1 - F0) (1 - cos)^5, cos clamped to [0, 1] (its sign is ignored).
__forceinline__ __device__ float schlick_weight(float cos_i) {
    const float m = 1.0f - fminf(fabsf(cos_i), 1.0f);
    const float m2 = m * m;
    return m2 * m2 * m;
}

__forceinline__ __device__ float fresnel_schlick(float f0, float cos_i) {
    return f0 + (1.0f - f0) * schlick_weight(cos_i);
}

__forceinline__ __device__ float3 fresnel_schlick(float3 f0, float cos_i) {
    const float w = schlick_weight(cos_i);
    return make_float3(f0.x + (1.0f - f0.x) * w, f0.y + (1.0f - f0.y) * w, f0.z + (1.0f - f0.z) * w);
}

}  // namespace pt
