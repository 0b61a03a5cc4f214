// The raygen of a batch of views: one thread per (pixel, view, lane), writing the outputs of its variant.
//
// The launch is width x height x (views * lanes). A lane is a share of a pixel's samples: with L lanes, lane l
// adds samples [l * ceil(spp / L), ...) of the launch into its own running sums (accum holds views * lanes planes),
// and the host adds the lanes up after the launch, in lane order (optixasync/render/_lanes.py: a still gives each
// lane one sample, so that the lanes add up in sample order); with one lane (every launch but a plain still of a
// small image) the thread writes the outputs itself. A view's random numbers
// depend on its seed, the pixel and the absolute sample index only, so view b of a batch renders as a batch of
// that one view does, bit for bit; a VIEW_CAMERA view with the launch's seed renders as the single-camera raygen
// (pathtracer.cu) does.
#pragma once

#include "optixasync_device.h"
#include "pathtracer/film.h"
#include "pathtracer/integrator.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/surface.h"
#include "pathtracer/view_path.h"
#include "pathtracer/views.h"

namespace pt {

// Where the G-buffer sample's point was in the previous launch's view: the film position now minus that one
// (0 where it is unknown: behind the previous view, or the sky of an orthographic view).
template <unsigned int kMask>
__forceinline__ __device__ float2 motion_of(const PathTracerParams& P, const GSample& g, const View& now,
                                            float3 offset, float2 film, unsigned int view) {
    const ViewBatch& B = P.batch;
    const View before = B.prev_views ? load_view(B.prev_views, B.prev_poses, B.pose_stride, view) : now;
    float3 p = g.direction;
    if (g.hit) {  // the surface point in its mesh's own space, placed as the mesh was
        const MeshRecord& mesh = P.scene.meshes[g.index];
        const MeshRecord& was = B.prev_meshes ? B.prev_meshes[g.index] : mesh;
        const unsigned int* tri = mesh.indices + 3u * g.prim;
        p = barycentric(load3(mesh.vertices + 3u * __ldg(tri)), load3(mesh.vertices + 3u * __ldg(tri + 1)),
                        load3(mesh.vertices + 3u * __ldg(tri + 2)), g.b1, g.b2);
        if (was.flags & MESH_INSTANCED) p = place_point(was.to_world, p);
        if (kMask & VARIANT_WORLDS) p = p - offset;
    }
    float2 then;
    if (!view_project(before, p, !g.hit, static_cast<float>(P.width), static_cast<float>(P.height), then)) {
        return make_float2(0.0f, 0.0f);
    }
    return make_float2(film.x - then.x, film.y - then.y);
}

// The G-buffer sample's outputs of pixel `out` (index of the pixel in the views' block).
template <unsigned int kMask>
__forceinline__ __device__ void write_g_sample(const PathTracerParams& P, const GSample& g, const View& v,
                                               float3 offset, float2 film, unsigned long long out, unsigned int view) {
    const OutputRecord& O = P.out;
    const bool hit = g.hit;
    const unsigned int none = 0xFFFFFFFFu;
    const unsigned int mesh = (kMask & VARIANT_WORLDS) ? g.index % P.batch.meshes_per_world : g.index;
    if (kMask & OUTPUT_DEPTH) O.depth[out] = hit ? view_depth(v, g.t, g.direction) : 0.0f;
    if (kMask & OUTPUT_DISTANCE) O.distance[out] = hit ? g.t : 0.0f;
    if (kMask & OUTPUT_POSITION) {
        const float3 p = hit ? ((kMask & VARIANT_WORLDS) ? g.point - offset : g.point) : make_float3(0.0f, 0.0f, 0.0f);
        O.position[3u * out] = p.x, O.position[3u * out + 1u] = p.y, O.position[3u * out + 2u] = p.z;
    }
    if (kMask & OUTPUT_GEOMETRIC_NORMAL) {
        O.geometric_normal[3u * out] = g.ng.x, O.geometric_normal[3u * out + 1u] = g.ng.y;
        O.geometric_normal[3u * out + 2u] = g.ng.z;
    }
    if (kMask & OUTPUT_MESH_ID) O.mesh_id[out] = hit ? mesh : none;
    if (kMask & OUTPUT_PRIMITIVE_ID) O.primitive_id[out] = hit ? g.prim : none;
    if (kMask & OUTPUT_MATERIAL_ID) O.material_id[out] = hit ? __ldg(P.batch.mesh_materials + mesh) : none;
    if (kMask & OUTPUT_UV) O.uv[2u * out] = g.uv.x, O.uv[2u * out + 1u] = g.uv.y;
    if (kMask & OUTPUT_MOTION) {
        const float2 m = motion_of<kMask>(P, g, v, offset, film, view);
        O.motion[2u * out] = m.x, O.motion[2u * out + 1u] = m.y;
    }
}

// One pixel of one view (and lane): its samples, then its outputs.
// Long because the samples loop and the outputs read the same per-pixel state; split, it would travel in a struct.
template <unsigned int kMask>
__forceinline__ __device__ void render_view_pixel(const PathTracerParams& P) {
    constexpr bool kPrimary = (kMask & VARIANT_PRIMARY) != 0u;
    constexpr bool kWorlds = (kMask & VARIANT_WORLDS) != 0u;
    constexpr bool kSums = (kMask & (OUTPUT_ALBEDO | OUTPUT_NORMAL | OUTPUT_COVERAGE)) != 0u;
    const ViewBatch& B = P.batch;
    const uint3 idx = oa::launch_index();
    const unsigned int lanes = B.lanes;
    const unsigned int view = idx.z / lanes;
    const unsigned int lane = idx.z - view * lanes;
    const View v = load_view(B.views, B.poses, B.pose_stride, view);
    const unsigned int pixel = idx.y * P.width + idx.x;  // row 0 is the top of the image
    const unsigned long long plane = static_cast<unsigned long long>(P.width) * P.height;
    const unsigned long long out = view * plane + pixel;
    const unsigned long long acc = idx.z * plane + pixel;
    const unsigned long long key = pixel_key(v.seed, pixel);
    const float scale_x = 2.0f / static_cast<float>(P.width), scale_y = 2.0f / static_cast<float>(P.height);
    ViewHooks<kMask> hooks;
    if (kWorlds) {
        const float4 o = B.world_offsets[v.world];
        hooks.offset = make_float3(o.x, o.y, o.z);
        hooks.lo = hooks.offset + B.cell_lo;
        hooks.hi = hooks.offset + B.cell_hi;
    }
    const unsigned int per = (P.spp + lanes - 1u) / lanes;
    const unsigned int begin = min(P.spp, lane * per), end = min(P.spp, begin + per);

    float4 sum = P.accumulate ? P.accum[acc] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 albedo_sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);  // w: samples whose camera ray hit a surface
    float4 normal_sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (kSums && P.accumulate) {
        albedo_sum = P.aov_sums[2u * out];
        normal_sum = P.aov_sums[2u * out + 1u];
    }
    float2 film = make_float2(static_cast<float>(idx.x) + 0.5f, static_cast<float>(idx.y) + 0.5f);
    for (unsigned int s = begin; s < end; ++s) {
        Pcg32 rng = sample_rng(key, P.sample_offset + s);
        float jx = rng.uniform();
        float jy = rng.uniform();
        if (!B.jitter) jx = jy = 0.5f;
        ViewRay ray = view_ray(v, idx.x, idx.y, jx, jy, scale_x, scale_y);
        if (kWorlds) ray.origin = ray.origin + hooks.offset;
        hooks.begin_sample(s == 0u, ray.direction);
        if (s == 0u) film = make_float2(static_cast<float>(idx.x) + jx, static_cast<float>(idx.y) + jy);
        float3 L = make_float3(0.0f, 0.0f, 0.0f);
        if (kPrimary) {
            trace_primary(P, ray.origin, ray.direction, hooks, ray.tmax);
        } else {
            L = trace_path_with(P, ray.origin, ray.direction, rng, hooks, ray.tmax);
        }
        if (kSums) {
            albedo_sum.x += hooks.first.albedo.x;
            albedo_sum.y += hooks.first.albedo.y;
            albedo_sum.z += hooks.first.albedo.z;
            albedo_sum.w += hooks.covered ? 1.0f : 0.0f;
            normal_sum.x += hooks.first.normal.x;
            normal_sum.y += hooks.first.normal.y;
            normal_sum.z += hooks.first.normal.z;
        }
        // Samples are added one by one, in sample order, as in the single-camera raygen.
        if (is_finite(L.x + L.y + L.z)) {
            sum.x += L.x;
            sum.y += L.y;
            sum.z += L.z;
        } else {
            sum.w += 1.0f;
        }
    }
    P.accum[acc] = sum;
    if (kSums) {
        P.aov_sums[2u * out] = albedo_sum;
        P.aov_sums[2u * out + 1u] = normal_sum;
    }
    if (kMask & OUTPUT_RAYS) {
        unsigned long long* rays = P.out.rays + 3u * view;
        if (hooks.camera_rays) atomicAdd(rays, static_cast<unsigned long long>(hooks.camera_rays));
        if (hooks.bounce_rays) atomicAdd(rays + 1, static_cast<unsigned long long>(hooks.bounce_rays));
        if (hooks.shadow_rays) atomicAdd(rays + 2, static_cast<unsigned long long>(hooks.shadow_rays));
    }
    if (lanes != 1u) return;  // the lanes' sums are added up after the launch; the means come from there
    const float k = P.inv_total;
    if ((kMask & OUTPUT_IMAGE) && P.image) {
        P.image[out] = make_uchar4(srgb8(sum.x * k), srgb8(sum.y * k), srgb8(sum.z * k), 255);
    }
    if (kMask & OUTPUT_RADIANCE) P.radiance[out] = make_float4(sum.x * k, sum.y * k, sum.z * k, 1.0f);
    if (kMask & OUTPUT_ALBEDO) P.albedo[out] = make_float4(albedo_sum.x * k, albedo_sum.y * k, albedo_sum.z * k, 1.0f);
    if (kMask & OUTPUT_NORMAL) P.normal[out] = make_float4(normal_sum.x * k, normal_sum.y * k, normal_sum.z * k, 0.0f);
    if (kMask & OUTPUT_COVERAGE) P.out.coverage[out] = albedo_sum.w * k;
    if (kMask & OUTPUT_SPP) P.out.spp[out] = P.sample_offset + P.spp - static_cast<unsigned int>(sum.w);
    if (kMask & OUTPUTS_OF_THE_G_SAMPLE) write_g_sample<kMask>(P, hooks.g, v, hooks.offset, film, out, view);
}

}  // namespace pt
