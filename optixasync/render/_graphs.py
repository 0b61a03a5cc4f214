"""A render pipeline's frames as CUDA graphs: one captured sequence per frame slot, replayed with new parameters.

With graphs on (``RenderPipeline(..., graphs=True)``, ``frames(..., graphs=True)``,
``record(frame, graph=True)`` or a scheduler made with ``graphs=True``; off by
default until the GPU run has checked them), :meth:`RenderPipeline.record`
splits a frame in two. On the host, every frame: the checks, the camera, the
sample counts, the slot's buffers looked up, the integrator's parameters
written into the slot's pinned staging (:meth:`Integrator.prepare`), and the
host part of a frame update (its per-frame values into the slot's
:data:`FRAME_VALUES`). On the GPU, as the frame's work function
(:class:`FrameWork`), which the scheduler captures into the slot's graph and
then replays (:mod:`optixasync.scheduler._graphs`).

What a slot's graph holds
-------------------------
In order, on the frame's stream: the parameters' copy from the slot's pinned
staging; the copy of the slot's frame values; each frame update's GPU part
(:class:`GraphUpdate`: the cloth's vertex kernel, which reads its time from
the frame values, and the structure's refit); the integrator's launch; the
stages (the tonemap kernel; the denoiser's calls with ``Denoise(capture=True)``);
the readbacks into the slot's fixed pinned destinations. The frame's timing
events and fence are recorded around the graph's launch. A replay writes the
parameters and the frame values on the host and launches the graph: nothing
else.

What captures it again
----------------------
The frame's key (:meth:`PipelineGraphs.key`) names what the captured work
depends on besides the slot's buffers: the ``image size``, the ``outputs``
the integrator writes (its program variant), whether the ``stages`` run, the
``readback`` names, the scene's tables (``scene tables``: their generation,
:attr:`DeviceScene.generation`), the number of ``cameras`` the frame renders
and the frame ``updates``. A different key, a slot buffer reallocated, or a
captured refit whose structure was rebuilt, compacted, or is due for a
rebuild (the refit policy) runs the slot's next frame eagerly and captures
the one after; the reason is counted in the scheduler's ``stats.graphs``.

What runs eagerly, and why
--------------------------
Counted in ``stats.graphs.eager_reasons`` and logged once per reason: frames
in validation mode (every launch waits inside ``optixLaunch``, which stays
visible), launches of pipelines with exception checks (debug exceptions),
frames with a stage that says it cannot be captured (:meth:`Stage.uncapturable`:
the denoiser unless ``Denoise(capture=True)``), frames of an integrator
without :meth:`Integrator.prepare`, and any work a capture refuses (an
allocation, an upload of host data, a wait for another stream). A frame
update that is a plain callable runs on the host part of the frame, before
the graph's launch: its GPU work, if any, is enqueued eagerly ahead of the
graph.

Readbacks
---------
A replayed frame's result holds views of its slot's fixed destinations. When
its slot comes round while that result is still held, the frame neither
waits nor copies: the slot replays (or captures once) another variant of its
graph with destinations of its own, and hands the held buffers over to their
holders when every variant is held (``stats.graphs.held_readbacks`` and
``.handovers``; see :mod:`optixasync.scheduler._graphs`).

Blocking calls
--------------
None. A slot's frame values are allocated on its first frame (pinned memory
from the pool and stream-ordered device memory); a capture instantiates its
executable graph in the scheduler (CPU work in the driver, once per shape and
slot); :meth:`PipelineGraphs.close` waits for the streams its graph frames
were enqueued on (the pipeline is closing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._structs import struct_dtype
from ..cuda import StagedStruct, record_event, synchronize

if TYPE_CHECKING:
    from ..scheduler import Frame
    from ._integrator import Launch, PreparedLaunch
    from ._stages import FrameBuffers, Stage

__all__ = ["FRAME_VALUES", "NO_PREPARE", "FrameWork", "GraphUpdate", "PipelineGraphs"]

#: The per-frame values a frame update's GPU part reads from device memory (the slot's copy, uploaded by the
#: frame's graph before the update's kernels): ``time`` in seconds and the frame's ``index``.
FRAME_VALUES = struct_dtype([("time", "float"), ("index", "uint")])

NO_PREPARE = ("the integrator writes its parameters and launches in one call (no Integrator.prepare): its frames "
              "run eagerly")

#: Most distinct keys remembered (a pipeline's frames use a handful).
_KEYS_KEPT = 64


@runtime_checkable
class GraphUpdate(Protocol):
    """A frame update whose GPU work a frame graph can hold: a host part every frame, a GPU part captured once.

    :class:`~optixasync.render.ClothMotion` is one. With graphs off, the update is called as any frame update
    (``update(pipeline, index, frame)``).
    """

    def __call__(self, pipeline: Any, index: int, frame: Frame) -> None: ...

    def host(self, pipeline: Any, index: int, frame: Frame) -> None:
        """Frame ``index``'s host part: per-frame values (``pipeline.frame_values(frame)``), camera, resets."""

    def enqueue(self, pipeline: Any, frame: Frame) -> None:
        """The GPU part, the same every frame: kernels reading per-frame values from device memory
        (``pipeline.frame_value_address(frame, name)``), refits. It changes no host state."""


