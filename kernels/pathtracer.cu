// The path tracer's OptiX programs: the launch parameters and four entry points.
//
// The device code lives in headers under pathtracer/, one concern each:
//   records.h         structs shared with the host (launch parameters, mesh records, emitter table)
//   vec_math.h        float3 operators and load helpers
//   random.h          per-sample PCG32 streams
//   geometry.h        ray offsetting, shading frames, cosine-weighted sampling
//   camera.h          primary rays of the pinhole camera
//   lights.h          emitter selection, points on emitters, MIS weights
//   bsdf_interface.h  what a BSDF family provides; bsdf_<family>.h implement it (bsdf_mixture.h: the
//                     sampling the glTF and plastic families share); bsdf.h dispatches
//   film.h            which samples are kept, sRGB encoding
//   texture.h         material textures (CUDA texture objects, UV transforms)
//   surface.h         the hit's normals, UVs and shading frame; its material as a BSDF
//   environment.h     light from infinitely far away: lookup, importance sampling, pdf
//   integrator.h      trace_path: the path loop (depth convention, NEE + MIS, Russian roulette)
//
// All of it is inlined into the raygen program. Floating-point expressions are evaluated as written, so
// regrouping one changes images in their last bits; the host build (tests/render/pathtracer_host.cpp) runs
// the same source on the CPU, where a refactor can compare images bit for bit before and after.
#include "optixasync_device.h"
#include "pathtracer/camera.h"
#include "pathtracer/film.h"
#include "pathtracer/integrator.h"
#include "pathtracer/random.h"
#include "pathtracer/records.h"

extern "C" __constant__ PathTracerParams params;

namespace {

// One pixel's samples. kAovs: also the denoiser's inputs (a second entry point, so that the plain launch carries
// none of that code: with it compiled in and switched off at run time, progressive frames took 2.5% longer).
template <bool kAovs>
__forceinline__ __device__ void render_pixel() {
    const PathTracerParams& P = params;
    const uint3 idx = oa::launch_index();
    const unsigned int pixel = idx.y * P.width + idx.x;  // row 0 is the top of the image
    const unsigned long long key = pt::pixel_key(P.seed, pixel);
    const pt::PinholeCamera camera = pt::pinhole_camera(P);

    float4 sum = P.accumulate ? P.accum[pixel] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 albedo_sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 normal_sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (kAovs && P.accumulate) {
        albedo_sum = P.aov_sums[2u * pixel];
        normal_sum = P.aov_sums[2u * pixel + 1u];
    }
    for (unsigned int s = 0; s < P.spp; ++s) {
        pt::Pcg32 rng = pt::sample_rng(key, P.sample_offset + s);
        // Box filter: a uniform point in the pixel.
        const float jx = rng.uniform();
        const float jy = rng.uniform();
        pt::FirstHit first;
        const float3 L =
            pt::trace_path<kAovs>(P, camera.origin(), camera.direction(idx.x, idx.y, jx, jy), rng, first);
        if (kAovs) {
            albedo_sum.x += first.albedo.x;
            albedo_sum.y += first.albedo.y;
            albedo_sum.z += first.albedo.z;
            normal_sum.x += first.normal.x;
            normal_sum.y += first.normal.y;
            normal_sum.z += first.normal.z;
        }
        // Samples are added one by one, in sample order, whatever the launch split: the sums are reproducible.
        if (pt::is_finite(L.x + L.y + L.z)) {
            sum.x += L.x;
            sum.y += L.y;
            sum.z += L.z;
        } else {
            sum.w += 1.0f;  // a NaN or Inf sample contributes nothing; counted in w
        }
    }
    P.accum[pixel] = sum;
    if (P.image) {
        P.image[pixel] = make_uchar4(pt::srgb8(sum.x * P.inv_total), pt::srgb8(sum.y * P.inv_total),
                                     pt::srgb8(sum.z * P.inv_total), 255);
    }
    if (kAovs) {  // the denoiser's inputs: running means of the colour and the first hit's albedo and normal
        const float k = P.inv_total;
        P.aov_sums[2u * pixel] = albedo_sum;
        P.aov_sums[2u * pixel + 1u] = normal_sum;
        P.color[pixel] = make_float4(sum.x * k, sum.y * k, sum.z * k, 1.0f);
        P.albedo[pixel] = make_float4(albedo_sum.x * k, albedo_sum.y * k, albedo_sum.z * k, 1.0f);
        P.normal[pixel] = make_float4(normal_sum.x * k, normal_sum.y * k, normal_sum.z * k, 0.0f);
    }
}

}  // namespace

