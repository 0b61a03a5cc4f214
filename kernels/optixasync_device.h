// optixasync device-side interface to OptiX (ABI 87 and later).
//
// The OptiX device functions are intrinsics that the OptiX compiler resolves
// from PTX calls to functions named `_optix_*`. This header declares our own
// thin wrappers over the ones our kernels use, so that kernels compile with
// NVRTC alone: no OptiX SDK, no CUDA toolkit headers (NVRTC provides the
// vector types such as float3 and uint3 as built-ins).
//
// Every intrinsic used here is one an R535 driver (OptiX 8.0) compiles, except
// the ROCAPS curve vertex data, marked below, which need OptiX 9.0 (R570+).
#pragma once

#include "optixasync_math.h"

typedef unsigned long long oa_traversable;

namespace oa {

// ---- launch ----------------------------------------------------------------
__forceinline__ __device__ uint3 launch_index() {
    unsigned int x, y, z;
    asm("call (%0), _optix_get_launch_index_x, ();" : "=r"(x) :);
    asm("call (%0), _optix_get_launch_index_y, ();" : "=r"(y) :);
    asm("call (%0), _optix_get_launch_index_z, ();" : "=r"(z) :);
    return make_uint3(x, y, z);
}

__forceinline__ __device__ uint3 launch_dimensions() {
    unsigned int x, y, z;
    asm("call (%0), _optix_get_launch_dimension_x, ();" : "=r"(x) :);
    asm("call (%0), _optix_get_launch_dimension_y, ();" : "=r"(y) :);
    asm("call (%0), _optix_get_launch_dimension_z, ();" : "=r"(z) :);
    return make_uint3(x, y, z);
}

// ---- shader binding table ----------------------------------------------------
// Pointer to the data that follows the 32-byte header of the current SBT record.
template <typename T>
__forceinline__ __device__ const T* sbt_data() {
    unsigned long long ptr;
    asm("call (%0), _optix_get_sbt_data_ptr_64, ();" : "=l"(ptr) :);
    return reinterpret_cast<const T*>(ptr);
}

// ---- tracing -----------------------------------------------------------------
// Ray flags (values of the OptiX ABI).
enum RayFlags : unsigned int {
    RAY_FLAG_NONE = 0u,
    RAY_FLAG_DISABLE_ANYHIT = 1u << 0,
    RAY_FLAG_ENFORCE_ANYHIT = 1u << 1,
    RAY_FLAG_TERMINATE_ON_FIRST_HIT = 1u << 2,
    RAY_FLAG_DISABLE_CLOSESTHIT = 1u << 3,
    RAY_FLAG_CULL_BACK_FACING_TRIANGLES = 1u << 4,
    RAY_FLAG_CULL_FRONT_FACING_TRIANGLES = 1u << 5,
};

enum HitKind : unsigned int { HIT_KIND_TRIANGLE_FRONT_FACE = 0xFEu, HIT_KIND_TRIANGLE_BACK_FACE = 0xFFu };

// Payload type ids: the k-th of a module's ModuleOptions.payload_types is PAYLOAD_TYPE_ID_0 << k.
enum PayloadTypeId : unsigned int { PAYLOAD_TYPE_DEFAULT = 0u, PAYLOAD_TYPE_ID_0 = 1u << 0 };

// Trace a ray carrying N (<= 32) payload registers in `p`, updated in place, with the payload type
// `payload_type` (PAYLOAD_TYPE_DEFAULT without payload types, else one PAYLOAD_TYPE_ID_0 << k).
// The intrinsic always takes 32 payload slots; `count` tells OptiX how many are live.
template <unsigned int N>
__forceinline__ __device__ void trace_typed(unsigned int payload_type, oa_traversable handle, float3 origin,
                                            float3 direction, float tmin, float tmax, float time,
                                            unsigned int visibility_mask, unsigned int ray_flags,
                                            unsigned int sbt_offset, unsigned int sbt_stride, unsigned int miss_index,
                                            unsigned int (&p)[N]) {
    static_assert(N <= 32, "OptiX allows at most 32 payload registers");
    unsigned int r[32];
#pragma unroll
    for (unsigned int i = 0; i < 32; ++i) r[i] = i < N ? p[i] : 0u;
    const unsigned int count = N;
    asm volatile(
        "call (%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,"
        "%28,%29,%30,%31), _optix_trace_typed_32, (%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,"
        "%75,%76,%77,%78,%79,%80);"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]),
          "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]),
          "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]),
          "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
        : "r"(payload_type), "l"(handle), "f"(origin.x), "f"(origin.y), "f"(origin.z), "f"(direction.x),
          "f"(direction.y), "f"(direction.z), "f"(tmin), "f"(tmax), "f"(time), "r"(visibility_mask), "r"(ray_flags),
          "r"(sbt_offset), "r"(sbt_stride), "r"(miss_index), "r"(count), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]),
          "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]), "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]),
          "r"(r[13]), "r"(r[14]), "r"(r[15]), "r"(r[16]), "r"(r[17]), "r"(r[18]), "r"(r[19]), "r"(r[20]), "r"(r[21]),
          "r"(r[22]), "r"(r[23]), "r"(r[24]), "r"(r[25]), "r"(r[26]), "r"(r[27]), "r"(r[28]), "r"(r[29]), "r"(r[30]),
          "r"(r[31])
        :);
