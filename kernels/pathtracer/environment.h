// Light from infinitely far away: a constant radiance or an equirectangular (latitude-longitude) map, its
// lookup, and importance sampling of its directions.
//
// The map convention is that of the reference renderer's `envmap` emitter with its to_world applied (Mitsuba 3),
// so that images can be compared pixel for pixel. In the map's own frame (world = to_world * local):
//   direction -> (u, v):  u = atan2(x, -z) / (2 pi), wrapped into [0, 1);  v = acos(y) / pi, in [0, 1]
//   (u, v) -> direction:  theta = pi v, phi = 2 pi u;  (sin phi sin theta, cos theta, -cos phi sin theta)
// so +Y is up: v = 0 (straight up) is row 0, the top of the image, and v = 1 the last row. u = 0 is -Z, the
// image's left (and right) edge; u = 1/4 is +X, u = 1/2 is +Z (the middle column), u = 3/4 is -X.
// The lookup is bilinear between texel centres, and the two axes differ:
//   columns: centre of column j at u = (j + 1/2) / W; periodic (u just above 0 blends column W-1 and 0);
//   rows:    row i at v = i / (H - 1), corners aligned (row 0 exactly at the zenith, row H-1 at the nadir);
//            clamped at v = 0 and 1.
// That is x = u W - 1/2 (mod W) and y = v (H - 1) in texel units, then the usual bilinear weights; the
// result is multiplied by `scale`. (A 2-row image is looked up with its last row repeated, as the reference
// renderer pads it; the host does that before filling the record, which holds height >= 3.)
//
// Importance sampling (the host builds the tables: optixasync/render/_environment.py). Cell (i, j) spans rows
// i..i+1 and the column centres j..j+1, wrapping: the four texels the lookup blends there. Its probability
// P_ij = marginal(i) conditional(j | i) is proportional to the luminance of the lookup integrated over the
// cell's solid angle. A sample picks a row band by the marginal CDF, a cell in it by that band's conditional CDF, and
// a point uniform in (u, v) inside the cell, so that the density per unit solid angle is
//   P_ij / (du dv) / (2 pi^2 sin theta) = P_ij W (H - 1) / (2 pi^2 sin theta).
// environment_pdf finds the cell of a direction and returns that same expression. A constant environment is
// sampled uniformly over the sphere, pdf 1 / (4 pi).
#pragma once

#include "pathtracer/vec_math.h"

// What the device reads of the environment. optixasync/render/_environment.py mirrors it (ENVIRONMENT_RECORD);
// at global scope, like the records of records.h.
struct EnvironmentRecord {
    const float4* texels;           // (height, width) linear RGB, w unused; row 0 = top; null: a constant
    const float* marginal_cdf;      // height entries: CDF over the height - 1 row bands; [0] = 0, [height-1] = 1
    const float* conditional_cdf;   // (height - 1, width + 1): per band, CDF over its width cells; 0 ... 1
    float3 radiance;                // a constant environment's radiance (unused by a map)
    float scale;                    // multiplies every radiance
    float3 axis_x;                  // to_world's columns: the world directions of the map's x, y (up) and z
    float3 axis_y;
    float3 axis_z;
    unsigned int width;             // texel columns (0 for a constant)
    unsigned int height;            // texel rows, >= 3 (0 for a constant)
};

