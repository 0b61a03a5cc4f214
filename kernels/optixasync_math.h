// optixasync device math for built-in primitives and motion: curve bases, motion keys, SRT and affine transforms.
//
// Plain arithmetic on NVRTC's vector types (float3, float4), no OptiX intrinsic: optixasync_device.h builds the
// hit-attribute and transform helpers on it, and the CPU tests compile it for the host (with stand-in vector
// types) to check its numbers against numpy.
//
// Conventions (those of OptiX):
// * A curve segment reads degree + 1 control points, each a float4 (x, y, z, radius); the radius is interpolated
//   with the same basis as the position. u in [0, 1] runs along the segment.
// * Motion keys are spread evenly over [time_begin, time_end]; a time outside is clamped to the first or last key.
// * An affine transform is three float4 rows (m0, m1, m2): p' = (m0 . (p, 1), m1 . (p, 1), m2 . (p, 1)).
// * SRT data is 16 floats: sx a b pvx sy c pvy sz pvz qx qy qz qw tx ty tz. The transform is
//   p' = R (S p + pv) + t with S = [[sx a b] [0 sy c] [0 0 sz]] and R the rotation of the unit quaternion q.
#pragma once

namespace oa {

// ---- small vector helpers ----------------------------------------------------------------------------------------
__forceinline__ __device__ float4 mix4(float4 a, float4 b, float t) {
    return make_float4(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t, a.z + (b.z - a.z) * t, a.w + (b.w - a.w) * t);
}
__forceinline__ __device__ float4 scale4(float4 a, float s) { return make_float4(a.x * s, a.y * s, a.z * s, a.w * s); }
__forceinline__ __device__ float4 add4(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
__forceinline__ __device__ float3 xyz(float4 a) { return make_float3(a.x, a.y, a.z); }
__forceinline__ __device__ float dot3(float3 a, float3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
__forceinline__ __device__ float3 sub3(float3 a, float3 b) { return make_float3(a.x - b.x, a.y - b.y, a.z - b.z); }
__forceinline__ __device__ float3 normalized3(float3 a) {
    const float inv = 1.0f / sqrtf(dot3(a, a));
    return make_float3(a.x * inv, a.y * inv, a.z * inv);
}

// ---- curve bases: the point (xyz) and radius (w) of a segment at u -------------------------------------------------
__forceinline__ __device__ float4 linear_curve_point(const float4 cp[2], float u) { return mix4(cp[0], cp[1], u); }

// Uniform quadratic B-spline.
__forceinline__ __device__ float4 quadratic_bspline_point(const float4 cp[3], float u) {
    const float v = 1.0f - u;
    return add4(add4(scale4(cp[0], 0.5f * v * v), scale4(cp[1], 0.5f + u * v)), scale4(cp[2], 0.5f * u * u));
}

// Uniform cubic B-spline.
__forceinline__ __device__ float4 cubic_bspline_point(const float4 cp[4], float u) {
    const float u2 = u * u, u3 = u2 * u, v = 1.0f - u;
    const float b0 = v * v * v / 6.0f;
    const float b1 = (3.0f * u3 - 6.0f * u2 + 4.0f) / 6.0f;
    const float b2 = (-3.0f * u3 + 3.0f * u2 + 3.0f * u + 1.0f) / 6.0f;
    const float b3 = u3 / 6.0f;
    return add4(add4(scale4(cp[0], b0), scale4(cp[1], b1)), add4(scale4(cp[2], b2), scale4(cp[3], b3)));
}

// Uniform Catmull-Rom (the segment runs from cp[1] at u = 0 to cp[2] at u = 1).
__forceinline__ __device__ float4 catmullrom_point(const float4 cp[4], float u) {
    const float u2 = u * u, u3 = u2 * u;
    const float b0 = 0.5f * (-u3 + 2.0f * u2 - u);
    const float b1 = 0.5f * (3.0f * u3 - 5.0f * u2 + 2.0f);
    const float b2 = 0.5f * (-3.0f * u3 + 4.0f * u2 + u);
    const float b3 = 0.5f * (u3 - u2);
    return add4(add4(scale4(cp[0], b0), scale4(cp[1], b1)), add4(scale4(cp[2], b2), scale4(cp[3], b3)));
}

// Cubic Bezier (interpolates cp[0] and cp[3]).
__forceinline__ __device__ float4 cubic_bezier_point(const float4 cp[4], float u) {
    const float v = 1.0f - u;
    return add4(add4(scale4(cp[0], v * v * v), scale4(cp[1], 3.0f * u * v * v)),
                add4(scale4(cp[2], 3.0f * u * u * v), scale4(cp[3], u * u * u)));
}

// The normal of a round curve at a surface point: a round curve is the envelope of the spheres of its points and
// radii, so at the point where the sphere of u touches it the surface normal is the sphere's. (At u = 0 or 1 on a
// capped end, the same expression gives the cap's normal.)
__forceinline__ __device__ float3 round_curve_normal(float3 surface_point, float4 point_radius) {
    return normalized3(sub3(surface_point, xyz(point_radius)));
}

// ---- motion --------------------------------------------------------------------------------------------------------
// The key interval of `time` among `num_keys` keys spread over [begin, end]: its first key and the fraction within.
__forceinline__ __device__ void motion_key(float time, float begin, float end, unsigned int num_keys, int& key,
                                           float& fraction) {
    const float intervals = (float)(num_keys - 1u);
    float local = intervals * ((time - begin) / (end - begin));
    if (!(local == local)) local = 0.0f;  // NaN when begin == end (before the clamp, which would swallow it)
    local = fmaxf(0.0f, fminf(intervals, local));
    const float first = fminf(floorf(local), intervals - 1.0f);
    key = (int)first;
    fraction = local - first;
}

// ---- affine transforms -----------------------------------------------------------------------------------------------
struct Affine {
    float4 m0, m1, m2;
};

__forceinline__ __device__ Affine affine_identity() {
    return Affine{make_float4(1.f, 0.f, 0.f, 0.f), make_float4(0.f, 1.f, 0.f, 0.f), make_float4(0.f, 0.f, 1.f, 0.f)};
}

__forceinline__ __device__ Affine affine_from(const float m[12]) {
    return Affine{make_float4(m[0], m[1], m[2], m[3]), make_float4(m[4], m[5], m[6], m[7]),
                  make_float4(m[8], m[9], m[10], m[11])};
}

__forceinline__ __device__ float3 transform_point(const Affine& a, float3 p) {
    return make_float3(a.m0.x * p.x + a.m0.y * p.y + a.m0.z * p.z + a.m0.w,
                       a.m1.x * p.x + a.m1.y * p.y + a.m1.z * p.z + a.m1.w,
                       a.m2.x * p.x + a.m2.y * p.y + a.m2.z * p.z + a.m2.w);
}

__forceinline__ __device__ float3 transform_vector(const Affine& a, float3 v) {
    return make_float3(a.m0.x * v.x + a.m0.y * v.y + a.m0.z * v.z, a.m1.x * v.x + a.m1.y * v.y + a.m1.z * v.z,
                       a.m2.x * v.x + a.m2.y * v.y + a.m2.z * v.z);
}

// A normal through the transform whose INVERSE is `inverse` (n' = inverse^T n): pass the world-to-object transform
// to move an object-space normal to world space.
__forceinline__ __device__ float3 transform_normal(const Affine& inverse, float3 n) {
    return make_float3(inverse.m0.x * n.x + inverse.m1.x * n.y + inverse.m2.x * n.z,
                       inverse.m0.y * n.x + inverse.m1.y * n.y + inverse.m2.y * n.z,
                       inverse.m0.z * n.x + inverse.m1.z * n.y + inverse.m2.z * n.z);
}

// a * b: first b, then a.
__forceinline__ __device__ Affine compose(const Affine& a, const Affine& b) {
    const float4* rows[3] = {&a.m0, &a.m1, &a.m2};
    float4 out[3];
    for (int r = 0; r < 3; ++r) {
        const float4 x = *rows[r];
        out[r] = make_float4(x.x * b.m0.x + x.y * b.m1.x + x.z * b.m2.x, x.x * b.m0.y + x.y * b.m1.y + x.z * b.m2.y,
                             x.x * b.m0.z + x.y * b.m1.z + x.z * b.m2.z,
                             x.x * b.m0.w + x.y * b.m1.w + x.z * b.m2.w + x.w);
    }
    return Affine{out[0], out[1], out[2]};
}

__forceinline__ __device__ Affine invert(const Affine& a) {
    const float4 r0 = a.m0, r1 = a.m1, r2 = a.m2;
    const float c00 = r1.y * r2.z - r1.z * r2.y, c01 = r0.z * r2.y - r0.y * r2.z, c02 = r0.y * r1.z - r0.z * r1.y;
    const float c10 = r1.z * r2.x - r1.x * r2.z, c11 = r0.x * r2.z - r0.z * r2.x, c12 = r0.z * r1.x - r0.x * r1.z;
    const float c20 = r1.x * r2.y - r1.y * r2.x, c21 = r0.y * r2.x - r0.x * r2.y, c22 = r0.x * r1.y - r0.y * r1.x;
    const float inv = 1.0f / (r0.x * c00 + r0.y * c10 + r0.z * c20);
    Affine out;
    out.m0 = make_float4(c00 * inv, c01 * inv, c02 * inv, 0.f);
    out.m1 = make_float4(c10 * inv, c11 * inv, c12 * inv, 0.f);
    out.m2 = make_float4(c20 * inv, c21 * inv, c22 * inv, 0.f);
    const float3 t = make_float3(r0.w, r1.w, r2.w);
    out.m0.w = -(out.m0.x * t.x + out.m0.y * t.y + out.m0.z * t.z);
    out.m1.w = -(out.m1.x * t.x + out.m1.y * t.y + out.m1.z * t.z);
    out.m2.w = -(out.m2.x * t.x + out.m2.y * t.y + out.m2.z * t.z);
    return out;
}

// Two matrix keys mixed at `fraction`.
__forceinline__ __device__ Affine mix_affine(const float first[12], const float second[12], float fraction) {
    float m[12];
    for (int k = 0; k < 12; ++k) m[k] = first[k] + (second[k] - first[k]) * fraction;
    return affine_from(m);
}

// The matrix of SRT data (16 floats, see the top of this header); the quaternion must be of unit length.
__forceinline__ __device__ Affine srt_affine(const float s[16]) {
    const float sx = s[0], a = s[1], b = s[2], pvx = s[3], sy = s[4], c = s[5], pvy = s[6], sz = s[7], pvz = s[8];
    const float qx = s[9], qy = s[10], qz = s[11], qw = s[12];
    // R of the quaternion
    const float r00 = qw * qw + qx * qx - qy * qy - qz * qz, r01 = 2.f * (qx * qy - qz * qw);
    const float r02 = 2.f * (qx * qz + qy * qw), r10 = 2.f * (qx * qy + qz * qw);
    const float r11 = qw * qw - qx * qx + qy * qy - qz * qz, r12 = 2.f * (qy * qz - qx * qw);
    const float r20 = 2.f * (qx * qz - qy * qw), r21 = 2.f * (qy * qz + qx * qw);
    const float r22 = qw * qw - qx * qx - qy * qy + qz * qz;
    // R * S, translation R pv + t
    Affine out;
    out.m0 = make_float4(r00 * sx, r00 * a + r01 * sy, r00 * b + r01 * c + r02 * sz,
                         r00 * pvx + r01 * pvy + r02 * pvz + s[13]);
    out.m1 = make_float4(r10 * sx, r10 * a + r11 * sy, r10 * b + r11 * c + r12 * sz,
                         r10 * pvx + r11 * pvy + r12 * pvz + s[14]);
    out.m2 = make_float4(r20 * sx, r20 * a + r21 * sy, r20 * b + r21 * c + r22 * sz,
                         r20 * pvx + r21 * pvy + r22 * pvz + s[15]);
    return out;
}

// Two SRT keys mixed at `fraction`: every component linearly, then the quaternion normalized again.
__forceinline__ __device__ Affine mix_srt(const float first[16], const float second[16], float fraction) {
    float s[16];
    for (int k = 0; k < 16; ++k) s[k] = first[k] + (second[k] - first[k]) * fraction;
    const float inv = 1.0f / sqrtf(s[9] * s[9] + s[10] * s[10] + s[11] * s[11] + s[12] * s[12]);
    for (int k = 9; k < 13; ++k) s[k] *= inv;
    return srt_affine(s);
}

}  // namespace oa
