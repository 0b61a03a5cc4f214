// A host (CPU) build of kernels/pathtracer.cu: the CPU device (optixasync.cpu) and the host-build tests.
//
// The kernel source and its headers (kernels/pathtracer/*.h) are compiled unchanged by a C++ compiler. This
// file supplies what NVRTC and OptiX would: the CUDA vector types and intrinsics the kernel uses (plain C++
// versions, in cuda_host_shims.h, shared with the BSDF harness), and the `oa::` device interface, whose trace()
// intersects the scene's triangles (Moller-Trumbore in double precision, closest hit or first hit, the static
// meshes through the hierarchy of triangle_bvh.h), and in a program built with OA_SHAPES every sphere and curve
// segment of its shape records (shape_intersect.h), with OA_MOTION moving meshes where their keys put them at the
// ray's time (motion_host.h), and
// runs the kernel's own closest-hit and miss programs with the same semantics as OptiX: payload registers in and
// out, the miss program picked by `miss_index`, no closest-hit program when RAY_FLAG_DISABLE_CLOSESTHIT is set.
// The build (optixasync/cpu/_build.py) copies the kernels folder into its build folder with an empty
// "optixasync_device.h", so that the kernel's own includes of it resolve to nothing, and compiles this file with
// -I on that copy. Whatever a header uses from CUDA must be defined in cuda_host_shims.h, which comes before the
// #include of the kernel.
//
// Entry point: oa_host_launch(params, triangles per mesh, mesh count, threads, variant) runs the raygen program of
// the output variant (an OUTPUT_* mask) for every pixel of params.width x params.height, as optixLaunch would;
// oa_host_launch3 adds the launch's depth (a batch of views). oa_host_place_worlds runs the worlds' placement
// (pathtracer/worlds.h) as the GPU's placement kernel does. The library keeps one launch's state in globals: one
// launch at a time (the Python side holds a lock per library).
// The program is the generated source (optixasync/render/_source.py, with its host entry oa_host_raygen), which
// the build writes into its folder and names with -DOA_PROGRAM_SOURCE; it includes pathtracer.cu.
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cuda_host_shims.h"

typedef unsigned long long oa_traversable;

// A texture object on the host: the "handle" the kernel holds is the address of one of these. Texels are linear
// RGBA float32 (the placement decodes sRGB before), looked up with the texture unit's rules for normalised
// coordinates: texel centres at (i + 0.5) / size, bilinear weights from the fraction, and wrap, clamp or mirror
// addressing per axis.
struct HostTexture {
    const float* texels;  // (height, width, 4)
    int width, height;
    int wrap[2];          // 0 repeat, 1 clamp, 2 mirror
    int nearest;          // 1: nearest texel, 0: bilinear
};

inline int host_texel_index(int i, int size, int wrap) {
    if (wrap == 1) return i < 0 ? 0 : (i >= size ? size - 1 : i);
    if (wrap == 2) {
        const int period = 2 * size;
        int m = i % period;
        if (m < 0) m += period;
        return m < size ? m : period - 1 - m;
    }
    int m = i % size;
    return m < 0 ? m + size : m;
}

