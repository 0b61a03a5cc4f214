// The environment as a light source: a direction drawn by its importance-sampling tables (environment.h).
//
// The source's data is the EnvironmentRecord; its selection probability multiplies the direction's density.
#pragma once

#include "pathtracer/environment.h"
#include "pathtracer/lights.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"

namespace pt {

struct EnvironmentLight {
    // pdf: per unit solid angle, times the selection probability. Draws two random numbers.
    static __forceinline__ __device__ LightSample sample(const LightRecord& light, float3, Pcg32& rng) {
        const EnvironmentRecord& env = *static_cast<const EnvironmentRecord*>(light.data);
        const EnvironmentSample e = environment_sample(env, rng.uniform(), rng.uniform());
        LightSample s;
        s.wi = e.direction;
        s.radiance = e.radiance;
        s.distance = 1e16f;
        s.pdf = light.probability * e.pdf;
        s.cos_light = 1.0f;
        s.valid = s.pdf > 0.0f;
        return s;
    }

    static __forceinline__ __device__ float scale(const LightRecord&, const LightSample& s, float bsdf_pdf) {
        return power_heuristic(s.pdf, bsdf_pdf) / s.pdf;
    }
};

}  // namespace pt
