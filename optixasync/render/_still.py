"""A pipeline's still: one frame of its scheduler holding every launch of the image, each with its own parameters.

:class:`StillFrames` holds the still methods of
:class:`~optixasync.render.RenderPipeline` (``render``, ``render_sums``,
``still``); :func:`render_still` is their one frame.

Blocking calls
--------------
:func:`render_still` (whose lanes add up on the frame's stream) waits for the structure's compacted size before its
launches, after each launch when a ``progress`` callback is given, and for
the frame's result (the image): that is what a still is for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import GpuSpan, elapsed_ms, synchronize
from ..validation import as_int
from ._integrator import Launch
from ._lanes import add_lanes
from ._params import MAX_SAMPLES, launch_plan, positive_int
from ._plan import DEFAULT
from ._stages import FrameBuffers

if TYPE_CHECKING:
    from ..scheduler import FrameResult

__all__ = ["PROGRESS_SAMPLES_PER_LAUNCH", "StillFrames", "render_still"]

#: Samples per launch of a still when a progress callback is given and the options say 0.
PROGRESS_SAMPLES_PER_LAUNCH = 16


def render_still(pipeline: Any, first: int, total: int, progress: Callable[[int], None] | None, *,
                 stages: bool = False, readback: Sequence[str] = ()) -> FrameResult:
    """Samples ``first`` ... ``first + total - 1`` of ``pipeline`` (a :class:`~optixasync.render.RenderPipeline`)
    into the frame slot's still accumulation; the frame's result.

    The result holds ``sums`` ((height, width, 4) float32, (views, height, width, 4) for a batch: RGB sums,
    then dropped samples) and ``readback``, views of pinned memory: release it (``with result:``). With
    ``stages``, the launches also write what the stages need and the stages run once, after the last launch;
    without, a small image's samples are spread over lanes (:mod:`._lanes`).
    """
    pipeline._check_open()
    if first + total > MAX_SAMPLES:
        raise ValueError(f"samples {first} ... {first + total - 1} exceed the kernel's 32-bit sample index")
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable (it receives the samples done so far)")
    opts = pipeline.options
    per_launch = opts.samples_per_launch or (min(PROGRESS_SAMPLES_PER_LAUNCH, total) if progress is not None else total)
    scheduler = pipeline.scheduler
    plan = pipeline._plan
    views = pipeline.views.count if pipeline.views is not None else None
    lanes = 1 if stages else pipeline.still_lanes(total)
    with scheduler.frame(graph=False) as frame:  # launches with parameters of their own: never a graph
        for stage in pipeline.stages if stages else ():
            stage.prepare(frame, (opts.height, opts.width))  # a refusal before any launch
        handle = pipeline.order(frame)
        pipeline.device_scene.compact(frame.stream, wait=True)  # offline: waiting for the size costs nothing here
        plane = (opts.height, opts.width, 4)
        batch = pipeline.batch_launch(frame) if pipeline.batched or lanes > 1 else None
        if batch is not None:
            batch.lanes = lanes
        accum = frame.buffer("still sums", plane if views is None else (views, *plane), np.float32)
        lane_sums = frame.buffer("still lanes", ((views or 1) * lanes, *plane), np.float32) if lanes > 1 else None
        buffers = FrameBuffers(frame, opts.width, opts.height, views)
        written = {name: buffers[name] for name in plan.integrator_outputs(True)} if stages else {}
        if "rays" in written:
            with pipeline.ctx.memory.scope(frame.stream):
                written["rays"].fill(0)  # counted over the still's launches
        sums = frame.buffer("still first-hit sums", (*((views,) if views else ()), opts.height, opts.width, 2, 4),
                            np.float32) if stages and plan.needs_sums(True) else None
        launches: list[tuple[int, GpuSpan]] = []  # (samples done after it, its GPU span)
        for offset, count in launch_plan(total, per_launch):
            span = GpuSpan.begin(frame.stream)
            if lane_sums is None:
                launch = Launch(opts, pipeline.camera_basis(), accum, first + offset, count, offset > 0,
                                pipeline.device_scene.record, written, sums, batch)
                pipeline.integrator.launch(frame, launch, params=np.zeros((), pipeline.params_dtype))
            else:
                _lane_launches(pipeline, frame, batch, accum, lane_sums, first + offset, count, offset > 0)
            span.stop(frame.stream)
            launches.append((offset + count, span))
        pipeline._last_launch[handle] = launches[-1][1].end
        for stage in pipeline.stages if stages else ():
            stage.record(frame, buffers)
        frame.readback(accum, "sums")
        for name in readback:
            frame.readback(buffers[name], name)
    _report(pipeline, launches, progress)
    result = frame.handle.result()
    pipeline.last_nonfinite = int(result["sums"][..., 3].sum())
    return result


def _lane_launches(pipeline: Any, frame: Any, batch: Any, accum: Any, lane_sums: Any, first: int, count: int,
                   accumulate: bool) -> None:
    """Samples ``first`` ... ``first + count - 1`` one per lane, ``batch.lanes`` at a time, each launch's lanes then
    added to ``accum`` in lane order: the order one thread adds its samples in (:mod:`._lanes`)."""
    lanes = batch.lanes
    for start in range(0, count, lanes):
        n = min(lanes, count - start)
        batch.lanes = n
        launch = Launch(pipeline.options, pipeline.camera_basis(), lane_sums, first + start, n, False,
                        pipeline.device_scene.record, {}, None, batch)
        pipeline.integrator.launch(frame, launch, params=np.zeros((), pipeline.params_dtype))
        add_lanes(lane_sums[: batch.views * n], accum, n, accumulate or start > 0, frame)
    batch.lanes = lanes


def _report(pipeline: Any, launches: list[tuple[int, GpuSpan]], progress: Any) -> None:
    """Wait for the launches (each in turn with ``progress``, else the last) and add up their GPU time."""
    gpu_ms = 0.0
    for samples, span in launches:
        synchronize(span.end if progress is not None else launches[-1][1].end, "waiting for the render")
        ms = elapsed_ms(span.start, span.end)
        gpu_ms += ms
        pipeline._timer.last_ms = ms  # inside progress(), last_launch_ms is the launch just finished
        if progress is not None:
            progress(samples)
    pipeline.last_render_ms = gpu_ms


class StillFrames:
    """The still methods of a render pipeline (a base class of :class:`~optixasync.render.RenderPipeline`)."""

    # what the pipeline provides
    _options: Any
    _plan: Any
    readback: tuple[str, ...]

    def render(self, spp: int | None = None, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Render ``spp`` samples per pixel (default ``options.spp``) and return the linear RGB mean.

        Waits for the image: that is the point of the call. One frame of the pipeline's scheduler, ordered
        after the set-up and the structure's last refit, with an accumulation of its own (the progressive one
        is left alone). The samples go in launches of ``options.samples_per_launch`` (0: all in one, or 16 per
        launch with ``progress``), all enqueued before the first wait, so the GPU never idles between them;
        ``progress(samples_done)`` is called as each one finishes.

        Returns
        -------
        numpy.ndarray
            (height, width, 3) float32, row 0 at the top.
        """
        total = self._options.spp if spp is None else positive_int("spp", spp)
        with render_still(self, 0, total, progress) as result:
            return result["sums"][..., :3] / np.float32(total)

    def render_sums(self, first_sample: int, spp: int) -> np.ndarray:
        """Render the absolute samples ``first_sample`` ... ``first_sample + spp - 1`` and return their sums.

        The building block of splitting one image over several GPUs: the random numbers of a sample depend only
        on (seed, pixel, absolute sample index), so disjoint ranges rendered anywhere add up to the image
        :meth:`render` gives for their union, up to the order of the float32 additions.

        Returns
        -------
        numpy.ndarray
            (height, width, 4) float32, row 0 at the top: the RGB sums of the range's samples, then the number of
            its samples that were NaN or Inf and dropped. Divide by the total sample count.
        """
        first = as_int("first_sample", first_sample, 0)
        with render_still(self, first, positive_int("spp", spp), None) as result:
            return np.array(result["sums"])

    def still(self, spp: int | None = None, progress: Callable[[int], None] | None = None, *,
              readback: Any = DEFAULT) -> FrameResult:
        """A still with the stages run on its mean: the frame's result (``result["sums"]`` and ``readback``).

        As :meth:`render`, but the launches also write what the stages need, the stages run once after the
        last launch (a denoised still), and the result is the frame's: release it (``with result:``).
        """
        total = self._options.spp if spp is None else positive_int("spp", spp)
        names = self._plan.check_readback(self.readback if readback is DEFAULT else readback, staged=True)
        return render_still(self, 0, total, progress, stages=True, readback=names)
