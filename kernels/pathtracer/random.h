// Random numbers: one PCG32 stream per sample.
//
// Each sample's state is derived, by a 64-bit finaliser, from (seed, pixel, absolute sample index) alone, so
// an image depends on the seed and the sample count only, never on how the samples were split into launches.
#pragma once

namespace pt {

// One step of SplitMix64 from state x: a bijection of 64-bit words that spreads every input bit over the
// whole output, so that neighbouring keys give unrelated states.
__forceinline__ __device__ unsigned long long mix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// PCG32: a 64-bit LCG whose state is output through xorshift-high and a random rotation.
struct Pcg32 {
    unsigned long long state;

    __forceinline__ __device__ unsigned int next() {
        const unsigned long long old = state;
        state = old * 6364136223846793005ull + 1442695040888963407ull;
        const unsigned int xorshifted = static_cast<unsigned int>(((old >> 18u) ^ old) >> 27u);
        const unsigned int rot = static_cast<unsigned int>(old >> 59u);
        return __funnelshift_r(xorshifted, xorshifted, rot);  // rotate right by rot
    }

    // Uniform in [0, 1): the top 24 bits, so that every value is an exact float and 1 is never reached.
    __forceinline__ __device__ float uniform() { return static_cast<float>(next() >> 8) * (1.0f / 16777216.0f); }
};

// The part of a sample's key that is the same for every sample of a pixel (computed once per pixel).
__forceinline__ __device__ unsigned long long pixel_key(unsigned int seed, unsigned int pixel) {
    return mix64((static_cast<unsigned long long>(seed) << 32) | pixel);
}

// The generator of sample number `sample` (absolute, counted over all launches) of the pixel with key `key`.
__forceinline__ __device__ Pcg32 sample_rng(unsigned long long key, unsigned int sample) {
    return Pcg32{mix64(key ^ (static_cast<unsigned long long>(sample) * 0xD1B54A32D192ED03ull))};
}

}  // namespace pt
