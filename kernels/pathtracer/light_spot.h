// A spot light: a point light whose intensity falls off between an inner and an outer cone about its axis, as
// glTF's KHR_lights_punctual defines it: full inside the inner cone, zero outside the outer one, and in between
// the square of a linear ramp in the cosine, t = saturate((cos - cos_outer) / (cos_inner - cos_outer)). A delta
// light (scale 1 / p), like the point light.
#pragma once

#include "pathtracer/light_point.h"
#include "pathtracer/lights.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

// What the device reads of one spot light (optixasync/render/lights/spot.py mirrors it).
struct SpotLightRecord {
    float3 position;
    float3 intensity;   // rgb, per steradian, on the axis
    float3 direction;   // unit: where the light shines
    float cos_outer;    // cosine of the outer cone's half angle
    float ramp_scale;   // 1 / max(1e-3, cos_inner - cos_outer)
};

namespace pt {

struct SpotLight {
    static __forceinline__ __device__ LightSample sample(const LightRecord& light, float3 point, Pcg32&) {
        const SpotLightRecord& l = *static_cast<const SpotLightRecord*>(light.data);
        LightSample s = point_light_ray(l.position, point, l.intensity);
        const float cd = -dot(l.direction, s.wi);  // cosine between the axis and the way to the point
        const float t = fminf(fmaxf((cd - l.cos_outer) * l.ramp_scale, 0.0f), 1.0f);
        s.radiance = s.radiance * (t * t);
        s.valid = s.valid && t > 0.0f;
        return s;
    }

    static __forceinline__ __device__ float scale(const LightRecord& light, const LightSample&, float) {
        return 1.0f / light.probability;
    }
};

}  // namespace pt
