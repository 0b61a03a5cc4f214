// Hello triangle: an orthographic camera looks down +z at a GAS; hits are
// shaded with their barycentric coordinates, misses take the miss record's colour.
#include "optixasync_device.h"

struct HelloParams {
    float4* image;        // width * height RGBA; alpha holds the hit distance, -1 for a miss
    unsigned int width;
    unsigned int height;
    oa_traversable handle;
    float2 view_min;      // world xy seen at the image's first pixel corner
    float2 view_max;      // world xy seen at the image's last pixel corner
    float eye_z;          // rays start at z = eye_z and travel along +z
};

struct MissData {
    float3 color;
};

extern "C" __constant__ HelloParams params;

OA_PROGRAM __raygen__hello() {
    const uint3 idx = oa::launch_index();
    const float u = (idx.x + 0.5f) / params.width;
    const float v = (idx.y + 0.5f) / params.height;
    const float3 origin = make_float3(params.view_min.x + u * (params.view_max.x - params.view_min.x),
                                      params.view_min.y + v * (params.view_max.y - params.view_min.y), params.eye_z);
    unsigned int p[4] = {0u, 0u, 0u, 0u};
    oa::trace(params.handle, origin, make_float3(0.f, 0.f, 1.f), 0.f, 1e16f, 0.f, 0xFFu, oa::RAY_FLAG_NONE, 0, 1, 0, p);
    params.image[idx.y * params.width + idx.x] =
        make_float4(__uint_as_float(p[0]), __uint_as_float(p[1]), __uint_as_float(p[2]), __uint_as_float(p[3]));
}

OA_PROGRAM __miss__hello() {
    const MissData* data = oa::sbt_data<MissData>();
    oa::set_payload<0>(__float_as_uint(data->color.x));
    oa::set_payload<1>(__float_as_uint(data->color.y));
    oa::set_payload<2>(__float_as_uint(data->color.z));
    oa::set_payload<3>(__float_as_uint(-1.f));
}

OA_PROGRAM __closesthit__hello() {
    const float2 b = oa::triangle_barycentrics();
    oa::set_payload<0>(__float_as_uint(1.f - b.x - b.y));
    oa::set_payload<1>(__float_as_uint(b.x));
    oa::set_payload<2>(__float_as_uint(b.y));
    oa::set_payload<3>(__float_as_uint(oa::ray_tmax()));
}
