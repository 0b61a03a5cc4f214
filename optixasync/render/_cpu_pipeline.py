"""The render pipeline on the CPU device: ``RenderPipeline(CpuContext(), scene)`` runs the kernel's host build.

:class:`CpuRenderPipeline` is what :class:`~optixasync.render.RenderPipeline` creates when given a
:class:`~optixasync.cpu.CpuContext` (there is no other way to make one). Its scene tables are the library's
own (:class:`~optixasync.render._tables.SceneTables`, placed in host memory), its program the path tracer's
generated source built by the host C++ compiler with the scene's features (shapes, motion, custom primitives),
so an image has the pixels of the host-build tests for the same seed. It serves what a still and a progressive
image need:

* :meth:`render`, :meth:`render_sums`: a still (the linear mean, or the sums of a sample range);
* :meth:`frames`: progressive frames of ``spp`` samples, each result holding the sRGB ``image``;
* :attr:`camera`, :attr:`options`, :meth:`reset`, :attr:`accumulation`, :attr:`samples_done`, :meth:`place`.

What needs the GPU is refused up front, at creation, with the feature named: integrators other than
``"path"``, outputs other than ``"image"``, stages (denoising, tonemapping, writers), batches of views or
worlds, frame graphs, streams and schedulers; and later, the methods that take a GPU frame (``record``,
``recorder``, ``still``, ``step``, ``vertices``, ``refit``, ``scheduler``).

Blocking calls
--------------
Every launch runs on the CPU's threads and returns when done (:meth:`render` for all of its samples, each
iteration of :meth:`frames` for its frame). Creating the pipeline builds the kernel on a cache miss (the C++
compiler: a second or two) and the scene's tables.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..scene import Camera
from ..validation import as_int, coerce_options
from ._device_scene import check_scene, host_emitter_table
from ._features import scene_features, specialize_programs
from ._host_tracer import IMAGE, PLAIN, HostTracer, pathtracer_library, scene_program
from ._options import RenderOptions
from ._params import MAX_SAMPLES, launch_plan, positive_int
from ._plan import DEFAULT
from ._still import PROGRESS_SAMPLES_PER_LAUNCH

__all__ = ["CPU_OUTPUTS", "CpuFrameResult", "CpuRenderPipeline"]

#: The outputs the CPU device writes.
CPU_OUTPUTS = ("image",)


def _refuse(what: str) -> ValueError:
    return ValueError(f"the CPU device does not run {what}: it renders the path integrator's image (render(), "
                      "render_sums(), frames()); use a GPU Context for it")


class CpuFrameResult:
    """A progressive frame of the CPU device: ``result["image"]`` ((H, W, 4) uint8 sRGB), its index and samples.

    A context manager like the GPU's frame results (it holds no pinned memory: nothing to release).
    """

    def __init__(self, index: int, samples: int, readbacks: dict[str, np.ndarray], launch_ms: float) -> None:
        self.index, self.samples, self.readbacks, self.launch_ms = index, samples, readbacks, launch_ms

    def __getitem__(self, name: str) -> np.ndarray:
        return self.readbacks[name]

    def release(self) -> None:
        """Nothing to release (the GPU's results return pinned memory here)."""

    def __enter__(self) -> CpuFrameResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _check_request(integrator: str, outputs: Any, stages: Iterable[Any], views: Any, worlds: Any, graphs: Any,
                   stream: Any, scheduler_options: Any) -> None:
    """Refuse, naming it, what only the GPU pipeline runs."""
    if integrator != "path":
        raise _refuse(f"the {integrator!r} integrator")
    names = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    extra = [name for name in names if name not in CPU_OUTPUTS]
    if extra or not names:
        raise _refuse(f"the outputs {extra or names!r} (it writes {list(CPU_OUTPUTS)})")
    stages = list(stages)
    if stages:
        raise _refuse(f"stages ({', '.join(type(s).__name__ for s in stages)})")
    for name, value in (("views", views), ("worlds", worlds), ("stream", stream),
                        ("scheduler_options", scheduler_options)):
        if value is not None:
            raise _refuse(f"a pipeline with {name}")
    if graphs is not False:
        raise _refuse("frame graphs (graphs=True)")


class CpuRenderPipeline:
    """A scene rendered by the path tracer's host build (see the module documentation).

    Created by ``RenderPipeline(ctx, scene, options, ...)`` with a :class:`~optixasync.cpu.CpuContext`, with the
    same arguments; those only the GPU serves raise ValueError here, naming them. Its methods are the GPU
    pipeline's of the same names, as far as they go.

    Attributes
    ----------
    ctx : CpuContext
    scene : Scene
    tracer : HostTracer
        The scene's host tables and the launches over them.
    last_render_ms : float or None
        Wall-clock time of the launches of the last :meth:`render` (CPU time on ``ctx.threads`` threads).
    last_nonfinite : int
        NaN or Inf samples dropped by the last :meth:`render`.
    """

    def __init__(self, ctx: Any, scene: Any, options: RenderOptions | dict | None = None, *,
                 integrator: str = "path", outputs: str | Sequence[str] = ("image",), stages: Iterable[Any] = (),
                 readback: Any = DEFAULT, frames_in_flight: int = 2, scheduler_options: Any = None,
                 stream: Any = None, graphs: bool = False, views: Any = None, worlds: Any = None) -> None:
        ctx.require_open()
        _check_request(integrator, outputs, stages, views, worlds, graphs, stream, scheduler_options)
        self._options = coerce_options(RenderOptions, options)
        self.scene = check_scene(scene)
        host_emitter_table(scene)  # zero emissive area raises here, as on the GPU
        self.outputs = CPU_OUTPUTS
        self.readback = self._check_readback(CPU_OUTPUTS if readback is DEFAULT else readback)
        self.frames_in_flight = as_int("frames_in_flight", frames_in_flight, 1)  # one frame at a time on the CPU
        self.stages: list[Any] = []
        self.views = None
        self.batched = False
        self.ctx = ctx
        self._closed = False
        self._camera = copy.copy(scene.camera)
        self._samples = 0
        # OPTIXASYNC_SPECIALIZE=1: the program compiled for the scene's features, as on the GPU (_features.py).
        features = scene_features(scene, instanced=False) if specialize_programs() else None
        self._lib = pathtracer_library((PLAIN, IMAGE), **scene_program(scene), features=features)
        self.tracer = HostTracer(self._lib, scene, self._options, ctx.threads)
        self.last_nonfinite = 0
        self.last_render_ms: float | None = None
        self._last_ms: float | None = None

    @staticmethod
    def _check_readback(readback: Any) -> tuple[str, ...]:
        names = () if readback is None else (readback,) if isinstance(readback, str) else tuple(readback)
        extra = [name for name in names if name not in CPU_OUTPUTS]
        if extra:
            raise _refuse(f"readbacks of {extra!r} (it writes {list(CPU_OUTPUTS)})")
        return names

    # -- state -----------------------------------------------------------------------------------------------
    @property
    def options(self) -> RenderOptions:
        """The render options (the image size is fixed; replacing them restarts the accumulation)."""
        return self._options

    @options.setter
    def options(self, value: RenderOptions | dict) -> None:
        value = coerce_options(RenderOptions, value)
        if (value.width, value.height) != (self._options.width, self._options.height):
            raise ValueError(f"the image size is fixed at creation ({self._options.width}x{self._options.height}); "
                             f"got {value.width}x{value.height}: create another RenderPipeline")
        self._options = value
        self.tracer.options = value
        self.reset()

    @property
    def camera(self) -> Camera:
        """The camera of the next launch; setting a different one restarts the progressive accumulation."""
        return self._camera

    @camera.setter
    def camera(self, value: Camera) -> None:
        if not isinstance(value, Camera):
            raise TypeError(f"camera must be an optixasync.scene.Camera, got {type(value).__name__}")
        if value != self._camera:
            self._camera = copy.copy(value)
            self.reset()

    @property
    def samples_done(self) -> int:
        """Samples per pixel in the progressive accumulation (0 after :meth:`reset`)."""
        return self._samples

    def reset(self) -> None:
        """Restart the progressive accumulation: the next frame overwrites instead of adding."""
        self._samples = 0

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this RenderPipeline is closed")

    @property
    def accumulation(self) -> np.ndarray:
        """The progressive sums, (height, width, 4) float32 (RGB, then dropped samples), in host memory."""
        return self.tracer.accum

    @property
    def last_launch_ms(self) -> float | None:
        """Wall-clock time of the newest launch (None before any)."""
        return self._last_ms

    def place(self, transforms: Any, stream: Any = None) -> None:
        """Move the instanced meshes to new object-to-world ``transforms`` (M, 3, 4); restarts the accumulation."""
        self._check_open()
        if stream is not None:
            raise _refuse("work on a stream")
        self.tracer.place(transforms)
        self.reset()

    # -- launches ----------------------------------------------------------------------------------------------
    def _launch(self, first: int, spp: int, variant: int, accumulate: bool) -> float:
        start = time.perf_counter()
        self.tracer.launch(first, spp, variant, accumulate=accumulate, camera=self._camera)
        self._last_ms = (time.perf_counter() - start) * 1e3
        return self._last_ms

    def _still(self, first: int, total: int, progress: Callable[[int], None] | None) -> np.ndarray:
        self._check_open()
        if first + total > MAX_SAMPLES:
            raise ValueError(f"samples {first} ... {first + total - 1} exceed the kernel's 32-bit sample index")
        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable (it receives the samples done so far)")
        per_launch = self._options.samples_per_launch or (
            min(PROGRESS_SAMPLES_PER_LAUNCH, total) if progress is not None else total)
        self._samples = 0  # a still overwrites the one accumulation: the progressive image restarts
        total_ms = 0.0
        for offset, count in launch_plan(total, per_launch):
            total_ms += self._launch(first + offset, count, PLAIN, offset > 0)
            if progress is not None:
                progress(offset + count)
        self.last_render_ms = total_ms
        sums = np.array(self.tracer.accum)
        self.last_nonfinite = int(sums[..., 3].sum())
        return sums

    def render(self, spp: int | None = None, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Render ``spp`` samples per pixel (default ``options.spp``); the linear RGB mean, (H, W, 3) float32.

        As on the GPU (same samples per launch, ``progress(samples_done)`` after each launch), but the still
        shares the one accumulation with :meth:`frames`: the progressive image restarts after it.
        """
        total = self._options.spp if spp is None else positive_int("spp", spp)
        return self._still(0, total, progress)[..., :3] / np.float32(total)

    def render_sums(self, first_sample: int, spp: int) -> np.ndarray:
        """The sums of samples ``first_sample`` ... ``first_sample + spp - 1``, (H, W, 4) float32 (see the GPU's)."""
        return self._still(as_int("first_sample", first_sample, 0), positive_int("spp", spp), None)

    def frames(self, count: int, spp: int = 1, *, update: Any = None, accumulate: bool | None = None,
               readback: Any = DEFAULT, last_only: bool = False, stages: bool = True,
               graphs: bool | None = None) -> Iterator[CpuFrameResult]:
        """``count`` progressive frames of ``spp`` samples; their results (``result["image"]``), in order.

        Each frame adds its samples to the accumulation (``accumulate=False``: each frame is its own image).
        ``update`` and ``graphs`` are the GPU's (refused here).
        """
        self._check_open()
        if update is not None:
            raise _refuse("frame updates (update=...)")
        if graphs:
            raise _refuse("frame graphs (graphs=True)")
        count = as_int("count", count, 0)
        spp = positive_int("spp", spp)
        names = self._check_readback(self.readback if readback is DEFAULT else readback)
        keep = True if accumulate is None else bool(accumulate)
        return self._frames(count, spp, names, keep, last_only)

    def _frames(self, count: int, spp: int, names: tuple[str, ...], keep: bool,
                last_only: bool) -> Iterator[CpuFrameResult]:
        for index in range(count):
            if not keep:
                self._samples = 0
            if self._samples + spp > MAX_SAMPLES:
                raise ValueError(f"{self._samples} + {spp} samples exceed the kernel's 32-bit sample index; "
                                 "reset() first")
            wanted = names if (not last_only or index == count - 1) else ()
            ms = self._launch(self._samples, spp, IMAGE if wanted else PLAIN, self._samples > 0)
            self._samples += spp
            yield CpuFrameResult(index, self._samples, {name: np.array(self.tracer.image) for name in wanted}, ms)

    # -- what needs a GPU frame ---------------------------------------------------------------------------
    def record(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("record() (a GPU frame's launch)")

    def recorder(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("recorder() (GPU frames)")

    def still(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("still() (stages on a still)")

    def step(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("step() (a batch of views)")

    def vertices(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("vertices() (device vertex arrays)")

    def refit(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("refit() (a GPU structure)")

    def order(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("order() (GPU streams)")

    @property
    def scheduler(self) -> Any:
        raise _refuse("a frame scheduler")

    # -- lifetime ----------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the pipeline (its host tables and buffers go with it)."""
        self._closed = True

    def __enter__(self) -> CpuRenderPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        o = self._options
        return (f"<optixasync.RenderPipeline on the CPU ({self.ctx.threads} threads), {len(self.scene.meshes)} "
                f"meshes, {self.scene.num_triangles} triangles, {o.width}x{o.height}, outputs {list(self.outputs)}>")