namespace pt {

struct EnvironmentSample {
    float3 direction;  // unit, world space, pointing away from the shading point towards the environment
    float3 radiance;   // environment_radiance(direction)
    float pdf;         // per unit solid angle (0: the sample is unusable)
};

// sin(theta) below which a direction counts as on the pole axis: bounds the density there.
constexpr float ENV_MIN_SIN_THETA = 1e-7f;

__forceinline__ __device__ float3 environment_to_local(const EnvironmentRecord& env, float3 d) {
    return make_float3(dot(env.axis_x, d), dot(env.axis_y, d), dot(env.axis_z, d));
}

__forceinline__ __device__ float3 environment_to_world(const EnvironmentRecord& env, float3 l) {
    return env.axis_x * l.x + env.axis_y * l.y + env.axis_z * l.z;
}

// u of a local direction, in [0, 1] (1 only by rounding, which the lookup treats as 0).
__forceinline__ __device__ float environment_u(float3 l) {
    const float u = atan2f(l.x, -l.z) * (0.5f * INV_PI);
    return u - floorf(u);
}

// Column of texel-centre coordinate x = u W - 1/2 in [-1/2, W - 1/2]: the cell j, x in [j, j + 1), with
// -1 wrapped to W - 1; `frac` receives x - floor(x). Clamped first, so that a NaN cannot index out of range.
__forceinline__ __device__ unsigned int environment_column(float u, unsigned int width, float* frac) {
    const float w = static_cast<float>(width);
    const float x = fminf(fmaxf(u * w - 0.5f, -0.5f), w - 0.5f);
    const float fx = floorf(x);
    *frac = x - fx;
    const int j = static_cast<int>(fx);
    return j < 0 ? width - 1u : static_cast<unsigned int>(j);
}

// The map's radiance for a local direction: the bilinear lookup described at the top, before `scale`.
__forceinline__ __device__ float3 environment_lookup(const EnvironmentRecord& env, float3 l) {
    const unsigned int width = env.width;
    float wx;
    const unsigned int c0 = environment_column(environment_u(l), width, &wx);
    const unsigned int c1 = c0 + 1u == width ? 0u : c0 + 1u;
    const float v = acosf(fminf(fmaxf(l.y, -1.0f), 1.0f)) * INV_PI;  // fmaxf(NaN, -1) = -1
    const float y = v * static_cast<float>(env.height - 1u);
    const unsigned int last = env.height - 2u;  // the last band: v = 1 blends rows H-2 and H-1 with weight 1
    const unsigned int r0 = static_cast<unsigned int>(fminf(y, static_cast<float>(last)));  // y >= 0
    const float wy = y - static_cast<float>(r0);
    const float4* row0 = env.texels + r0 * width;
    const float4* row1 = row0 + width;
    const float3 t00 = xyz(__ldg(row0 + c0)), t01 = xyz(__ldg(row0 + c1));
    const float3 t10 = xyz(__ldg(row1 + c0)), t11 = xyz(__ldg(row1 + c1));
    const float3 top = t00 * (1.0f - wx) + t01 * wx;
    const float3 bottom = t10 * (1.0f - wx) + t11 * wx;
    return top * (1.0f - wy) + bottom * wy;
}

// Radiance arriving from world direction `direction` (unit, pointing away from the receiver).
__forceinline__ __device__ float3 environment_radiance(const EnvironmentRecord& env, float3 direction) {
    if (!env.texels) return env.radiance * env.scale;
    return environment_lookup(env, environment_to_local(env, direction)) * env.scale;
}

// Index i in [0, n) with cdf[i] <= u < cdf[i + 1], for a CDF of n + 1 entries from 0 to 1 and u in [0, 1).
// Entries of zero probability are never returned. Binary search, log2(n) loads.
__forceinline__ __device__ unsigned int find_interval(const float* cdf, unsigned int n, float u) {
    unsigned int lo = 0u, hi = n;  // cdf[lo] <= u < cdf[hi]
    while (hi - lo > 1u) {
        const unsigned int mid = (lo + hi) >> 1;
        if (__ldg(cdf + mid) <= u) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Density per unit solid angle of sampling a direction whose cell has probability p_band * p_cell (its band's
// and its own within the band) and whose sin(theta) is `sin_theta`: the expression at the top. Shared by
// environment_sample and environment_pdf, so that both give the same value for the same cell.
__forceinline__ __device__ float environment_density(const EnvironmentRecord& env, float p_band, float p_cell,
                                                     float sin_theta) {
    const float cells = static_cast<float>(env.width) * static_cast<float>(env.height - 1u);
    return p_band * p_cell * cells / (2.0f * PI * PI * fmaxf(sin_theta, ENV_MIN_SIN_THETA));
}

// Solid-angle density of environment_sample producing world direction `direction` (unit).
__forceinline__ __device__ float environment_pdf(const EnvironmentRecord& env, float3 direction) {
    if (!env.texels) return 0.25f * INV_PI;
    const float3 l = environment_to_local(env, direction);
    // theta from atan2 rather than acos(y): precise near the poles, where the bands are thinnest.
    const float sin_theta = sqrtf(l.x * l.x + l.z * l.z);
    const float theta = atan2f(sin_theta, l.y);
    const float bands = static_cast<float>(env.height - 1u);
    // Clamped in float: theta = pi falls in the last band, and a NaN (dropped by fmaxf) in the first.
    const unsigned int band = static_cast<unsigned int>(fminf(fmaxf(theta * (bands * INV_PI), 0.0f), bands - 1.0f));
    float frac;
    const unsigned int column = environment_column(environment_u(l), env.width, &frac);
    const float* conditional = env.conditional_cdf + band * (env.width + 1u);
    const float p_band = __ldg(env.marginal_cdf + band + 1u) - __ldg(env.marginal_cdf + band);
    const float p_cell = __ldg(conditional + column + 1u) - __ldg(conditional + column);
    return environment_density(env, p_band, p_cell, sin_theta);
}

// One direction drawn with density environment_pdf from two uniforms in [0, 1).
__forceinline__ __device__ EnvironmentSample environment_sample(const EnvironmentRecord& env, float u1, float u2) {
    EnvironmentSample s;
    if (!env.texels) {  // uniform over the sphere
        const float z = 1.0f - 2.0f * u1;
        const float r = sqrtf(fmaxf(0.0f, 1.0f - z * z));
        float sp, cp;
        __sincosf(2.0f * PI * u2, &sp, &cp);
        s.direction = make_float3(r * cp, r * sp, z);
        s.radiance = env.radiance * env.scale;
        s.pdf = 0.25f * INV_PI;
        return s;
    }
    constexpr float BELOW_ONE = 0.99999994f;  // the largest float below 1
    const unsigned int width = env.width, bands = env.height - 1u;
    // A band by the marginal CDF, then a cell of it by its conditional CDF; what is left of each uniform
    // inside the chosen interval places the point within the cell.
    const unsigned int band = find_interval(env.marginal_cdf, bands, u1);
    const float m0 = __ldg(env.marginal_cdf + band), m1 = __ldg(env.marginal_cdf + band + 1u);
    const float t1 = fminf((u1 - m0) / (m1 - m0), BELOW_ONE);
    const float* conditional = env.conditional_cdf + band * (width + 1u);
    const unsigned int column = find_interval(conditional, width, u2);
    const float c0 = __ldg(conditional + column), c1 = __ldg(conditional + column + 1u);
    const float t2 = fminf((u2 - c0) / (c1 - c0), BELOW_ONE);
    // Column centres j..j+1: u = (j + 1/2 + t2) / W, taken into [-1/2, 1/2) so that phi stays in [-pi, pi),
    // where the fast sine and cosine are accurate.
    float u = (static_cast<float>(column) + 0.5f + t2) / static_cast<float>(width);
    if (u >= 0.5f) u -= 1.0f;
    const float theta = (static_cast<float>(band) + t1) * (PI / static_cast<float>(bands));
    float st, ct, sp, cp;
    __sincosf(theta, &st, &ct);
    __sincosf(2.0f * PI * u, &sp, &cp);
    s.direction = environment_to_world(env, make_float3(sp * st, ct, -cp * st));
    s.radiance = environment_radiance(env, s.direction);
    s.pdf = environment_density(env, m1 - m0, c1 - c0, st);
    return s;
}

}  // namespace pt
