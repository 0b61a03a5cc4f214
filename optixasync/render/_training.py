"""A streaming source of training data: batches of outputs on the GPU, randomized per batch, never on disk.

:class:`TrainingBatches` iterates a :class:`~optixasync.render.RenderPipeline`
made with a batch of pinhole :class:`~optixasync.render.Views`: each batch is
one :meth:`~optixasync.render.RenderPipeline.step`, whose outputs reach the
training loop as torch, CuPy or JAX arrays through DLPack (no copy; the
consumer's stream waits for the frame on the GPU), and whose randomization is
done on the device:

* the cameras (:class:`OrbitCameras`): every view's pose drawn around a
  centre by a counter-based hash of (seed, batch, view), evaluated by CuPy
  kernels on the pipeline's stream into a device array of poses (the same
  formula in numpy gives the same numbers: the CPU tests check it);
* the materials' colours and the lights' strength: a table rewrite of a few
  hundred bytes per batch (:meth:`~optixasync.render.RenderPipeline.update_tables`),
  ordered on the same stream.

Each batch's arrays stay valid until the next batch is asked for (its lease is
then given back: the frame that next writes those buffers waits, on the GPU,
for the work the training loop had enqueued on them); ``hold=True`` leaves the
release to the caller (``batch.release()``).

Blocking calls
--------------
Those of :meth:`~optixasync.render.RenderPipeline.step` (the scheduler's slot
fence when ``frames_in_flight`` frames are on the GPU). The poses' kernels and
the table rewrites are enqueued, never waited for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..validation import as_int

__all__ = ["FRAMEWORKS", "OrbitCameras", "TrainingBatch", "TrainingBatches", "hash_uniform"]

#: What a batch's arrays are: ``"torch"``, ``"cupy"``, ``"jax"``, or None (the exported arrays themselves).
FRAMEWORKS = ("torch", "cupy", "jax", None)


def hash_uniform(xp: Any, seed: int, batch: int, count: int, channel: int) -> Any:
    """``count`` uniform numbers in [0, 1) of (seed, batch, channel), one per view: a murmur3 finalizer of a
    counter, in uint32 arithmetic (numpy and CuPy give the same bits)."""
    k = xp.arange(count, dtype=xp.uint32)
    h = (k * xp.uint32(0x9E3779B1)) ^ xp.uint32((seed * 0x85EBCA77 + batch * 0xC2B2AE3D + channel * 0x27D4EB2F)
                                                 & 0xFFFFFFFF)
    h ^= h >> xp.uint32(16)
    h *= xp.uint32(0x85EBCA6B)
    h ^= h >> xp.uint32(13)
    h *= xp.uint32(0xC2B2AE35)
    h ^= h >> xp.uint32(16)
    return (h >> xp.uint32(8)).astype(xp.float32) * xp.float32(1.0 / (1 << 24))


@dataclass(frozen=True)
class OrbitCameras:
    """Poses of views looking at ``centre`` from a random azimuth, elevation and distance, drawn per batch.

    Attributes
    ----------
    centre : 3 floats
    distance : pair of float
        Range of the distance to the centre.
    elevation : pair of float
        Range of the elevation above the horizontal plane, degrees.
    """

    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    distance: tuple[float, float] = (2.0, 3.0)
    elevation: tuple[float, float] = (10.0, 50.0)

    def __post_init__(self) -> None:
        centre = tuple(float(v) for v in self.centre)
        if len(centre) != 3 or not all(math.isfinite(v) for v in centre):
            raise ValueError(f"OrbitCameras centre must be 3 finite numbers, got {self.centre!r}")
        object.__setattr__(self, "centre", centre)
        for name, low_bound in (("distance", 0.0), ("elevation", -89.0)):
            low, high = (float(v) for v in getattr(self, name))
            if not (math.isfinite(low) and math.isfinite(high) and low_bound < low <= high):
                raise ValueError(f"OrbitCameras {name} must be a (low, high) pair with {low_bound} < low <= high, "
                                 f"got {getattr(self, name)!r}")
            if name == "elevation" and high >= 89.0:
                raise ValueError(f"OrbitCameras elevation must stay below 89 degrees, got {high}")
            object.__setattr__(self, name, (low, high))

    def poses(self, xp: Any, count: int, seed: int, batch: int, out: Any = None) -> Any:
        """(count, 3, 4) float32 OpenCV camera-to-world poses of batch ``batch`` (into ``out`` when given)."""
        f32 = xp.float32
        u = [hash_uniform(xp, seed, batch, count, c) for c in range(3)]
        distance = f32(self.distance[0]) + f32(self.distance[1] - self.distance[0]) * u[0]
        elevation = f32(math.radians(self.elevation[0])) + \
            f32(math.radians(self.elevation[1] - self.elevation[0])) * u[1]
        azimuth = f32(2 * math.pi) * u[2]
        ce, se, ca, sa = xp.cos(elevation), xp.sin(elevation), xp.cos(azimuth), xp.sin(azimuth)
        forward = -xp.stack([ce * sa, se, ce * ca], axis=-1)  # from the eye to the centre
        right = xp.stack([ca, xp.zeros_like(ca), -sa], axis=-1)  # forward x up, normalized (up = +y)
        down = xp.cross(forward, right)
        poses = xp.empty((count, 3, 4), f32) if out is None else out
        poses[:, :, 0], poses[:, :, 1], poses[:, :, 2] = right, down, forward
        poses[:, :, 3] = xp.asarray(self.centre, f32) - distance[:, None] * forward
        return poses


class TrainingBatch(Mapping):
    """One batch: its outputs by name (as the source's framework makes them), its index, poses and light scale."""

    def __init__(self, index: int, arrays: dict[str, Any], outputs: Any, poses: Any, light_scale: float | None) -> None:
        self.index, self.outputs, self.poses, self.light_scale = index, outputs, poses, light_scale
        self._arrays = arrays

    def __getitem__(self, name: str) -> Any:
        return self._arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def release(self) -> None:
        """Give the batch's buffers back to the pipeline (see the module documentation)."""
        self.outputs.release()


class TrainingBatches:
    """Batches of a pipeline's outputs for a training loop (see the module documentation).

    Parameters
    ----------
    pipeline : RenderPipeline
        Made with ``views=`` a batch of pinhole views with poses (their intrinsics stay; the poses are drawn).
    count : int or None
        Batches (None: without end).
    cameras : OrbitCameras or None
        The poses' randomization (None: the views' own poses every batch).
    color_jitter : float
        Each distinct material's colour times a factor in [1 - j, 1 + j] per channel per batch (0: none).
    light_scale : pair of float or None
        Every light times one factor in this range per batch.
    spp : int
    seed : int
    framework : str or None
        ``"torch"``, ``"cupy"``, ``"jax"`` or None (:data:`FRAMEWORKS`).
    hold : bool
        Leave each batch's release to the caller instead of releasing it when the next one is asked for.
    materials : callable, optional
        ``materials(batch) -> {scene material: new material}``, instead of ``color_jitter``.

    Raises
    ------
    TypeError, ValueError
        On a pipeline without views with poses, bad ranges, an unknown framework (before any GPU work).
    """

    def __init__(self, pipeline: Any, count: int | None = None, *, cameras: OrbitCameras | None = None,
                 color_jitter: float = 0.0, light_scale: tuple[float, float] | None = None, spp: int = 1,
                 seed: int = 0, framework: str | None = "torch", hold: bool = False,
                 materials: Callable[[int], Mapping[Any, Any]] | None = None) -> None:
        views = getattr(pipeline, "views", None)
        if views is None or views.poses is None:
            raise ValueError("TrainingBatches needs a RenderPipeline made with views=Views.pinhole(...) (poses)")
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {FRAMEWORKS}, got {framework!r}")
        if cameras is not None and not isinstance(cameras, OrbitCameras):
            raise TypeError(f"cameras must be an OrbitCameras or None, got {type(cameras).__name__}")
        if not 0 <= float(color_jitter) <= 1:
            raise ValueError(f"color_jitter must be in [0, 1], got {color_jitter}")
        if light_scale is not None:
            low, high = (float(v) for v in light_scale)
            if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high):
                raise ValueError(f"light_scale must be a (low, high) pair with 0 < low <= high, got {light_scale!r}")
            light_scale = (low, high)
        self.pipeline, self.cameras, self.framework, self.hold = pipeline, cameras, framework, bool(hold)
        self.count = None if count is None else as_int("count", count, 0)
        self.spp = as_int("spp", spp, 1)
        self.seed = as_int("seed", seed, 0, 2**32 - 1)
        self.color_jitter, self.light_scale, self._materials = float(color_jitter), light_scale, materials
        self._scene_materials = list(dict.fromkeys(
            [m.material for m in pipeline.scene.meshes] + [m for s in pipeline.scene.shapes for m in s.materials]))
        self._poses: list[Any] = []  # two device buffers, alternating (a batch's poses outlive its step's copy)
        self._previous: TrainingBatch | None = None

    def _xp(self) -> Any:
        if isinstance(self.pipeline.accumulation, np.ndarray):
            return np  # a pipeline over host stand-ins (the CPU tests)
        import cupy

        return cupy

    def _table_update(self, batch: int) -> tuple[Any, float | None]:
        from dataclasses import replace

        rng = np.random.default_rng([self.seed, 3, batch])
        scale = float(rng.uniform(*self.light_scale)) if self.light_scale is not None else None
        if self._materials is not None:
            return self._materials(batch), scale
        if not self.color_jitter:
            return None, scale
        j = self.color_jitter
        return {m: replace(m, reflectance=tuple(float(c) for c in np.clip(
            np.asarray(m.reflectance) * rng.uniform(1 - j, 1 + j, 3), 0.0, 1.0))) for m in self._scene_materials}, scale

    def batch(self, index: int) -> TrainingBatch:
        """Render batch ``index`` (a step of the pipeline) and return it; the previous one is released unless held."""
        pipeline = self.pipeline
        if self._previous is not None and not self.hold:
            self._previous.release()
            self._previous = None
        materials, scale = self._table_update(index)
        if materials is not None or scale is not None:
            pipeline.update_tables(materials, scale)  # on the pipeline's stream, the steps' stream
        poses = None
        if self.cameras is not None:
            poses = self._draw_poses(index)
        outputs = pipeline.step(self.spp, poses=poses)
        arrays = {name: self._convert(outputs, name) for name in outputs}
        batch = TrainingBatch(outputs.index, arrays, outputs, poses, scale)
        self._previous = batch
        return batch

    def _draw_poses(self, index: int) -> Any:
        xp, pipeline = self._xp(), self.pipeline
        count = pipeline.views.count
        while len(self._poses) < 2:
            self._poses.append(pipeline.ctx.memory.empty((count, 3, 4), np.float32, pipeline.stream))
        out = self._poses[index % 2]
        if xp is np:
            return self.cameras.poses(np, count, self.seed, index, out=np.asarray(out))
        with pipeline.ctx.memory.scope(pipeline.stream):  # CuPy's kernels on the steps' stream
            return self.cameras.poses(xp, count, self.seed, index, out=out)

    def _convert(self, outputs: Any, name: str) -> Any:
        if self.framework is None:
            return outputs[name]
        if self.framework == "torch":
            return outputs.torch(name)
        if self.framework == "cupy":
            return outputs.cupy(name)
        import jax.dlpack

        return jax.dlpack.from_dlpack(outputs[name])

    def __iter__(self) -> Iterator[TrainingBatch]:
        index = 0
        try:
            while self.count is None or index < self.count:
                yield self.batch(index)
                index += 1
        finally:
            if self._previous is not None and not self.hold:
                self._previous.release()
                self._previous = None
