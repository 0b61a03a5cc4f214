// Hit attributes of custom primitives (optixasync/scene/_custom.py): the hit point, and the normal its type's
// `normal` gives there (the generated custom_normal dispatch, optixasync/render/_source.py).
#pragma once

#include "pathtracer/hit_surface.h"
#include "pathtracer/shapes.h"
#include "pathtracer/vec_math.h"

namespace pt {

// The data row of primitive `prim` of a custom shape.
__forceinline__ __device__ const float* custom_data(const ShapeRecord& shape, unsigned int prim) {
    return shape.points + shape.stride * prim;
}

__forceinline__ __device__ HitSurface custom_surface(const ShapeRecord& shape, unsigned int prim, float3 origin,
                                                     float3 direction, float t) {
    const float3 point = origin + direction * t;
    const float3 n = custom_normal(shape.custom_type, custom_data(shape, prim), point);
    HitSurface h = shape_material(shape, prim);
    h.sp.ng = n;
    h.sp.ns = n;
    h.sp.uv = make_float2(0.0f, 0.0f);
    h.point = point;
    if (shape.colors) h.sp.color = opaque_color(load3(shape.colors + 3u * prim));
    return h;
}

}  // namespace pt
