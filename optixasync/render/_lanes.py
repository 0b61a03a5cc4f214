"""Lanes: a still of a small image spread over more threads, each tracing one of a pixel's samples.

A launch of W x H pixels and B views runs W * H * B threads; at 256 x 256 that
is 65,536, a quarter of what an H200 holds resident (132 SMs x 2048), and each
thread runs all of its pixel's samples one after the other. With L lanes a
still's samples go in launches of L samples, each W x H x (B * L): lane l
traces sample l of the launch into its own sums (``kernels/pathtracer/view_pixel.h``),
and :func:`add_lanes` then adds the lanes' values to the still's running
sums one after the other, lane 0 first, on the frame's stream.

Reproducibility. That is the order in which one thread adds its pixel's
samples (each sample added to the running sum, in sample order), so a still
with lanes has the same bits as one without: ``render(16)`` and four
``record(frame, 4)`` still give bitwise equal sums
(``tests/render/test_views_host.py`` checks it). The lane count depends on
(width, height, views, spp) alone (:func:`lane_count`), never on the GPU.

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

#: The lanes' values added to the running sums in lane order: one thread per (view, pixel).
ADD_LANES_SOURCE = r"""
extern "C" __global__ void add_lanes(const float4* lanes_sums, float4* out, unsigned int lanes,
                                     unsigned long long plane, unsigned long long total, unsigned int accumulate) {
    const unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const unsigned long long view = i / plane, pixel = i - view * plane;
    const float4* p = lanes_sums + view * lanes * plane + pixel;
    float4 s = accumulate ? out[i] : p[0];
    for (unsigned int l = accumulate ? 0u : 1u; l < lanes; ++l) {
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


def add_lanes_host(lanes_sums: np.ndarray, lanes: int, out: np.ndarray | None = None,
                   accumulate: bool = False) -> np.ndarray:
    """:func:`add_lanes` in numpy: (views * lanes, H, W, 4) lanes into (views, H, W, 4) sums, in the kernel's order."""
    views = lanes_sums.shape[0] // lanes
    grouped = lanes_sums.reshape(views, lanes, *lanes_sums.shape[1:])
    if accumulate:
        total = np.array(out, np.float32).reshape(views, *lanes_sums.shape[1:])
        first = 0
    else:
        total = grouped[:, 0].copy()
        first = 1
    for lane in range(first, lanes):
        total += grouped[:, lane]
    if out is not None:
        out[...] = total.reshape(out.shape)
        return out
    return total


@functools.lru_cache(maxsize=1)
def _kernel() -> Any:
    import cupy

    return cupy.RawKernel(ADD_LANES_SOURCE, "add_lanes")


def add_lanes(lanes_sums: Any, out: Any, lanes: int, accumulate: bool, stream: Any) -> None:
    """Enqueue the lanes of ``lanes_sums`` ((views * L, H, W, 4), the first ``lanes`` of each view's L used)
    added in lane order to ``out`` ((views, H, W, 4); ``accumulate`` False: ``out`` is overwritten).

    Raises
    ------
    ValueError
        On arrays whose shapes or dtypes do not fit.
    """
    from ..cuda import as_cupy_stream

    views = out.shape[0] if out.ndim == 4 else 1
    plane = out.shape[-3] * out.shape[-2]
    if (lanes_sums.dtype != np.float32 or out.dtype != np.float32 or out.shape[-1] != 4
            or lanes_sums.size < out.size * lanes):
        raise ValueError(f"add_lanes needs float32 (views * {lanes}, H, W, 4) sums and (views, H, W, 4) out, got "
                         f"{lanes_sums.dtype} {lanes_sums.shape} and {out.dtype} {out.shape}")
    total = views * plane
    _kernel()(((total + 255) // 256,), (256,), (lanes_sums, out, np.uint32(lanes), np.uint64(plane), np.uint64(total),
                                                np.uint32(bool(accumulate))), stream=as_cupy_stream(stream))
