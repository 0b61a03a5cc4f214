"""Linear radiance to 8-bit sRGB with the kernel's curve: on the host, and on the GPU for images made after the launch.

The path tracer tonemaps the running mean itself (``srgb8`` in
``kernels/pathtracer/film.h``): clamp to [0, 1] (NaN to 0), the sRGB
transfer function, then round to the nearest code. :func:`tonemap_srgb`
does the same in float32 numpy; the kernel's fast ``pow`` may differ from
numpy's by one code at a rounding boundary. :func:`tonemap_device` runs the
same curve on a float4 device image (a denoised frame), on a given stream.

Blocking calls
--------------
None: :func:`tonemap_device` enqueues a kernel (compiled by CuPy on first
use: set-up time).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["TONEMAP_SOURCE", "tonemap_device", "tonemap_srgb", "srgb_to_linear"]

#: The device tonemap: float4 linear RGBA in, uchar4 sRGB out (alpha 255), the curve of ``film.h``.
TONEMAP_SOURCE = r"""
extern "C" __global__ void tonemap_srgb8(const float4* linear, uchar4* out, unsigned int n) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 v = linear[i];
    const float c[3] = {v.x, v.y, v.z};
    unsigned char code[3];
    for (int k = 0; k < 3; ++k) {
        const float x = fminf(fmaxf(c[k], 0.0f), 1.0f);
        const float s = x <= 0.0031308f ? 12.92f * x : 1.055f * __powf(x, 1.0f / 2.4f) - 0.055f;
        code[k] = static_cast<unsigned char>(fminf(fmaxf(s, 0.0f), 1.0f) * 255.0f + 0.5f);
    }
    out[i] = make_uchar4(code[0], code[1], code[2], 255);
}
"""


def tonemap_srgb(linear: Any) -> np.ndarray:
    """Linear RGB (..., 3) to sRGB ``uint8`` (..., 3)."""
    a = np.asarray(linear, dtype=np.float32)
    if a.ndim < 1 or a.shape[-1] != 3:
        raise ValueError(f"expected linear RGB with a last axis of 3, got shape {a.shape}")
    c = np.clip(np.nan_to_num(a, nan=0.0, posinf=1.0, neginf=0.0), np.float32(0), np.float32(1))
    low = c * np.float32(12.92)
    high = np.float32(1.055) * np.power(c, np.float32(1 / 2.4)) - np.float32(0.055)
    s = np.clip(np.where(c <= np.float32(0.0031308), low, high), np.float32(0), np.float32(1))
    return (s * np.float32(255) + np.float32(0.5)).astype(np.uint8)


@functools.lru_cache(maxsize=1)
def _tonemap_kernel() -> Any:
    import cupy

    return cupy.RawKernel(TONEMAP_SOURCE, "tonemap_srgb8", options=("--use_fast_math",))


def tonemap_device(linear: Any, out: Any, stream: Any) -> None:
    """Enqueue the sRGB tonemap of ``linear`` (H, W, 4) float32 into ``out`` (H, W, 4) uint8 on ``stream``.

    Raises
    ------
    ValueError
        If the arrays' shapes, dtypes or contiguity do not fit.
    """
    from ..cuda import as_cupy_stream

    if linear.dtype != np.float32 or out.dtype != np.uint8 or linear.shape != out.shape or linear.shape[-1] != 4:
        raise ValueError(f"tonemap_device needs (H, W, 4) float32 in and uint8 out of the same shape, got "
                         f"{linear.dtype} {linear.shape} and {out.dtype} {out.shape}")
    if not (linear.flags.c_contiguous and out.flags.c_contiguous):
        raise ValueError("tonemap_device needs C-contiguous arrays")
    n = linear.size // 4
    _tonemap_kernel()(((n + 255) // 256,), (256,), (linear, out, np.uint32(n)), stream=as_cupy_stream(stream))


def srgb_to_linear(codes: Any, scale: float = 255.0) -> np.ndarray:
    """The inverse curve: sRGB codes (8-bit by default; ``scale`` is the code of 1) to linear float32."""
    s = np.clip(np.asarray(codes, dtype=np.float64) / scale, 0.0, 1.0)
    return np.where(s <= 0.04045, s / 12.92, ((s + 0.055) / 1.055) ** 2.4).astype(np.float32)