template <typename T>
inline T tex2D(unsigned long long handle, float u, float v) {
    const HostTexture& t = *reinterpret_cast<const HostTexture*>(handle);
    auto fetch = [&](int x, int y) {
        const float* p = t.texels + 4 * (static_cast<long>(host_texel_index(y, t.height, t.wrap[1])) * t.width +
                                         host_texel_index(x, t.width, t.wrap[0]));
        return make_float4(p[0], p[1], p[2], p[3]);
    };
    if (t.wrap[0] == 0) u -= std::floor(u);
    if (t.wrap[1] == 0) v -= std::floor(v);
    const float x = u * t.width, y = v * t.height;
    if (t.nearest) return fetch(static_cast<int>(std::floor(x)), static_cast<int>(std::floor(y)));
    const float fx = x - 0.5f, fy = y - 0.5f;
    const int x0 = static_cast<int>(std::floor(fx)), y0 = static_cast<int>(std::floor(fy));
    const float ax = fx - x0, ay = fy - y0;
    const float4 a = fetch(x0, y0), b = fetch(x0 + 1, y0), c = fetch(x0, y0 + 1), d = fetch(x0 + 1, y0 + 1);
    auto mix = [](float4 p, float4 q, float w) {
        return make_float4(p.x + (q.x - p.x) * w, p.y + (q.y - p.y) * w, p.z + (q.z - p.z) * w, p.w + (q.w - p.w) * w);
    };
    return mix(mix(a, b, ax), mix(c, d, ax), ay);
}

// The kernel's programs, defined by pathtracer.cu below.
extern "C" void __closesthit__radiance();
extern "C" void __closesthit__sphere();
extern "C" void __closesthit__curve();
extern "C" void __closesthit__custom();
extern "C" void __intersection__custom();
extern "C" void __anyhit__cutout();
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
    float b1, b2;         // barycentrics of the hit or candidate
    float u;              // curve parameter of a curve hit
    float time;           // the ray's time (motion blur)
    float tmin;           // the ray's tmin (intersection programs)
    float reported;       // what an intersection program reported (report_intersection), or -1
    float3 origin;        // world ray origin
    float3 direction;     // world ray direction
    bool ignored;         // the any-hit program called ignore_intersection()
    bool no_anyhit;       // the ray was traced with RAY_FLAG_DISABLE_ANYHIT (a program without cut-outs)
};
inline thread_local ThreadState state;

inline uint3 launch_index() { return state.index; }
template <unsigned I>
inline unsigned get_payload() { return state.payload[I]; }
template <unsigned I>
inline void set_payload(unsigned v) { state.payload[I] = v; }
inline float ray_tmax() { return state.tmax; }
inline unsigned primitive_index() { return state.prim; }
// The stand-in intersects every mesh record in world space, instance or not. As OptiX reports them: without
// instances the record index is the build input of the one GAS; with instances it is the instance id, and every
// instance's GAS has one build input (index 0). Set by oa_host_launch from params.scene.instanced.
inline bool host_instanced = false;
inline unsigned sbt_gas_index() { return host_instanced ? 0u : state.gas_index; }
inline unsigned instance_id() { return host_instanced ? state.gas_index : 0u; }
inline float2 triangle_barycentrics() { return make_float2(state.b1, state.b2); }
inline float curve_parameter() { return state.u; }
// Intersection programs see the world ray as the object ray: the stand-in traces instances with identity transforms.
inline float3 object_ray_origin() { return state.origin; }
inline float3 object_ray_direction() { return state.direction; }
inline float ray_tmin() { return state.tmin; }
template <typename... A>
inline bool report_intersection(float t, unsigned, A...) {
    if (!(t >= state.tmin && t <= state.tmax)) return false;
    state.reported = t;
    state.tmax = t;
    return true;
}
inline float3 world_ray_origin() { return state.origin; }
inline float3 world_ray_direction() { return state.direction; }
inline void ignore_intersection() { state.ignored = true; }

// What intersect() found: the closest (or, with `any`, the first) hit of a ray.
struct HostHit {
    float t = 0.0f;
    unsigned prim = 0u;
    unsigned index = 0u;  // the mesh record, or the shape record
    unsigned kind = 0u;   // HIT_TRIANGLE, HIT_SPHERE, HIT_CURVE
    float b1 = 0.0f, b2 = 0.0f, u = 0.0f;
};
enum HostHitKind : unsigned { HIT_TRIANGLE = 0u, HIT_SPHERE = 1u, HIT_CURVE = 2u, HIT_CUSTOM = 3u };

