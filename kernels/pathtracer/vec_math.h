// float3 arithmetic and small load helpers.
//
// NVRTC gives us the vector types but, without the CUDA toolkit headers, no operators on them. Each evaluates
// exactly as written (dot as (xx + yy) + zz). Regrouping one of them, or an expression built from them,
// changes the rounding and, through it, the images; refactors are expected to keep images bit-identical.
#pragma once

namespace pt {

constexpr float PI = 3.14159265358979323846f;
constexpr float INV_PI = 0.31830988618379067154f;

__forceinline__ __device__ float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__forceinline__ __device__ float3 operator-(float3 a, float3 b) { return make_float3(a.x - b.x, a.y - b.y, a.z - b.z); }
__forceinline__ __device__ float3 operator-(float3 a) { return make_float3(-a.x, -a.y, -a.z); }
__forceinline__ __device__ float3 operator*(float3 a, float3 b) { return make_float3(a.x * b.x, a.y * b.y, a.z * b.z); }
__forceinline__ __device__ float3 operator*(float3 a, float s) { return make_float3(a.x * s, a.y * s, a.z * s); }
__forceinline__ __device__ float dot(float3 a, float3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
__forceinline__ __device__ float3 cross(float3 a, float3 b) {
    return make_float3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
__forceinline__ __device__ float3 normalize(float3 a) { return a * rsqrtf(dot(a, a)); }
__forceinline__ __device__ float max3(float3 a) { return fmaxf(a.x, fmaxf(a.y, a.z)); }

// Three consecutive floats through the read-only data cache (vertex buffers hold packed xyz, not float4).
__forceinline__ __device__ float3 load3(const float* p) { return make_float3(__ldg(p), __ldg(p + 1), __ldg(p + 2)); }
__forceinline__ __device__ float3 xyz(float4 a) { return make_float3(a.x, a.y, a.z); }

}  // namespace pt
