// The calls next-event estimation makes on a light source, dispatched by its type.
//
// Generated from the registered light types (optixasync.render.light_types(), each a Python descriptor and a header
// light_<name>.h following lights.h) into the program's source before this header is included
// (optixasync/render/_source.py), in namespace pt:
//
//   LightSample light_sample(const LightRecord& light, float3 point, Pcg32& rng)
//   float light_scale_of(const LightRecord& light, const LightSample& s, float bsdf_pdf)   w_light / p_light
//
// An unknown type index takes the first type's branch.
#pragma once

#include "pathtracer/lights.h"

#ifndef OA_LIGHT_DISPATCH
#error "the light dispatch is generated into the program's source (optixasync.render); compile the path tracer through it"
#endif