// Defined after the kernel (it needs the kernel's launch parameters).
bool intersect(float3 o, float3 d, float tmin, float tmax, bool any, HostHit& hit);

// Runs the closest-hit program of the hit's primitive (defined after the kernel, which says whether it has shapes).
void closest_hit(const HostHit& hit);

// Rays traced, counted by the stand-in itself (for the kernel's ray counter): [0] closest-hit rays (miss 0),
// [1] shadow rays (miss 1).
inline std::atomic<unsigned long long> host_traces[2];

template <unsigned N>
inline void trace(oa_traversable, float3 o, float3 d, float tmin, float tmax, float time, unsigned, unsigned flags,
                  unsigned sbt_offset, unsigned sbt_stride, unsigned miss_index, unsigned (&p)[N]) {
    // The kernel relies on these (one SBT record per mesh, stride 1, offset 0): check them here too.
    if (sbt_offset != 0u || sbt_stride != 1u) std::abort();
    state.no_anyhit = (flags & RAY_FLAG_DISABLE_ANYHIT) != 0u;
    host_traces[miss_index == 1u ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
    HostHit hit;
    for (unsigned i = 0; i < N; ++i) state.payload[i] = p[i];
    state.origin = o;
    state.direction = d;
    state.time = time;
    if (intersect(o, d, tmin, tmax, (flags & RAY_FLAG_TERMINATE_ON_FIRST_HIT) != 0u, hit)) {
        if (!(flags & RAY_FLAG_DISABLE_CLOSESTHIT)) closest_hit(hit);
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

#include OA_PROGRAM_SOURCE
#include "motion_host.h"
#include "shape_intersect.h"

void oa::closest_hit(const HostHit& hit) {
    state.tmax = hit.t;
    state.prim = hit.prim;
    state.gas_index = hit.index;
    state.b1 = hit.b1;
    state.b2 = hit.b2;
    state.u = hit.u;
    if (hit.kind == HIT_TRIANGLE) return __closesthit__radiance();
#ifdef OA_SHAPES
    if (hit.kind == HIT_SPHERE) return __closesthit__sphere();
#ifdef OA_CUSTOM
    if (hit.kind == HIT_CUSTOM) return __closesthit__custom();
#endif
    return __closesthit__curve();
#else
    std::abort();  // shapes in a program built without them (oa_host_launch refuses such a scene)
#endif
}

extern "C" {
PathTracerParams params;
}

static_assert(sizeof(PathTracerParams) == 424, "host layout of the launch parameters");
static_assert(sizeof(SceneRecord) == 80, "host layout of the scene record");
static_assert(sizeof(LightRecord) == 24, "host layout of a light record");
static_assert(sizeof(MeshRecord) == 152, "host layout of a mesh record");
static_assert(sizeof(MaterialRecord) == 240, "host layout of a material record");
static_assert(sizeof(EmitterTriangle) == 64 && alignof(EmitterTriangle) == 16, "host layout of an emitter");

namespace {
const unsigned* g_triangle_counts = nullptr;
unsigned g_num_meshes = 0;
}  // namespace

// Vertex `i` of a mesh record in world space (an instance's placed by its to_world rows).
static void world_corner(const MeshRecord& rec, unsigned i, double out[3]) {
    const float* p = rec.vertices + 3u * i;
    if (!(rec.flags & MESH_INSTANCED)) {
        out[0] = p[0], out[1] = p[1], out[2] = p[2];
        return;
    }
    const float* m = rec.to_world;
    for (int r = 0; r < 3; ++r) {
        out[r] = static_cast<double>(m[4 * r]) * p[0] + static_cast<double>(m[4 * r + 1]) * p[1] +
                 static_cast<double>(m[4 * r + 2]) * p[2] + m[4 * r + 3];
    }
}

// The any-hit program's verdict on a candidate (cut-out meshes and meshes whose back faces are culled only; OptiX
// skips it for the others, which are built with any-hit disabled).
static bool accepted(unsigned mesh, unsigned prim, double t, double u, double v) {
    if (!(params.scene.meshes[mesh].flags & (MESH_ALPHA_MASK | MESH_ALPHA_BLEND | MESH_CULL_BACK))) return true;
    // A program compiled without cut-outs (features.h) traced a mesh that needs its any-hit program: the GPU would
    // have drawn it opaque. Never silently: the host build stops.
    if (oa::state.no_anyhit) std::abort();
    oa::ThreadState saved = oa::state;
    oa::state.gas_index = mesh;
    oa::state.prim = prim;
    oa::state.tmax = static_cast<float>(t);
    oa::state.b1 = static_cast<float>(u);
    oa::state.b2 = static_cast<float>(v);
    oa::state.ignored = false;
    __anyhit__cutout();
    const bool ignored = oa::state.ignored;
    oa::state = saved;
    return !ignored;
}

#include "triangle_bvh.h"

// Whether triangle f of mesh m (corners a, b, c in world space) is hit in [tmin, best] and accepted; keeps it.
static bool try_triangle(unsigned m, unsigned f, const double* a, const double* b, const double* c,
                         const double o[3], const double d[3], double tmin, double& best, unsigned long long& best_key,
                         bool& found, oa::HostHit& hit) {
    double t, u, v;
    if (!triangle_hit(a, b, c, o, d, t, u, v)) return false;
    const unsigned long long key = (static_cast<unsigned long long>(m) << 32) | f;
    if (t < tmin || !better(t, key, best, best_key, found)) return false;
    if (!accepted(m, f, t, u, v)) return false;
    best = t;
    best_key = key;
    hit.kind = oa::HIT_TRIANGLE;
    hit.prim = f;
    hit.index = m;
    hit.b1 = static_cast<float>(u);
    hit.b2 = static_cast<float>(v);
    found = true;
    return true;
}

bool oa::intersect(float3 o, float3 d, float tmin, float tmax, bool any, HostHit& hit) {
    double best = static_cast<double>(tmax);
    unsigned long long best_key = 0ull;
    bool found = false;
    const double od[3] = {o.x, o.y, o.z}, dd[3] = {d.x, d.y, d.z};
    const double inv[3] = {1.0 / dd[0], 1.0 / dd[1], 1.0 / dd[2]};
    const host_bvh::Tree& tree = host_bvh::g_tree;
    if (!tree.order.empty()) {  // the static meshes, through the hierarchy, near child first
        unsigned stack[128], depth = 0u;
        stack[depth++] = 0u;
        while (depth) {
            const host_bvh::Node& node = tree.nodes[stack[--depth]];
            if (!host_bvh::meets(node.box, od, inv, tmin, best)) continue;
            if (!node.count) {
                const bool far_first = dd[node.axis] >= 0.0;  // the far child goes on the stack first
                stack[depth++] = node.child + (far_first ? 1u : 0u);
                stack[depth++] = node.child + (far_first ? 0u : 1u);
                continue;
            }
            for (unsigned k = node.first; k < node.first + node.count; ++k) {
                const unsigned slot = tree.order[k];
                const double* c = tree.corners.data() + 9u * slot;
                const unsigned long long key = tree.keys[slot];
                if (try_triangle(static_cast<unsigned>(key >> 32), static_cast<unsigned>(key & 0xffffffffu), c, c + 3,
                                 c + 6, od, dd, tmin, best, best_key, found, hit) && any) {
                    hit.t = static_cast<float>(best);
                    return true;
                }
            }
        }
    }
    for (unsigned m = 0; m < g_num_meshes; ++m) {  // the meshes outside it, triangle by triangle (at the ray's time)
        const MovingMesh moving = moving_mesh(m, state.time);
        if (!moving.keys && host_bvh::g_tree.built) continue;
        const MeshRecord& rec = params.scene.meshes[m];
        for (unsigned f = 0; f < g_triangle_counts[m]; ++f) {
            double a[3], b[3], c[3];
            for (unsigned k = 0; k < 3u; ++k) {
                double* out = k == 0u ? a : (k == 1u ? b : c);
                if (moving.keys) {
                    moving_corner(rec, moving, rec.indices[3u * f + k], out);
                } else {
                    world_corner(rec, rec.indices[3u * f + k], out);
                }
            }
            if (try_triangle(m, f, a, b, c, od, dd, tmin, best, best_key, found, hit) && any) {
                hit.t = static_cast<float>(best);
                return true;
            }
        }
    }
    found = intersect_shapes(o, d, tmin, any, best, hit) || found;
    hit.t = static_cast<float>(best);
    return found;
}

// A launch of width x height x depth threads (depth: a batch's views times their lanes).
extern "C" int oa_host_launch3(const void* launch_params, const unsigned* triangle_counts, unsigned num_meshes,
                               unsigned threads, unsigned variant, unsigned depth) {
    std::memcpy(&params, launch_params, sizeof(params));
#ifndef OA_SHAPES
    if (params.scene.num_shapes) return -1;  // a scene with shapes needs the program built with OA_SHAPES
#endif
#ifndef OA_MOTION
    if (params.scene.motions) return -2;  // a scene with moving meshes needs the program built with OA_MOTION
#endif
#ifndef OA_CUSTOM
    for (unsigned s = 0; s < params.scene.num_shapes; ++s) {
        if (params.scene.shapes[s].kind == SHAPE_CUSTOM) return -3;  // custom primitives need OA_CUSTOM
    }
#endif
    oa::host_instanced = params.scene.instanced != 0u;
    g_triangle_counts = triangle_counts;
    g_num_meshes = num_meshes;
    prepare_shapes();
    prepare_triangles();
    const unsigned width = params.width, height = params.height;
    if (threads == 0u) threads = 1u;
    std::vector<std::thread> pool;
    for (unsigned k = 0; k < threads; ++k) {
        pool.emplace_back([k, threads, width, height, depth, variant] {
            for (unsigned row = k; row < height * depth; row += threads) {
                for (unsigned x = 0; x < width; ++x) {
                    oa::state.index = make_uint3(x, row % height, row / height);
                    oa_host_raygen(variant);
                }
            }
        });
    }
    for (auto& thread : pool) thread.join();
    return 0;
}

// The stand-in's own count of the rays traced since the last call (closest-hit, shadow), then zeroed.
extern "C" void oa_host_trace_counts(unsigned long long* out) {
    out[0] = oa::host_traces[0].exchange(0);
    out[1] = oa::host_traces[1].exchange(0);
}

extern "C" int oa_host_launch(const void* launch_params, const unsigned* triangle_counts, unsigned num_meshes,
                              unsigned threads, unsigned variant) {
    return oa_host_launch3(launch_params, triangle_counts, num_meshes, threads, variant, 1u);
}

// The worlds' placement kernel on the CPU (optixasync/render/_worlds.py runs it on the GPU): for each (world w,
// movable mesh k), transform k of world w (stride floats each, row-major 3x4 or 4x4) placed in the world's cell.
extern "C" void oa_host_place_worlds(const float* transforms, unsigned stride, unsigned worlds, unsigned movable,
                                     const unsigned* meshes, unsigned meshes_per_world, const float* offsets,
                                     MeshRecord* records, float* instances) {
    for (unsigned w = 0; w < worlds; ++w) {
        for (unsigned k = 0; k < movable; ++k) {
            const unsigned index = w * meshes_per_world + meshes[k];
            const float* o = offsets + 4u * w;
            pt::place_world_mesh(transforms + static_cast<unsigned long long>(stride) * (w * movable + k),
                                 make_float4(o[0], o[1], o[2], o[3]), records[index], instances + 20u * index);
        }
    }
}
