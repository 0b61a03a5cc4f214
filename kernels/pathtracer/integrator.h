// The integrator: one camera path, as one iterative loop.
//
// A unidirectional path tracer with next-event estimation: at every vertex one point on one emissive triangle
// is sampled (lights.h) and the path continues by sampling the BSDF (bsdf.h); emission reached both ways is
// combined by multiple importance sampling, and Russian roulette ends paths that carry little.
//
// The closest-hit program only reports where the ray hit, in the five payload registers of the radiance ray
// (below). The surface is shaded here, from the per-mesh records in the launch parameters, so that the whole
// path stays in one loop of the raygen program with no shading state in the payload. Shadow rays stop at their
// first hit and run no closest-hit program; only their miss program (miss index 1) runs, and marks them
// visible. Cut-out surfaces (alpha mask and blend) run an any-hit program for both kinds of rays.
//
// Light comes from the light sources of the scene record (emissive triangles, the environment, punctual lights:
// each a light type, lights.h) and is also found by BSDF-sampled rays where it has geometry: emissive triangles,
// and the environment on a miss. Next-event estimation picks a source by the selection CDF the host set from the
// lights' power, and samples it by its type. BSDFs work in the shading frame (surface.h): directions are turned
// into it before every BSDF call.
//
// Depth convention (that of the reference renderer's `path` integrator): the camera ray's hit is depth 1.
// Emission found at any vertex reached counts; a vertex of depth d samples lights and continues the path only
// while d + 1 <= max_depth. So max_depth = 1 shows the emitters the camera sees, 2 adds direct light.
#pragma once

#include "optixasync_device.h"
#include "pathtracer/bsdf.h"
#include "pathtracer/environment.h"
#include "pathtracer/features.h"
#include "pathtracer/geometry.h"
#include "pathtracer/hit.h"
#include "pathtracer/light_dispatch.h"
#include "pathtracer/lights.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/surface.h"
#include "pathtracer/vec_math.h"

namespace pt {

// Payload of a radiance ray: [0] the hit distance (float bits), [1] the primitive index, [2] the build input
// (= mesh index), or NO_HIT, which the miss program writes, [3] and [4] the barycentrics b1 and b2 (float bits).
// On spheres and curves (shapes.h), [2] is SHAPE_HIT | the shape's index and [3] a curve's parameter u.
constexpr unsigned int NO_HIT = 0xFFFFFFFFu;

// The flags of every ray the path tracer traces: in a program without cut-outs (features.h) any-hit is disabled on
// the ray too, so that traversal carries no any-hit call (the meshes' build inputs disable it already).
constexpr unsigned int kRayFlags = kAnyHit ? 0u : static_cast<unsigned int>(oa::RAY_FLAG_DISABLE_ANYHIT);

// What the camera ray found, for the denoiser's guides: the albedo of the surface and its normal facing the
// camera (zero on a miss). Emitters count with their emission clamped to [0, 1], the denoiser's convention
// for the colour of a light.
struct FirstHit {
    float3 albedo = make_float3(0.0f, 0.0f, 0.0f);
    float3 normal = make_float3(0.0f, 0.0f, 0.0f);
};

__forceinline__ __device__ float3 clamp01(float3 a) {
    return make_float3(fminf(fmaxf(a.x, 0.0f), 1.0f), fminf(fmaxf(a.y, 0.0f), 1.0f), fminf(fmaxf(a.z, 0.0f), 1.0f));
}

// Whether a ray from `start` towards `direction` reaches `distance` (infinity for the environment) unblocked.
// Shadow rays run the any-hit program of cut-out surfaces and no closest-hit program; only their miss
// program (miss index 1) marks them visible.
__forceinline__ __device__ bool unoccluded(const SceneRecord& S, float3 start, float3 direction, float distance,
                                           float time) {
    unsigned int visible[1] = {0u};
    oa::trace(S.handle, start, direction, 0.0f, distance, time, 0xFFu,
              kRayFlags | oa::RAY_FLAG_TERMINATE_ON_FIRST_HIT | oa::RAY_FLAG_DISABLE_CLOSESTHIT, 0u, 1u, 1u, visible);
    return visible[0] != 0u;
}

// What a path asks of its caller beside the scene, as a policy (`Hooks`, inlined): how its rays are traced, where
// light sampling sees the shading point, and what it reports of the surfaces it meets. FirstHitHooks is the one
// of a single scene in world space (the first hit for the denoiser's guides); a batch of views has its own
// (view_path.h: counted rays, worlds, the G-buffer sample). A policy provides
//
//   void trace(const SceneRecord& S, float3 origin, float3 direction, unsigned int depth, float tmax, float time,
//              unsigned int (&hit)[5])   a ray over [0, tmax] at `time` (the path's time of the shutter; tmax: a
//                                         camera's far plane for depth 1, else 1e16)
//   bool shadow(const SceneRecord& S, float3 start, float3 direction, float distance, float time)
//                                         unblocked at `time`, see unoccluded
//   float3 light_point(float3 point)        the shading point as the light sources see it
//   void missed(unsigned int depth, float3 direction)
//   void found(unsigned int depth, float t, const unsigned int (&hit)[5], const HitSurface& h, float3 direction)
//                                         a surface reached at `depth`: the payload (hit[1] the primitive, hit[2] the
//                                         record index, hit[3] and hit[4] the barycentrics) and its surface (hit.h)
template <bool kFirst>
struct FirstHitHooks {
    FirstHit& first;  // a reference, not a pointer that may be null: that made the compiler keep it in local memory

