// A host (CPU) build of kernels/pathtracer.cu, for tests on machines without a GPU.
//
// The kernel source and its headers (kernels/pathtracer/*.h) are compiled unchanged by a C++ compiler. This
// file supplies what NVRTC and OptiX would: the CUDA vector types and intrinsics the kernel uses (plain C++
// versions), and the `oa::` device interface, whose trace() intersects every triangle of the scene
// (Moller-Trumbore in double precision, closest hit or first hit) and runs the kernel's own closest-hit and
// miss programs with the same semantics as OptiX: payload registers in and out, the miss program picked by
// `miss_index`, no closest-hit program when RAY_FLAG_DISABLE_CLOSESTHIT is set. The test copies the kernels
// folder into its build folder with an empty "optixasync_device.h", so that the kernel's own includes of it
// resolve to nothing, and compiles this file with -I on that copy. Whatever a header uses from CUDA must be
// defined here, before the #include of the kernel.
//
// Entry point: oa_host_launch(params, triangles per mesh, mesh count, threads) runs the raygen program for
// every pixel of params.width x params.height, as optixLaunch would.
#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

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

typedef unsigned long long oa_traversable;

// The kernel's programs, defined by pathtracer.cu below.
extern "C" void __closesthit__radiance();
extern "C" void __miss__radiance();
extern "C" void __miss__shadow();

namespace oa {
enum RayFlags : unsigned int {
    RAY_FLAG_NONE = 0u,
    RAY_FLAG_DISABLE_ANYHIT = 1u << 0,
    RAY_FLAG_ENFORCE_ANYHIT = 1u << 1,
    RAY_FLAG_TERMINATE_ON_FIRST_HIT = 1u << 2,
    RAY_FLAG_DISABLE_CLOSESTHIT = 1u << 3,
    RAY_FLAG_CULL_BACK_FACING_TRIANGLES = 1u << 4,
    RAY_FLAG_CULL_FRONT_FACING_TRIANGLES = 1u << 5,
};

// Per-thread state of the emulated device: the launch index and the current program's view of the ray.
struct ThreadState {
    uint3 index;
    unsigned payload[32];
    float tmax;
    unsigned prim;
    unsigned gas_index;
};
inline thread_local ThreadState state;

inline uint3 launch_index() { return state.index; }
template <unsigned I>
inline unsigned get_payload() { return state.payload[I]; }
template <unsigned I>
inline void set_payload(unsigned v) { state.payload[I] = v; }
inline float ray_tmax() { return state.tmax; }
inline unsigned primitive_index() { return state.prim; }
inline unsigned sbt_gas_index() { return state.gas_index; }

// Defined after the kernel (it needs the kernel's launch parameters).
bool intersect(float3 o, float3 d, float tmin, float tmax, bool any, float* t, unsigned* prim, unsigned* mesh);

template <unsigned N>
inline void trace(oa_traversable, float3 o, float3 d, float tmin, float tmax, float, unsigned, unsigned flags,
                  unsigned sbt_offset, unsigned sbt_stride, unsigned miss_index, unsigned (&p)[N]) {
    // The kernel relies on these (one SBT record per mesh, stride 1, offset 0): check them here too.
    if (sbt_offset != 0u || sbt_stride != 1u || !(flags & RAY_FLAG_DISABLE_ANYHIT)) std::abort();
    float t;
    unsigned prim, mesh;
    const bool hit = intersect(o, d, tmin, tmax, (flags & RAY_FLAG_TERMINATE_ON_FIRST_HIT) != 0u, &t, &prim, &mesh);
    for (unsigned i = 0; i < N; ++i) state.payload[i] = p[i];
    if (hit) {
        if (!(flags & RAY_FLAG_DISABLE_CLOSESTHIT)) {
            state.tmax = t;
            state.prim = prim;
            state.gas_index = mesh;
            __closesthit__radiance();
        }
    } else if (miss_index == 0u) {
        __miss__radiance();
    } else if (miss_index == 1u) {
        __miss__shadow();
    } else {
        std::abort();  // no such miss record
    }
    for (unsigned i = 0; i < N; ++i) p[i] = state.payload[i];
}
}  // namespace oa

#define OA_PROGRAM extern "C" void

#include "pathtracer.cu"

extern "C" {
PathTracerParams params;
}

static_assert(sizeof(PathTracerParams) == 160, "host layout of the launch parameters");
static_assert(sizeof(MeshRecord) == 48, "host layout of a mesh record");
static_assert(sizeof(EmitterTriangle) == 64 && alignof(EmitterTriangle) == 16, "host layout of an emitter");

namespace {
const unsigned* g_triangle_counts = nullptr;
unsigned g_num_meshes = 0;
}  // namespace

bool oa::intersect(float3 o, float3 d, float tmin, float tmax, bool any, float* t_out, unsigned* prim_out,
                   unsigned* mesh_out) {
    double best = static_cast<double>(tmax);
    bool found = false;
    const double ox = o.x, oy = o.y, oz = o.z, dx = d.x, dy = d.y, dz = d.z;
    for (unsigned m = 0; m < g_num_meshes; ++m) {
        const MeshRecord& rec = params.meshes[m];
        for (unsigned f = 0; f < g_triangle_counts[m]; ++f) {
            const float* a = rec.vertices + 3u * rec.indices[3u * f];
            const float* b = rec.vertices + 3u * rec.indices[3u * f + 1u];
            const float* c = rec.vertices + 3u * rec.indices[3u * f + 2u];
            const double e1x = b[0] - a[0], e1y = b[1] - a[1], e1z = b[2] - a[2];
            const double e2x = c[0] - a[0], e2y = c[1] - a[1], e2z = c[2] - a[2];
            const double px = dy * e2z - dz * e2y, py = dz * e2x - dx * e2z, pz = dx * e2y - dy * e2x;
            const double det = e1x * px + e1y * py + e1z * pz;
            if (det == 0.0) continue;
            const double inv = 1.0 / det;
            const double sx = ox - a[0], sy = oy - a[1], sz = oz - a[2];
            const double u = (sx * px + sy * py + sz * pz) * inv;
            if (u < 0.0 || u > 1.0) continue;
            const double qx = sy * e1z - sz * e1y, qy = sz * e1x - sx * e1z, qz = sx * e1y - sy * e1x;
            const double v = (dx * qx + dy * qy + dz * qz) * inv;
            if (v < 0.0 || u + v > 1.0) continue;
            const double t = (e2x * qx + e2y * qy + e2z * qz) * inv;
            if (t < tmin || t > best) continue;
            best = t;
            *prim_out = f;
            *mesh_out = m;
            found = true;
            if (any) {
                *t_out = static_cast<float>(best);
                return true;
            }
        }
    }
    *t_out = static_cast<float>(best);
    return found;
}

extern "C" int oa_host_launch(const void* launch_params, const unsigned* triangle_counts, unsigned num_meshes,
                              unsigned threads) {
    std::memcpy(&params, launch_params, sizeof(params));
    g_triangle_counts = triangle_counts;
    g_num_meshes = num_meshes;
    const unsigned width = params.width, height = params.height;
    if (threads == 0u) threads = 1u;
    std::vector<std::thread> pool;
    for (unsigned k = 0; k < threads; ++k) {
        pool.emplace_back([k, threads, width, height] {
            for (unsigned y = k; y < height; y += threads) {
                for (unsigned x = 0; x < width; ++x) {
                    oa::state.index = make_uint3(x, y, 0u);
                    __raygen__pathtrace();
                }
            }
        });
    }
    for (auto& thread : pool) thread.join();
    return 0;
}
