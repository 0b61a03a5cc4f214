// A point light: radiant intensity I (per steradian) from one point; radiance arriving at distance d is I / d^2.
// A delta light: BSDF-sampled rays never find it, so its samples take no MIS weight (scale 1 / p).
#pragma once

#include "pathtracer/lights.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

// What the device reads of one point light (optixasync/render/lights/point.py mirrors it). At global scope, like
// the records of records.h.
struct PointLightRecord {
    float3 position;
    float3 intensity;  // rgb, per steradian
};

namespace pt {

// The shadow ray towards a point `position` at squared distance dist2 (stopping short of it).
__forceinline__ __device__ LightSample point_light_ray(float3 position, float3 point, float3 intensity) {
    const float3 to_light = position - point;
    const float dist2 = dot(to_light, to_light);
    const float inv_dist = rsqrtf(dist2);
    LightSample s;
    s.wi = to_light * inv_dist;
    s.radiance = intensity * (1.0f / dist2);
    s.distance = (dist2 * inv_dist) * (1.0f - 1e-4f);
    s.pdf = 1.0f;
    s.cos_light = 1.0f;
    s.valid = dist2 > 0.0f;
    return s;
}

struct PointLight {
    static __forceinline__ __device__ LightSample sample(const LightRecord& light, float3 point, Pcg32&) {
        const PointLightRecord& p = *static_cast<const PointLightRecord*>(light.data);
        return point_light_ray(p.position, point, p.intensity);
    }

    static __forceinline__ __device__ float scale(const LightRecord& light, const LightSample&, float) {
        return 1.0f / light.probability;
    }
};

}  // namespace pt
