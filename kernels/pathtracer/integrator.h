// The integrator: one camera path, as one iterative loop.
//
// A unidirectional path tracer with next-event estimation: at every vertex one point on one emissive triangle
// is sampled (lights.h) and the path continues by sampling the BSDF (bsdf.h); emission reached both ways is
// combined by multiple importance sampling, and Russian roulette ends paths that carry little.
//
// The closest-hit program only reports where the ray hit, in the three payload registers of the radiance ray
// (below). The surface is shaded here, from the per-mesh records in the launch parameters, so that the whole
// path stays in one loop of the raygen program with no shading state in the payload. Shadow rays stop at their
// first hit and run no hit program; only their miss program (miss index 1) runs, and marks them visible.
//
// Depth convention (that of the reference renderer's `path` integrator): the camera ray's hit is depth 1.
// Emission found at any vertex reached counts; a vertex of depth d samples lights and continues the path only
// while d + 1 <= max_depth. So max_depth = 1 shows the emitters the camera sees, 2 adds direct light.
#pragma once

#include "optixasync_device.h"
#include "pathtracer/bsdf.h"
#include "pathtracer/geometry.h"
#include "pathtracer/lights.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

// Payload of a radiance ray: [0] the hit distance (float bits), [1] the primitive index, [2] the build input
// (= mesh index), or NO_HIT, which the miss program writes.
constexpr unsigned int NO_HIT = 0xFFFFFFFFu;

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

// Unit geometric normal of triangle `prim` of a mesh; its front side is the one the winding is
// counter-clockwise from.
__forceinline__ __device__ float3 triangle_normal(const MeshRecord& mesh, unsigned int prim) {
    const unsigned int* tri = mesh.indices + 3u * prim;
    const float* vertices = mesh.vertices;
    const float3 v0 = load3(vertices + 3u * __ldg(tri));
    const float3 v1 = load3(vertices + 3u * __ldg(tri + 1));
    const float3 v2 = load3(vertices + 3u * __ldg(tri + 2));
    return normalize(cross(v1 - v0, v2 - v0));
}

// Radiance arriving at `origin` from `direction` (unit), estimated by one path; with kFirst, `first` receives
// what the camera ray hit. (A reference, not a pointer that may be null: that made the compiler keep the
// struct in local memory.)
template <bool kFirst>
__forceinline__ __device__ float3 trace_path(const PathTracerParams& P, float3 origin, float3 direction, Pcg32& rng,
                                             FirstHit& first) {
    float3 radiance = make_float3(0.0f, 0.0f, 0.0f);
    float3 beta = make_float3(1.0f, 1.0f, 1.0f);  // path throughput
    float prev_pdf = 0.0f;     // solid-angle pdf of the BSDF sample that produced the current ray
    bool prev_delta = false;   // whether that sample came from a delta lobe

    for (unsigned int depth = 1;; ++depth) {
        unsigned int hit[3] = {0u, 0u, NO_HIT};
        oa::trace(P.handle, origin, direction, 0.0f, 1e16f, 0.0f, 0xFFu, oa::RAY_FLAG_DISABLE_ANYHIT, 0u, 1u, 0u,
                  hit);
        if (hit[2] == NO_HIT) break;  // no environment light
        const float t = __uint_as_float(hit[0]);
        const MeshRecord& mesh = P.meshes[hit[2]];
        float3 n = triangle_normal(mesh, hit[1]);
        const float cos_out = -dot(n, direction);  // > 0: the ray arrived on the front side
        const unsigned int flags = mesh.flags;
        if (kFirst && depth == 1) {
            first.normal = cos_out > 0.0f ? n : -n;
            const float3 glow = (flags & MESH_EMISSIVE) ? mesh.emission : make_float3(0.0f, 0.0f, 0.0f);
            first.albedo = clamp01(mesh.reflectance + glow);
        }

        // Emission reached by this ray. The camera ray has no other way to find it and counts it fully, as
        // does a ray from a delta lobe; any other BSDF-sampled ray shares it with light sampling (the weights
        // are derived in lights.h).
        if ((flags & MESH_EMISSIVE) && cos_out > 0.0f) {
            float weight = 1.0f;
            if (depth > 1 && !prev_delta) {
                const float light = __ldg(&P.emitters[mesh.emitter_offset + hit[1]].pdf) * t * t;
                weight = emission_mis_weight(prev_pdf, cos_out, light);
            }
            radiance = radiance + beta * mesh.emission * weight;
        }
        if (depth >= P.max_depth) break;
        if (cos_out <= 0.0f) {
            if (!(flags & MESH_TWO_SIDED)) break;  // the back of a one-sided surface is black
            n = -n;
        }
        const Bsdf bsdf = surface_bsdf(mesh);
        const float3 wo = -direction;
        const float3 point = origin + direction * t;
        const float3 start = offset_ray(point, n);

        // Next-event estimation: one point on one emissive triangle, counted if nothing is in between.
        if (P.num_emitters > 0u) {
            const LightSample light = sample_light(P.emitters, P.num_emitters, rng);
            const float3 to_light = light.position - point;
            const float dist2 = dot(to_light, to_light);
            const float inv_dist = rsqrtf(dist2);
            const float3 wi = to_light * inv_dist;
            const float cos_surface = dot(n, wi);
            const float cos_light = -dot(light.normal, wi);
            if (cos_surface > 0.0f && cos_light > 0.0f) {
                const BsdfValue f = bsdf_eval(bsdf, n, wo, wi);
                const float scale = light_sample_scale(f.scale, bsdf_pdf(bsdf, n, wo, wi), light.pdf_area * dist2,
                                                       cos_light);
                unsigned int visible[1] = {0u};
                // The shadow ray stops short of the light so that it cannot hit the emitter itself.
                oa::trace(P.handle, start, wi, 0.0f, (dist2 * inv_dist) * (1.0f - 1e-4f), 0.0f, 0xFFu,
                          oa::RAY_FLAG_DISABLE_ANYHIT | oa::RAY_FLAG_TERMINATE_ON_FIRST_HIT |
                              oa::RAY_FLAG_DISABLE_CLOSESTHIT,
                          0u, 1u, 1u, visible);
                if (visible[0]) radiance = radiance + beta * f.color * light.radiance * scale;
            }
        }

        // Continue the path by sampling the BSDF.
        const BsdfSample s = bsdf_sample(bsdf, n, wo, rng);
        direction = s.wi;
        origin = start;
        prev_pdf = s.pdf;
        prev_delta = s.delta;
        beta = beta * s.weight;
        // Russian roulette from rr_depth on: survive with probability q (the throughput's largest channel,
        // capped so that bright paths still end) and divide by q, which keeps the estimate unbiased.
        const float strongest = max3(beta);
        if (!(strongest > 0.0f)) break;
        if (depth >= P.rr_depth) {
            const float q = fminf(strongest, 0.95f);
            if (rng.uniform() >= q) break;
            beta = beta * (1.0f / q);
        }
    }
    return radiance;
}

}  // namespace pt