#pragma unroll
    for (unsigned int i = 0; i < N; ++i) p[i] = r[i];
}

// Trace with the default payload type. `time` is the ray's time, for motion blur: in [time_begin, time_end] of the
// structures' motion options (0 without motion).
template <unsigned int N>
__forceinline__ __device__ void trace(oa_traversable handle, float3 origin, float3 direction, float tmin, float tmax,
                                      float time, unsigned int visibility_mask, unsigned int ray_flags,
                                      unsigned int sbt_offset, unsigned int sbt_stride, unsigned int miss_index,
                                      unsigned int (&p)[N]) {
    trace_typed<N>(PAYLOAD_TYPE_DEFAULT, handle, origin, direction, tmin, tmax, time, visibility_mask, ray_flags,
                   sbt_offset, sbt_stride, miss_index, p);
}

// The payload types a closest-hit, any-hit, miss or intersection program supports (a mask of PAYLOAD_TYPE_ID_0 << k);
// call it first in the program. A raygen may not call it (OptiX refuses the module): it names the type at each trace.
__forceinline__ __device__ void set_payload_types(unsigned int types) {
    asm volatile("call _optix_set_payload_types, (%0);" : : "r"(types) :);
}

template <unsigned int I>
__forceinline__ __device__ unsigned int get_payload() {
    static_assert(I < 32, "payload register index out of range");
    unsigned int v;
    asm volatile("call (%0), _optix_get_payload, (%1);" : "=r"(v) : "r"(I) :);
    return v;
}

template <unsigned int I>
__forceinline__ __device__ void set_payload(unsigned int v) {
    static_assert(I < 32, "payload register index out of range");
    asm volatile("call _optix_set_payload, (%0, %1);" : : "r"(I), "r"(v) :);
}

// ---- hit and ray state -------------------------------------------------------
__forceinline__ __device__ float2 triangle_barycentrics() {
    float b1, b2;
    asm("call (%0, %1), _optix_get_triangle_barycentrics, ();" : "=f"(b1), "=f"(b2) :);
    return make_float2(b1, b2);
}

__forceinline__ __device__ unsigned int primitive_index() {
    unsigned int v;
    asm("call (%0), _optix_read_primitive_idx, ();" : "=r"(v) :);
    return v;
}

__forceinline__ __device__ unsigned int sbt_gas_index() {
    unsigned int v;
    asm("call (%0), _optix_read_sbt_gas_idx, ();" : "=r"(v) :);
    return v;
}

__forceinline__ __device__ unsigned int instance_id() {
    unsigned int v;
    asm("call (%0), _optix_read_instance_id, ();" : "=r"(v) :);
    return v;
}

__forceinline__ __device__ unsigned int instance_index() {
    unsigned int v;
    asm("call (%0), _optix_read_instance_idx, ();" : "=r"(v) :);
    return v;
}

__forceinline__ __device__ unsigned int hit_kind() {
    unsigned int v;
    asm("call (%0), _optix_get_hit_kind, ();" : "=r"(v) :);
    return v;
}

__forceinline__ __device__ float3 world_ray_origin() {
    float x, y, z;
    asm("call (%0), _optix_get_world_ray_origin_x, ();" : "=f"(x) :);
    asm("call (%0), _optix_get_world_ray_origin_y, ();" : "=f"(y) :);
    asm("call (%0), _optix_get_world_ray_origin_z, ();" : "=f"(z) :);
    return make_float3(x, y, z);
}

