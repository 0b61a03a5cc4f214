// The BSDF of a surface point, and the calls the integrator makes on it.
//
// The dispatch over the BSDF families is generated from the registered families (optixasync.scene.bsdf_families(),
// each a Python descriptor and a header bsdf_<name>.h following bsdf_interface.h) into the program's source, before
// this header is included (optixasync/render/_source.py). It defines, in namespace pt:
//
//   struct Bsdf                      one family's struct at a time: a union, so a path's registers are the largest
//                                    family's, not the sum of all of them
//   Bsdf surface_bsdf(const MaterialRecord& m, float2 uv, float3 color)   the material's family, made at the point
//   bool bsdf_transmits(const Bsdf&) light passes through: directions on either side, evaluated from both
//   bool bsdf_is_delta(const Bsdf&)  every lobe a delta: light sampling cannot contribute (eval and pdf are 0)
//   BsdfValue bsdf_eval(const Bsdf&, float3 wo, float3 wi)
//   float bsdf_pdf(const Bsdf&, float3 wo, float3 wi)
//   BsdfSample bsdf_sample(const Bsdf&, float3 wo, Pcg32& rng)
//
// An unknown family index takes the first family's branch (diffuse).
#pragma once

#include "pathtracer/bsdf_interface.h"

#ifndef OA_BSDF_DISPATCH
#error "the BSDF dispatch is generated into the program's source (optixasync.render); compile the path tracer through it"
#endif
