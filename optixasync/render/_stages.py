"""Stages: the GPU work after a frame's launch (tonemap, denoise, readback) and what happens when it completes.

A :class:`Stage` declares the outputs it reads (:attr:`Stage.needs`) and
those it makes (:attr:`Stage.writes`); a pipeline has its integrator write
what the stages need, runs each stage's :meth:`Stage.record` on the frame's
stream after the launch, in order, and hands each completed frame's result
to :meth:`Stage.deliver` (on the host: a file writer). Stages are defined
here, so that layers above ``render`` (the denoiser) implement them and
import downward.

When the pipeline's frames run as CUDA graphs (:mod:`._graphs`), a stage's
:meth:`Stage.record` is captured once per frame slot and replayed: it must
enqueue the same work every frame (reading what changes from memory) and
allocate nothing after the first frame. A stage that cannot be captured says
why (:meth:`Stage.uncapturable`) and its frames run eagerly.

Blocking calls
--------------
None here: :class:`Tonemap` enqueues a kernel (compiled by CuPy on first
use: set-up time), :class:`Readback` an async copy into the frame slot's
pinned memory. :class:`WriteImages` waits only when its writer's queue of
images being encoded is full (:class:`optixasync.io.ImageWriter`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._outputs import OUTPUTS, check_output_names

if TYPE_CHECKING:
    from ..scheduler import Frame, FrameResult

__all__ = ["FrameBuffers", "Readback", "Stage", "Tonemap", "WriteImages"]


class FrameBuffers:
    """The output buffers of one frame slot, by name: (height, width, 4) device arrays kept across frames.

    ``buffers[name]`` makes the slot's buffer the first time (and after a size change), of the output's dtype.
    """

    def __init__(self, frame: Frame, width: int, height: int) -> None:
        self.frame = frame
        self.shape = (height, width, 4)
        self._made: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._made:
            self._made[name] = self.frame.buffer(name, self.shape, OUTPUTS[name].dtype)
        return self._made[name]

    def __contains__(self, name: str) -> bool:
        return name in self._made

    def made(self) -> dict[str, Any]:
        """The buffers made so far, by name."""
        return dict(self._made)


class Stage:
    """One step after a frame's launch (see the module documentation); subclass it.

    Attributes
    ----------
    needs : frozenset of str
        Outputs it reads (its integrator writes them, or a stage before it).
    writes : frozenset of str
        Outputs it makes.
    """

    needs: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()

    def prepare(self, frame: Frame, shape: tuple[int, int]) -> None:
        """Check ``frame`` (and set up for it) before its launch: a stage that refuses a frame raises here, so
        the refused frame adds no samples. ``shape`` is the image's (height, width)."""

    def record(self, frame: Frame, buffers: FrameBuffers) -> None:
        """Enqueue the stage's GPU work for ``frame`` on the frame (its stream), reading and writing ``buffers``."""

    def deliver(self, result: FrameResult) -> Any:
        """What to do with a completed frame's result on the host (None: nothing); returns anything."""
        return None

    def uncapturable(self) -> str | None:
        """Why this stage's GPU work cannot go into a frame graph (None: it can, the default).

        A frame with such a stage runs eagerly with this reason, logged once and counted
        (``stats.graphs.eager_reasons``). Work that a capture refuses anyway (an allocation, a wait for
        another stream) falls back to eager frames by itself.
        """
        return None

    def close(self) -> None:
        """Release what the stage holds (the caller waited for its work)."""


class Tonemap(Stage):
    """The sRGB ``image`` of a linear output (the denoised radiance, by default), on the frame's stream.

    The curve is the kernel's (``kernels/pathtracer/film.h``): clamp to [0, 1], the sRGB transfer function,
    round to the nearest code; alpha is 255.
    """

    writes = frozenset({"image"})

    def __init__(self, source: str = "denoised") -> None:
        (self.source,) = check_output_names(source, "the tonemap's source")
        if OUTPUTS[self.source].dtype != np.float32:
            raise ValueError(f"the tonemap needs a linear float output, not {self.source!r}")
        self.needs = frozenset({self.source})

    def record(self, frame: Frame, buffers: FrameBuffers) -> None:
        from ._tonemap import tonemap_device

        tonemap_device(buffers[self.source], buffers["image"], frame)

    def __repr__(self) -> str:
        return f"Tonemap({self.source!r})"


class Readback(Stage):
    """Copy outputs into the frame's pinned memory: ``result[name]`` of the completed frame (no copy there)."""

    def __init__(self, names: Iterable[str] | str) -> None:
        self.names = check_output_names(names, "readback")
        self.needs = frozenset(self.names)

    def record(self, frame: Frame, buffers: FrameBuffers) -> None:
        for name in self.names:
            frame.readback(buffers[name], name)

    def __repr__(self) -> str:
        return f"Readback({self.names!r})"


class WriteImages(Stage):
    """Write each completed frame's ``output`` (read back) to ``base``, numbered in delivery order, atomically.

    ``base`` ``out.png`` gives ``out_0000.png``, ``out_0001.png``, ... (:func:`optixasync.io.numbered_path`),
    one number per frame this stage is handed (its :attr:`written` count: frames rendered before, such as a
    still, do not shift the numbers); ``first`` is the first number. Files are written under a temporary name and
    renamed, on the writer's threads.
    """

    def __init__(self, base: str | Path, output: str = "image", *, workers: int = 4, first: int = 0) -> None:
        from ..io import ImageWriter, check_image_path
        from ..validation import as_int

        self.base = check_image_path(base)
        self.first = as_int("first", first, 0)
        (self.output,) = check_output_names(output, "the written output")
        self.needs = frozenset({self.output})
        self._writer = ImageWriter(workers=workers)
        self.written = 0

    def deliver(self, result: FrameResult) -> Any:
        from ..io import numbered_path

        image = result[self.output]
        image = image[..., :3] if image.ndim == 3 and image.shape[-1] == 4 else image
        number = self.first + self.written
        self.written += 1
        return self._writer.submit(numbered_path(self.base, number), image)

    def close(self) -> None:
        self._writer.close()

    def __repr__(self) -> str:
        return f"WriteImages({str(self.base)!r}, {self.output!r})"