__forceinline__ __device__ float3 world_ray_direction() {
    float x, y, z;
    asm("call (%0), _optix_get_world_ray_direction_x, ();" : "=f"(x) :);
    asm("call (%0), _optix_get_world_ray_direction_y, ();" : "=f"(y) :);
    asm("call (%0), _optix_get_world_ray_direction_z, ();" : "=f"(z) :);
    return make_float3(x, y, z);
}

__forceinline__ __device__ float3 object_ray_origin() {
    float x, y, z;
    asm("call (%0), _optix_get_object_ray_origin_x, ();" : "=f"(x) :);
    asm("call (%0), _optix_get_object_ray_origin_y, ();" : "=f"(y) :);
    asm("call (%0), _optix_get_object_ray_origin_z, ();" : "=f"(z) :);
    return make_float3(x, y, z);
}

__forceinline__ __device__ float3 object_ray_direction() {
    float x, y, z;
    asm("call (%0), _optix_get_object_ray_direction_x, ();" : "=f"(x) :);
    asm("call (%0), _optix_get_object_ray_direction_y, ();" : "=f"(y) :);
    asm("call (%0), _optix_get_object_ray_direction_z, ();" : "=f"(z) :);
    return make_float3(x, y, z);
}

__forceinline__ __device__ float ray_tmin() {
    float v;
    asm("call (%0), _optix_get_ray_tmin, ();" : "=f"(v) :);
    return v;
}

__forceinline__ __device__ float ray_tmax() {
    float v;
    asm("call (%0), _optix_get_ray_tmax, ();" : "=f"(v) :);
    return v;
}

// The time of the current ray (the `time` of its trace), for motion blur.
__forceinline__ __device__ float ray_time() {
    float v;
    asm("call (%0), _optix_get_ray_time, ();" : "=f"(v) :);
    return v;
}

__forceinline__ __device__ unsigned int ray_flags() {
    unsigned int v;
    asm("call (%0), _optix_get_ray_flags, ();" : "=r"(v) :);
    return v;
}

__forceinline__ __device__ unsigned int ray_visibility_mask() {
    unsigned int v;
    asm("call (%0), _optix_get_ray_visibility_mask, ();" : "=r"(v) :);
    return v;
}

__forceinline__ __device__ oa_traversable gas_traversable_handle() {
    unsigned long long v;
    asm("call (%0), _optix_get_gas_traversable_handle, ();" : "=l"(v) :);
    return v;
}

// The three vertices of a triangle as stored in its GAS (needs the GAS built
// with random vertex access allowed).
__forceinline__ __device__ void triangle_vertex_data(oa_traversable gas, unsigned int prim, unsigned int sbt_gas_idx,
                                                     float time, float3 v[3]) {
    asm("call (%0, %1, %2, %3, %4, %5, %6, %7, %8), _optix_get_triangle_vertex_data, (%9, %10, %11, %12);"
        : "=f"(v[0].x), "=f"(v[0].y), "=f"(v[0].z), "=f"(v[1].x), "=f"(v[1].y), "=f"(v[1].z), "=f"(v[2].x),
          "=f"(v[2].y), "=f"(v[2].z)
        : "l"(gas), "r"(prim), "r"(sbt_gas_idx), "f"(time)
        :);
}

__forceinline__ __device__ void terminate_ray() { asm volatile("call _optix_terminate_ray, ();"); }

__forceinline__ __device__ void ignore_intersection() { asm volatile("call _optix_ignore_intersection, ();"); }

// ---- exceptions --------------------------------------------------------------
__forceinline__ __device__ void throw_exception(int code) {
    asm volatile("call _optix_throw_exception_0, (%0);" : : "r"(code) :);
}

__forceinline__ __device__ int exception_code() {
    int v;
    asm("call (%0), _optix_get_exception_code, ();" : "=r"(v) :);
    return v;
}


