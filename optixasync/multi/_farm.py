"""The multi-GPU renderer: one scene on every worker, an image split by samples or a sequence by frames.

:class:`Farm` puts a :class:`~optixasync.multi.TracerFactory` of the scene on a backend
(:class:`~optixasync.multi.LocalGPUs`: threads over this machine's GPUs; :class:`~optixasync.multi.DaskGPUs`:
Dask workers on one host or many). Each worker compiles the pipeline and builds the structure once and
keeps them for every later job of the farm.

* :meth:`Farm.render` splits one image's samples into disjoint absolute ranges, one per worker (the
  kernel's random numbers depend on the absolute sample index), and adds the workers' sums on the host
  in range order: the image equals the one-GPU image up to the order of float32 additions.
* :meth:`Farm.frames` deals a sequence's frames to the workers as they become free; each worker writes
  its frames' files and the caller receives them in frame order, each exactly once.

Blocking calls
--------------
:meth:`Farm.render` and :meth:`Farm.frames` wait for the workers' results (they deliver them);
:meth:`Farm.close` waits for the workers to close their contexts. Workers block only where
:mod:`optixasync.multi._tracer` says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..io import check_image_path, numbered_path
from ..render import RenderOptions
from ..scene import Scene
from ..validation import as_int
from ._ordered import Backend, run_in_order
from ._plan import FrameOutput, FrameTask, split_samples
from ._tracer import TracerFactory

__all__ = ["Farm"]

#: Dask tasks per worker that :meth:`Farm.frames` aims at (frames travel in batches of count / this).
TASKS_PER_WORKER = 4


class Farm:
    """Render one scene on several GPUs: by samples (:meth:`render`) or by frames (:meth:`frames`).

    Parameters
    ----------
    scene : Scene
        With host (numpy) arrays: it travels to the workers.
    options : RenderOptions or dict, optional
        Image size, samples, depth and seed, as for :class:`~optixasync.render.RenderPipeline`.
    backend : LocalGPUs or DaskGPUs, optional
        Where the workers are (default: ``LocalGPUs("all")``, every GPU of this machine, closed with the farm).
    frames_in_flight : int
        Frames each worker records ahead of its GPU.
    image_writers : int
        PNG-encoding threads of each worker.

    Attributes
    ----------
    last_nonfinite : int
        NaN or Inf samples dropped by the last :meth:`render`.
    last_parts : list of SampleRange
        The sample ranges of the last :meth:`render`.

    Raises
    ------
    TypeError, ValueError
        On a scene with device arrays, bad options, or a scene without light, before any worker starts.

    Examples
    --------
    >>> with Farm(cornell_box(), {"width": 1024, "height": 1024}) as farm:   # doctest: +SKIP
    ...     image = farm.render(spp=1024)                  # every GPU renders a share of the samples
    """

    def __init__(self, scene: Scene, options: RenderOptions | dict | None = None, *, backend: Backend | None = None,
                 frames_in_flight: int = 2, image_writers: int = 2) -> None:
        for mesh in scene.meshes if isinstance(scene, Scene) else ():
            if mesh.on_device:
                raise TypeError(f"mesh {mesh.name!r} holds device arrays: a farm's scene travels to other GPUs "
                                "and processes, so it must hold host (numpy) arrays")
        self.factory = TracerFactory(scene, options, frames_in_flight=frames_in_flight, image_writers=image_writers)
        self._owns_backend = backend is None
        if backend is None:
            from ._threads import LocalGPUs

            backend = LocalGPUs("all")
        self.backend = backend
        self.last_nonfinite = 0
        self.last_parts: list[Any] = []
        self._closed = False

    @property
    def options(self) -> RenderOptions:
        return self.factory.options

    def render(self, spp: int | None = None, *, parts: int | None = None,
               weights: Sequence[float] | None = None) -> np.ndarray:
        """Render ``spp`` samples per pixel (default ``options.spp``) split over the workers; the linear mean.

        Parameters
        ----------
        spp : int, optional
        parts : int, optional
            Sample ranges (default: one per worker).
        weights : sequence of float, optional
            Relative speeds of the parts' workers (equal by default).

        Returns
        -------
        numpy.ndarray
            (height, width, 3) float32, row 0 at the top; equal to ``RenderPipeline.render(spp)`` up to the
            order of the float32 additions.
        """
        self._check_open()
        total = self.options.spp if spp is None else as_int("spp", spp, 1)
        parts = self.backend.workers if parts is None else as_int("parts", parts, 1)
        ranges = split_samples(total, max(parts, 1), weights=weights)
        opts = self.options
        sums = np.zeros((opts.height, opts.width, 4), np.float64)
        for part in run_in_order(self.backend, self.factory, ranges):
            sums += part  # in range order, whichever worker finished first
        self.last_parts = ranges
        self.last_nonfinite = int(sums[..., 3].sum())
        return (sums[..., :3] / total).astype(np.float32)

    def frames(self, count: int, *, spp: int | None = None, update: Callable[[Any, int, Any], Any] | None = None,
               out: str | Path | None = None, first: int = 0) -> Iterator[FrameOutput]:
        """Render frames ``first`` ... ``first + count - 1`` of a sequence on the workers; yield them in order.

        Parameters
        ----------
        count : int
        spp : int, optional
            Samples per pixel of each frame (default ``options.spp``).
        update : callable, optional
            A frame update, ``update(pipeline, index, frame)``: moves the scene to frame ``index`` on the
            worker (its vertices, its camera); see :class:`~optixasync.render.ClothMotion` and
            :class:`~optixasync.render.CameraSwing`. Picklable for Dask.
        out : str or Path, optional
            A ``.png`` base name: the workers write frame ``k`` to ``out_0007.png`` (for ``k = 7``) and
            the outputs carry the path. Without it the outputs carry the sRGB images.

        Yields
        ------
        FrameOutput
            In frame order, each frame once, as soon as it and every frame before it are done.
        """
        self._check_open()
        count = as_int("count", count, 1)
        first = as_int("first", first, 0)
        spp = self.options.spp if spp is None else as_int("spp", spp, 1)
        if update is not None and not callable(update):
            raise TypeError(f"update must be callable (tracer, index, frame), got {type(update).__name__}")
        base = check_image_path(out, (".png",)) if out is not None else None
        if base is not None:
            base.parent.mkdir(parents=True, exist_ok=True)
        tasks = [FrameTask(k, spp, str(numbered_path(base, k)) if base is not None else None, update)
                 for k in range(first, first + count)]
        batch = max(1, -(-count // (TASKS_PER_WORKER * max(1, self.backend.workers))))
        return run_in_order(self.backend, self.factory, tasks, batch)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Farm is closed")

    def close(self) -> None:
        """Close the workers' tracers and contexts (and the backend, if the farm made it). Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.backend.release(self.factory)
        finally:
            if self._owns_backend:
                self.backend.close()

    def __enter__(self) -> Farm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        o = self.options
        return f"<optixasync.multi.Farm {o.width}x{o.height} on {self.backend!r}>"

