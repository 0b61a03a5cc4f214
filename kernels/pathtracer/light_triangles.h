// Emissive triangles as one light source: the triangle from an alias table by power, then a uniform point on it.
//
// The source's data is the emitter table (EmitterTriangle, records.h): one entry per triangle of every
// light-sampled mesh, in world space, each holding its pdf per unit area, which already includes the source's
// selection probability (optixasync/render/_emitters.py), so that the MIS weight of emission found by a
// BSDF-sampled ray reads it directly (integrator.h).
#pragma once

#include "pathtracer/lights.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

// Index of an emitter table entry, drawn with the probabilities the host's alias table encodes (Walker's
// method; see optixasync/render/_emitters.py), from one 32-bit random number: its high part,
// r * count / 2^32, picks a slot, and its low part, the fraction, decides between the slot and its alias.
// Constant time for any number of triangles. Which rule set the probabilities does not matter here: each
// entry's pdf field already accounts for it.
__forceinline__ __device__ unsigned int pick_emitter(const EmitterTriangle* emitters, unsigned int count,
                                                     unsigned int r) {
    unsigned int k = __umulhi(r, count);
    const float fraction = static_cast<float>(r * count) * (1.0f / 4294967296.0f);
    if (fraction >= __ldg(&emitters[k].alias_q)) k = __ldg(&emitters[k].alias);
    return k;
}

// A uniformly distributed point on the triangle p0, p0 + e1, p0 + e2 from two uniforms in [0, 1) (the
// square-root warp of Shirley and Chiu).
__forceinline__ __device__ float3 uniform_triangle_point(float3 p0, float3 e1, float3 e2, float u1, float u2) {
    const float su = sqrtf(u1);
    return p0 + e1 * (su * (1.0f - u2)) + e2 * (su * u2);
}

struct TrianglePoint {
    float3 position;
    float3 normal;    // unit, on the emitting (front) side
    float3 radiance;  // leaving the front side
    float pdf_area;   // of having chosen this point: selection probability / triangle area
};

// One point on one emissive triangle: the triangle from the alias table, then a uniform point on it. Draws
// three random numbers.
__forceinline__ __device__ TrianglePoint sample_emitter(const EmitterTriangle* emitters, unsigned int count,
                                                        Pcg32& rng) {
    const unsigned int k = pick_emitter(emitters, count, rng.next());
    const float4* e = reinterpret_cast<const float4*>(emitters + k);
    const float4 a = __ldg(e), b = __ldg(e + 1), c = __ldg(e + 2), d = __ldg(e + 3);
    const float3 e1 = xyz(b), e2 = xyz(c);
    const float u1 = rng.uniform();
    const float u2 = rng.uniform();
    TrianglePoint s;
    s.position = uniform_triangle_point(xyz(a), e1, e2, u1, u2);
    s.normal = normalize(cross(e1, e2));
    s.radiance = xyz(d);
    s.pdf_area = a.w;
    return s;
}

struct TriangleLights {
    // The point's direction and distance (the shadow ray stops short of the light, so that it cannot hit the
    // emitter itself); valid on the emitting side. pdf = pdf per area * distance^2, cos_light at the light.
    static __forceinline__ __device__ LightSample sample(const LightRecord& light, float3 point, Pcg32& rng) {
        const TrianglePoint p = sample_emitter(static_cast<const EmitterTriangle*>(light.data), light.count, rng);
        const float3 to_light = p.position - point;
        const float dist2 = dot(to_light, to_light);
        const float inv_dist = rsqrtf(dist2);
        LightSample s;
        s.wi = to_light * inv_dist;
        s.cos_light = -dot(p.normal, s.wi);
        s.radiance = p.radiance;
        s.valid = s.cos_light > 0.0f;
        s.distance = (dist2 * inv_dist) * (1.0f - 1e-4f);
        s.pdf = p.pdf_area * dist2;
        return s;
    }

    static __forceinline__ __device__ float scale(const LightRecord&, const LightSample& s, float bsdf_pdf) {
        return light_sample_scale(1.0f, bsdf_pdf, s.pdf, s.cos_light);
    }
};

}  // namespace pt
