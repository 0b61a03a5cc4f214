"""Options of the path tracer."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..validation import as_int

__all__ = ["LANE_TARGET_THREADS", "MAX_LANES", "MAX_LAUNCH_PIXELS", "RenderOptions"]

#: OptiX launches at most 2**30 threads; the tracer launches one per pixel (and view, and lane).
MAX_LAUNCH_PIXELS = 2**30
#: Threads a still's launch is given lanes to reach (an H200 holds 270,336 resident threads: 132 SMs x 2048).
LANE_TARGET_THREADS = 2**20
#: The most lanes of a still.
MAX_LANES = 64


@dataclass(frozen=True)
class RenderOptions:
    """What a :class:`~optixasync.render.RenderPipeline` renders and how.

    Attributes
    ----------
    width, height : int
        Image size in pixels (at most 2**30 pixels: one OptiX thread each).
    spp : int
        Samples per pixel of :meth:`RenderPipeline.render`.
    samples_per_launch : int
        Samples per ``optixLaunch`` in :meth:`RenderPipeline.render`; 0 lets the
        tracer decide (all in one launch, or 16 per launch when a progress
        callback is given). Progressive rendering passes its own count to
        each :meth:`RenderPipeline.record`.
    max_depth : int
        Longest path, in the reference renderer's convention: 1 shows only
        the emitters the camera sees, 2 adds direct lighting, and so on.
    rr_depth : int
        Path depth (the camera's hit is 1) from which Russian roulette may end
        a path: it continues with probability ``min(max(throughput), 0.95)``.
    seed : int
        Seed of the random numbers, in [0, 2**32). The same seed gives the
        same image bit for bit; different seeds give independent noise.
    jitter : bool
        Each sample's camera ray goes through a uniform point of its pixel (a
        box filter, the default); False puts every one through the pixel's
        centre (no antialiasing: the G-buffer outputs of vision datasets).
        Read by the raygens of a batch of views (any output beyond image,
        radiance, albedo and normal, or :class:`~optixasync.render.Views`);
        the single-camera raygen always jitters.
    sample_lanes : int
        Threads per pixel of a still (:meth:`RenderPipeline.render`): its
        samples go in launches of that many, one sample per thread, each
        launch's samples then added to the sums in sample order, so the
        sums are bitwise those of one thread per pixel (a batch's raygen,
        compiled beside the single camera's). 1 (the default) keeps one
        launch of one thread per pixel; 0 decides from the size: a still
        of fewer than :data:`LANE_TARGET_THREADS` pixels (times views) gets
        enough lanes to reach it, at most one per sample and
        :data:`MAX_LANES`. Lanes have not yet run on a GPU: they stay off
        unless asked for.

    Raises
    ------
    ValueError
        On a non-positive size or sample count, a negative
        ``samples_per_launch``, ``max_depth`` or ``rr_depth`` below 1, or a
        seed outside [0, 2**32).
    TypeError
        On a value that is not an integer.
    """

    width: int = 512
    height: int = 512
    spp: int = 256
    samples_per_launch: int = 0
    max_depth: int = 8
    rr_depth: int = 5
    seed: int = 0
    jitter: bool = True
    sample_lanes: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.jitter, (bool, np.bool_)):
            raise TypeError(f"jitter must be a bool, got {type(self.jitter).__name__} {self.jitter!r}")
        object.__setattr__(self, "jitter", bool(self.jitter))
        for f in fields(self):
            if f.name != "jitter":
                object.__setattr__(self, f.name, as_int(f.name, getattr(self, f.name)))
        if self.width < 1 or self.height < 1:
            raise ValueError(f"image size must be positive, got width={self.width}, height={self.height}")
        if self.width * self.height > MAX_LAUNCH_PIXELS:
            raise ValueError(f"{self.width}x{self.height} exceeds OptiX's launch limit of 2**30 pixels")
        if self.spp < 1:
            raise ValueError(f"spp must be at least 1, got {self.spp}")
        if self.spp >= 2**32:
            raise ValueError(f"spp must be below 2**32 (the kernel's sample index is 32-bit), got {self.spp}")
        if self.samples_per_launch < 0:
            raise ValueError(f"samples_per_launch must be >= 0 (0: automatic), got {self.samples_per_launch}")
        if not 1 <= self.max_depth < 2**32:
            raise ValueError(f"max_depth must be at least 1 (1: emitters seen by the camera only), got {self.max_depth}")
        if not 1 <= self.rr_depth < 2**32:
            raise ValueError(f"rr_depth must be at least 1, got {self.rr_depth}")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be in [0, 2**32), got {self.seed}")
        if not 0 <= self.sample_lanes <= MAX_LANES:
            raise ValueError(f"sample_lanes must be in [0, {MAX_LANES}] (0: automatic), got {self.sample_lanes}")
