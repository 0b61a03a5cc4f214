// Programs of the GPU tests of the programming model (tests/program/test_programming_model_gpu.py): an
// orthographic camera looking down +z, and one closest hit per primitive kind writing what the tests compare with
// analytic answers. Each pixel gets (t, a, b, code): the hit distance (-1 on a miss), two values of the hit program
// and the primitive type. With samples > 1 the raygen averages `a` over ray times (k + 0.5) / samples (motion blur).
#include "optixasync_device.h"

struct Params {
    float4* image;
    unsigned int width;
    unsigned int height;
    oa_traversable handle;
    float2 view_min;
    float2 view_max;
    float time;
    unsigned int samples;
    float scale;
};

struct SphereData {  // the SBT data of the custom-primitive hit group: one analytic sphere per primitive
    float4 spheres[4];
};

extern "C" __constant__ Params params;

__forceinline__ __device__ float3 pixel_origin(uint3 idx) {
    const float u = (idx.x + 0.5f) / params.width, v = (idx.y + 0.5f) / params.height;
    return make_float3(params.view_min.x + u * (params.view_max.x - params.view_min.x),
                       params.view_min.y + v * (params.view_max.y - params.view_min.y), -5.f);
}

__forceinline__ __device__ float4 shoot(float3 origin, float time) {
    unsigned int p[4] = {0u, 0u, 0u, 0u};
    oa::trace(params.handle, origin, make_float3(0.f, 0.f, 1.f), 0.f, 1e16f, time, 0xFFu, oa::RAY_FLAG_NONE, 0, 1, 0,
              p);
    return make_float4(__uint_as_float(p[0]), __uint_as_float(p[1]), __uint_as_float(p[2]), (float)p[3]);
}

OA_PROGRAM __raygen__ortho() {
    const uint3 idx = oa::launch_index();
    const float3 origin = pixel_origin(idx);
    float4 out = shoot(origin, params.time);
    if (params.samples > 1u) {
        float covered = 0.f;
        for (unsigned int k = 0; k < params.samples; ++k) {
            const float4 s = shoot(origin, (k + 0.5f) / params.samples);
            covered += s.x >= 0.f ? 1.f : 0.f;
        }
        out.y = covered / params.samples;
    }
    params.image[idx.y * params.width + idx.x] = out;
}

OA_PROGRAM __miss__ms() {
    oa::set_payload<0>(__float_as_uint(-1.f));
    oa::set_payload<1>(__float_as_uint(0.f));
    oa::set_payload<2>(__float_as_uint(0.f));
    oa::set_payload<3>(0u);
}

__forceinline__ __device__ void hit(float a, float b) {
    oa::set_payload<0>(__float_as_uint(oa::ray_tmax()));
    oa::set_payload<1>(__float_as_uint(a));
    oa::set_payload<2>(__float_as_uint(b));
    oa::set_payload<3>(oa::primitive_type());
}

OA_PROGRAM __closesthit__triangle() { hit((float)oa::instance_id(), oa::ray_time()); }

OA_PROGRAM __closesthit__sphere() {
    float3 point, normal;
    oa::sphere_hit(point, normal);
    hit(normal.z, oa::sphere_data().w);
}

OA_PROGRAM __closesthit__curve() {
    float3 normal;
    const float4 c = oa::round_curve_hit(normal);
    hit(normal.z, c.w);
}

OA_PROGRAM __intersection__sphere() {
    const SphereData* data = oa::sbt_data<SphereData>();
    const float4 s = data->spheres[oa::primitive_index()];
    const float3 o = oa::object_ray_origin(), d = oa::object_ray_direction();
    const float3 oc = make_float3(o.x - s.x, o.y - s.y, o.z - s.z);
    const float b = oa::dot3(oc, d), c = oa::dot3(oc, oc) - s.w * s.w, a = oa::dot3(d, d);
    const float disc = b * b - a * c;
    if (disc < 0.f) return;
    const float t = (-b - sqrtf(disc)) / a;
    const float nz = (o.z + t * d.z - s.z) / s.w;
    oa::report_intersection(t, 7u, __float_as_uint(nz), __float_as_uint(s.w));
}

OA_PROGRAM __closesthit__custom() {
    hit(__uint_as_float(oa::get_attribute<0>()), __uint_as_float(oa::get_attribute<1>()) + oa::hit_kind());
}

// ---- callables ------------------------------------------------------------------------------------------------
OA_CALLABLE(float) __direct_callable__double(float x) { return 2.f * x; }

OA_CALLABLE(float) __direct_callable__square(float x) { return x * x; }

OA_CALLABLE(float) __continuation_callable__depth(float3 origin) { return shoot(origin, 0.f).x; }

OA_PROGRAM __raygen__callables() {
    const uint3 idx = oa::launch_index();
    const float x = (float)idx.x;
    const float doubled = oa::direct_call<float>(0u, x);
    const float squared = oa::direct_call<float>(1u, x);
    const float depth = oa::continuation_call<float>(2u, pixel_origin(idx));
    params.image[idx.y * params.width + idx.x] = make_float4(doubled, squared, depth, 0.f);
}

// ---- specialization: params.scale is bound at compile time by the test ---------------------------------------------
OA_PROGRAM __raygen__scaled() {
    const uint3 idx = oa::launch_index();
    params.image[idx.y * params.width + idx.x] = make_float4(params.scale * idx.x, params.scale, 0.f, 0.f);
}
