// What a ray hit: the surface point's geometry (normals, texture coordinates, shading frame) and its material's
// colour, emission and opacity, with the textures looked up (the BSDF itself is the generated surface_bsdf, bsdf.h).
//
// Two normals matter. The geometric normal ng is the triangle's winding normal: it decides the front side for
// emission and which side a new ray starts from. The shading normal comes from the mesh's per-vertex normals
// (interpolated; the winding normal without them) and a normal map on top; BSDFs work in its frame, and which
// side of it the ray arrived on decides front or back for reflection (the reference renderer's convention).
#pragma once

#include "pathtracer/features.h"
#include "pathtracer/geometry.h"
#include "pathtracer/records.h"
#include "pathtracer/texture.h"
#include "pathtracer/vec_math.h"

namespace pt {

__forceinline__ __device__ float2 load2(const float* p) { return make_float2(__ldg(p), __ldg(p + 1)); }

__forceinline__ __device__ float3 barycentric(float3 a, float3 b, float3 c, float b1, float b2) {
    return a * (1.0f - b1 - b2) + b * b1 + c * b2;
}

struct SurfacePoint {
    float3 ng;      // unit winding normal
    float3 ns;      // unit shading normal (per-vertex normals and the normal map applied); it may lean past ng
    float2 uv;      // texture coordinates (0, 0 without them)
    float4 color;   // the vertex colour (linear RGBA, white without one)
};

// The corners of triangle `prim` of a mesh.
struct Triangle {
    unsigned int i0, i1, i2;
    float3 p0, p1, p2;
};

// An instance's placement: row r of the 3x4 matrix m applied to point p (w = 1) or direction (w = 0).
__forceinline__ __device__ float3 place_point(const float* m, float3 p) {
    return make_float3(m[0] * p.x + m[1] * p.y + m[2] * p.z + m[3], m[4] * p.x + m[5] * p.y + m[6] * p.z + m[7],
                       m[8] * p.x + m[9] * p.y + m[10] * p.z + m[11]);
}
__forceinline__ __device__ float3 place_vector(const float* m, float3 v) {
    return make_float3(m[0] * v.x + m[1] * v.y + m[2] * v.z, m[4] * v.x + m[5] * v.y + m[6] * v.z,
                       m[8] * v.x + m[9] * v.y + m[10] * v.z);
}
__forceinline__ __device__ float3 place_normal(const float* n, float3 v) {  // 3x3 row-major
    return make_float3(n[0] * v.x + n[1] * v.y + n[2] * v.z, n[3] * v.x + n[4] * v.y + n[5] * v.z,
                       n[6] * v.x + n[7] * v.y + n[8] * v.z);
}

// The triangle's corners in world space (an instance's are placed by its transform here, so that everything
// after works in world space alone).
__forceinline__ __device__ Triangle load_triangle(const MeshRecord& mesh, unsigned int prim) {
    const unsigned int* tri = mesh.indices + 3u * prim;
    Triangle t;
    t.i0 = __ldg(tri);
    t.i1 = __ldg(tri + 1);
    t.i2 = __ldg(tri + 2);
    t.p0 = load3(mesh.vertices + 3u * t.i0);
    t.p1 = load3(mesh.vertices + 3u * t.i1);
    t.p2 = load3(mesh.vertices + 3u * t.i2);
    if (kInstances && (mesh.flags & MESH_INSTANCED)) {
        t.p0 = place_point(mesh.to_world, t.p0);
        t.p1 = place_point(mesh.to_world, t.p1);
        t.p2 = place_point(mesh.to_world, t.p2);
    }
    return t;
}

__forceinline__ __device__ float2 interpolate_uv(const MeshRecord& mesh, const Triangle& t, float b1, float b2) {
    if (!kUvs || !mesh.uvs) return make_float2(0.0f, 0.0f);
    const float2 a = load2(mesh.uvs + 2u * t.i0), b = load2(mesh.uvs + 2u * t.i1), c = load2(mesh.uvs + 2u * t.i2);
    const float b0 = 1.0f - b1 - b2;
    return make_float2(a.x * b0 + b.x * b1 + c.x * b2, a.y * b0 + b.y * b1 + c.y * b2);
}

// The tangent-space frame of a normal map at the point: the mesh's tangents (glTF: bitangent = cross(n, t) * w),
// or, without them, the direction of increasing u on the triangle and, for the bitangent, that of decreasing v
// (glTF's normal maps point +y towards the top of the image, where v is 0).
__forceinline__ __device__ float3 perturb_normal(const MeshRecord& mesh, const MaterialRecord& m, const Triangle& t,
                                                 float b1, float b2, float2 uv, float3 n) {
    const float4 texel = sample_texture(m.normal_texture, uv, make_float4(0.5f, 0.5f, 1.0f, 1.0f));
    const float3 local = make_float3((2.0f * texel.x - 1.0f) * m.normal_scale, (2.0f * texel.y - 1.0f) * m.normal_scale,
                                     2.0f * texel.z - 1.0f);
    float3 tangent;
    float sign;
    if (kTangents && mesh.tangents) {
        const float* a = mesh.tangents + 4u * t.i0;
        tangent = barycentric(load3(a), load3(mesh.tangents + 4u * t.i1), load3(mesh.tangents + 4u * t.i2), b1, b2);
        sign = __ldg(a + 3) < 0.0f ? -1.0f : 1.0f;
        if (kInstances && (mesh.flags & MESH_INSTANCED)) {
            tangent = place_vector(mesh.to_world, tangent);
            if (mesh.flags & MESH_MIRRORED) sign = -sign;  // a mirror turns the bitangent's handedness
        }
    } else {
        const float2 a = load2(mesh.uvs + 2u * t.i0), b = load2(mesh.uvs + 2u * t.i1), c = load2(mesh.uvs + 2u * t.i2);
        const float du1 = b.x - a.x, dv1 = b.y - a.y, du2 = c.x - a.x, dv2 = c.y - a.y;
        const float det = du1 * dv2 - dv1 * du2;
        const float3 e1 = t.p1 - t.p0, e2 = t.p2 - t.p0;
        const float inv = det != 0.0f ? 1.0f / det : 0.0f;
        tangent = (e1 * dv2 - e2 * dv1) * inv;                 // dp/du
        const float3 dpdv = (e2 * du1 - e1 * du2) * inv;     // dp/dv
        sign = dot(cross(n, tangent), dpdv) > 0.0f ? -1.0f : 1.0f;  // the bitangent points to decreasing v
    }
    tangent = tangent - n * dot(n, tangent);
    const float length2 = dot(tangent, tangent);
    if (!(length2 > 1e-20f)) return n;  // no usable tangent (degenerate UVs): the map cannot be oriented
    tangent = tangent * rsqrtf(length2);
    const float3 bitangent = cross(n, tangent) * sign;
    const float3 mapped = tangent * local.x + bitangent * local.y + n * local.z;
    const float mapped2 = dot(mapped, mapped);
    return mapped2 > 1e-20f ? mapped * rsqrtf(mapped2) : n;
}

// The unit winding normal of a placed triangle: its front side (a mirroring placement reverses the world winding,
// not the front side, which stays the side the placed front normal points to). A ray arrives on the front when
// dot(ray direction, this) < 0: the integrator (emission, black backs) and the any-hit program (culled backs)
// decide by the same expression.
__forceinline__ __device__ float3 front_normal(const MeshRecord& mesh, const Triangle& t) {
    const float3 ng = normalize(cross(t.p1 - t.p0, t.p2 - t.p0));
    return (mesh.flags & MESH_MIRRORED) ? -ng : ng;
}

// The vertex colour at barycentrics (b1, b2) (glTF's COLOR_0: linear RGBA, interpolated across the triangle, that
// multiplies the base colour and the opacity); white for a mesh without one.
__forceinline__ __device__ float4 vertex_color(const MeshRecord& mesh, const Triangle& t, float b1, float b2) {
    if (!kColors || !mesh.colors) return make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    const float* a = mesh.colors + 4u * t.i0;
    const float* b = mesh.colors + 4u * t.i1;
    const float* c = mesh.colors + 4u * t.i2;
    const float b0 = 1.0f - b1 - b2;
    return make_float4(__ldg(a) * b0 + __ldg(b) * b1 + __ldg(c) * b2,
                       __ldg(a + 1) * b0 + __ldg(b + 1) * b1 + __ldg(c + 1) * b2,
                       __ldg(a + 2) * b0 + __ldg(b + 2) * b1 + __ldg(c + 2) * b2,
                       __ldg(a + 3) * b0 + __ldg(b + 3) * b1 + __ldg(c + 3) * b2);
}

// The surface point at barycentrics (b1, b2) of triangle `t`.
__forceinline__ __device__ SurfacePoint surface_point(const MeshRecord& mesh, const MaterialRecord& m,
                                                      const Triangle& t, float b1, float b2) {
    SurfacePoint s;
    s.ng = front_normal(mesh, t);
    s.uv = interpolate_uv(mesh, t, b1, b2);
    s.color = vertex_color(mesh, t, b1, b2);
    s.ns = s.ng;
    if (kNormals && mesh.normals) {
        float3 n = barycentric(load3(mesh.normals + 3u * t.i0), load3(mesh.normals + 3u * t.i1),
                               load3(mesh.normals + 3u * t.i2), b1, b2);
        if (kInstances && (mesh.flags & MESH_INSTANCED)) n = place_normal(mesh.normal_to_world, n);
        const float n2 = dot(n, n);
        if (n2 > 1e-20f) s.ns = n * rsqrtf(n2);
    }
    if (has_texture(m.normal_texture)) s.ns = perturb_normal(mesh, m, t, b1, b2, s.uv, s.ns);
    return s;
}

__forceinline__ __device__ float3 rgb(float4 a) { return make_float3(a.x, a.y, a.z); }

// The material's reflectance (its colour texture applied): the BSDF's colour and the denoiser's albedo.
__forceinline__ __device__ float3 surface_color(const MaterialRecord& m, float2 uv) {
    return m.color * rgb(sample_texture(m.color_texture, uv, make_float4(1.0f, 1.0f, 1.0f, 1.0f)));
}

// The reflectance at a surface point: the material's times the vertex colour (glTF: factor * texture * COLOR_0;
// times the white of a mesh without colours, which changes no bit).
__forceinline__ __device__ float3 surface_color(const MaterialRecord& m, const SurfacePoint& sp) {
    return surface_color(m, sp.uv) * rgb(sp.color);
}

__forceinline__ __device__ float3 surface_emission(const MaterialRecord& m, float2 uv) {
    return m.emission * rgb(sample_texture(m.emission_texture, uv, make_float4(1.0f, 1.0f, 1.0f, 1.0f)));
}

// Opacity at a point (alpha mask and blend): the factor times the colour texture's alpha.
__forceinline__ __device__ float surface_opacity(const MaterialRecord& m, float2 uv) {
    return m.opacity * sample_texture(m.color_texture, uv, make_float4(1.0f, 1.0f, 1.0f, 1.0f)).w;
}

}  // namespace pt
