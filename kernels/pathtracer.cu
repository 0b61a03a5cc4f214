// A unidirectional path tracer: Lambertian surfaces, one-sided area lights, next-event estimation combined
// with cosine-weighted BSDF sampling by multiple importance sampling (power heuristic), Russian roulette.
//
// The whole path lives in one iterative loop in the raygen program. The closest-hit program only reports
// (distance, primitive, build input) in three payload registers; the raygen reads the hit triangle from the
// per-mesh records in the launch parameters and shades it there. Shadow rays terminate on their first hit,
// run no hit programs, and are "visible" only when their own miss program (miss index 1) runs.
//
// Depth convention (that of the reference renderer's `path` integrator): the camera ray's hit is depth 1.
// Emission found at any reached vertex counts; a vertex of depth d samples lights and continues the path
// only while d + 1 <= max_depth. So max_depth = 1 shows the emitters the camera sees, 2 adds direct light.
//
// The Python side (optixasync/render/_layout.py) mirrors the structs below field for field.
#include "optixasync_device.h"

// ---- records shared with the host ---------------------------------------------------------------------------

enum MeshFlags : unsigned int {
    MESH_TWO_SIDED = 1u << 0,  // reflect on both sides (else black seen from the back)
    MESH_EMISSIVE = 1u << 1,   // emits on its front side; its triangles are in the emitter table
};

struct MeshRecord {
    const float* vertices;         // (V, 3) float32
    const unsigned int* indices;   // (F, 3), front side given by the winding
    float3 reflectance;            // Lambertian albedo
    float3 emission;               // radiance leaving the front side
    unsigned int emitter_offset;   // entry of triangle 0 of this mesh in the emitter table (emissive meshes)
    unsigned int flags;            // MeshFlags
};

// One emissive triangle in world space, 64 bytes so that it loads as four float4.
struct __align__(16) EmitterTriangle {
    float3 p0;
    float pdf;               // selection probability / area: the light's pdf per unit area on this triangle
    float3 e1;               // p1 - p0
    float alias_q;           // alias table: keep this entry when the fraction is below alias_q ...
    float3 e2;               // p2 - p0
    unsigned int alias;      // ... else take entry `alias`
    float3 radiance;
    float area;
};

struct PathTracerParams {
    float4* accum;                   // width * height running sums: rgb, w = samples dropped as NaN/Inf
    uchar4* image;                   // sRGB of the running mean, or null (no tonemap)
    const MeshRecord* meshes;        // indexed by build input (= SBT GAS index)
    const EmitterTriangle* emitters;
    oa_traversable handle;
    float3 eye;
    float3 cam_u;                    // right, scaled by tan(half fov) across
    float3 cam_v;                    // up, scaled by tan(half fov) up
    float3 cam_w;                    // unit viewing direction
    unsigned int width;
    unsigned int height;
    unsigned int sample_offset;      // samples already in accum: absolute index of this launch's first sample
    unsigned int spp;                // samples per pixel in this launch
    unsigned int accumulate;         // 1: add to accum, 0: overwrite it
    unsigned int seed;
    unsigned int max_depth;
    unsigned int rr_depth;
    unsigned int num_emitters;       // emissive triangles (0: no light sampling)
    float inv_total;                 // 1 / (sample_offset + spp), for the tonemapped mean
};

extern "C" __constant__ PathTracerParams params;

namespace {

constexpr float PI = 3.14159265358979323846f;
constexpr float INV_PI = 0.31830988618379067154f;
constexpr unsigned int NO_HIT = 0xFFFFFFFFu;

// ---- small vector helpers (float3 has no operators without the CUDA toolkit headers) ---------------------------
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

__forceinline__ __device__ float3 load3(const float* p) { return make_float3(__ldg(p), __ldg(p + 1), __ldg(p + 2)); }
__forceinline__ __device__ float3 xyz(float4 a) { return make_float3(a.x, a.y, a.z); }

// ---- random numbers ------------------------------------------------------------------------------------------
// PCG32 (64-bit LCG state, xorshift-high + random-rotation output). Each sample gets its own state, derived by
// a 64-bit finaliser from (seed, pixel, absolute sample index): the image depends only on those, not on how the
// samples are split into launches.
__forceinline__ __device__ unsigned long long mix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

struct Pcg32 {
    unsigned long long state;

