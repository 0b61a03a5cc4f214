// A directional (distant) light: irradiance E arriving from one direction, on every point alike (the sun). A delta
// light (scale 1 / p); its shadow rays reach to infinity.
#pragma once

#include "pathtracer/lights.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

// What the device reads of one directional light (optixasync/render/lights/directional.py mirrors it).
struct DirectionalLightRecord {
    float3 direction;   // unit: the way the light travels
    float3 irradiance;  // rgb, on a surface facing the light
};

namespace pt {

struct DirectionalLight {
    static __forceinline__ __device__ LightSample sample(const LightRecord& light, float3, Pcg32&) {
        const DirectionalLightRecord& l = *static_cast<const DirectionalLightRecord*>(light.data);
        LightSample s;
        s.wi = -l.direction;
        s.radiance = l.irradiance;
        s.distance = 1e16f;
        s.pdf = 1.0f;
        s.cos_light = 1.0f;
        s.valid = true;
        return s;
    }

    static __forceinline__ __device__ float scale(const LightRecord& light, const LightSample&, float) {
        return 1.0f / light.probability;
    }
};

}  // namespace pt
