"""Frames recorded the same way every time: a pipeline's frame update, samples, readbacks and stages, checked once.

:meth:`RenderPipeline.recorder` makes a :class:`FrameRecorder`;
:meth:`RenderPipeline.frames` records its frames through one, and an
application that drives its own frames (its own scheduler, its own loop)
calls :meth:`FrameRecorder.record` inside each of them. With frame graphs
(:mod:`._graphs`) that is the record-once, replay-many door: a slot's frame
is captured once per shape and replayed, and each ``record`` writes the
parameters only.

Blocking calls
--------------
None here: see :meth:`RenderPipeline.record` (a frame graph's work is enqueued
by the scheduler at submit).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._graphs import GraphUpdate
from ._params import positive_int

if TYPE_CHECKING:
    from ..scheduler import Frame, FrameResult

__all__ = ["FrameRecorder", "run_frames"]


class FrameRecorder:
    """Records frame ``index`` of a sequence into a frame: its update, then ``spp`` samples, stages and readbacks.

    Parameters
    ----------
    pipeline : RenderPipeline
    spp : int
    update : callable, optional
        A frame update (``update(pipeline, index, frame)``). One that is a :class:`GraphUpdate` has its GPU part
        captured with the frame's graph; any other runs on the host part of the frame, before the launch.
    accumulate : bool, optional
        Add every frame's samples to the progressive image (default: without an update); otherwise each frame
        restarts it.
    readback : str, sequence of str or None
        Outputs read back (checked here, once).
    stages : bool
    graph : bool, optional
        Run the frames as their slots' CUDA graphs (default: each frame's own ``graph``).

    Raises
    ------
    TypeError, ValueError
        On a bad ``spp``, an ``update`` that is not callable, readbacks the frames do not make.
    """

    def __init__(self, pipeline: Any, spp: int = 1, *,
                 update: Callable[[Any, int, Frame], None] | None = None, accumulate: bool | None = None,
                 readback: Any = None, stages: bool = True, graph: bool | None = None) -> None:
        if update is not None and not callable(update):
            raise TypeError(f"update must be callable (update(pipeline, index, frame)), got {type(update).__name__}")
        if graph is not None and not isinstance(graph, bool):
            raise TypeError(f"graph must be a bool or None, got {type(graph).__name__}")
        self.pipeline = pipeline
        self.spp = positive_int("spp", spp)
        self.update = update
        self.accumulate = update is None if accumulate is None else bool(accumulate)
        self.stages = bool(stages)
        self.names = pipeline._plan.check_readback(readback, staged=self.stages)
        self.graph = graph
        self._captured = update if isinstance(update, GraphUpdate) else None

    def record(self, frame: Frame, index: int | None = None) -> dict[str, Any]:
        """Record frame ``index`` (default: ``frame.index``) into ``frame``; the slot's output buffers, by name."""
        pipeline = self.pipeline
        if index is None:
            index = frame.index
        graph = frame.graph if self.graph is None else self.graph
        updates: tuple = ()
        if self._captured is not None and graph:
            self._captured.host(pipeline, index, frame)
            updates = (self._captured,)
        elif self.update is not None:
            self.update(pipeline, index, frame)
        if not self.accumulate:
            pipeline.reset()
        return pipeline._record(frame, self.spp, self.names, self.stages, self.graph, updates)

    __call__ = record

    def __repr__(self) -> str:
        return (f"<FrameRecorder spp={self.spp} update={self.update!r} readback={list(self.names)} "
                f"stages={self.stages} graph={self.graph}>")


def run_frames(pipeline: Any, count: int, every: FrameRecorder, last: FrameRecorder,
               stages: bool) -> Iterator[FrameResult]:
    """``count`` frames through the pipeline's scheduler (the last one by ``last``), their results in order, each
    handed to the stages' ``deliver`` first when it has readbacks."""
    scheduler = pipeline.scheduler
    with scheduler.holding_results():  # every frame is yielded: none dropped by max_queued_results
        for k in range(count):
            with scheduler.frame() as frame:
                (last if k == count - 1 else every).record(frame, k)
            yield from _delivered(pipeline, scheduler.poll(), stages)
        yield from _delivered(pipeline, scheduler.drain(), stages)


def _delivered(pipeline: Any, results: list[FrameResult], stages: bool) -> Iterator[FrameResult]:
    for result in results:
        if result.readbacks:
            for stage in pipeline.stages if stages else ():
                stage.deliver(result)
        yield result
