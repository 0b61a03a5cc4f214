// What every BSDF family provides; the generated dispatch (bsdf.h) calls it by the material's family.
//
// A family is one header, bsdf_<name>.h, and one Python descriptor (optixasync/scene/bsdfs/<name>.py, or any
// registered with optixasync.scene.register_bsdf). The header defines a struct of its parameters with
//
//   static constexpr bool kTransmits;                // light passes through (wo and wi on either side)
//   static Self make(const MaterialRecord& m, float2 uv, float3 color);  // from the material record (its params[],
//                                                    // table and textures), at texture coordinates uv; color is the
//                                                    // material's reflectance with its colour texture applied
//   bool is_delta() const;                           // every lobe is a delta: light sampling cannot contribute
//
// and three const member functions, all in the LOCAL shading frame:
// z is the unit shading normal, and wo, wi are unit directions pointing away from the surface (wo towards the
// camera end of the path, wi towards the light end).
//
//   BsdfValue  eval(float3 wo, float3 wi) const;     // f(wo, wi) |wi.z|, as colour * scale (scale may be 1)
//   float      pdf(float3 wo, float3 wi) const;      // solid-angle pdf of sample() returning wi given wo
//   BsdfSample sample(float3 wo, Pcg32& rng) const;  // draws its own uniforms from rng
//
// Sides. Reflection-only families (diffuse, conductor, plastic, metallic-roughness) are called with wo.z > 0
// only: the integrator flips the frame for the back of a two-sided surface and stops on the back of a one-sided
// one. They return a zero value and pdf for wi.z <= 0 (and for wo.z <= 0, defensively), and a sample of weight 0
// when the sampled direction goes below the surface. The dielectric families are called with wo.z of either
// sign: z > 0 is the exterior side, z < 0 the interior one, and they treat both.
//
// Delta lobes (smooth mirror, smooth glass) cannot be reached by light sampling: eval and pdf return 0 for them
// and sample() sets `delta`, which tells the integrator to give emission found by such a ray its full weight.
//
// Radiance transport. Values are those of light travelling from wi to wo, with the camera's quantities carried
// along the path (the reference renderer's "Radiance" mode): a transmission scales radiance by
// (n on the side of wo / n on the side of wi)^2, so f is not symmetric across a dielectric interface.
//
// Every function returns finite values for any unit input: at grazing angles, at wo.z == 0, at the smallest
// roughness. A sample that cannot be used (below the surface, a zero-probability microfacet) has weight 0 and
// pdf 0; the integrator ends the path on a zero weight.
#pragma once

#include "pathtracer/random.h"

namespace pt {

// f |cos| as a colour times a scalar. Many lobes are "reflectance times a scalar shape"; keeping the scalar
// apart lets the integrator fold it into the light sample's scalar MIS factor before it meets the colours.
struct BsdfValue {
    float3 color;
    float scale;
};

struct BsdfSample {
    float3 wi;      // the sampled direction, unit, away from the surface (local frame)
    float3 weight;  // f |cos| / pdf, including any lobe-selection probability: what the throughput is multiplied by
    float pdf;      // per unit solid angle, what pdf(wo, wi) returns; for a delta lobe the probability of having
                    // picked that lobe (1 if it is the only one), never to be combined with a density
    bool delta;     // sampled from a delta lobe: light sampling could not have produced wi
    float eta;      // relative IOR crossed, n on the side of wi / n on the side of wo; 1 for a reflection
};

// A sample that stays on wo's side (a reflection: eta 1).
__forceinline__ __device__ BsdfSample reflection_sample(float3 wi, float3 weight, float pdf, bool delta = false) {
    BsdfSample s;
    s.wi = wi;
    s.weight = weight;
    s.pdf = pdf;
    s.delta = delta;
    s.eta = 1.0f;
    return s;
}

// The sample every family returns when it has none to give (weight 0 ends the path).
__forceinline__ __device__ BsdfSample no_bsdf_sample(float3 wi) {
    return reflection_sample(wi, make_float3(0.0f, 0.0f, 0.0f), 0.0f);
}

}  // namespace pt
