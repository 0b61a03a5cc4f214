"""Frame updates: how frame ``k`` of a sequence differs from the scene, in the layer that owns frames.

A frame update is any callable ``update(pipeline, index, frame)``, called
inside the frame before its launch (the frame's stream orders its work). It
may move dynamic meshes (write :meth:`RenderPipeline.vertices` on the frame,
then :meth:`RenderPipeline.refit`), set :attr:`RenderPipeline.camera`, or
anything else the pipeline allows. An update used by several workers
(:mod:`optixasync.multi`) must depend on ``index`` alone, never on the frames
a worker rendered before, and be picklable: frames go to whichever worker is
free. :class:`ClothMotion`, :class:`NodeMotion` (a glTF node animation) and
:class:`CameraSwing` are the ones the command line uses.

In a frame graph (:mod:`._graphs`), a plain update runs on the host part of
each frame, before the graph's launch (:class:`CameraSwing` only sets the
camera). :class:`ClothMotion` is a :class:`~optixasync.render.GraphUpdate`:
its host part writes the frame's time into the slot's frame values, and its
GPU part (the vertex kernel reading that time on the GPU, then the refit) is
captured with the frame and replayed.

Blocking calls
--------------
* The first :class:`ClothMotion` call compiles its kernel with NVRTC and
  loads it (set-up time, once per process; the graph frames' kernel, reading
  the time on the GPU, likewise).
Everything else enqueues asynchronous work on the frame's stream.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from string import Template
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..scene import Camera, ClothAnimation, NodeAnimation, UsdAnimation
from ..scene._cloth import CLOTH_WAVES
from ._graphs import FRAME_VALUES

if TYPE_CHECKING:
    from ..scheduler import Frame
    from ._pipeline import RenderPipeline

__all__ = ["CLOTH_SOURCE", "CameraSwing", "ClothMotion", "FrameUpdate", "NodeMotion", "swing_camera", "write_cloth",
           "write_cloth_at"]


class FrameUpdate(Protocol):
    """What :meth:`RenderPipeline.frames` and the multi-GPU farm call before each frame's launch."""

    def __call__(self, pipeline: RenderPipeline, index: int, frame: Frame) -> None: ...


def swing_camera(camera: Camera, angle_degrees: float) -> Camera:
    """``camera`` with its eye turned by ``angle_degrees`` about the vertical axis through its target."""
    eye = np.asarray(camera.eye, dtype=np.float64)
    target = np.asarray(camera.target, dtype=np.float64)
    a = math.radians(angle_degrees)
    offset = eye - target
    turned = np.array([math.cos(a) * offset[0] + math.sin(a) * offset[2], offset[1],
                       -math.sin(a) * offset[0] + math.cos(a) * offset[2]])
    return dataclasses.replace(camera, eye=tuple(float(v) for v in target + turned))


@dataclasses.dataclass(frozen=True)
class CameraSwing:
    """Frame ``k`` of ``count`` turns ``camera`` by ``degrees * sin(2 pi k / count)`` about its target."""

    camera: Camera
    count: int
    degrees: float = 15.0

    def camera_of(self, index: int) -> Camera:
        """The camera of frame ``index``."""
        return swing_camera(self.camera, self.degrees * math.sin(2 * math.pi * index / self.count))

    def __call__(self, pipeline: RenderPipeline, index: int, frame: Frame) -> None:
        pipeline.camera = self.camera_of(index)


