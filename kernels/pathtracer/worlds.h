// Many worlds in one instance structure: each world is a copy of the scene placed in a cell of its own, and the
// rays of a world never leave its cell.
//
// World w's instances are its meshes moved by its offset (ViewBatch::world_offsets[w]); its mesh records (the
// scene's, one block of meshes_per_world per world) are placed the same way, so that everything the integrator
// computes from a hit is in the structure's space. The cells are far enough apart that a ray clipped to its own
// cell (clip_to_cell) meets nothing of another world; light sources are the scene's, in a world's own
// coordinates, so light sampling sees the shading point minus the offset. place_world_mesh is the placement of
// one (world, mesh) pair, written on the GPU every step by the placement kernel (optixasync/render/_worlds.py) and
// on the CPU by the host build.
#pragma once

#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

// The ray's parameter range [tmin, tmax] narrowed to the box [lo, hi]; false when the ray misses the box.
__forceinline__ __device__ bool clip_to_box(float3 lo, float3 hi, float3 o, float3 d, float& tmin, float& tmax) {
    const float os[3] = {o.x, o.y, o.z};
    const float ds[3] = {d.x, d.y, d.z};
    const float los[3] = {lo.x, lo.y, lo.z};
    const float his[3] = {hi.x, hi.y, hi.z};
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        if (ds[a] != 0.0f) {
            const float inv = 1.0f / ds[a];
            const float t0 = (los[a] - os[a]) * inv, t1 = (his[a] - os[a]) * inv;
            tmin = fmaxf(tmin, fminf(t0, t1));
            tmax = fminf(tmax, fmaxf(t0, t1));
        } else if (os[a] < los[a] || os[a] > his[a]) {
            return false;
        }
    }
    return tmin <= tmax;
}

// The placement of a world's mesh: `m` is its object-to-world transform in the world's own coordinates (3 rows of
// 4), `offset` the world's cell. Writes the mesh record's transform, its normals' (the inverse transpose) and its
// flags (instanced; mirrored when the transform turns space inside out), and the 12 floats of the instance's
// transform.
__forceinline__ __device__ void place_world_mesh(const float* m, float4 offset, MeshRecord& record, float* instance) {
    const float3 a = make_float3(m[0], m[4], m[8]), b = make_float3(m[1], m[5], m[9]);
    const float3 c = make_float3(m[2], m[6], m[10]);
    const float3 bc = cross(b, c), ca = cross(c, a), ab = cross(a, b);
    const float det = dot(a, bc);
    const float inv = det != 0.0f ? 1.0f / det : 0.0f;
    // inverse(M) has rows bc, ca, ab over det; its transpose has them as columns
    const float n[9] = {bc.x * inv, ca.x * inv, ab.x * inv, bc.y * inv, ca.y * inv, ab.y * inv,
                        bc.z * inv, ca.z * inv, ab.z * inv};
    const float shift[3] = {offset.x, offset.y, offset.z};
#pragma unroll
    for (int r = 0; r < 3; ++r) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float value = k == 3 ? m[4 * r + 3] + shift[r] : m[4 * r + k];
            record.to_world[4 * r + k] = value;
            instance[4 * r + k] = value;
        }
    }
#pragma unroll
    for (int i = 0; i < 9; ++i) record.normal_to_world[i] = n[i];
    record.flags = (record.flags & ~static_cast<unsigned int>(MESH_MIRRORED)) | MESH_INSTANCED |
                   (det < 0.0f ? static_cast<unsigned int>(MESH_MIRRORED) : 0u);
}

}  // namespace pt
