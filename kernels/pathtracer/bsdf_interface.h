// What every BSDF family provides; bsdf.h dispatches to them by type.
//
// A family is a struct holding its parameters, with three member functions:
//
//   BsdfValue  eval(float3 n, float3 wo, float3 wi) const;   // f(wo, wi) |cos(n, wi)|, as colour * scale
//   float      pdf(float3 n, float3 wo, float3 wi) const;    // the pdf of sample() returning wi, per solid angle
//   BsdfSample sample(float3 n, float3 wo, Pcg32& rng) const;
//
// n is the unit shading normal on the side of wo (the integrator flips it for the back of two-sided
// surfaces); wo and wi are unit directions pointing away from the surface. The integrator calls eval and pdf
// for light samples with dot(n, wi) > 0 only; a family that transmits will need that test moved into it.
// sample() draws the random numbers it needs from rng itself, so that a family can use more than two.
// Delta lobes (mirror, smooth glass) are never hit by light sampling: eval and pdf return 0 for them, and
// sample() sets `delta`, which tells the integrator to give emission found by such a ray its full weight.
#pragma once

#include "pathtracer/random.h"

namespace pt {

// f cos as a colour times a scalar. Most lobes are "reflectance times a scalar shape"; keeping the scalar
// apart lets the integrator fold it into the light sample's scalar MIS factor before it meets the colours.
struct BsdfValue {
    float3 color;
    float scale;
};

struct BsdfSample {
    float3 wi;      // the sampled direction, unit, away from the surface
    float3 weight;  // f cos / pdf: what the path throughput is multiplied by
    float pdf;      // per unit solid angle; meaningless when delta is set
    bool delta;     // sampled from a delta lobe: light sampling could not have produced wi
};

}  // namespace pt
