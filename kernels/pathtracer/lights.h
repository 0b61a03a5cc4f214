// Area lights: choosing an emissive triangle, a point on it, and the MIS weights that combine light sampling
// with BSDF sampling.
//
// Every emitted path contribution can be found two ways: by sampling a light at a vertex (next-event
// estimation) or by a BSDF-sampled ray that happens to hit the light. Both are kept and weighted by the power
// heuristic, w_s = p_s^2 / (p_light^2 + p_bsdf^2), with both pdfs per unit solid angle at the shading point.
// The light's solid-angle pdf is A / cos_light, where A = (pdf per unit area) * distance^2 and cos_light is the
// cosine at the light. Both weights below are rearranged with that so that they never divide by a cosine,
// which can be 0 at grazing angles.
#pragma once

#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

// Power heuristic (beta = 2) for two strategies with one sample each, from their pdfs in a common measure:
// the weight of the strategy with pdf `a`.
__forceinline__ __device__ float power_heuristic(float a, float b) { return a * a / (a * a + b * b); }

// MIS weight of emission reached by a BSDF-sampled ray, the BSDF side of the power heuristic. The ray met the
// light at the cosine cos_out, so with A as above (pdf per area * t^2) and b the BSDF's pdf:
//   w = b^2 / (b^2 + (A / cos_out)^2) = (b cos_out)^2 / ((b cos_out)^2 + A^2).
__forceinline__ __device__ float emission_mis_weight(float bsdf_pdf, float cos_out, float area_pdf) {
    return power_heuristic(bsdf_pdf * cos_out, area_pdf);
}

// Everything of a light sample but the radiance and the BSDF's colour: with the BSDF's f cos = colour * f_scale
// (see bsdf_interface.h), the estimator f cos Le w_light / p_light is colour * Le * this. With A = area_pdf as
// above, p_light = A / cos_light and w_light = p_light^2 / (p_light^2 + p_bsdf^2):
//   w_light / p_light = A cos_light / (A^2 + (p_bsdf cos_light)^2).
__forceinline__ __device__ float light_sample_scale(float f_scale, float bsdf_pdf, float area_pdf, float cos_light) {
    const float bc = bsdf_pdf * cos_light;
    return f_scale * area_pdf * cos_light / (area_pdf * area_pdf + bc * bc);
}

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

struct LightSample {
    float3 position;
    float3 normal;    // unit, on the emitting (front) side
    float3 radiance;  // leaving the front side
    float pdf_area;   // of having chosen this point: selection probability / triangle area
};

// One point on one emissive triangle: the triangle from the alias table, then a uniform point on it. Draws
// three random numbers.
__forceinline__ __device__ LightSample sample_light(const EmitterTriangle* emitters, unsigned int count, Pcg32& rng) {
    const unsigned int k = pick_emitter(emitters, count, rng.next());
    const float4* e = reinterpret_cast<const float4*>(emitters + k);
    const float4 a = __ldg(e), b = __ldg(e + 1), c = __ldg(e + 2), d = __ldg(e + 3);
    const float3 e1 = xyz(b), e2 = xyz(c);
    const float u1 = rng.uniform();
    const float u2 = rng.uniform();
    LightSample s;
    s.position = uniform_triangle_point(xyz(a), e1, e2, u1, u2);
    s.normal = normalize(cross(e1, e2));
    s.radiance = xyz(d);
    s.pdf_area = a.w;
    return s;
}

}  // namespace pt
