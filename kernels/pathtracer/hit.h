// The surface a radiance ray hit, from its payload (integrator.h): a mesh's triangle, or with OA_SHAPES (a program
// built for a scene with spheres or curves, optixasync/render/_source.py) a sphere or a curve segment, with
// OA_CUSTOM a custom primitive (hit_custom.h); with
// OA_MOTION (a scene with moving meshes) a moving mesh's triangle where it is at the ray's time.
#pragma once

#include "pathtracer/hit_surface.h"
#include "pathtracer/records.h"
#ifdef OA_SHAPES
#include "pathtracer/hit_curve.h"
#include "pathtracer/hit_sphere.h"
#endif
#ifdef OA_CUSTOM
#include "pathtracer/hit_custom.h"
#endif
#ifdef OA_MOTION
#include "pathtracer/motion.h"
#endif

namespace pt {

// `hit`: the radiance payload of a ray from `origin` along `direction` at `time` that hit something
// (hit[2] != NO_HIT).
__forceinline__ __device__ HitSurface hit_surface(const SceneRecord& S, const unsigned int (&hit)[5], float3 origin,
                                                  float3 direction, float time) {
#ifdef OA_SHAPES
    if (hit[2] & SHAPE_HIT) {
        const ShapeRecord& shape = S.shapes[hit[2] & ~SHAPE_HIT];
        const float t = __uint_as_float(hit[0]);
        if (shape.kind == SHAPE_SPHERES) return sphere_surface(shape, hit[1], origin, direction, t);
#ifdef OA_CUSTOM
        if (shape.kind == SHAPE_CUSTOM) return custom_surface(shape, hit[1], origin, direction, t);
#endif
        return curve_surface(shape, hit[1], __uint_as_float(hit[3]), origin, direction, t);
    }
#endif
#ifdef OA_MOTION
    if (S.motions && S.motions[hit[2]].num_keys > 1) {
        return moving_triangle_surface(S.meshes[hit[2]], S.motions[hit[2]], hit[1], __uint_as_float(hit[3]),
                                       __uint_as_float(hit[4]), time);
    }
#endif
    return triangle_surface(S.meshes[hit[2]], hit[1], __uint_as_float(hit[3]), __uint_as_float(hit[4]));
}

}  // namespace pt