    __forceinline__ __device__ unsigned int next() {
        const unsigned long long old = state;
        state = old * 6364136223846793005ull + 1442695040888963407ull;
        const unsigned int xorshifted = static_cast<unsigned int>(((old >> 18u) ^ old) >> 27u);
        const unsigned int rot = static_cast<unsigned int>(old >> 59u);
        return __funnelshift_r(xorshifted, xorshifted, rot);  // rotate right by rot
    }

    // Uniform in [0, 1): the top 24 bits, exactly representable.
    __forceinline__ __device__ float uniform() { return static_cast<float>(next() >> 8) * (1.0f / 16777216.0f); }
};

// ---- geometry ---------------------------------------------------------------------------------------------
// Move a surface point off its surface along the normal n (pointing to the side the next ray leaves from), by a
// few hundred float ulps of its coordinates: enough to clear the rounding of p = o + t d, little enough to
// keep contact shadows (the integer-offset method of Waechter and Binder, Ray Tracing Gems, chapter 6).
__forceinline__ __device__ float offset_axis(float p, float n) {
    constexpr float ORIGIN = 1.0f / 32.0f;
    constexpr float FLOAT_SCALE = 1.0f / 65536.0f;
    constexpr float INT_SCALE = 256.0f;
    const int of = static_cast<int>(INT_SCALE * n);
    const float moved = __int_as_float(__float_as_int(p) + (p < 0.0f ? -of : of));
    return fabsf(p) < ORIGIN ? p + FLOAT_SCALE * n : moved;
}

__forceinline__ __device__ float3 offset_ray(float3 p, float3 n) {
    return make_float3(offset_axis(p.x, n.x), offset_axis(p.y, n.y), offset_axis(p.z, n.z));
}

// Cosine-weighted direction about the unit normal n (pdf = cos / pi), with the branchless orthonormal basis of
// Duff et al. (2017). Returns the cosine in *cos_theta.
__forceinline__ __device__ float3 sample_cosine(float3 n, float u1, float u2, float* cos_theta) {
    const float sign = copysignf(1.0f, n.z);
    const float a = -1.0f / (sign + n.z);
    const float b = n.x * n.y * a;
    const float3 t1 = make_float3(1.0f + sign * n.x * n.x * a, sign * b, -sign * n.x);
    const float3 t2 = make_float3(b, sign + n.y * n.y * a, -n.y);
    const float r = sqrtf(u1);
    float s, c;
    __sincosf(2.0f * PI * u2, &s, &c);
    const float z = sqrtf(fmaxf(0.0f, 1.0f - u1));
    *cos_theta = z;
    return t1 * (r * c) + t2 * (r * s) + n * z;
}

__forceinline__ __device__ bool is_finite(float x) { return (__float_as_uint(x) & 0x7F800000u) != 0x7F800000u; }

// sRGB transfer function of a linear value, clamped to [0, 1], as an 8-bit code.
__forceinline__ __device__ unsigned char srgb8(float linear) {
    const float c = fminf(fmaxf(linear, 0.0f), 1.0f);  // fmaxf(NaN, 0) = 0
    const float s = c <= 0.0031308f ? 12.92f * c : 1.055f * __powf(c, 1.0f / 2.4f) - 0.055f;
    return static_cast<unsigned char>(fminf(fmaxf(s, 0.0f), 1.0f) * 255.0f + 0.5f);
}

// ---- one path -----------------------------------------------------------------------------------------------
__forceinline__ __device__ float3 trace_path(float3 origin, float3 direction, Pcg32& rng) {
    const PathTracerParams& P = params;
    float3 radiance = make_float3(0.0f, 0.0f, 0.0f);
    float3 beta = make_float3(1.0f, 1.0f, 1.0f);
    float prev_pdf = 0.0f;  // solid-angle pdf of the BSDF sample that produced the current ray

    for (unsigned int depth = 1;; ++depth) {
        unsigned int hit[3] = {0u, 0u, NO_HIT};
        oa::trace(P.handle, origin, direction, 0.0f, 1e16f, 0.0f, 0xFFu, oa::RAY_FLAG_DISABLE_ANYHIT, 0u, 1u, 0u,
                  hit);
        if (hit[2] == NO_HIT) break;  // no environment light
        const float t = __uint_as_float(hit[0]);
        const MeshRecord& mesh = P.meshes[hit[2]];
        const unsigned int* tri = mesh.indices + 3u * hit[1];
        const float* vertices = mesh.vertices;
        const float3 v0 = load3(vertices + 3u * __ldg(tri));
        const float3 v1 = load3(vertices + 3u * __ldg(tri + 1));
        const float3 v2 = load3(vertices + 3u * __ldg(tri + 2));
        float3 n = normalize(cross(v1 - v0, v2 - v0));
        const float cos_out = -dot(n, direction);  // > 0: the ray arrived on the front side
        const unsigned int flags = mesh.flags;

        // Emission reached by this ray. The camera ray counts fully; a BSDF-sampled ray shares it with light
        // sampling by the power heuristic. With l = light pdf per area * t^2 (the solid-angle pdf is l / cos_out),
        // w = b^2 / (b^2 + (l / cos_out)^2) = (b cos_out)^2 / ((b cos_out)^2 + l^2), never dividing by cos_out.
        if ((flags & MESH_EMISSIVE) && cos_out > 0.0f) {
            float weight = 1.0f;
            if (depth > 1) {
                const float light = __ldg(&P.emitters[mesh.emitter_offset + hit[1]].pdf) * t * t;
                const float bsdf = prev_pdf * cos_out;
                weight = bsdf * bsdf / (bsdf * bsdf + light * light);
            }
            radiance = radiance + beta * mesh.emission * weight;
        }
        if (depth >= P.max_depth) break;
        if (cos_out <= 0.0f) {
            if (!(flags & MESH_TWO_SIDED)) break;  // the back of a one-sided surface is black
            n = -n;
        }
        const float3 albedo = mesh.reflectance;
        const float3 point = origin + direction * t;
        const float3 start = offset_ray(point, n);

        // Next-event estimation: one point on one emissive triangle (chosen by the alias table), if unoccluded.
        if (P.num_emitters > 0u) {
            const unsigned int r = rng.next();
            unsigned int k = __umulhi(r, P.num_emitters);
            const float fraction = static_cast<float>(r * P.num_emitters) * (1.0f / 4294967296.0f);
            if (fraction >= __ldg(&P.emitters[k].alias_q)) k = __ldg(&P.emitters[k].alias);
            const float4* e = reinterpret_cast<const float4*>(P.emitters + k);
            const float4 a = __ldg(e), b = __ldg(e + 1), c = __ldg(e + 2), d = __ldg(e + 3);
            const float3 e1 = xyz(b), e2 = xyz(c);
            const float su = sqrtf(rng.uniform());
            const float u2 = rng.uniform();
            const float3 target = xyz(a) + e1 * (su * (1.0f - u2)) + e2 * (su * u2);
            const float3 to_light = target - point;
            const float dist2 = dot(to_light, to_light);
            const float inv_dist = rsqrtf(dist2);
            const float3 wi = to_light * inv_dist;
            const float cos_surface = dot(n, wi);
            const float cos_light = -dot(normalize(cross(e1, e2)), wi);
            if (cos_surface > 0.0f && cos_light > 0.0f) {
                // Estimator f cos Le / p_light * w_light with p_light = A / cos_light (A = pdf per area * d^2) and
                // w_light = p_light^2 / (p_light^2 + p_bsdf^2), i.e. f cos Le * A cos_light / (A^2 + (p_bsdf cos_light)^2).
                const float area_pdf = a.w * dist2;
                const float bsdf_pdf = cos_surface * INV_PI;
                const float bc = bsdf_pdf * cos_light;
                const float scale = bsdf_pdf * area_pdf * cos_light / (area_pdf * area_pdf + bc * bc);
                unsigned int visible[1] = {0u};
                oa::trace(P.handle, start, wi, 0.0f, (dist2 * inv_dist) * (1.0f - 1e-4f), 0.0f, 0xFFu,
                          oa::RAY_FLAG_DISABLE_ANYHIT | oa::RAY_FLAG_TERMINATE_ON_FIRST_HIT |
                              oa::RAY_FLAG_DISABLE_CLOSESTHIT,
                          0u, 1u, 1u, visible);
                if (visible[0]) radiance = radiance + beta * albedo * xyz(d) * scale;
            }
        }

        // Continue by sampling the BSDF: for a Lambertian surface f cos / pdf is the albedo.
        float cos_theta;
        const float u1 = rng.uniform();
        const float u2 = rng.uniform();
        direction = sample_cosine(n, u1, u2, &cos_theta);
        origin = start;
        prev_pdf = cos_theta * INV_PI;
        beta = beta * albedo;
        const float strongest = max3(beta);
        if (!(strongest > 0.0f)) break;
        if (depth >= P.rr_depth) {
            const float q = fminf(strongest, 0.95f);
            if (rng.uniform() >= q) break;
            beta = beta * (1.0f / q);
        }
    }
    return radiance;
}

}  // namespace

