// Hit attributes of round curves: the curve's point, radius and tangent at a parameter, and the normal, texture
// coordinates and hit point of a ray's hit on segment `prim` at the curve parameter OptiX reports.
//
// A round curve is the surface swept by a sphere whose centre and radius follow the segment's basis
// (optixasync_math.h); where the sphere of parameter u touches the surface, the surface's normal is that sphere's.
// Control points, radii and colours are read from the scene's own arrays (those the GAS was built from).
#pragma once

#include "optixasync_math.h"
#include "pathtracer/hit_surface.h"
#include "pathtracer/shapes.h"
#include "pathtracer/vec_math.h"

namespace pt {

// Control points a segment of each kind reads.
__forceinline__ __device__ unsigned int curve_points(unsigned int kind) {
    return kind == SHAPE_LINEAR ? 2u : kind == SHAPE_QUADRATIC_BSPLINE ? 3u : 4u;
}

// The centre (xyz) and radius (w) of a segment at u, from its control points (x, y, z, radius).
__forceinline__ __device__ float4 curve_point(unsigned int kind, const float4 cp[4], float u) {
    switch (kind) {
        case SHAPE_LINEAR: return oa::linear_curve_point(cp, u);
        case SHAPE_QUADRATIC_BSPLINE: return oa::quadratic_bspline_point(cp, u);
        case SHAPE_CATMULL_ROM: return oa::catmullrom_point(cp, u);
        case SHAPE_BEZIER: return oa::cubic_bezier_point(cp, u);
        default: return oa::cubic_bspline_point(cp, u);
    }
}

// Weights of the derivative d/du of each basis at u (those of the points' combination differentiated).
__forceinline__ __device__ float4 curve_derivative_weights(unsigned int kind, float u) {
    const float v = 1.0f - u, u2 = u * u;
    switch (kind) {
        case SHAPE_LINEAR: return make_float4(-1.0f, 1.0f, 0.0f, 0.0f);
        case SHAPE_QUADRATIC_BSPLINE: return make_float4(-v, v - u, u, 0.0f);
        case SHAPE_CATMULL_ROM:
            return make_float4(0.5f * (-3.0f * u2 + 4.0f * u - 1.0f), 0.5f * (9.0f * u2 - 10.0f * u),
                               0.5f * (-9.0f * u2 + 8.0f * u + 1.0f), 0.5f * (3.0f * u2 - 2.0f * u));
        case SHAPE_BEZIER:
            return make_float4(-3.0f * v * v, 3.0f * v * (v - 2.0f * u), 3.0f * u * (2.0f * v - u), 3.0f * u2);
        default: return make_float4(-0.5f * v * v, 1.5f * u2 - 2.0f * u, -1.5f * u2 + u + 0.5f, 0.5f * u2);
    }
}

// The curve's tangent d(centre)/du at u (not normalized; zero where the control points coincide).
__forceinline__ __device__ float3 curve_tangent(unsigned int kind, const float4 cp[4], float u) {
    const float4 w = curve_derivative_weights(kind, u);
    return xyz(cp[0]) * w.x + xyz(cp[1]) * w.y + xyz(cp[2]) * w.z + xyz(cp[3]) * w.w;
}

// The unit normal of a round curve at a point near its surface: away from the centre of the sphere at u.
__forceinline__ __device__ float3 curve_normal(float4 center_radius, float3 point) {
    return normalize(point - xyz(center_radius));
}

// The control points (x, y, z, radius) of segment `prim`; those a kind does not read repeat its last one.
__forceinline__ __device__ void load_curve_segment(const ShapeRecord& shape, unsigned int prim, float4 cp[4]) {
    const unsigned int first = __ldg(shape.indices + prim), count = curve_points(shape.kind);
#pragma unroll
    for (unsigned int k = 0; k < 4u; ++k) {
        const unsigned int i = first + (k < count ? k : count - 1u);
        const float3 p = load3(shape.points + 3u * i);
        cp[k] = make_float4(p.x, p.y, p.z, __ldg(shape.radii + i));
    }
}

// The point's colour: the control points' colours combined by the curve's basis.
__forceinline__ __device__ float3 curve_color(const ShapeRecord& shape, unsigned int prim, float u) {
    const unsigned int first = __ldg(shape.indices + prim), count = curve_points(shape.kind);
    float4 c[4];
#pragma unroll
    for (unsigned int k = 0; k < 4u; ++k) {
        const float3 rgb = load3(shape.colors + 3u * (first + (k < count ? k : count - 1u)));
        c[k] = make_float4(rgb.x, rgb.y, rgb.z, 0.0f);
    }
    return xyz(curve_point(shape.kind, c, u));
}

__forceinline__ __device__ HitSurface curve_surface(const ShapeRecord& shape, unsigned int prim, float u,
                                                    float3 origin, float3 direction, float t) {
    float4 cp[4];
    load_curve_segment(shape, prim, cp);
    const float4 c = curve_point(shape.kind, cp, u);
    const float3 n = curve_normal(c, origin + direction * t);
    HitSurface h = shape_material(shape, prim);
    h.sp.ng = n;
    h.sp.ns = n;
    h.sp.uv = make_float2(u, 0.0f);
    h.point = xyz(c) + n * c.w;
    if (shape.colors) h.sp.color = opaque_color(curve_color(shape, prim, u));
    return h;
}

}  // namespace pt