@dataclasses.dataclass(frozen=True)
class ClothMotion:
    """Frame ``k`` shows ``cloth`` at time ``k * dt``: its vertices rewritten on the GPU and the structure refitted.

    ``cloth`` is the :class:`~optixasync.scene.ClothAnimation` whose :meth:`~ClothAnimation.scene` the pipeline
    renders (its :attr:`~ClothAnimation.mesh_index` names the cloth's mesh).
    """

    cloth: ClothAnimation
    dt: float = 1 / 30

    def __call__(self, pipeline: RenderPipeline, index: int, frame: Frame) -> None:
        self.move(pipeline, index * self.dt, frame)

    def move(self, pipeline: RenderPipeline, t: float, stream: Any) -> None:
        """Move the cloth to time ``t``: new vertices, then a refit, both on ``stream``."""
        mesh = self._mesh()  # the scene's check first: ClothMotion of a cloth whose scene was not made
        write_cloth(self.cloth, pipeline.vertices(mesh, stream), t, stream)  # after the set-up
        pipeline.refit(stream)

    def host(self, pipeline: RenderPipeline, index: int, frame: Frame) -> None:
        """Frame ``index`` in a frame graph, on the host: its time into the slot's frame values; the accumulation
        restarts (the old samples show the old cloth)."""
        self._mesh()
        t = index * self.dt
        if not math.isfinite(t):
            raise ValueError(f"the frame's time must be finite, got {t}")
        pipeline.graphs.values(frame).host["time"] = t
        pipeline.reset()

    def enqueue(self, pipeline: RenderPipeline, frame: Frame) -> None:
        """The frame graph's part: the vertices at the time the frame values hold (read on the GPU), the refit."""
        values = pipeline.graphs.values(frame)
        time_address = values.device_ptr + FRAME_VALUES.fields["time"][1]
        write_cloth_at(self.cloth, pipeline.vertices(self._mesh(), frame), time_address, frame)
        pipeline.device_scene.refit(frame)

    def _mesh(self) -> int:
        if self.cloth.mesh_index is None:
            raise RuntimeError("ClothMotion needs the scene made by ClothAnimation.scene()")
        return self.cloth.mesh_index


@dataclasses.dataclass(frozen=True)
class NodeMotion:
    """Frame ``k`` shows a glTF node animation at ``start + k * dt`` seconds (``start``: its first keyframe).

    ``animation`` is the :class:`~optixasync.scene.NodeAnimation` of the scene the pipeline renders
    (:meth:`GltfAsset.animated_scene <optixasync.scene.GltfAsset.animated_scene>`), or the
    :class:`~optixasync.scene.UsdAnimation` of a USD stage's time samples (:func:`~optixasync.scene.read_usd`
    with ``motion_blur=False``): each frame writes the moving
    meshes' transforms into their mesh records and rebuilds the instance structure, on the frame's stream
    (:meth:`RenderPipeline.place`), and moves the camera when the animation moves its node. Past the last
    keyframe every channel holds its last value. Depends on ``index`` alone (the farm's rule).
    """

    animation: NodeAnimation | UsdAnimation
    dt: float = 1 / 30
    start: float | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.dt, (int, float)) and math.isfinite(self.dt) and self.dt > 0):
            raise ValueError(f"NodeMotion dt must be a positive number of seconds, got {self.dt!r}")

    def time_of(self, index: int) -> float:
        """The animation time of frame ``index``, seconds."""
        start = self.animation.start if self.start is None else float(self.start)
        return start + int(index) * float(self.dt)

    def __call__(self, pipeline: RenderPipeline, index: int, frame: Frame) -> None:
        t = self.time_of(index)
        if self.animation.moving.any():
            pipeline.place(self.animation.transforms(t), frame)
        camera = self.animation.camera_at(t)
        if camera is not None:
            pipeline.camera = camera