// ---- primitive types and hit kinds ----------------------------------------------------------------------------
// The kind of geometry a hit is on (values of the OptiX ABI's OptixPrimitiveType).
enum PrimitiveType : unsigned int {
    PRIMITIVE_TYPE_CUSTOM = 0x2500u,
    PRIMITIVE_TYPE_ROUND_QUADRATIC_BSPLINE = 0x2501u,
    PRIMITIVE_TYPE_ROUND_CUBIC_BSPLINE = 0x2502u,
    PRIMITIVE_TYPE_ROUND_LINEAR = 0x2503u,
    PRIMITIVE_TYPE_ROUND_CATMULLROM = 0x2504u,
    PRIMITIVE_TYPE_FLAT_QUADRATIC_BSPLINE = 0x2505u,
    PRIMITIVE_TYPE_SPHERE = 0x2506u,
    PRIMITIVE_TYPE_ROUND_CUBIC_BEZIER = 0x2507u,
    PRIMITIVE_TYPE_ROUND_QUADRATIC_BSPLINE_ROCAPS = 0x2508u,
    PRIMITIVE_TYPE_ROUND_CUBIC_BSPLINE_ROCAPS = 0x2509u,
    PRIMITIVE_TYPE_ROUND_CATMULLROM_ROCAPS = 0x250Au,
    PRIMITIVE_TYPE_ROUND_CUBIC_BEZIER_ROCAPS = 0x250Bu,
    PRIMITIVE_TYPE_TRIANGLE = 0x2531u,
};

__forceinline__ __device__ unsigned int primitive_type(unsigned int kind) {
    unsigned int v;
    asm("call (%0), _optix_get_primitive_type_from_hit_kind, (%1);" : "=r"(v) : "r"(kind));
    return v;
}

// The primitive type of the current hit (closest hit, any hit).
__forceinline__ __device__ unsigned int primitive_type() { return primitive_type(hit_kind()); }

__forceinline__ __device__ bool is_back_face_hit(unsigned int kind) {
    unsigned int v;
    asm("call (%0), _optix_get_backface_from_hit_kind, (%1);" : "=r"(v) : "r"(kind));
    return v == 1u;
}

__forceinline__ __device__ bool is_front_face_hit(unsigned int kind) { return !is_back_face_hit(kind); }

// ---- custom primitives: intersection programs ----------------------------------------------------------------------
// Report a hit at distance t with a hit kind of your own (0..127) and up to 8 32-bit attributes, read back in the
// closest-hit and any-hit programs with get_attribute<I>(). Returns whether the hit was accepted (t within the ray's
// interval and not ignored by the any-hit program). The pipeline's num_attribute_values must cover the count.
template <typename... A>
__forceinline__ __device__ bool report_intersection(float t, unsigned int kind, A... attributes) {
    constexpr unsigned int N = sizeof...(A);
    static_assert(N <= 8, "OptiX reports at most 8 attributes");
    const unsigned int a[N + 1] = {static_cast<unsigned int>(attributes)..., 0u};
    int r;
    if constexpr (N == 0) {
        asm volatile("call (%0), _optix_report_intersection_0, (%1, %2);" : "=r"(r) : "f"(t), "r"(kind) :);
    } else if constexpr (N == 1) {
        asm volatile("call (%0), _optix_report_intersection_1, (%1, %2, %3);" : "=r"(r) : "f"(t), "r"(kind),
                     "r"(a[0]) :);
    } else if constexpr (N == 2) {
        asm volatile("call (%0), _optix_report_intersection_2, (%1, %2, %3, %4);" : "=r"(r) : "f"(t), "r"(kind),
                     "r"(a[0]), "r"(a[1]) :);
    } else if constexpr (N == 3) {
        asm volatile("call (%0), _optix_report_intersection_3, (%1, %2, %3, %4, %5);" : "=r"(r) : "f"(t), "r"(kind),
                     "r"(a[0]), "r"(a[1]), "r"(a[2]) :);
    } else if constexpr (N == 4) {
        asm volatile("call (%0), _optix_report_intersection_4, (%1, %2, %3, %4, %5, %6);" : "=r"(r) : "f"(t),
                     "r"(kind), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]) :);
    } else if constexpr (N == 5) {
        asm volatile("call (%0), _optix_report_intersection_5, (%1, %2, %3, %4, %5, %6, %7);" : "=r"(r) : "f"(t),
                     "r"(kind), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]) :);
    } else if constexpr (N == 6) {
        asm volatile("call (%0), _optix_report_intersection_6, (%1, %2, %3, %4, %5, %6, %7, %8);" : "=r"(r) : "f"(t),
                     "r"(kind), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]) :);
    } else if constexpr (N == 7) {
        asm volatile("call (%0), _optix_report_intersection_7, (%1, %2, %3, %4, %5, %6, %7, %8, %9);" : "=r"(r)
                     : "f"(t), "r"(kind), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]),
                       "r"(a[6]) :);
    } else {
        asm volatile("call (%0), _optix_report_intersection_8, (%1, %2, %3, %4, %5, %6, %7, %8, %9, %10);" : "=r"(r)
                     : "f"(t), "r"(kind), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]),
                       "r"(a[6]), "r"(a[7]) :);
    }
    return r != 0;
}

