// Light sources: picking one, what a light sample holds, and the MIS weights that combine light sampling with BSDF
// sampling.
//
// Each light type is one header, light_<name>.h, and one Python descriptor (optixasync/render/lights/): a struct
// with two static functions,
//
//   LightSample sample(const LightRecord& light, float3 point, Pcg32& rng)   a direction towards the source from
//                                                                            `point`, its radiance and distance
//   float scale(const LightRecord& light, const LightSample& s, float bsdf_pdf)   w_light / p_light of the sample
//                                                                            (the power heuristic against the
//                                                                            BSDF's pdf, or 1 / p for a delta light)
//
// The dispatch over the registered types (light_sample, light_scale) is generated into the program's source, as the
// BSDFs' is (see bsdf.h).
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

// A light sample as the integrator uses it: the shadow ray's direction and length, the radiance arriving along it,
// and the type's own terms for its MIS scale (`pdf`, `cos_light`: see each light type).
struct LightSample {
    float3 wi;        // unit direction from the shading point towards the light
    float3 radiance;  // arriving along wi
    float distance;   // of the shadow ray (1e16 for lights at infinity)
    float pdf;        // the type's density term (per solid angle, or per area times distance^2)
    float cos_light;  // the cosine at an area light (1 otherwise)
    bool valid;       // false: nothing to add (the sample faces away, or its pdf is 0)
};

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

// The light source of a selection uniform u in [0, 1): the first whose CDF exceeds u (the last one otherwise).
// Linear in the number of sources, which is small: one for all emissive triangles (they have their own alias
// table), one for the environment, one per punctual light.
__forceinline__ __device__ const LightRecord& pick_light(const LightRecord* lights, unsigned int count, float u) {
    unsigned int k = 0u;
    while (k + 1u < count && !(u < lights[k].cdf)) ++k;
    return lights[k];
}

}  // namespace pt
