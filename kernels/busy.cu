// A calibrated frame of GPU work for the scheduler's tests and benchmarks.
//
// Thread 0 spins on the GPU's nanosecond timer for `spin_ns`, so one launch
// keeps the GPU busy for a known time whatever the chip. Every thread then
// writes a value derived from the frame's parameters, so a readback proves
// which parameters the launch saw.
#include "optixasync_device.h"

struct BusyParams {
    float* out;                   // n_out values, written by the launch
    unsigned long long spin_ns;   // how long thread 0 keeps the GPU busy
    unsigned int frame;           // frame number, echoed into the output
    float scale;                  // per-frame value, echoed into the output
};

extern "C" __constant__ BusyParams params;

__forceinline__ __device__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

OA_PROGRAM __raygen__busy() {
    const uint3 idx = oa::launch_index();
    if (idx.x == 0 && params.spin_ns > 0) {
        const unsigned long long start = global_timer_ns();
        while (global_timer_ns() - start < params.spin_ns) {
        }
    }
    // Explicitly rounded operations (no fused multiply-add), so the host can predict every bit.
    params.out[idx.x] = __fadd_rn(__fmul_rn(params.scale, (float)(idx.x + 1)), (float)params.frame);
}

OA_PROGRAM __miss__busy() {}
