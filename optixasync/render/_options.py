"""Options of the path tracer."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..validation import as_int

__all__ = ["RenderOptions", "MAX_LAUNCH_PIXELS"]

#: OptiX launches at most 2**30 threads; the tracer launches one per pixel.
MAX_LAUNCH_PIXELS = 2**30


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

    def __post_init__(self) -> None:
        for f in fields(self):
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
