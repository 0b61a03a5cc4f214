// A path of a batch of views, through the integrator's hooks (integrator.h): counted rays, a world's cell, the first
// hit's running sums, and the G-buffer sample.
//
// ViewHooks<kMask> is the policy trace_path_with runs under in the raygens of a batch (view_pixel.h); kMask is the
// variant's mask (OUTPUT_* and VARIANT_* bits), so that a variant carries only the bookkeeping of what it writes.
// trace_primary is the G-buffer integrator's "path": the camera ray's hit, reported through the same hooks, and no
// shading, so that both integrators give the same G-buffer bit for bit.
#pragma once

#include "optixasync_device.h"
#include "pathtracer/hit.h"
#include "pathtracer/integrator.h"
#include "pathtracer/records.h"
#include "pathtracer/surface.h"
#include "pathtracer/vec_math.h"
#include "pathtracer/worlds.h"

namespace pt {

// What the G-buffer sample (the camera ray of a pixel's first sample of the launch) found.
struct GSample {
    bool hit = false;
    float t = 0.0f;
    unsigned int index = 0u;  // the mesh record's (world * meshes_per_world + mesh with worlds)
    unsigned int prim = 0u;
    float b1 = 0.0f, b2 = 0.0f;
    float3 point = make_float3(0.0f, 0.0f, 0.0f);  // in the structure's space
    float3 ng = make_float3(0.0f, 0.0f, 0.0f);
    float2 uv = make_float2(0.0f, 0.0f);
    float3 direction = make_float3(0.0f, 0.0f, 0.0f);
};

// A shadow ray over [tmin, tmax]: whether nothing blocks it (integrator.h's unoccluded, with a lower bound).
__forceinline__ __device__ bool unoccluded_between(const SceneRecord& S, float3 start, float3 direction, float tmin,
                                                   float tmax, float time) {
    unsigned int visible[1] = {0u};
    oa::trace(S.handle, start, direction, tmin, tmax, time, 0xFFu,
              oa::RAY_FLAG_TERMINATE_ON_FIRST_HIT | oa::RAY_FLAG_DISABLE_CLOSESTHIT, 0u, 1u, 1u, visible);
    return visible[0] != 0u;
}

template <unsigned int kMask>
struct ViewHooks {
    static constexpr bool kWorlds = (kMask & VARIANT_WORLDS) != 0u;
    static constexpr bool kRays = (kMask & OUTPUT_RAYS) != 0u;
    static constexpr bool kSums = (kMask & (OUTPUT_ALBEDO | OUTPUT_NORMAL | OUTPUT_COVERAGE)) != 0u;
    static constexpr bool kG = (kMask & OUTPUTS_OF_THE_G_SAMPLE) != 0u;

    float3 offset = make_float3(0.0f, 0.0f, 0.0f);  // the world's cell (kWorlds): its offset and its box
    float3 lo = make_float3(0.0f, 0.0f, 0.0f);
    float3 hi = make_float3(0.0f, 0.0f, 0.0f);
    unsigned int camera_rays = 0u, bounce_rays = 0u, shadow_rays = 0u;
    FirstHit first;        // this sample's first hit, for the running sums (kSums)
    bool covered = false;  // whether this sample's camera ray hit a surface
    bool record = false;   // whether this sample is the G-buffer sample
    GSample g;

    __forceinline__ __device__ void begin_sample(bool g_sample, float3 direction) {
        first = FirstHit();
        covered = false;
        record = kG && g_sample;
        if (record) g.direction = direction;
    }

    __forceinline__ __device__ void trace(const SceneRecord& S, float3 origin, float3 direction, unsigned int depth,
                                          float tmax, float time, unsigned int (&hit)[5]) {
        if (kRays) {
            if (depth == 1u) ++camera_rays;
            else ++bounce_rays;
        }
        float tmin = 0.0f;
        if (kWorlds && !clip_to_box(lo, hi, origin, direction, tmin, tmax)) return;  // hit[2] stays NO_HIT: a miss
        oa::trace(S.handle, origin, direction, tmin, tmax, time, 0xFFu, oa::RAY_FLAG_NONE, 0u, 1u, 0u, hit);
    }

    __forceinline__ __device__ bool shadow(const SceneRecord& S, float3 start, float3 direction, float distance,
                                           float time) {
        if (kRays) ++shadow_rays;
        if (!kWorlds) return unoccluded(S, start, direction, distance, time);
        float tmin = 0.0f, tmax = distance;
        if (!clip_to_box(lo, hi, start, direction, tmin, tmax)) return true;  // nothing of this world in between
        return unoccluded_between(S, start, direction, tmin, tmax, time);
    }

    __forceinline__ __device__ float3 light_point(float3 point) const { return kWorlds ? point - offset : point; }

    __forceinline__ __device__ void missed(unsigned int, float3) {}

    __forceinline__ __device__ void found(unsigned int depth, float t, const unsigned int (&hit)[5],
                                          const HitSurface& h, float3 direction) {
        if (depth != 1u) return;
        covered = true;
        if (kSums) {  // integrator.h's FirstHitHooks, the same expressions
            const MaterialRecord& material = *h.material;
            const SurfacePoint& sp = h.sp;
            first.normal = dot(sp.ns, direction) < 0.0f ? sp.ns : -sp.ns;
            const float3 glow = (h.flags & MESH_EMISSIVE) ? surface_emission(material, sp.uv)
                                                          : make_float3(0.0f, 0.0f, 0.0f);
            first.albedo = clamp01(surface_color(material, sp) + glow);
        }
        if (record) {  // mesh records only: batches refuse scenes with shapes, custom primitives or motion
            g.hit = true;
            g.t = t;
            g.index = hit[2];
            g.prim = hit[1];
            g.b1 = __uint_as_float(hit[3]);
            g.b2 = __uint_as_float(hit[4]);
            g.point = h.point;
            g.ng = h.sp.ng;
            g.uv = h.sp.uv;
        }
    }
};

// The camera ray alone: its hit reported to `hooks` as a path's first vertex would be, no shading, no light.
template <class Hooks>
__forceinline__ __device__ void trace_primary(const PathTracerParams& P, float3 origin, float3 direction,
                                              Hooks& hooks, float tmax = 1e16f) {
    const SceneRecord& S = P.scene;
    unsigned int hit[5] = {0u, 0u, NO_HIT, 0u, 0u};
    hooks.trace(S, origin, direction, 1u, tmax, 0.0f, hit);
    if (hit[2] == NO_HIT) {
        hooks.missed(1u, direction);
        return;
    }
    const HitSurface h = hit_surface(S, hit, origin, direction, 0.0f);
    hooks.found(1u, __uint_as_float(hit[0]), hit, h, direction);
}

}  // namespace pt
