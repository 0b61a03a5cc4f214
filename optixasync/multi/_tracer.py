"""The path tracer as a worker's :class:`~optixasync.multi.Work`: one context, tracer and scheduler per GPU.

A :class:`TracerFactory` holds the scene and options (what travels to workers); the
:class:`TracerWork` it makes on a worker owns an :class:`~optixasync.Context` on the worker's GPU, a
:class:`~optixasync.render.PathTracer` (compiled pipeline, acceleration structure, scene buffers) and
a :class:`~optixasync.FrameScheduler`, all kept across jobs.

* Frames (:class:`~optixasync.multi.FrameTask`) are pipelined: the worker records a frame, takes the
  next task when a slot is free, and hands each finished image to its own encoding threads, so its
  GPU never waits for the host. A frame's result is a future of its :class:`FrameOutput`.
* Sample ranges (:class:`~optixasync.multi.SampleRange`) run as one offline render of those absolute
  samples; the result is the (height, width, 4) float32 sums, read back through pinned memory.
  They render the scene as given (a frame job's motion and camera are undone first, as they are for
  frames without an update).

Blocking calls
--------------
Creating a :class:`TracerWork` is set-up (context, compilation, build). ``process`` waits on a
frame slot's fence when the worker is ``frames_in_flight`` frames ahead (the designed wait), for a
sample range's sums (it returns them), and, at the end of its tasks, for its last frames (drain).
:meth:`TracerWork.close` waits for the work in flight and the files being written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..render import RenderOptions
from ..scene import Scene
from ..validation import as_int, coerce_options
from ._plan import FrameOutput, FrameTask, SampleRange, Task
from ._work import WorkFactory, then

__all__ = ["TracerFactory", "TracerWork"]


def _write_atomically(path: Path, image: np.ndarray) -> Path:
    """Write ``image`` to a temporary name beside ``path``, then rename: a killed worker leaves no half file."""
    from ..render import write_image

    partial = path.with_name(f".{path.stem}.{os.getpid()}.partial{path.suffix}")
    write_image(partial, image)
    os.replace(partial, path)
    return path


class TracerFactory(WorkFactory):
    """What a worker needs to render ``scene``: made into a :class:`TracerWork` once per worker.

    Parameters
    ----------
    scene : Scene
    options : RenderOptions or dict, optional
    frames_in_flight : int
        Scheduler slots of each worker (frames it records ahead of its GPU).
    image_writers : int
        Encoding threads of each worker (PNG encoding releases the GIL).
    """

    def __init__(self, scene: Scene, options: RenderOptions | dict | None = None, *, frames_in_flight: int = 2,
                 image_writers: int = 2) -> None:
        from ..render import check_scene

        super().__init__()
        self.scene = check_scene(scene)
        self.options = coerce_options(RenderOptions, options)
        self.frames_in_flight = as_int("frames_in_flight", frames_in_flight, 1)
        self.image_writers = as_int("image_writers", image_writers, 1)

    def create(self, device: int | None) -> TracerWork:
        return TracerWork(self, device)


class TracerWork:
    """A worker's path tracer on one GPU (see the module documentation)."""

    def __init__(self, factory: TracerFactory, device: int | None) -> None:
        from ..cuda import Context, create_stream
        from ..render import ImageWriter, PathTracer
        from ..scheduler import FrameScheduler

        self.factory = factory
        self.ctx = Context(device)  # makes the device current in this thread
        try:
            self.stream = create_stream()
            # One stream for set-up, frames and sample ranges: each is ordered after the one before.
            self.tracer = PathTracer(self.ctx, factory.scene, factory.options, stream=self.stream)
            self.scheduler = FrameScheduler(self.ctx, factory.frames_in_flight, params_dtype=self.tracer.params_dtype,
                                            stream=self.stream)
            self.writer = ImageWriter(workers=factory.image_writers, writer=_write_atomically)
        except BaseException:
            self.ctx.close()
            raise
        self._recorded: dict[int, Task] = {}  # scheduler frame index -> its task
        self._dynamic = [k for k, mesh in enumerate(factory.scene.meshes) if mesh.dynamic]
        self._moved = False  # a frame's update may have moved the dynamic meshes (there are some)

    @property
    def device_id(self) -> int:
        return self.ctx.device_id

    def process(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, Any]]:
        from ..cuda import use_device

        use_device(self.ctx.device_id)  # this thread may not be the one that made the context
        for task in tasks:
            payload = task.payload
            if isinstance(payload, SampleRange):
                yield from self._finished(self.scheduler.drain())
                yield task, self._sums(payload)
            elif isinstance(payload, FrameTask):
                self._record(task, payload)
                yield from self._finished(self.scheduler.poll())
            else:
                raise TypeError(f"a path-tracer worker takes FrameTask or SampleRange, got {type(payload).__name__}")
        yield from self._finished(self.scheduler.drain())

    def _record(self, task: Task, payload: FrameTask) -> None:
        tracer = self.tracer
        if payload.update is None:
            self._restore_scene()  # a frame without an update shows the scene as given, whatever ran before
        with self.scheduler.frame() as frame:
            camera = None
            if payload.update is not None:
                camera = payload.update(tracer, payload.index, frame)
                self._moved = bool(self._dynamic)  # a camera-only scene has nothing to put back
            tracer.reset()  # each frame of a sequence is its own image
            tracer.record(frame, payload.spp, readback="image", camera=camera or self.factory.scene.camera)
        self._recorded[frame.index] = task

    def _finished(self, results: list[Any]) -> Iterator[tuple[Task, Any]]:
        for result in results:
            task = self._recorded.pop(result.index)
            payload: FrameTask = task.payload
            image = result["image"][..., :3]  # a view of the frame's pinned readback, held by the writer
            if payload.path is None:
                yield task, FrameOutput(payload.index, None, np.array(image))
            else:
                written = self.writer.submit(Path(payload.path), image)
                yield task, then(written, lambda path, index=payload.index: FrameOutput(index, Path(path)))

    def _sums(self, samples: SampleRange) -> np.ndarray:
        self._restore_scene()
        self.tracer.camera = self.factory.scene.camera
        return self.tracer.render_sums(samples.first, samples.count)

    def _restore_scene(self) -> None:
        """Put the dynamic meshes back where the scene has them (a frame job moved them)."""
        if not self._moved:
            return
        meshes = self.factory.scene.meshes
        for k in self._dynamic:  # the scene's vertices, through pinned staging, straight into the tracer's buffer
            self.ctx.upload_into(self.tracer.vertices(k, self.stream), meshes[k].vertices.astype(np.float32, copy=False),
                                 self.stream)
        self.tracer.refit(self.stream)
        self._moved = False

    def close(self) -> None:
        """Finish the frames and files in flight, then close the scheduler, tracer and context."""
        from ..cuda import use_device

        use_device(self.ctx.device_id)
        try:
            self.writer.close()
            self.scheduler.close()
            self.tracer.close()
        finally:
            self.ctx.close()
