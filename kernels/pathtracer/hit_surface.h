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
    SurfacePoint sp;                  // normals, texture coordinates, the colour (vertex or shape colour)
    float3 point;                     // the hit point, on the surface
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
    h.flags = mesh.flags;
    h.emitter = mesh.emitter_offset + prim;
    return h;
}

// A shape's colour as a surface point's colour (linear RGB, opaque).
__forceinline__ __device__ float4 opaque_color(float3 c) { return make_float4(c.x, c.y, c.z, 1.0f); }

// The material, flags and colour of primitive `prim` of a shape; the caller sets the geometry.
__forceinline__ __device__ HitSurface shape_material(const ShapeRecord& shape, unsigned int prim) {
    const unsigned int id = shape.material_ids ? __ldg(shape.material_ids + prim) : 0u;
    const ShapeMaterial& m = shape.materials[id];
    HitSurface h;
    h.material = m.material;
    h.flags = m.flags;
    h.emitter = 0u;
    h.sp.color = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    return h;
}

}  // namespace pt
