// What a radiance ray hit, as the integrator shades it: the surface point, its material, its flags, whatever the
// primitive (a mesh's triangle here; spheres in hit_sphere.h, curves in hit_curve.h; hit.h picks one).
//
// The hit point comes from the primitive's own parameters (a triangle's barycentrics, a sphere's centre and
// radius, a curve's parameter), not from origin + t * direction: that one's error grows with the distance the
// ray travelled, which offset_ray (geometry.h) does not allow for.
#pragma once

#include "pathtracer/records.h"
#include "pathtracer/shapes.h"
#include "pathtracer/surface.h"
#include "pathtracer/vec_math.h"

namespace pt {

struct HitSurface {
    SurfacePoint sp;                  // normals and texture coordinates
    float3 point;                     // the hit point, on the surface
    float3 tint;                      // shapes: the point's colour, multiplying the reflectance (1 for meshes)
    const MaterialRecord* material;
    unsigned int flags;               // MeshFlags
    unsigned int emitter;             // meshes: the triangle's entry in the emitter table (MESH_LIGHT_SAMPLED)
};

// Triangle `prim` of mesh record `mesh` at barycentrics (b1, b2).
__forceinline__ __device__ HitSurface triangle_surface(const MeshRecord& mesh, unsigned int prim, float b1, float b2) {
    HitSurface h;
    h.material = mesh.material;
    const Triangle tri = load_triangle(mesh, prim);
    h.sp = surface_point(mesh, *h.material, tri, b1, b2);
    h.point = barycentric(tri.p0, tri.p1, tri.p2, b1, b2);
    h.tint = make_float3(1.0f, 1.0f, 1.0f);
    h.flags = mesh.flags;
    h.emitter = mesh.emitter_offset + prim;
    return h;
}

// The material, flags and colour of primitive `prim` of a shape; the caller sets the geometry.
__forceinline__ __device__ HitSurface shape_material(const ShapeRecord& shape, unsigned int prim) {
    const unsigned int id = shape.material_ids ? __ldg(shape.material_ids + prim) : 0u;
    const ShapeMaterial& m = shape.materials[id];
    HitSurface h;
    h.material = m.material;
    h.flags = m.flags;
    h.emitter = 0u;
    h.tint = make_float3(1.0f, 1.0f, 1.0f);
    return h;
}

// The hit's reflectance: its material's colour (texture applied), times the point's colour on shapes. The BSDF's
// colour and the denoiser's albedo.
__forceinline__ __device__ float3 hit_color(const HitSurface& h) {
#ifdef OA_SHAPES
    return surface_color(*h.material, h.sp.uv) * h.tint;
#else
    return surface_color(*h.material, h.sp.uv);
#endif
}

}  // namespace pt
