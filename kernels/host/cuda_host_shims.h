// Plain C++ stand-ins for what NVRTC provides to the kernels: the CUDA qualifiers, the vector types and the
// intrinsics the device headers use. Included before any kernel header by the host builds of device code
// (pathtracer_host.cpp, bsdf_host.cpp), so that the headers compile unchanged with a C++ compiler. Whatever a
// kernel header starts to use from CUDA must be added here.
#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#define __device__
#define __forceinline__ inline
#define __global__
#define __constant__
#define __align__(n) alignas(n)

struct alignas(8) float2 { float x, y; };
struct float3 { float x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
struct uint3 { unsigned int x, y, z; };
struct alignas(4) uchar4 { unsigned char x, y, z, w; };

inline float2 make_float2(float x, float y) { return {x, y}; }
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
inline uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z, unsigned char w) { return {x, y, z, w}; }

template <typename T>
inline T __ldg(const T* p) { return *p; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    const std::uint64_t v = (static_cast<std::uint64_t>(hi) << 32) | lo;
    return static_cast<unsigned>(v >> (shift & 31u));
}
inline unsigned __umulhi(unsigned a, unsigned b) {
    return static_cast<unsigned>((static_cast<std::uint64_t>(a) * b) >> 32);
}
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
// Device atomics: the host launch runs pixels on several threads, so these are real atomics.
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
    return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
}
