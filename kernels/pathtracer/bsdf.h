// The BSDF of a surface point, and the calls the integrator makes on it.
//
// Adding a family: write bsdf_<name>.h following bsdf_interface.h, then here add its member of Bsdf and a case
// in each dispatch function; surface_bsdf() in surface.h builds it from the material record, its textures and
// the hit. The families share one union: a path holds one surface's BSDF at a time, and its registers are the
// largest family's, not the sum of all of them.
#pragma once

#include "pathtracer/bsdf_conductor.h"
#include "pathtracer/bsdf_dielectric.h"
#include "pathtracer/bsdf_diffuse.h"
#include "pathtracer/bsdf_interface.h"
#include "pathtracer/bsdf_metallic_roughness.h"
#include "pathtracer/bsdf_plastic.h"
#include "pathtracer/records.h"

namespace pt {

struct Bsdf {
    BsdfType type;
    union {
        DiffuseBsdf diffuse;
        ConductorBsdf conductor;
        DielectricBsdf dielectric;
        PlasticBsdf plastic;
        MetallicRoughnessBsdf metallic_roughness;
    };
    __forceinline__ __device__ Bsdf() : type(BSDF_DIFFUSE), diffuse() {}
};

// Whether light passes through: its directions may lie on either side, and it is evaluated from both.
__forceinline__ __device__ bool bsdf_transmits(const Bsdf& b) { return b.type == BSDF_DIELECTRIC; }

// Whether every lobe is a delta: light sampling cannot contribute (eval and pdf are 0 everywhere).
__forceinline__ __device__ bool bsdf_is_delta(const Bsdf& b) {
    return (b.type == BSDF_CONDUCTOR && b.conductor.alpha == 0.0f) ||
           (b.type == BSDF_DIELECTRIC && b.dielectric.alpha == 0.0f);
}

__forceinline__ __device__ BsdfValue bsdf_eval(const Bsdf& b, float3 wo, float3 wi) {
    switch (b.type) {
        case BSDF_CONDUCTOR: return b.conductor.eval(wo, wi);
        case BSDF_DIELECTRIC: return b.dielectric.eval(wo, wi);
        case BSDF_PLASTIC: return b.plastic.eval(wo, wi);
        case BSDF_METALLIC_ROUGHNESS: return b.metallic_roughness.eval(wo, wi);
        case BSDF_DIFFUSE:
        default: return b.diffuse.eval(wo, wi);
    }
}

__forceinline__ __device__ float bsdf_pdf(const Bsdf& b, float3 wo, float3 wi) {
    switch (b.type) {
        case BSDF_CONDUCTOR: return b.conductor.pdf(wo, wi);
        case BSDF_DIELECTRIC: return b.dielectric.pdf(wo, wi);
        case BSDF_PLASTIC: return b.plastic.pdf(wo, wi);
        case BSDF_METALLIC_ROUGHNESS: return b.metallic_roughness.pdf(wo, wi);
        case BSDF_DIFFUSE:
        default: return b.diffuse.pdf(wo, wi);
    }
}

__forceinline__ __device__ BsdfSample bsdf_sample(const Bsdf& b, float3 wo, Pcg32& rng) {
    switch (b.type) {
        case BSDF_CONDUCTOR: return b.conductor.sample(wo, rng);
        case BSDF_DIELECTRIC: return b.dielectric.sample(wo, rng);
        case BSDF_PLASTIC: return b.plastic.sample(wo, rng);
        case BSDF_METALLIC_ROUGHNESS: return b.metallic_roughness.sample(wo, rng);
        case BSDF_DIFFUSE:
        default: return b.diffuse.sample(wo, rng);
    }
}

}  // namespace pt