class FrameWork:
    """One frame's GPU work after its parameters: updates, the launch, the stages, the readbacks.

    Eager frames run it in :meth:`RenderPipeline.record` (:meth:`launch`, then :meth:`finish`); graph frames
    give it to the frame as its work function (``frame.work``), which the scheduler runs at submit: captured
    into the slot's graph, or eagerly when it cannot be.

    Attributes
    ----------
    prepared : PreparedLaunch or None
        The integrator's launch with its parameters written (graph frames); None: the integrator fills and
        launches in one call (``integrator.launch``).
    then : callable or None
        The frame's own work function, run after the pipeline's (a frame begun with ``sched.frame(work)``).
    """

    __slots__ = ("pipeline", "launch_args", "buffers", "stages", "names", "updates", "values", "written", "prepared",
                 "then")

    def __init__(self, pipeline: Any, launch: Launch, buffers: FrameBuffers, stages: tuple[Stage, ...],
                 names: tuple[str, ...], updates: tuple[GraphUpdate, ...], values: StagedStruct | None,
                 written: frozenset[str]) -> None:
        self.pipeline = pipeline
        self.written = written  # the outputs the integrator writes (its program variant)
        self.launch_args = launch
        self.buffers = buffers
        self.stages = stages
        self.names = names
        self.updates = updates
        self.values = values
        self.prepared: PreparedLaunch | None = None
        self.then: Any = None

    def launch(self, frame: Frame) -> None:
        """Enqueue the updates' GPU parts and the integrator's launch."""
        if self.updates:
            if self.values is not None:
                self.values.push(frame.stream)
            for update in self.updates:
                update.enqueue(self.pipeline, frame)
        if self.prepared is not None:
            self.prepared.enqueue(frame)
        else:
            self.pipeline.integrator.launch(frame, self.launch_args)

    def finish(self, frame: Frame) -> None:
        """Enqueue the stages, then the readbacks."""
        buffers = self.buffers
        for stage in self.stages:
            stage.record(frame, buffers)
        for name in self.names:
            frame.readback(buffers[name], name)

    def __call__(self, frame: Frame) -> None:
        """The frame's work function: :meth:`launch`, :meth:`finish`, then the frame's own work, if any."""
        self.launch(frame)
        self.finish(frame)
        if self.then is not None:
            self.then(frame)


