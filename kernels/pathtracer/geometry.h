// Geometry and sampling helpers: leaving a surface, a shading frame, cosine-weighted directions.
#pragma once

#include "pathtracer/vec_math.h"

namespace pt {

// Start point for a ray leaving a surface at p, on the side the unit normal n points to.
//
// p = o + t d is rounded, so it can lie a little behind the surface and the new ray would hit the surface it
// starts on. A fixed epsilon is either too small far from the origin or too large near it (light leaks at
// contacts), so p is moved by a number of float ulps instead: a few hundred ulps of each coordinate, along n,
// clear the rounding at any scale and still keep contact shadows. Coordinates too close to 0 for ulps to mean
// anything are moved by a small fixed amount. This is the integer-offset method of Waechter and Binder, Ray
// Tracing Gems, chapter 6.
__forceinline__ __device__ float offset_axis(float p, float n) {
    constexpr float ORIGIN = 1.0f / 32.0f;
    constexpr float FLOAT_SCALE = 1.0f / 65536.0f;
    constexpr float INT_SCALE = 256.0f;
    const int of = static_cast<int>(INT_SCALE * n);
    const float moved = __int_as_float(__float_as_int(p) + (p < 0.0f ? -of : of));
    return fabsf(p) < ORIGIN ? p + FLOAT_SCALE * n : moved;
}

__forceinline__ __device__ float3 offset_ray(float3 p, float3 n) {
    return make_float3(offset_axis(p.x, n.x), offset_axis(p.y, n.y), offset_axis(p.z, n.z));
}

// An orthonormal frame (s, t, n) around a unit normal n. BSDFs work in it: local z is the normal, so cos theta
// of a local direction is its z.
struct Frame {
    float3 s;
    float3 t;
    float3 n;

    __forceinline__ __device__ float3 to_world(float3 v) const { return s * v.x + t * v.y + n * v.z; }
    __forceinline__ __device__ float3 to_local(float3 v) const { return make_float3(dot(s, v), dot(t, v), dot(n, v)); }
};

// Duff et al., "Building an Orthonormal Basis, Revisited" (JCGT 2017): Frisvad's construction with copysign in
// place of his special case near n.z = -1, so that it has no branch and stays accurate for every n.
__forceinline__ __device__ Frame frame_from_normal(float3 n) {
    const float sign = copysignf(1.0f, n.z);
    const float a = -1.0f / (sign + n.z);
    const float b = n.x * n.y * a;
    return Frame{make_float3(1.0f + sign * n.x * n.x * a, sign * b, -sign * n.x),
                 make_float3(b, sign + n.y * n.y * a, -n.y), n};
}

// A cosine-weighted direction in the local frame (z up) from two uniforms in [0, 1): Malley's method, a
// uniform point on the unit disk lifted to the hemisphere. Its pdf is z / pi per unit solid angle.
__forceinline__ __device__ float3 sample_cosine_hemisphere(float u1, float u2) {
    const float r = sqrtf(u1);
    float s, c;
    __sincosf(2.0f * PI * u2, &s, &c);
    return make_float3(r * c, r * s, sqrtf(fmaxf(0.0f, 1.0f - u1)));
}

}  // namespace pt
