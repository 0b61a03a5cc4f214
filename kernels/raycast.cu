// Ray casting for tests and tools: one thread per ray, closest hit reported as
// distance, primitive index and instance id (-1 for a miss).
#include "optixasync_device.h"

struct RaycastParams {
    const float* origins;     // count * 3
    const float* directions;  // count * 3
    float* t;                 // count
    int* prim;                // count
    int* inst;                // count
    oa_traversable handle;
    unsigned int count;
    float tmin;
    float tmax;
};

extern "C" __constant__ RaycastParams params;

OA_PROGRAM __raygen__cast() {
    const unsigned int i = oa::launch_index().x;
    if (i >= params.count) return;
    const float3 o = make_float3(params.origins[3 * i], params.origins[3 * i + 1], params.origins[3 * i + 2]);
    const float3 d = make_float3(params.directions[3 * i], params.directions[3 * i + 1], params.directions[3 * i + 2]);
    unsigned int p[3] = {0u, 0u, 0u};
    // SBT stride 0 and offset 0: every geometry of any GAS uses the same hit program, whatever its
    // build-input index (structures built for renderers have one SBT record per input).
    oa::trace(params.handle, o, d, params.tmin, params.tmax, 0.f, 0xFFu, oa::RAY_FLAG_DISABLE_ANYHIT, 0, 0, 0, p);
    params.t[i] = __uint_as_float(p[0]);
    params.prim[i] = (int)p[1];
    params.inst[i] = (int)p[2];
}

OA_PROGRAM __miss__cast() {
    oa::set_payload<0>(__float_as_uint(-1.f));
    oa::set_payload<1>(0xFFFFFFFFu);
    oa::set_payload<2>(0xFFFFFFFFu);
}

OA_PROGRAM __closesthit__cast() {
    oa::set_payload<0>(__float_as_uint(oa::ray_tmax()));
    oa::set_payload<1>(oa::primitive_index());
    oa::set_payload<2>(oa::instance_id());
}