class PipelineGraphs:
    """A pipeline's side of frame graphs: graph or eager per frame, the frames' keys, the slots' frame values.

    Parameters
    ----------
    pipeline : RenderPipeline
    """

    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline
        self._values: dict[tuple[int, int], StagedStruct] = {}
        self._keys: dict[tuple, dict[str, Any]] = {}
        self._streams: dict[int, Any] = {}  # stream handle -> stream of the frames given a FrameWork
        self._last: FrameWork | None = None  # the newest frame given one, until the next frame is recorded

    # -- graph or eager -------------------------------------------------------------------------------------
    def defer(self, frame: Frame, work: FrameWork, graph: bool | None, cameras: int = 1) -> bool:
        """Make ``work`` the frame's work function (parameters written now), or say the frame records eagerly.

        ``graph`` (None: the frame's own choice, ``frame.graph``) asks for a frame graph. Returns False for an
        eager frame: graphs not asked for, or an uncapturable stage or integrator (then ``frame.eager_reason``
        says which, counted by the scheduler).
        """
        if graph is None:
            graph = frame.graph
        elif not graph and frame.work is None:
            frame.graph = False  # asked for an eager frame: nothing left to run as a graph
        if not graph:
            return False
        frame.graph = True
        reason = self.uncapturable(work.stages)
        if reason is None:
            work.prepared = self._pipeline.integrator.prepare(frame.params, work.launch_args)
            if work.prepared is None:
                reason = NO_PREPARE
        if reason is not None:
            frame.eager_reason = reason
            return False
        key = self.key(work, cameras)
        if frame.work is not None:  # the frame's own work function and key come after the pipeline's
            work.then = frame.work
            key = {**key, "frame": frame.key}
        frame.work, frame.key = work, key
        self._last = work
        handle = int(frame.stream.ptr)
        if handle not in self._streams:
            self._streams[handle] = frame.stream
        return True

    def lost_samples(self) -> bool:
        """Whether the newest graph frame was aborted after :meth:`RenderPipeline.record` counted its samples
        (its work never ran: they are not in the accumulation). Asked once, by the next frame's record."""
        last, self._last = self._last, None
        return last is not None and last.buffers.frame.error is not None

    @staticmethod
    def uncapturable(stages: tuple[Stage, ...]) -> str | None:
        """Why frames with these stages run eagerly (the first stage that says so), or None."""
        for stage in stages:
            reason = stage.uncapturable()
            if reason is not None:
                return f"stage {stage!r}: {reason}"
        return None

    def key(self, work: FrameWork, cameras: int) -> dict[str, Any]:
        """What ``work``'s graph depends on besides the slot's buffers, by name (the same dict for the same values)."""
        opts = self._pipeline.options
        written = work.written
        updates = tuple((type(u).__name__, id(u)) for u in work.updates) if work.updates else ()
        generation = self._pipeline.device_scene.generation
        signature = (opts.width, opts.height, written, work.stages, work.names, generation, cameras, updates)
        key = self._keys.get(signature)
        if key is None:
            if len(self._keys) >= _KEYS_KEPT:
                self._keys.clear()
            key = self._keys[signature] = {
                "image size": (opts.width, opts.height), "outputs": tuple(sorted(written)),
                "stages": tuple(repr(s) for s in work.stages), "readback": work.names, "scene tables": generation,
                "cameras": cameras, "updates": updates}
        return key

    # -- frame values ---------------------------------------------------------------------------------------
    def values(self, frame: Frame, create: bool = True) -> StagedStruct | None:
        """The frame slot's :data:`FRAME_VALUES` (pinned, with its device copy), made on the slot's first frame."""
        index = (int(frame.stream.ptr), frame.slot)
        staged = self._values.get(index)
        if staged is None and create:
            staged = self._values[index] = StagedStruct(self._pipeline.ctx, FRAME_VALUES, frame.stream)
        return staged

    # -- lifetime ------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Wait for the streams that ran graph frames, then release the frame values (the pipeline is closing)."""
        streams, self._streams = list(self._streams.values()), {}
        for stream in streams:
            synchronize(record_event(stream), "waiting for the pipeline's graph frames before closing it")
        for staged in self._values.values():
            staged.release()
        self._values = {}