// Attribute I of the current hit: what report_intersection reported (custom primitives); for triangles 0 and 1
// are the barycentrics' bits, for curves 0 is the curve parameter's.
template <unsigned int I>
__forceinline__ __device__ unsigned int get_attribute() {
    static_assert(I < 8, "OptiX has at most 8 attributes");
    unsigned int v;
    if constexpr (I == 0) asm("call (%0), _optix_get_attribute_0, ();" : "=r"(v) :);
    else if constexpr (I == 1) asm("call (%0), _optix_get_attribute_1, ();" : "=r"(v) :);
    else if constexpr (I == 2) asm("call (%0), _optix_get_attribute_2, ();" : "=r"(v) :);
    else if constexpr (I == 3) asm("call (%0), _optix_get_attribute_3, ();" : "=r"(v) :);
    else if constexpr (I == 4) asm("call (%0), _optix_get_attribute_4, ();" : "=r"(v) :);
    else if constexpr (I == 5) asm("call (%0), _optix_get_attribute_5, ();" : "=r"(v) :);
    else if constexpr (I == 6) asm("call (%0), _optix_get_attribute_6, ();" : "=r"(v) :);
    else asm("call (%0), _optix_get_attribute_7, ();" : "=r"(v) :);
    return v;
}

// ---- spheres -------------------------------------------------------------------------------------------------------
// Centre (xyz) and radius (w) of sphere `prim` of a GAS at `time` (motion keys interpolated). Like every vertex
// data query (spheres, curves, triangles), it needs the GAS built with AccelOptions(random_vertex_access=True).
__forceinline__ __device__ float4 sphere_data(oa_traversable gas, unsigned int prim, unsigned int sbt_gas_idx,
                                              float time) {
    float4 d;
    asm("call (%0, %1, %2, %3), _optix_get_sphere_data, (%4, %5, %6, %7);"
        : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
        : "l"(gas), "r"(prim), "r"(sbt_gas_idx), "f"(time)
        :);
    return d;
}

// The sphere of the current hit.
__forceinline__ __device__ float4 sphere_data() {
    return sphere_data(gas_traversable_handle(), primitive_index(), sbt_gas_index(), ray_time());
}

// ---- curves --------------------------------------------------------------------------------------------------------
// The parameter u in [0, 1] of the current hit along its curve segment.
__forceinline__ __device__ float curve_parameter() {
    float u;
    asm("call (%0), _optix_get_curve_parameter, ();" : "=f"(u) :);
    return u;
}

// The (u, v) of the current hit on a flat ribbon (flat quadratic B-spline).
__forceinline__ __device__ float2 ribbon_parameters() {
    float u, v;
    asm("call (%0, %1), _optix_get_ribbon_parameters, ();" : "=f"(u), "=f"(v) :);
    return make_float2(u, v);
}

#define OA_CURVE_VERTICES_2(NAME, INTRINSIC)                                                                         \
    __forceinline__ __device__ void NAME(oa_traversable gas, unsigned int prim, unsigned int sbt, float time,        \
                                         float4 d[2]) {                                                              \
        asm("call (%0, %1, %2, %3, %4, %5, %6, %7), " INTRINSIC ", (%8, %9, %10, %11);"                              \
            : "=f"(d[0].x), "=f"(d[0].y), "=f"(d[0].z), "=f"(d[0].w), "=f"(d[1].x), "=f"(d[1].y), "=f"(d[1].z),      \
              "=f"(d[1].w)                                                                                           \
            : "l"(gas), "r"(prim), "r"(sbt), "f"(time)                                                               \
            :);                                                                                                      \
    }
