// The BSDF of a surface point, and the calls the integrator makes on it.
//
// Adding a family: write bsdf_<name>.h following bsdf_interface.h, then here add its BsdfType, its member of
// Bsdf, a case in each dispatch function, and how surface_bsdf() builds it from the mesh record. The switches
// are resolved at compile time while only one family exists, and cost one branch per call once there are more.
#pragma once

#include "pathtracer/bsdf_diffuse.h"
#include "pathtracer/bsdf_interface.h"
#include "pathtracer/records.h"

namespace pt {

enum BsdfType : unsigned int {
    BSDF_DIFFUSE = 0u,
};

struct Bsdf {
    BsdfType type;
    DiffuseBsdf diffuse;
};

// The mesh records carry no material type yet: every surface is Lambertian.
__forceinline__ __device__ Bsdf surface_bsdf(const MeshRecord& mesh) {
    Bsdf b;
    b.type = BSDF_DIFFUSE;
    b.diffuse.albedo = mesh.reflectance;
    return b;
}

__forceinline__ __device__ BsdfValue bsdf_eval(const Bsdf& b, float3 n, float3 wo, float3 wi) {
    switch (b.type) {
        case BSDF_DIFFUSE:
        default:
            return b.diffuse.eval(n, wo, wi);
    }
}

__forceinline__ __device__ float bsdf_pdf(const Bsdf& b, float3 n, float3 wo, float3 wi) {
    switch (b.type) {
        case BSDF_DIFFUSE:
        default:
            return b.diffuse.pdf(n, wo, wi);
    }
}

__forceinline__ __device__ BsdfSample bsdf_sample(const Bsdf& b, float3 n, float3 wo, Pcg32& rng) {
    switch (b.type) {
        case BSDF_DIFFUSE:
        default:
            return b.diffuse.sample(n, wo, rng);
    }
}

}  // namespace pt