OA_PROGRAM __raygen__pathtrace() { render_pixel<false>(); }

// The same samples, plus the denoiser's inputs (params.aov_sums, color, albedo and normal must be set).
OA_PROGRAM __raygen__pathtrace_aovs() { render_pixel<true>(); }

// Reports the hit in the radiance payload (see integrator.h); shading happens in the raygen program.
OA_PROGRAM __closesthit__radiance() {
    const float2 b = oa::triangle_barycentrics();
    oa::set_payload<0>(__float_as_uint(oa::ray_tmax()));
    oa::set_payload<1>(oa::primitive_index());
    // The mesh index: the build input of the one GAS, or the instance id (set to the mesh index) of the IAS.
    oa::set_payload<2>(params.instanced ? oa::instance_id() : oa::sbt_gas_index());
    oa::set_payload<3>(__float_as_uint(b.x));
    oa::set_payload<4>(__float_as_uint(b.y));
}

// Cut-out surfaces, for radiance and shadow rays alike (only meshes built with any-hit enabled run it). An
// alpha mask drops the hit where the opacity is below the cutoff; alpha blend lets the ray through with
// probability 1 - opacity, decided by a hash of the ray, the mesh and the primitive, so that a ray meets the same
// decision each time OptiX reports the same candidate.
OA_PROGRAM __anyhit__cutout() {
    const unsigned int mesh_index = params.instanced ? oa::instance_id() : oa::sbt_gas_index();
    const MeshRecord& mesh = params.meshes[mesh_index];
    const MaterialRecord& material = *mesh.material;
    const unsigned int prim = oa::primitive_index();
    const float2 b = oa::triangle_barycentrics();
    const pt::Triangle tri = pt::load_triangle(mesh, prim);
    const float opacity = pt::surface_opacity(material, pt::interpolate_uv(mesh, tri, b.x, b.y));
    if (mesh.flags & MESH_ALPHA_MASK) {
        if (opacity < material.alpha_cutoff) oa::ignore_intersection();
    } else if (mesh.flags & MESH_ALPHA_BLEND) {
        // The ray (origin and direction: camera rays share their origin, their jittered directions differ from
        // sample to sample), the mesh (instances of one geometry along a ray decide apart) and the primitive.
        const float3 o = oa::world_ray_origin();
        const float3 d = oa::world_ray_direction();
        const unsigned int ray = __float_as_uint(o.x) ^ __float_as_uint(o.y) * 0x9E3779B9u ^
                                 __float_as_uint(o.z) * 0x85EBCA6Bu ^ __float_as_uint(d.x) * 0xC2B2AE35u ^
                                 __float_as_uint(d.y) * 0x27D4EB2Fu ^ __float_as_uint(d.z) * 0x165667B1u;
        const unsigned long long key = pt::mix64((static_cast<unsigned long long>(ray) << 32) |
                                                 (prim ^ mesh_index * 0x9E3779B1u));
        const float u = static_cast<float>(static_cast<unsigned int>(key >> 40)) * (1.0f / 16777216.0f);
        if (u >= opacity) oa::ignore_intersection();
    }
}

OA_PROGRAM __miss__radiance() { oa::set_payload<2>(pt::NO_HIT); }

// Shadow rays run no hit program, so running this is what makes them visible.
OA_PROGRAM __miss__shadow() { oa::set_payload<0>(1u); }
