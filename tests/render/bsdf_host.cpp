// A host (CPU) build of the path tracer's BSDF families, for tests of their math on machines without a GPU.
//
// The device headers (kernels/pathtracer/bsdf_*.h, microfacet.h, fresnel.h) are compiled unchanged, after the
// CUDA stand-ins of cuda_host_shims.h. Every entry point works on arrays (n directions in one call, spread over
// threads), so that Python tests pay one ctypes call per batch; bsdf_harness.py wraps them.
//
// Parameter blocks (float arrays), per family:
//   0 diffuse             albedo[3]
//   1 conductor           eta[3], k[3], specular[3], alpha
//   2 dielectric          eta, alpha
//   3 plastic             diffuse[3], eta, alpha, internal_reflectance, specular_weight, table[PLASTIC_TABLE_SIZE]
//   4 metallic_roughness  base[3], metallic, alpha
// Directions are (n, 3) float arrays in the local frame.
#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cuda_host_shims.h"

// What the family headers' records.h and texture.h name (their make() reads a material record; this harness builds
// the structs from parameter blocks instead, so no texture is ever sampled here).
typedef unsigned long long oa_traversable;
template <typename T>
inline T tex2D(unsigned long long, float, float) {
    std::abort();
}

#include "pathtracer/bsdf_conductor.h"
#include "pathtracer/bsdf_dielectric.h"
#include "pathtracer/bsdf_diffuse.h"
#include "pathtracer/bsdf_metallic_roughness.h"
#include "pathtracer/bsdf_plastic.h"
#include "pathtracer/fresnel.h"
#include "pathtracer/microfacet.h"
#include "pathtracer/random.h"

namespace {

float3 load(const float* p) { return make_float3(p[0], p[1], p[2]); }
void store(float* p, float3 v) { p[0] = v.x; p[1] = v.y; p[2] = v.z; }

// Runs body(i) for i in [0, n) on `threads` threads (0: one per core), in contiguous chunks.
template <typename Body>
void parallel_for(long n, int threads, Body body) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads = static_cast<int>(std::min<long>(threads, std::max<long>(1, n / 4096)));
    if (threads <= 1) {
        for (long i = 0; i < n; ++i) body(i);
        return;
    }
    std::vector<std::thread> pool;
    const long chunk = (n + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) {
        const long begin = t * chunk, end = std::min(n, begin + chunk);
        pool.emplace_back([=] {
            for (long i = begin; i < end; ++i) body(i);
        });
    }
    for (auto& thread : pool) thread.join();
}

// Calls fn(bsdf) with the family's struct built from its parameter block; false for an unknown family.
template <typename Fn>
bool with_family(int family, const float* p, Fn fn) {
    switch (family) {
        case 0: fn(pt::DiffuseBsdf{load(p)}); return true;
        case 1: fn(pt::ConductorBsdf{load(p), load(p + 3), load(p + 6), p[9]}); return true;
        case 2: fn(pt::DielectricBsdf{p[0], p[1]}); return true;
        case 3: fn(pt::PlasticBsdf{load(p), p[3], p[4], p[5], p[6], p + 7}); return true;
        case 4: fn(pt::MetallicRoughnessBsdf{load(p), p[3], p[4]}); return true;
        default: return false;
    }
}

}  // namespace

extern "C" {

unsigned bsdf_host_plastic_table_size() { return pt::PLASTIC_TABLE_SIZE; }

// out: (n, 4) = colour rgb, scale of eval(wo[i], wi[i]).
int bsdf_host_eval(int family, const float* params, long n, const float* wo, const float* wi, float* out,
                   int threads) {
    return with_family(family, params, [&](const auto& bsdf) {
        parallel_for(n, threads, [&](long i) {
            const pt::BsdfValue v = bsdf.eval(load(wo + 3 * i), load(wi + 3 * i));
            store(out + 4 * i, v.color);
            out[4 * i + 3] = v.scale;
        });
    }) ? 0 : -1;
}

// out: (n,) = pdf(wo[i], wi[i]).
int bsdf_host_pdf(int family, const float* params, long n, const float* wo, const float* wi, float* out,
                  int threads) {
    return with_family(family, params, [&](const auto& bsdf) {
        parallel_for(n, threads, [&](long i) { out[i] = bsdf.pdf(load(wo + 3 * i), load(wi + 3 * i)); });
    }) ? 0 : -1;
}

// out: (n, 9) = wi xyz, weight rgb, pdf, delta, eta of sample(wo[i], rng_i), where rng_i is the PCG32 stream
// of key (seed, i) built as the kernel builds a sample's (random.h): reproducible whatever the threads.
int bsdf_host_sample(int family, const float* params, long n, const float* wo, unsigned long long seed, float* out,
                     int threads) {
    const unsigned long long key = pt::mix64(seed);
    return with_family(family, params, [&](const auto& bsdf) {
        parallel_for(n, threads, [&](long i) {
            pt::Pcg32 rng{pt::mix64(key ^ (static_cast<unsigned long long>(i) * 0xD1B54A32D192ED03ull))};
            const pt::BsdfSample s = bsdf.sample(load(wo + 3 * i), rng);
            float* o = out + 9 * i;
            store(o, s.wi);
            store(o + 3, s.weight);
            o[6] = s.pdf;
            o[7] = s.delta ? 1.0f : 0.0f;
            o[8] = s.eta;
        });
    }) ? 0 : -1;
}

// out: (n, 4) = reflectance, cos_t, eta_it, eta_ti.
void bsdf_host_fresnel_dielectric(long n, const float* cos_i, float eta, float* out) {
    for (long i = 0; i < n; ++i) {
        const pt::DielectricFresnel f = pt::fresnel_dielectric(cos_i[i], eta);
        out[4 * i] = f.reflectance;
        out[4 * i + 1] = f.cos_t;
        out[4 * i + 2] = f.eta_it;
        out[4 * i + 3] = f.eta_ti;
    }
}

void bsdf_host_fresnel_conductor(long n, const float* cos_i, float eta, float k, float* out) {
    for (long i = 0; i < n; ++i) out[i] = pt::fresnel_conductor(cos_i[i], eta, k);
}

void bsdf_host_fresnel_schlick(long n, const float* cos_i, float f0, float* out) {
    for (long i = 0; i < n; ++i) out[i] = pt::fresnel_schlick(f0, cos_i[i]);
}

// out: (n, 3) = D(m), G1(v, m), pdf_visible(v, m) of GGX with the given alpha (raised to its minimum).
void bsdf_host_ggx(long n, float alpha, const float* v, const float* m, float* out) {
    const pt::Ggx ggx = pt::make_ggx(alpha);
    for (long i = 0; i < n; ++i) {
        const float3 vi = load(v + 3 * i), mi = load(m + 3 * i);
        out[3 * i] = ggx.D(mi);
        out[3 * i + 1] = ggx.G1(vi, mi);
        out[3 * i + 2] = ggx.pdf_visible(vi, mi);
    }
}

// out: (n, 3) = the visible normal sample_visible(wo[i], u[2i], u[2i + 1]).
void bsdf_host_ggx_sample(long n, float alpha, const float* wo, const float* u, float* out) {
    const pt::Ggx ggx = pt::make_ggx(alpha);
    for (long i = 0; i < n; ++i) store(out + 3 * i, ggx.sample_visible(load(wo + 3 * i), u[2 * i], u[2 * i + 1]));
}

}  // extern "C"