#define OA_CURVE_VERTICES_3(NAME, INTRINSIC)                                                                         \
    __forceinline__ __device__ void NAME(oa_traversable gas, unsigned int prim, unsigned int sbt, float time,        \
                                         float4 d[3]) {                                                              \
        asm("call (%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11), " INTRINSIC ", (%12, %13, %14, %15);"          \
            : "=f"(d[0].x), "=f"(d[0].y), "=f"(d[0].z), "=f"(d[0].w), "=f"(d[1].x), "=f"(d[1].y), "=f"(d[1].z),      \
              "=f"(d[1].w), "=f"(d[2].x), "=f"(d[2].y), "=f"(d[2].z), "=f"(d[2].w)                                   \
            : "l"(gas), "r"(prim), "r"(sbt), "f"(time)                                                               \
            :);                                                                                                      \
    }
#define OA_CURVE_VERTICES_4(NAME, INTRINSIC)                                                                         \
    __forceinline__ __device__ void NAME(oa_traversable gas, unsigned int prim, unsigned int sbt, float time,        \
                                         float4 d[4]) {                                                              \
        asm("call (%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15), " INTRINSIC                \
            ", (%16, %17, %18, %19);"                                                                                \
            : "=f"(d[0].x), "=f"(d[0].y), "=f"(d[0].z), "=f"(d[0].w), "=f"(d[1].x), "=f"(d[1].y), "=f"(d[1].z),      \
              "=f"(d[1].w), "=f"(d[2].x), "=f"(d[2].y), "=f"(d[2].z), "=f"(d[2].w), "=f"(d[3].x), "=f"(d[3].y),      \
              "=f"(d[3].z), "=f"(d[3].w)                                                                             \
            : "l"(gas), "r"(prim), "r"(sbt), "f"(time)                                                               \
            :);                                                                                                      \
    }

// The control points (x, y, z, radius) of segment `prim` of a curve GAS at `time`, one function per curve kind
// (the GAS built with AccelOptions(random_vertex_access=True)).
OA_CURVE_VERTICES_2(linear_curve_vertex_data, "_optix_get_linear_curve_vertex_data")
OA_CURVE_VERTICES_3(quadratic_bspline_vertex_data, "_optix_get_quadratic_bspline_vertex_data")
OA_CURVE_VERTICES_4(cubic_bspline_vertex_data, "_optix_get_cubic_bspline_vertex_data")
OA_CURVE_VERTICES_4(catmullrom_vertex_data, "_optix_get_catmullrom_vertex_data")
OA_CURVE_VERTICES_4(cubic_bezier_vertex_data, "_optix_get_cubic_bezier_vertex_data")
OA_CURVE_VERTICES_3(ribbon_vertex_data, "_optix_get_ribbon_vertex_data")
// ROCAPS curves: OptiX 9.0 (ABI 105, drivers R570+) and later only.
OA_CURVE_VERTICES_3(quadratic_bspline_rocaps_vertex_data, "_optix_get_quadratic_bspline_rocaps_vertex_data_from_handle")
OA_CURVE_VERTICES_4(cubic_bspline_rocaps_vertex_data, "_optix_get_cubic_bspline_rocaps_vertex_data_from_handle")
OA_CURVE_VERTICES_4(catmullrom_rocaps_vertex_data, "_optix_get_catmullrom_rocaps_vertex_data_from_handle")
OA_CURVE_VERTICES_4(cubic_bezier_rocaps_vertex_data, "_optix_get_cubic_bezier_rocaps_vertex_data_from_handle")
#undef OA_CURVE_VERTICES_2
#undef OA_CURVE_VERTICES_3
#undef OA_CURVE_VERTICES_4

// The normal of a flat ribbon at ribbon parameters (u, v) of segment `prim`.
__forceinline__ __device__ float3 ribbon_normal(oa_traversable gas, unsigned int prim, unsigned int sbt, float time,
                                                float2 uv) {
    float3 n;
    asm("call (%0, %1, %2), _optix_get_ribbon_normal, (%3, %4, %5, %6, %7, %8);"
        : "=f"(n.x), "=f"(n.y), "=f"(n.z)
        : "l"(gas), "r"(prim), "r"(sbt), "f"(time), "f"(uv.x), "f"(uv.y)
        :);
    return n;
}

// ---- callables -----------------------------------------------------------------------------------------------------
// Call the direct callable of callables record `sbt_index` (its __direct_callable__ function's signature must
// be Ret(Args...)). A direct callable runs at once and may not trace.
template <typename Ret, typename... Args>
__forceinline__ __device__ Ret direct_call(unsigned int sbt_index, Args... args) {
    unsigned long long fn;
    asm("call (%0), _optix_call_direct_callable, (%1);" : "=l"(fn) : "r"(sbt_index) :);
    return reinterpret_cast<Ret (*)(Args...)>(fn)(args...);
}

