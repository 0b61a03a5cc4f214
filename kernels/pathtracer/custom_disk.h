// The "disk" custom primitive (optixasync/scene/primitives/disk.py): an oriented disk, 7 floats: centre, normal
// (its direction is the front side), radius.
#pragma once

#include "pathtracer/vec_math.h"

namespace pt {

struct DiskPrimitive {
    // The ray's parameter where it crosses the disk's plane within the radius, if it does in [tmin, tmax].
    static __forceinline__ __device__ bool intersect(const float* data, float3 origin, float3 direction, float tmin,
                                                     float tmax, float& t) {
        const float3 center = load3(data), n = load3(data + 3);
        const float radius = __ldg(data + 6);
        const float facing = dot(n, direction);
        if (facing == 0.0f) return false;  // parallel to the plane
        t = dot(center - origin, n) / facing;
        if (!(t >= tmin && t <= tmax)) return false;
        const float3 offset = origin + direction * t - center;
        return dot(offset, offset) <= radius * radius;
    }

    static __forceinline__ __device__ float3 normal(const float* data, float3) { return normalize(load3(data + 3)); }
};

}  // namespace pt
