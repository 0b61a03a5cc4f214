// optixasync device-side interface to OptiX (ABI 87 and later).
//
// The OptiX device functions are intrinsics that the OptiX compiler resolves
// from PTX calls to functions named `_optix_*`. This header declares our own
// thin wrappers over the ones our kernels use, so that kernels compile with
// NVRTC alone: no OptiX SDK, no CUDA toolkit headers (NVRTC provides the
// vector types such as float3 and uint3 as built-ins).
#pragma once

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

// Trace a ray carrying N (<= 32) payload registers in `p`, updated in place.
// The intrinsic always takes 32 payload slots; `count` tells OptiX how many are live.
template <unsigned int N>
__forceinline__ __device__ void trace(oa_traversable handle, float3 origin, float3 direction, float tmin, float tmax,
                                      float time, unsigned int visibility_mask, unsigned int ray_flags,
                                      unsigned int sbt_offset, unsigned int sbt_stride, unsigned int miss_index,
                                      unsigned int (&p)[N]) {
    static_assert(N <= 32, "OptiX allows at most 32 payload registers");
    unsigned int r[32];
#pragma unroll
    for (unsigned int i = 0; i < 32; ++i) r[i] = i < N ? p[i] : 0u;
    const unsigned int payload_type = 0;  // the default payload type
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

}  // namespace oa

// Entry points must keep their names: OptiX finds them by the prefixes
// __raygen__, __miss__, __closesthit__, __anyhit__, __intersection__, __exception__.
#define OA_PROGRAM extern "C" __global__ void