// ---- programs -----------------------------------------------------------------------------------------------

OA_PROGRAM __raygen__pathtrace() {
    const PathTracerParams& P = params;
    const uint3 idx = oa::launch_index();
    const unsigned int pixel = idx.y * P.width + idx.x;  // row 0 is the top of the image
    const unsigned long long pixel_key = mix64((static_cast<unsigned long long>(P.seed) << 32) | pixel);

    float4 sum = P.accumulate ? P.accum[pixel] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float inv_w = 2.0f / static_cast<float>(P.width);
    const float inv_h = 2.0f / static_cast<float>(P.height);
    for (unsigned int s = 0; s < P.spp; ++s) {
        const unsigned int sample = P.sample_offset + s;
        Pcg32 rng{mix64(pixel_key ^ (static_cast<unsigned long long>(sample) * 0xD1B54A32D192ED03ull))};
        // Box filter: a uniform point in the pixel.
        const float sx = (static_cast<float>(idx.x) + rng.uniform()) * inv_w - 1.0f;
        const float sy = 1.0f - (static_cast<float>(idx.y) + rng.uniform()) * inv_h;
        const float3 direction = normalize(P.cam_w + P.cam_u * sx + P.cam_v * sy);
        const float3 L = trace_path(P.eye, direction, rng);
        // Samples are added one by one, in sample order, whatever the launch split: the sums are reproducible.
        if (is_finite(L.x + L.y + L.z)) {
            sum.x += L.x;
            sum.y += L.y;
            sum.z += L.z;
        } else {
            sum.w += 1.0f;  // a NaN or Inf sample contributes nothing; counted in w
        }
    }
    P.accum[pixel] = sum;
    if (P.image) {
        P.image[pixel] = make_uchar4(srgb8(sum.x * P.inv_total), srgb8(sum.y * P.inv_total),
                                     srgb8(sum.z * P.inv_total), 255);
    }
}

OA_PROGRAM __closesthit__radiance() {
    oa::set_payload<0>(__float_as_uint(oa::ray_tmax()));
    oa::set_payload<1>(oa::primitive_index());
    oa::set_payload<2>(oa::sbt_gas_index());  // one SBT record per build input: the mesh index
}

OA_PROGRAM __miss__radiance() { oa::set_payload<2>(NO_HIT); }

OA_PROGRAM __miss__shadow() { oa::set_payload<0>(1u); }
