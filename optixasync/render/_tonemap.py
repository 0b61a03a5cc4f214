"""The sRGB tonemap on the GPU, for images made after the launch (the denoised frames): the kernels' own curve.

The kernel includes ``kernels/pathtracer/film.h``, whose ``srgb8`` the path
tracer's launch applies too, so that both encode alike; the host's twin is
:func:`optixasync.io.tonemap_srgb`.

Blocking calls
--------------
None: :func:`tonemap_device` enqueues a kernel (compiled by CuPy on first
use: set-up time).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._config import kernels_dir

__all__ = ["TONEMAP_SOURCE", "tonemap_device"]

#: The device tonemap: float4 linear RGBA in, uchar4 sRGB out (alpha 255), with ``film.h``'s ``srgb8``.
TONEMAP_SOURCE = r"""
#include "pathtracer/film.h"

extern "C" __global__ void tonemap_srgb8(const float4* linear, uchar4* out, unsigned int n) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 v = linear[i];
    out[i] = make_uchar4(pt::srgb8(v.x), pt::srgb8(v.y), pt::srgb8(v.z), 255);
}
"""


@functools.lru_cache(maxsize=1)
def _tonemap_kernel() -> Any:
    import cupy

    return cupy.RawKernel(TONEMAP_SOURCE, "tonemap_srgb8", options=("--use_fast_math", f"-I{kernels_dir()}"))


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
