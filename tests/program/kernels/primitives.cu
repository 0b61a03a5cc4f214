// Every device helper of optixasync_device.h for built-in primitives, custom primitives, callables, payload types,
// motion and transforms, used once, so that NVRTC compiles each of them (tests/program/test_device_helpers.py).
// Also the programs the CPU tests create modules and groups from.
#include "optixasync_device.h"

struct Params {
    float4* out;
    oa_traversable handle;
    float time;
};

extern "C" __constant__ Params params;

OA_CALLABLE(float3) __direct_callable__tint(float3 color, float amount) {
    return make_float3(color.x * amount, color.y * amount, color.z * amount);
}

OA_CALLABLE(float) __continuation_callable__shadow(float3 origin) {
    unsigned int p[1] = {0u};
    oa::trace(params.handle, origin, make_float3(0.f, 1.f, 0.f), 0.f, 1e16f, params.time, 0xFFu,
              oa::RAY_FLAG_TERMINATE_ON_FIRST_HIT, 0, 1, 0, p);
    return __uint_as_float(p[0]);
}

OA_PROGRAM __raygen__all() {
    const uint3 idx = oa::launch_index();
    unsigned int p[4] = {0u, 0u, 0u, 0u};
    oa::trace(params.handle, make_float3(0.f, 0.f, -1.f), make_float3(0.f, 0.f, 1.f), 0.f, 1e16f, params.time, 0xFFu,
              oa::RAY_FLAG_NONE, 0, 1, 0, p);
    unsigned int q[2] = {0u, 0u};
    oa::trace_typed(oa::PAYLOAD_TYPE_ID_0, params.handle, make_float3(0.f, 0.f, -1.f), make_float3(0.f, 0.f, 1.f), 0.f,
                    1e16f, params.time, 0xFFu, oa::RAY_FLAG_NONE, 0, 1, 0, q);
    const float3 tinted = oa::direct_call<float3>(0, make_float3(__uint_as_float(p[0]), 0.f, 0.f), 0.5f);
    const float shadow = oa::continuation_call<float>(1, make_float3(0.f, 0.f, 0.f));
    params.out[idx.x] = make_float4(tinted.x, tinted.y, tinted.z, shadow + __uint_as_float(q[0]));
}

OA_PROGRAM __miss__all() { oa::set_payload<0>(__float_as_uint(-1.f)); }

OA_PROGRAM __intersection__box() {
    const float3 o = oa::object_ray_origin();
    const float3 d = oa::object_ray_direction();
    const float t = (0.5f - o.z) / d.z;
    if (t > oa::ray_tmin() && t < oa::ray_tmax()) {
        oa::report_intersection(t, 0u);
        oa::report_intersection(t, 1u, __float_as_uint(o.x + t * d.x));
        oa::report_intersection(t, 2u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u);
    }
}

OA_PROGRAM __anyhit__all() {
    if (oa::ray_flags() & oa::RAY_FLAG_TERMINATE_ON_FIRST_HIT) oa::terminate_ray();
    if (oa::ray_visibility_mask() == 0u) oa::ignore_intersection();
}

OA_PROGRAM __closesthit__sphere() {
    float3 point, normal;
    oa::sphere_hit(point, normal);
    const float4 s = oa::sphere_data();
    const float3 world = oa::object_to_world_normal(normal);
    oa::set_payload<0>(__float_as_uint(world.x + s.w + point.x));
    oa::set_payload<1>(oa::is_front_face_hit(oa::hit_kind()) ? 1u : 0u);
}

OA_PROGRAM __closesthit__curve() {
    float3 normal;
    const float4 c = oa::round_curve_hit(normal);
    const oa_traversable gas = oa::gas_traversable_handle();
    const unsigned int prim = oa::primitive_index(), sbt = oa::sbt_gas_index();
    const float time = oa::ray_time();
    float4 cp[4];
    float sum = 0.f;  // every result used, so that no call is optimised away
    oa::quadratic_bspline_rocaps_vertex_data(gas, prim, sbt, time, cp);
    sum += cp[2].w;
    oa::cubic_bspline_rocaps_vertex_data(gas, prim, sbt, time, cp);
    sum += cp[3].w;
    oa::catmullrom_rocaps_vertex_data(gas, prim, sbt, time, cp);
    sum += cp[3].w;
    oa::cubic_bezier_rocaps_vertex_data(gas, prim, sbt, time, cp);
    sum += cp[3].w;
    float4 ribbon[3];
    oa::ribbon_vertex_data(gas, prim, sbt, time, ribbon);
    const float3 rn = oa::ribbon_normal(gas, prim, sbt, time, oa::ribbon_parameters());
    const float u = oa::curve_parameter() + __uint_as_float(oa::get_attribute<0>());
    oa::set_payload<0>(__float_as_uint(c.w + normal.x + sum + ribbon[2].w + rn.x + u));
    oa::set_payload<1>(oa::primitive_type());
}

OA_PROGRAM __closesthit__custom() {
    const unsigned int a = oa::get_attribute<0>() + oa::get_attribute<1>() + oa::get_attribute<7>();
    const float3 p = oa::object_to_world_point(oa::object_hit_point());
    const float3 v = oa::object_to_world_vector(make_float3(1.f, 0.f, 0.f));
    const float inverse = oa::instance_inverse_transform(oa::transform_list_handle(0))[3];
    oa::set_payload<0>(__float_as_uint(p.x + v.x + inverse + (float)oa::transform_list_size()));
    oa::set_payload<1>(a + oa::primitive_type(oa::hit_kind()));
}

OA_PROGRAM __closesthit__typed() {
    oa::set_payload_types(oa::PAYLOAD_TYPE_ID_0);
    oa::set_payload<0>(__float_as_uint(oa::ray_tmax()));
}
