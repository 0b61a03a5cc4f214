// A host (CPU) build of kernels/pathtracer/environment.h, for its tests on machines without a GPU.
//
// The header is compiled unchanged by a C++ compiler, after cuda_host_shims.h (what NVRTC would supply, as
// plain C++). This file exports batch versions of its three functions for ctypes: each takes an
// EnvironmentRecord in host memory whose pointers point at host arrays. The test compiles it with -I on a copy
// of the kernels folder (as pathtracer_host.cpp is built).
#include <cstddef>
#include <cstring>

#include "cuda_host_shims.h"  // the CUDA types and intrinsics, shared with the other host builds

#include "pathtracer/environment.h"

static_assert(sizeof(EnvironmentRecord) == 88 && alignof(EnvironmentRecord) == 8, "host layout of the record");

extern "C" {

unsigned env_record_size() { return sizeof(EnvironmentRecord); }

// Offsets of the record's fields, in declaration order.
void env_record_offsets(unsigned* out) {
    const size_t offsets[] = {offsetof(EnvironmentRecord, texels), offsetof(EnvironmentRecord, marginal_cdf),
                              offsetof(EnvironmentRecord, conditional_cdf), offsetof(EnvironmentRecord, radiance),
                              offsetof(EnvironmentRecord, scale), offsetof(EnvironmentRecord, axis_x),
                              offsetof(EnvironmentRecord, axis_y), offsetof(EnvironmentRecord, axis_z),
                              offsetof(EnvironmentRecord, width), offsetof(EnvironmentRecord, height)};
    for (size_t k = 0; k < sizeof(offsets) / sizeof(offsets[0]); ++k) out[k] = static_cast<unsigned>(offsets[k]);
}

// out[3k..3k+2] = environment_radiance(directions[3k..3k+2]).
void env_radiance(const EnvironmentRecord* env, const float* directions, unsigned n, float* out) {
    for (unsigned k = 0; k < n; ++k) {
        const float* d = directions + 3u * k;
        const float3 r = pt::environment_radiance(*env, make_float3(d[0], d[1], d[2]));
        out[3u * k] = r.x;
        out[3u * k + 1u] = r.y;
        out[3u * k + 2u] = r.z;
    }
}

// out[k] = environment_pdf(directions[3k..3k+2]).
void env_pdf(const EnvironmentRecord* env, const float* directions, unsigned n, float* out) {
    for (unsigned k = 0; k < n; ++k) {
        const float* d = directions + 3u * k;
        out[k] = pt::environment_pdf(*env, make_float3(d[0], d[1], d[2]));
    }
}

// out[7k..7k+6] = direction, radiance, pdf of environment_sample(uniforms[2k], uniforms[2k+1]).
void env_sample(const EnvironmentRecord* env, const float* uniforms, unsigned n, float* out) {
    for (unsigned k = 0; k < n; ++k) {
        const pt::EnvironmentSample s = pt::environment_sample(*env, uniforms[2u * k], uniforms[2u * k + 1u]);
        const float values[7] = {s.direction.x, s.direction.y, s.direction.z, s.radiance.x, s.radiance.y,
                                 s.radiance.z, s.pdf};
        std::memcpy(out + 7u * k, values, sizeof(values));
    }
}

}  // extern "C"