// Call the continuation callable of callables record `sbt_index`; it may trace (its stack is the pipeline's
// continuation stack, sized by max_continuation_callable_depth).
template <typename Ret, typename... Args>
__forceinline__ __device__ Ret continuation_call(unsigned int sbt_index, Args... args) {
    unsigned long long fn;
    asm("call (%0), _optix_call_continuation_callable, (%1);" : "=l"(fn) : "r"(sbt_index) :);
    return reinterpret_cast<Ret (*)(Args...)>(fn)(args...);
}

// ---- transforms (instances, static and motion transforms) ----------------------------------------------------------
// Transform types of the OptiX ABI (OptixTransformType).
enum TransformType : unsigned int {
    TRANSFORM_TYPE_NONE = 0u,
    TRANSFORM_TYPE_STATIC = 1u,
    TRANSFORM_TYPE_MATRIX_MOTION = 2u,
    TRANSFORM_TYPE_SRT_MOTION = 3u,
    TRANSFORM_TYPE_INSTANCE = 4u,
};

__forceinline__ __device__ unsigned int transform_list_size() {
    unsigned int v;
    asm("call (%0), _optix_get_transform_list_size, ();" : "=r"(v) :);
    return v;
}

__forceinline__ __device__ oa_traversable transform_list_handle(unsigned int index) {
    unsigned long long v;
    asm("call (%0), _optix_get_transform_list_handle, (%1);" : "=l"(v) : "r"(index) :);
    return v;
}

__forceinline__ __device__ unsigned int transform_type(oa_traversable handle) {
    int v;
    asm("call (%0), _optix_get_transform_type_from_handle, (%1);" : "=r"(v) : "l"(handle) :);
    return (unsigned int)v;
}

#define OA_HANDLE_POINTER(NAME, INTRINSIC)                                                                           \
    __forceinline__ __device__ const float* NAME(oa_traversable handle) {                                            \
        unsigned long long p;                                                                                        \
        asm("call (%0), " INTRINSIC ", (%1);" : "=l"(p) : "l"(handle) :);                                            \
        return reinterpret_cast<const float*>(p);                                                                    \
    }
OA_HANDLE_POINTER(instance_transform, "_optix_get_instance_transform_from_handle")
OA_HANDLE_POINTER(instance_inverse_transform, "_optix_get_instance_inverse_transform_from_handle")
OA_HANDLE_POINTER(static_transform_data, "_optix_get_static_transform_from_handle")
OA_HANDLE_POINTER(matrix_motion_transform_data, "_optix_get_matrix_motion_transform_from_handle")
OA_HANDLE_POINTER(srt_motion_transform_data, "_optix_get_srt_motion_transform_from_handle")
#undef OA_HANDLE_POINTER

// The object-to-world transform of one entry of the transform list at `time`. The motion transforms start with
// child handle (8 bytes), motion options (numKeys, flags: 2 + 2 bytes, time begin, time end), 12 bytes of padding:
// their keys start 32 bytes in, 12 floats (matrix) or 16 (SRT) each.
__forceinline__ __device__ Affine object_to_world(oa_traversable handle, float time) {
    const unsigned int type = transform_type(handle);
    if (type == TRANSFORM_TYPE_INSTANCE) return affine_from(instance_transform(handle));
    if (type == TRANSFORM_TYPE_STATIC) return affine_from(static_transform_data(handle) + 4);  // after child, pad
    if (type == TRANSFORM_TYPE_MATRIX_MOTION || type == TRANSFORM_TYPE_SRT_MOTION) {
        const float* base = type == TRANSFORM_TYPE_MATRIX_MOTION ? matrix_motion_transform_data(handle)
                                                                  : srt_motion_transform_data(handle);
        const unsigned int keys = reinterpret_cast<const unsigned short*>(base + 2)[0];
        int key;
        float fraction;
        motion_key(time, base[3], base[4], keys, key, fraction);
        const unsigned int stride = type == TRANSFORM_TYPE_MATRIX_MOTION ? 12u : 16u;
        const float* first = base + 8 + key * stride;
        return type == TRANSFORM_TYPE_MATRIX_MOTION ? mix_affine(first, first + 12, fraction)
                                                    : mix_srt(first, first + 16, fraction);
    }
    return affine_identity();
}

