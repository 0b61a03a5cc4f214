// Hit attributes of spheres: the normal, texture coordinates and hit point of a ray's hit on sphere `prim`.
//
// The spheres are read from the scene's own copy of the centres and radii (the arrays the GAS was built from), so
// the structure needs no random vertex access. The hit point is put back on the sphere: the centre plus the radius
// along the normal, whatever rounding origin + t * direction had.
#pragma once

#include "pathtracer/hit_surface.h"
#include "pathtracer/shapes.h"
#include "pathtracer/vec_math.h"

namespace pt {

// The outward unit normal at a point near the sphere's surface.
__forceinline__ __device__ float3 sphere_normal(float3 center, float3 point) { return normalize(point - center); }

// Spherical coordinates of a unit normal about +z: u = longitude / 2 pi (0 at -x), v = colatitude / pi (0 at +z).
__forceinline__ __device__ float2 sphere_uv(float3 n) {
    const float u = 0.5f + atan2f(n.y, n.x) * (0.5f * INV_PI);
    const float v = acosf(fminf(fmaxf(n.z, -1.0f), 1.0f)) * INV_PI;
    return make_float2(u, v);
}

__forceinline__ __device__ HitSurface sphere_surface(const ShapeRecord& shape, unsigned int prim, float3 origin,
                                                     float3 direction, float t) {
    const float3 center = load3(shape.points + 3u * prim);
    const float radius = __ldg(shape.radii + ((shape.flags & SHAPE_ONE_RADIUS) ? 0u : prim));
    const float3 n = sphere_normal(center, origin + direction * t);
    HitSurface h = shape_material(shape, prim);
    h.sp.ng = n;
    h.sp.ns = n;
    h.sp.uv = sphere_uv(n);
    h.point = center + n * radius;
    if (shape.colors) h.sp.color = opaque_color(load3(shape.colors + 3u * prim));
    return h;
}

}  // namespace pt
