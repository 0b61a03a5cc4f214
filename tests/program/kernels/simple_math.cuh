#pragma once

// No __device__ needed: programs are compiled with --device-as-default-execution-space.
inline float simple_mad(float a, float b, float c)
{
    return a * b + c;
}
