"""A pipeline's still: one frame of its scheduler holding every launch of the image, each with its own parameters.

Blocking calls
--------------
:func:`render_still` waits for the structure's compacted size before its
launches, after each launch when a ``progress`` callback is given, and for
the frame's result (the image): that is what a still is for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import GpuSpan, elapsed_ms, synchronize
from ._integrator import Launch
from ._params import MAX_SAMPLES, launch_plan
from ._stages import FrameBuffers

if TYPE_CHECKING:
    from ..scheduler import FrameResult

__all__ = ["PROGRESS_SAMPLES_PER_LAUNCH", "render_still"]

#: Samples per launch of a still when a progress callback is given and the options say 0.
PROGRESS_SAMPLES_PER_LAUNCH = 16


def render_still(pipeline: Any, first: int, total: int, progress: Callable[[int], None] | None, *,
                 stages: bool = False, readback: Sequence[str] = ()) -> FrameResult:
    """Samples ``first`` ... ``first + total - 1`` of ``pipeline`` (a :class:`~optixasync.render.RenderPipeline`)
    into the frame slot's still accumulation; the frame's result.

    The result holds ``sums`` ((height, width, 4) float32: RGB sums, then dropped samples) and ``readback``,
    views of pinned memory: release it (``with result:``). With ``stages``, the launches also write what the
    stages need and the stages run once, after the last launch.
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
    with scheduler.frame(graph=False) as frame:  # launches with parameters of their own: never a graph
        for stage in pipeline.stages if stages else ():
            stage.prepare(frame, (opts.height, opts.width))  # a refusal before any launch
        handle = pipeline.order(frame)
        pipeline.device_scene.compact(frame.stream, wait=True)  # offline: waiting for the size costs nothing here
        shape = (opts.height, opts.width, 4)
        accum = frame.buffer("still sums", shape, np.float32)
        buffers = FrameBuffers(frame, opts.width, opts.height)
        written = {name: buffers[name] for name in plan.integrator_outputs(True)} if stages else {}
        sums = frame.buffer("still first-hit sums", (opts.height, opts.width, 2, 4), np.float32) \
            if stages and plan.needs_sums(True) else None
        launches: list[tuple[int, GpuSpan]] = []  # (samples done after it, its GPU span)
        for offset, count in launch_plan(total, per_launch):
            launch = Launch(opts, pipeline.camera_basis(), accum, first + offset, count, offset > 0,
                            pipeline.device_scene.record, written, sums)
            span = GpuSpan.begin(frame.stream)
            pipeline.integrator.launch(frame, launch, params=np.zeros((), pipeline.params_dtype))
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
