// A custom primitive type from the test folder only: axis-aligned boxes, 6 floats (min xyz, max xyz), registered
// by custom_descriptors.py through optixasync.scene.register_custom_primitive.
#pragma once

#include "pathtracer/vec_math.h"

namespace pt {

struct TestBoxPrimitive {
    // Slabs: the entry distance if it lies in [tmin, tmax], else the exit distance (a ray from inside).
    static __forceinline__ __device__ bool intersect(const float* data, float3 origin, float3 direction, float tmin,
                                                     float tmax, float& t) {
        const float o[3] = {origin.x, origin.y, origin.z}, d[3] = {direction.x, direction.y, direction.z};
        float enter = -1e30f, leave = 1e30f;
        for (int k = 0; k < 3; ++k) {
            const float inv = 1.0f / d[k];
            float a = (__ldg(data + k) - o[k]) * inv, b = (__ldg(data + 3 + k) - o[k]) * inv;
            if (a > b) {
                const float c = a;
                a = b;
                b = c;
            }
            enter = fmaxf(enter, a);
            leave = fminf(leave, b);
        }
        if (!(enter <= leave)) return false;
        t = enter >= tmin ? enter : leave;
        return t >= tmin && t <= tmax;
    }

    // The outward normal of the face the point is on: the axis along which it is nearest a face.
    static __forceinline__ __device__ float3 normal(const float* data, float3 p) {
        const float q[3] = {p.x, p.y, p.z};
        int axis = 0;
        float sign = -1.0f, best = 1e30f;
        for (int k = 0; k < 3; ++k) {
            const float low = fabsf(q[k] - __ldg(data + k)), high = fabsf(q[k] - __ldg(data + 3 + k));
            if (low < best) best = low, axis = k, sign = -1.0f;
            if (high < best) best = high, axis = k, sign = 1.0f;
        }
        return make_float3(axis == 0 ? sign : 0.0f, axis == 1 ? sign : 0.0f, axis == 2 ? sign : 0.0f);
    }
};

}  // namespace pt
