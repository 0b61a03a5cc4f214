// A module with one payload type (tests/program/test_programming_model_gpu.py): the hit and miss programs declare
// it (optixSetPayloadTypes is refused in a raygen, which names the type at each trace instead).
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

extern "C" __constant__ Params params;

OA_PROGRAM __raygen__typed() {
    const uint3 idx = oa::launch_index();
    const float u = (idx.x + 0.5f) / params.width, v = (idx.y + 0.5f) / params.height;
    const float3 origin = make_float3(params.view_min.x + u * (params.view_max.x - params.view_min.x),
                                      params.view_min.y + v * (params.view_max.y - params.view_min.y), -5.f);
    unsigned int p[2] = {0u, 7u};
    oa::trace_typed(oa::PAYLOAD_TYPE_ID_0, params.handle, origin, make_float3(0.f, 0.f, 1.f), 0.f, 1e16f, 0.f, 0xFFu,
                    oa::RAY_FLAG_NONE, 0, 1, 0, p);
    params.image[idx.y * params.width + idx.x] = make_float4(__uint_as_float(p[0]), (float)p[1], 0.f, 0.f);
}

OA_PROGRAM __miss__typed() {
    oa::set_payload_types(oa::PAYLOAD_TYPE_ID_0);
    oa::set_payload<0>(__float_as_uint(-1.f));
}

OA_PROGRAM __closesthit__typed() {
    oa::set_payload_types(oa::PAYLOAD_TYPE_ID_0);
    oa::set_payload<0>(__float_as_uint(oa::ray_tmax()));
    oa::set_payload<1>(oa::get_payload<1>() + 1u);
}