    __forceinline__ __device__ void trace(const SceneRecord& S, float3 origin, float3 direction, unsigned int,
                                          float tmax, float time, unsigned int (&hit)[5]) {
        oa::trace(S.handle, origin, direction, 0.0f, tmax, time, 0xFFu, kRayFlags, 0u, 1u, 0u, hit);
    }
    __forceinline__ __device__ bool shadow(const SceneRecord& S, float3 start, float3 direction, float distance,
                                           float time) {
        return unoccluded(S, start, direction, distance, time);
    }
    __forceinline__ __device__ float3 light_point(float3 point) const { return point; }
    __forceinline__ __device__ void missed(unsigned int, float3) {}
    __forceinline__ __device__ void found(unsigned int depth, float, const unsigned int (&)[5], const HitSurface& h,
                                          float3 direction) {
        if (kFirst && depth == 1) {
            const MaterialRecord& material = *h.material;
            const SurfacePoint& sp = h.sp;
            first.normal = dot(sp.ns, direction) < 0.0f ? sp.ns : -sp.ns;
            const float3 glow = (h.flags & MESH_EMISSIVE) ? surface_emission(material, sp.uv)
                                                          : make_float3(0.0f, 0.0f, 0.0f);
            first.albedo = clamp01(surface_color(material, sp) + glow);
        }
    }
};

// Radiance arriving at `origin` from `direction` (unit), estimated by one path whose first ray runs at most
// `first_tmax` (a camera's far plane), with the caller's policy `hooks`.
template <class Hooks>
__forceinline__ __device__ float3 trace_path_with(const PathTracerParams& P, float3 origin, float3 direction,
                                                  Pcg32& rng, Hooks& hooks, float first_tmax = 1e16f) {
    const SceneRecord& S = P.scene;
    float3 radiance = make_float3(0.0f, 0.0f, 0.0f);
    float3 beta = make_float3(1.0f, 1.0f, 1.0f);  // path throughput
    float prev_pdf = 0.0f;     // solid-angle pdf of the BSDF sample that produced the current ray
    bool prev_delta = false;   // whether that sample came from a delta lobe
    float eta_scale = 1.0f;    // product of the relative indices crossed (radiance scaling, for the roulette)
    const float env_probability = S.environment_probability;
#ifdef OA_MOTION
    const float time = path_time(S, rng);  // motion blur: every ray of the path at one time of the shutter
#else
    const float time = 0.0f;
#endif

    for (unsigned int depth = 1;; ++depth) {
        unsigned int hit[5] = {0u, 0u, NO_HIT, 0u, 0u};
        hooks.trace(S, origin, direction, depth, depth == 1u ? first_tmax : 1e16f, time, hit);
        if (hit[2] == NO_HIT) {
            hooks.missed(depth, direction);
            // Light from the environment. Like emission, the camera ray and delta lobes count it fully; any
            // other BSDF-sampled ray shares it with light sampling by the power heuristic.
            if (kEnvironment && S.environment) {
                float weight = 1.0f;
                if (depth > 1 && !prev_delta && env_probability > 0.0f) {
                    weight = power_heuristic(prev_pdf, env_probability * environment_pdf(*S.environment, direction));
                }
                radiance = radiance + beta * environment_radiance(*S.environment, direction) * weight;
            }
            break;
        }
        const float t = __uint_as_float(hit[0]);
        // The hit point from the primitive's own parameters (hit_surface.h): on a triangle, its barycentrics; not
        // origin + t * direction, whose error grows with the distance travelled (a camera far from a surface near
        // the world's origin put points below the surface by more than offset_ray's margin).
        const HitSurface h = hit_surface(S, hit, origin, direction, time);
        const MaterialRecord& material = *h.material;
        const SurfacePoint& sp = h.sp;
        const float cos_out = -dot(sp.ng, direction);  // > 0: the ray arrived on the front (winding) side
        const unsigned int flags = h.flags;
        hooks.found(depth, t, hit, h, direction);

        // Emission reached by this ray. The camera ray has no other way to find it and counts it fully, as
        // does a ray from a delta lobe, and a ray reaching an emitter that light sampling never picks (one
        // with an emission texture or cut-outs, or a sphere or curve); any other BSDF-sampled ray shares it with
        // light sampling (lights.h).
        if ((flags & MESH_EMISSIVE) && cos_out > 0.0f) {
            float weight = 1.0f;
            if (depth > 1 && !prev_delta && (flags & MESH_LIGHT_SAMPLED)) {
                const float light = __ldg(&S.emitters[h.emitter].pdf) * t * t;
                weight = emission_mis_weight(prev_pdf, cos_out, light);
            }
            radiance = radiance + beta * surface_emission(material, sp.uv) * weight;
        }
        if (depth >= P.max_depth) break;

        // The BSDF's frame: the shading normal, turned towards the ray for the back of a two-sided surface.
        // One-sided surfaces are black from the back and end the path (a culled back face is never hit: the
        // any-hit program let the ray through); a dielectric is the same interface from both sides and keeps
        // its orientation (its z < 0 side is the inside).
        Bsdf bsdf = surface_bsdf(material, sp.uv, surface_color(material, sp));
        Frame frame = frame_from_normal(sp.ns);
        float3 wo = frame.to_local(-direction);
        if (!bsdf_transmits(bsdf) && wo.z <= 0.0f) {
            if (!(flags & MESH_TWO_SIDED)) break;
            frame = frame_from_normal(-sp.ns);
            wo = frame.to_local(-direction);
        }
        const float3 point = h.point;

        // Next-event estimation: one light source picked by the selection CDF (by power), one sample of it by its
        // type (the generated light_sample), counted if nothing is in between.
        if (!bsdf_is_delta(bsdf) && S.num_lights > 0u) {
            const LightRecord& light = pick_light(S.lights, S.num_lights, rng.uniform());
            const LightSample ls = light_sample(light, hooks.light_point(point), rng);
            if (ls.valid) {
                const float3 wi_local = frame.to_local(ls.wi);
                const float light_scale = light_scale_of(light, ls, bsdf_pdf(bsdf, wo, wi_local));
                if (bsdf_transmits(bsdf) || wi_local.z > 0.0f) {
                    const BsdfValue f = bsdf_eval(bsdf, wo, wi_local);
                    const float scale = f.scale * light_scale;
                    if (scale > 0.0f) {
                        const float3 start = offset_ray(point, dot(ls.wi, sp.ng) > 0.0f ? sp.ng : -sp.ng);
                        if (hooks.shadow(S, start, ls.wi, ls.distance, time)) {
                            radiance = radiance + beta * f.color * ls.radiance * scale;
                        }
                    }
                }
            }
        }

        // Continue the path by sampling the BSDF.
        const BsdfSample s = bsdf_sample(bsdf, wo, rng);
        direction = frame.to_world(s.wi);
        origin = offset_ray(point, dot(direction, sp.ng) > 0.0f ? sp.ng : -sp.ng);
        prev_pdf = s.pdf;
        prev_delta = s.delta;
        beta = beta * s.weight;
        eta_scale *= s.eta;
        // Russian roulette from rr_depth on: survive with probability q (the throughput's largest channel,
        // capped so that bright paths still end) and divide by q, which keeps the estimate unbiased. The
        // throughput inside glass is scaled down by 1 / eta^2 (radiance scaling) and back up on the way out;
        // the roulette looks through that scaling, or it would end paths inside glass for no reason.
        const float strongest = max3(beta);
        if (!(strongest > 0.0f)) break;
        if (depth >= P.rr_depth) {
            const float q = fminf(strongest * eta_scale * eta_scale, 0.95f);
            if (rng.uniform() >= q) break;
            beta = beta * (1.0f / q);
        }
    }
    return radiance;
}

// Radiance arriving at `origin` from `direction` (unit), estimated by one path whose first ray runs at most
// `first_tmax` (a camera's far plane); with kFirst, `first` receives what the camera ray hit.
template <bool kFirst>
__forceinline__ __device__ float3 trace_path(const PathTracerParams& P, float3 origin, float3 direction, Pcg32& rng,
                                             FirstHit& first, float first_tmax = 1e16f) {
    FirstHitHooks<kFirst> hooks{first};
    return trace_path_with(P, origin, direction, rng, hooks, first_tmax);
}

}  // namespace pt
