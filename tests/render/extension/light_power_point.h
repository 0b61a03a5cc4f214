// A test light type outside the package: a point light given by its emitted power (watts per channel) instead
// of its intensity, I = power / (4 pi). Loaded by tests/render/extension/descriptors.py through the public
// registry only.
#pragma once

#include "pathtracer/lights.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

struct PowerPointRecord {
    float3 position;
    float3 power;  // rgb, over the whole sphere
};

namespace pt {

struct PowerPointLight {
    static __forceinline__ __device__ LightSample sample(const LightRecord& light, float3 point, Pcg32&) {
        const PowerPointRecord& p = *static_cast<const PowerPointRecord*>(light.data);
        const float3 to_light = p.position - point;
        const float dist2 = dot(to_light, to_light);
        const float inv_dist = rsqrtf(dist2);
        LightSample s;
        s.wi = to_light * inv_dist;
        s.radiance = p.power * (1.0f / (4.0f * 3.14159265358979f * dist2));
        s.distance = (dist2 * inv_dist) * (1.0f - 1e-4f);
        s.pdf = 1.0f;
        s.cos_light = 1.0f;
        s.valid = dist2 > 0.0f;
        return s;
    }

    // A delta light: BSDF-sampled rays never find it, so its sample takes no MIS weight.
    static __forceinline__ __device__ float scale(const LightRecord& light, const LightSample&, float) {
        return 1.0f / light.probability;
    }
};

}  // namespace pt
