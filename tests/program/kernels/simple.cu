// A small, self-contained program for the NVRTC tests: a plain kernel, OptiX-style
// entry-point names (they are ordinary kernels to NVRTC), and a header from an include dir.
#include "simple_math.cuh"

#ifndef SIMPLE_SCALE
#define SIMPLE_SCALE 2.0f
#endif

extern "C" __global__ void scale_kernel(float* data, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = simple_mad(data[i], SIMPLE_SCALE, 1.0f);
}

extern "C" __global__ void __raygen__simple() {}

extern "C" __global__ void __miss__simple() {}

extern "C" __global__ void __closesthit__simple() {}