// The object-to-world transform of the current hit (instances, static and motion transforms, at the ray's time).
__forceinline__ __device__ Affine object_to_world() {
    const unsigned int size = transform_list_size();
    const float time = ray_time();
    Affine m = affine_identity();
    for (unsigned int i = 0; i < size; ++i) m = compose(m, object_to_world(transform_list_handle(i), time));
    return m;
}

// An object-space point, vector or normal of the current hit in world space.
__forceinline__ __device__ float3 object_to_world_point(float3 p) { return transform_point(object_to_world(), p); }
__forceinline__ __device__ float3 object_to_world_vector(float3 v) { return transform_vector(object_to_world(), v); }
__forceinline__ __device__ float3 object_to_world_normal(float3 n) {
    return normalized3(transform_normal(invert(object_to_world()), n));
}

// The world-to-object transform of the current hit.
__forceinline__ __device__ Affine world_to_object() { return invert(object_to_world()); }

// ---- hit points on built-in primitives (closest hit, any hit) --------------------------------------------------------
// The object-space hit point of the current hit. OptiX gives the object-space ray only to intersection and any-hit
// programs; this one works in closest-hit programs too: the world-space ray at its hit distance (the same t in both
// spaces), through the world-to-object transform of the hit's transform list (none for a GAS traced directly).
__forceinline__ __device__ float3 object_hit_point() {
    const float3 o = world_ray_origin(), d = world_ray_direction();
    const float t = ray_tmax();
    const float3 world = make_float3(o.x + t * d.x, o.y + t * d.y, o.z + t * d.z);
    return transform_list_size() ? transform_point(world_to_object(), world) : world;
}

// The object-space hit point and unit normal on the sphere of the current hit (reads the sphere data: the GAS
// built with AccelOptions(random_vertex_access=True)). oa::object_to_world_normal takes the normal to world space.
__forceinline__ __device__ void sphere_hit(float3& point, float3& normal) {
    const float4 s = sphere_data();
    point = object_hit_point();
    const float inv = 1.0f / s.w;
    normal = make_float3((point.x - s.x) * inv, (point.y - s.y) * inv, (point.z - s.z) * inv);
}

// The curve point (xyz) and radius (w) at the current hit of a round curve, and the object-space normal there
// (reads the vertex data: the GAS built with AccelOptions(random_vertex_access=True)).
// Works for every round kind (not ROCAPS: use the _rocaps vertex data with the same basis) of the current hit.
__forceinline__ __device__ float4 round_curve_hit(float3& normal) {
    const oa_traversable gas = gas_traversable_handle();
    const unsigned int prim = primitive_index(), sbt = sbt_gas_index();
    const float time = ray_time(), u = curve_parameter();
    float4 cp[4];
    float4 c;
    switch (primitive_type()) {
        case PRIMITIVE_TYPE_ROUND_LINEAR:
            linear_curve_vertex_data(gas, prim, sbt, time, cp);
            c = linear_curve_point(cp, u);
            break;
        case PRIMITIVE_TYPE_ROUND_QUADRATIC_BSPLINE:
            quadratic_bspline_vertex_data(gas, prim, sbt, time, cp);
            c = quadratic_bspline_point(cp, u);
            break;
        case PRIMITIVE_TYPE_ROUND_CATMULLROM:
            catmullrom_vertex_data(gas, prim, sbt, time, cp);
            c = catmullrom_point(cp, u);
            break;
        case PRIMITIVE_TYPE_ROUND_CUBIC_BEZIER:
            cubic_bezier_vertex_data(gas, prim, sbt, time, cp);
            c = cubic_bezier_point(cp, u);
            break;
        default:
            cubic_bspline_vertex_data(gas, prim, sbt, time, cp);
            c = cubic_bspline_point(cp, u);
            break;
    }
    normal = round_curve_normal(object_hit_point(), c);
    return c;
}


}  // namespace oa

// Entry points must keep their names: OptiX finds them by the prefixes
// __raygen__, __miss__, __closesthit__, __anyhit__, __intersection__, __exception__.
// Callables are device functions, declared with OA_CALLABLE(ReturnType) and named __direct_callable__name or
// __continuation_callable__name.
#define OA_PROGRAM extern "C" __global__ void
#define OA_CALLABLE(RET) extern "C" __device__ RET
