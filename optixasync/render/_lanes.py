"""Lanes: a still of a small image spread over more threads, each summing a share of a pixel's samples.

A launch of W x H pixels and B views runs W * H * B threads; at 256 x 256 that
is 65,536, a quarter of what an H200 holds resident (132 SMs x 2048), and each
thread runs all of its pixel's samples one after the other. With L lanes the
launch is W x H x (B * L): lane l of a pixel adds samples
[l * ceil(spp / L), (l + 1) * ceil(spp / L)) of the launch into its own
running sums (``kernels/pathtracer/view_pixel.h``), and :func:`add_lanes`
adds the L sums of each pixel after the last launch, lane 0 first, on the
frame's stream.

Reproducibility. The lane count is a function of (width, height, views, spp)
alone (:func:`lane_count`), never of the GPU, so a still's bits are the same
on any GPU and in any run. Against a single lane, the regrouped float32
additions differ in the last bits: ``tests/render/test_views_host.py``
measures the difference (below 1e-6 of the mean for the Cornell box). The
sum of a lane is still in sample order, and lanes cover the samples in order.

Blocking calls
--------------
None: :func:`add_lanes` enqueues a kernel (compiled by CuPy on first use:
set-up time).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._options import LANE_TARGET_THREADS, MAX_LANES

__all__ = ["ADD_LANES_SOURCE", "add_lanes", "add_lanes_host", "lane_count"]

#: The lanes' sums, added in lane order: one thread per (view, pixel).
ADD_LANES_SOURCE = r"""
extern "C" __global__ void add_lanes(const float4* lanes_sums, float4* out, unsigned int lanes,
                                     unsigned long long plane, unsigned long long total) {
    const unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const unsigned long long view = i / plane, pixel = i - view * plane;
    const float4* p = lanes_sums + view * lanes * plane + pixel;
    float4 s = p[0];
    for (unsigned int l = 1; l < lanes; ++l) {
        const float4 v = p[l * plane];
        s.x += v.x;
        s.y += v.y;
        s.z += v.z;
        s.w += v.w;
    }
    out[i] = s;
}
"""


def lane_count(width: int, height: int, views: int, spp: int, requested: int = 0) -> int:
    """The lanes of a still: ``requested`` (1 or more), or for 0 enough to reach :data:`LANE_TARGET_THREADS`.

    At most one lane per sample and :data:`MAX_LANES`; a launch stays within OptiX's 2**30 threads.
    """
    threads = width * height * views
    lanes = requested if requested else LANE_TARGET_THREADS // max(threads, 1)
    lanes = max(1, min(lanes, spp, MAX_LANES, 2**30 // max(threads, 1)))
    return int(lanes)


def add_lanes_host(lanes_sums: np.ndarray, lanes: int) -> np.ndarray:
    """:func:`add_lanes` in numpy: (views * lanes, H, W, 4) sums to (views, H, W, 4), in the kernel's order."""
    views = lanes_sums.shape[0] // lanes
    grouped = lanes_sums.reshape(views, lanes, *lanes_sums.shape[1:])
    out = grouped[:, 0].copy()
    for lane in range(1, lanes):
        out += grouped[:, lane]
    return out


@functools.lru_cache(maxsize=1)
def _kernel() -> Any:
    import cupy

    return cupy.RawKernel(ADD_LANES_SOURCE, "add_lanes")


def add_lanes(lanes_sums: Any, out: Any, lanes: int, stream: Any) -> None:
    """Enqueue the sum over lanes of ``lanes_sums`` (views * lanes, H, W, 4) into ``out`` (views, H, W, 4).

    Raises
    ------
    ValueError
        On arrays whose shapes or dtypes do not fit.
    """
    from ..cuda import as_cupy_stream

    views = out.shape[0] if out.ndim == 4 else 1
    plane = out.shape[-3] * out.shape[-2]
    if (lanes_sums.dtype != np.float32 or out.dtype != np.float32 or out.shape[-1] != 4
            or lanes_sums.size != out.size * lanes):
        raise ValueError(f"add_lanes needs float32 (views * {lanes}, H, W, 4) sums and (views, H, W, 4) out, got "
                         f"{lanes_sums.dtype} {lanes_sums.shape} and {out.dtype} {out.shape}")
    total = views * plane
    _kernel()(((total + 255) // 256,), (256,), (lanes_sums, out, np.uint32(lanes), np.uint64(plane), np.uint64(total)),
              stream=as_cupy_stream(stream))