#: CUDA source of the vertex kernel (compiled by CuPy's NVRTC on first use); the formula of
#: :meth:`ClothAnimation.positions`.
CLOTH_SOURCE = Template(r"""
__device__ __forceinline__ void cloth_vertex(float* out, int k, int cells, float t, float width, float height,
                                             float top, float depth, float amplitude, float pleat, float sway) {
    const int n = cells + 1;
    const int i = k % n;        // column: x grows with i
    const int j = k / n;        // row: 0 at the rod, cells at the hem
    const float u = (float)i / (float)cells;
    const float s = (float)j / (float)cells;
    const float x0 = width * (u - 0.5f);
    // The rod holds the top row still; the waves and the sway grow towards the hem.
    const float wave = sinf($K1 * x0 - $W1 * t + $V1 * s)
                     + 0.5f * sinf($K2 * x0 + $W2 * t - $V2 * s);
    const float folds = pleat * cosf($PLEATS * 3.14159265f * u) * (1.0f - 0.5f * s);
    float x = x0 + sway * s * s * sinf($SWAY * t);
    float y = top - height * s;
    float z = depth + amplitude * s * wave + folds;
    // Never leave the room, whatever the parameters (the walls are at +-1).
    x = fminf(fmaxf(x, -0.98f), 0.98f);
    y = fminf(fmaxf(y, -0.98f), 0.98f);
    z = fminf(fmaxf(z, -0.98f), 0.98f);
    float* p = out + 3 * (size_t)k;  // 64-bit offset: 3 * k overflows an int past ~715M vertices
    p[0] = x;
    p[1] = y;
    p[2] = z;
}

extern "C" __global__ void cloth_positions(float* out, int cells, float t, float width, float height, float top,
                                           float depth, float amplitude, float pleat, float sway) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (cells + 1) * (cells + 1)) return;
    cloth_vertex(out, k, cells, t, width, height, top, depth, amplitude, pleat, sway);
}

// The same with the time read from device memory: its arguments are the same every frame (a frame graph's).
extern "C" __global__ void cloth_positions_at(float* out, int cells, const float* t, float width, float height,
                                              float top, float depth, float amplitude, float pleat, float sway) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (cells + 1) * (cells + 1)) return;
    cloth_vertex(out, k, cells, *t, width, height, top, depth, amplitude, pleat, sway);
}
""").substitute({name: f"{value!r}f" for name, value in CLOTH_WAVES.items()})



_BLOCK = 256


def write_cloth(cloth: ClothAnimation, out: Any, t: float, stream: Any) -> None:
    """Enqueue the kernel writing ``cloth``'s vertices at time ``t`` into ``out`` on ``stream``.

    Parameters
    ----------
    cloth : ClothAnimation
    out : cupy.ndarray
        float32, C-contiguous, shape ``((cells + 1)**2, 3)``.
    t : float
        Time in seconds.
    stream : StreamLike
        A non-blocking stream (never the legacy default stream).

    Raises
    ------
    ValueError
        If ``out`` has another shape, dtype or layout, or ``t`` is not finite.
    """
    args = cloth.kernel_arguments(t)
    _launch(_kernel(), cloth, out, args, stream)


def write_cloth_at(cloth: ClothAnimation, out: Any, t_address: int, stream: Any) -> None:
    """As :func:`write_cloth`, with the time read on the GPU from ``t_address`` (a float32 in device memory).

    The kernel's arguments are then the same every frame: a frame graph captures it once, and each launch
    moves the cloth to the time that memory holds when it runs.
    """
    cells, _t, *shape = cloth.kernel_arguments(0.0)
    _launch(_kernel_at(), cloth, out, (cells, np.uint64(t_address), *shape), stream)


def _launch(kernel: Any, cloth: ClothAnimation, out: Any, args: tuple, stream: Any) -> None:
    import cupy

    from ..cuda import as_cupy_stream

    if not isinstance(out, cupy.ndarray):
        raise TypeError(f"out must be a cupy.ndarray, got {type(out).__name__}")
    if out.shape != (cloth.num_vertices, 3) or out.dtype != np.float32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float32 array of shape ({cloth.num_vertices}, 3) "
                         f"for {cloth.cells} cells, got {out.dtype} {out.shape}")
    launch_stream = as_cupy_stream(stream)  # rejects the legacy default stream
    n = cloth.num_vertices
    # An explicit stream: CuPy's current stream (the legacy default one unless set) is never used.
    kernel(((n + _BLOCK - 1) // _BLOCK,), (_BLOCK,), (out, *args), stream=launch_stream)


@functools.lru_cache(maxsize=1)
def _kernel() -> Any:
    import cupy

    return cupy.RawKernel(CLOTH_SOURCE, "cloth_positions")


@functools.lru_cache(maxsize=1)
def _kernel_at() -> Any:
    import cupy

    return cupy.RawKernel(CLOTH_SOURCE, "cloth_positions_at")
