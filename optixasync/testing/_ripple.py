"""GPU-side mesh animation for the refit tests and benchmarks: a rippling grid whose vertices a kernel computes.

Blocking calls
--------------
None: the kernel is compiled by CuPy (``RawKernel``, once) and launched on
the caller's stream, after the rest positions' upload (a GPU-side wait).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import Readiness, as_cupy_stream

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["grid_mesh", "RippleAnimator"]

_RIPPLE_SOURCE = r"""
extern "C" __global__ void ripple(const float* rest, float* out, int n, float t, float amplitude) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = rest[3 * i], y = rest[3 * i + 1], z = rest[3 * i + 2];
    float r = sqrtf(x * x + y * y);
    out[3 * i] = x;
    out[3 * i + 1] = y;
    out[3 * i + 2] = z + amplitude * __sinf(12.0f * r - 4.0f * t);
}
"""

def grid_mesh(cells: int, size: float = 1.6, z: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """A square grid of ``2 * cells**2`` triangles in the plane ``z``, centred on the origin."""
    ticks = np.linspace(-size / 2, size / 2, cells + 1, dtype=np.float32)
    xs, ys = np.meshgrid(ticks, ticks)
    vertices = np.stack([xs.ravel(), ys.ravel(), np.full(xs.size, z, np.float32)], axis=1).astype(np.float32)
    i = np.arange(cells, dtype=np.int32)
    a = (i[:, None] * (cells + 1) + i[None, :]).ravel()
    b, c, d = a + 1, a + cells + 1, a + cells + 2
    indices = np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)]).astype(np.int32)
    return vertices, indices


class RippleAnimator:
    """Writes the rippled positions of a rest mesh into a device array, on a stream."""

    def __init__(self, ctx: Context, rest_vertices: np.ndarray, amplitude: float = 0.05) -> None:
        import cupy

        self.rest = ctx.upload(np.ascontiguousarray(rest_vertices, np.float32))
        self.ready = Readiness()
        self.ready.record(ctx.stream)  # the upload, waited for on the GPU by each call's stream
        self.n = len(rest_vertices)
        self.amplitude = amplitude
        self._kernel = cupy.RawKernel(_RIPPLE_SOURCE, "ripple")

    def __call__(self, out: Any, t: float, stream: Any) -> None:
        stream = as_cupy_stream(stream)
        self.ready.order(stream)
        self._kernel(((self.n + 255) // 256,), (256,),
                     (self.rest, out, np.int32(self.n), np.float32(t), np.float32(self.amplitude)), stream=stream)
