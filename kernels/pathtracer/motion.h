// Motion blur: the time of a camera path, and the triangles of moving meshes at that time (a program built for a
// scene with motion keys, OA_MOTION; optixasync/render/_source.py).
//
// A camera path samples one time in the shutter interval and traces every ray of the path at it; OptiX moves
// the geometry (motion transforms, motion GAS) and the hit is shaded where the mesh is then: its keys
// interpolated here as OptiX interpolates them, linearly between the two keys around the time (matrices entry
// by entry, vertices point by point), clamped to the first and last key outside their times.
#pragma once

#include "optixasync_math.h"
#include "pathtracer/hit_surface.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/surface.h"
#include "pathtracer/vec_math.h"

// One per mesh record (optixasync/render/_motion.py mirrors it); num_keys < 2: the mesh is static.
struct MeshMotion {
    const float* transforms;                 // moving instance: num_keys object-to-world 3x4 row-major, or null
    const unsigned long long* vertex_keys;   // deforming mesh: num_keys addresses of (V, 3) float32, or null
    unsigned int num_keys;
    float time_begin;                        // the times of the first and the last key
    float time_end;
    unsigned int pad;
};

namespace pt {

// The time of a camera path: uniform in the shutter interval (one random number of the path's stream).
__forceinline__ __device__ float path_time(const SceneRecord& S, Pcg32& rng) {
    return S.shutter_open + (S.shutter_close - S.shutter_open) * rng.uniform();
}

// Corner `i` of a deforming mesh at the key interval (key, key + 1) and the fraction within.
__forceinline__ __device__ float3 vertex_at(const MeshMotion& m, int key, float fraction, unsigned int i) {
    const float3 a = load3(reinterpret_cast<const float*>(m.vertex_keys[key]) + 3u * i);
    const float3 b = load3(reinterpret_cast<const float*>(m.vertex_keys[key + 1]) + 3u * i);
    return a + (b - a) * fraction;
}

// The mesh record as it is at the key fraction: a moving instance's to_world and normal_to_world interpolated
// (and its mirrored flag from that matrix).
__forceinline__ __device__ void place_at(MeshRecord& mesh, const MeshMotion& m, int key, float fraction) {
    const float* a = m.transforms + 12 * key;
    for (int k = 0; k < 12; ++k) mesh.to_world[k] = a[k] + (a[12 + k] - a[k]) * fraction;
    const float* t = mesh.to_world;
    const float c00 = t[5] * t[10] - t[6] * t[9], c01 = t[6] * t[8] - t[4] * t[10], c02 = t[4] * t[9] - t[5] * t[8];
    const float c10 = t[2] * t[9] - t[1] * t[10], c11 = t[0] * t[10] - t[2] * t[8], c12 = t[1] * t[8] - t[0] * t[9];
    const float c20 = t[1] * t[6] - t[2] * t[5], c21 = t[2] * t[4] - t[0] * t[6], c22 = t[0] * t[5] - t[1] * t[4];
    const float det = t[0] * c00 + t[1] * c01 + t[2] * c02;
    const float inv = 1.0f / det;  // the inverse transpose of the 3x3 part: its cofactors over the determinant
    const float n[9] = {c00 * inv, c01 * inv, c02 * inv, c10 * inv, c11 * inv, c12 * inv, c20 * inv, c21 * inv,
                        c22 * inv};
    for (int k = 0; k < 9; ++k) mesh.normal_to_world[k] = n[k];
    mesh.flags |= MESH_INSTANCED;
    if (det < 0.0f) mesh.flags |= MESH_MIRRORED; else mesh.flags &= ~static_cast<unsigned int>(MESH_MIRRORED);
}

// Triangle `prim` of a moving mesh at `time`, at barycentrics (b1, b2).
__forceinline__ __device__ HitSurface moving_triangle_surface(const MeshRecord& record, const MeshMotion& m,
                                                              unsigned int prim, float b1, float b2, float time) {
    int key;
    float fraction;
    oa::motion_key(time, m.time_begin, m.time_end, m.num_keys, key, fraction);
    MeshRecord mesh = record;
    if (m.transforms) place_at(mesh, m, key, fraction);
    Triangle tri = load_triangle(mesh, prim);
    if (m.vertex_keys) {
        tri.p0 = vertex_at(m, key, fraction, tri.i0);
        tri.p1 = vertex_at(m, key, fraction, tri.i1);
        tri.p2 = vertex_at(m, key, fraction, tri.i2);
        if (mesh.flags & MESH_INSTANCED) {
            tri.p0 = place_point(mesh.to_world, tri.p0);
            tri.p1 = place_point(mesh.to_world, tri.p1);
            tri.p2 = place_point(mesh.to_world, tri.p2);
        }
    }
    HitSurface h;
    h.material = mesh.material;
    h.sp = surface_point(mesh, *h.material, tri, b1, b2);
    h.point = barycentric(tri.p0, tri.p1, tri.p2, b1, b2);
    h.flags = mesh.flags;
    h.emitter = mesh.emitter_offset + prim;
    return h;
}

}  // namespace pt
