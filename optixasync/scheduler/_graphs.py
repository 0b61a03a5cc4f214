"""Frame graphs: each slot's frame captured once into a CUDA graph and replayed while the frame's shape holds.

A frame with a **work** function (``sched.frame(work)``) splits in two: the
``with`` block writes the parameters and looks up the slot's buffers, every
frame, on the host; ``work(frame)`` enqueues the GPU work, which is the same
every frame except for what it reads from memory. With graphs on (off by
default: ``FrameScheduler(..., graphs=True)`` or ``sched.frame(work, graph=True)``),
each slot keeps one :class:`~optixasync.cuda.StreamGraph` of its frame.

What a slot's graph holds
-------------------------
Everything ``work`` enqueues on the frame's stream, from the first node on:
the parameters' copy from the slot's pinned staging to its device copy (the
graph reads the staging when it runs, so the host's new values travel),
refits of dynamic geometry and kernels of the work's own (which read
per-frame values from the parameters, ``frame.param_address``), the launches,
stages, and the readbacks into the slot's fixed pinned destinations. The
frame's timing events and its fence are recorded around the graph's launch,
on the same stream, as for an eager frame: retirement, statistics,
syncwatch's designed waits and the traces see a replayed frame as any other.

When a slot's graph is replayed, recorded, or not used
------------------------------------------------------
Each frame of a slot compares its **shape** with the one the slot's graph
was captured for: the frame's ``key`` (what the work depends on besides its
buffers: image size, requested outputs, a scene table's generation; a
mapping names what changed) and the slot's buffer generation (a buffer
reallocated), and asks the graph's own checks (a refit's structure rebuilt or compacted, the
refit policy's next refit a full rebuild). Same shape: **replay** (one
``cuGraphLaunch``). A different shape: the first frame of it on the slot
runs **eagerly** (its one-time work: allocations, the first stream orders,
OptiX's first-use loads happen outside any graph), and the slot's next
frame **captures** (updating the executable graph in place when the
topology allows). Readbacks still held (below) capture at once. Captures
are counted by reason (``stats.graphs``).

A frame runs eagerly, with its reason counted and logged once, when the
context has OptiX validation mode on (every launch waits inside
``optixLaunch``; that serializing effect stays visible), when the work
launches a pipeline with exception checks, when it has no work function,
when its recorder said its work cannot be captured (``frame.eager_reason``:
the render pipeline's frames with a stage that cannot be, see
:mod:`optixasync.render._graphs`), and when its capture was refused (:class:`~optixasync.errors.GraphCaptureError`:
an allocation, an upload of host data, a wait for another stream, a
download into a per-frame lease, a capture the driver invalidated). A
refused shape is not tried again until the shape changes. The work of a
frame whose capture was refused is run again, eagerly: it must enqueue its
work and change nothing else on the host before its GPU calls (or leave its
host state in the ``with`` block).

Readbacks
---------
A captured copy always writes to the same address, so a graph's readbacks
go to fixed destinations (:mod:`._slot`; eager frames use the slot's own).
A result hands out views of them, and a result may still be held as its
slot comes round: typically it waits in the poll queue, retired while the
next frame of the slot began. Then the frame neither waits nor copies: the
slot keeps up to :data:`MAX_VARIANTS` **variants** of its graph, each with
its own set of destinations, and replays one whose destinations are free,
capturing a new variant (with destinations shaped as the first's) when none
is ("readbacks still held: another set of destinations"). With all variants
taken, the oldest one's held buffers go to their holders (back to the pinned
pool once released) and that variant is captured again ("readback ... still
held"). A loop that polls after each frame settles on two variants per slot
and replays from then on; one that keeps every result captures every frame,
correctly. Release results (``with result:``) or ``copy()`` what you keep.
A change of shape drops every variant of the slot. Both cases are counted
(``stats.graphs.held_readbacks``: frames that found their slot's readbacks
still held; ``stats.graphs.handovers``: those of them whose held buffers went
to their holders).

Blocking calls
--------------
A capture waits for the device to be idle first, then instantiates or
updates an executable graph (CPU work in the driver, see
:mod:`optixasync.cuda._graph`), once per shape and slot. A replay is one
``cuGraphLaunch`` and the fence's event record: in steady state nothing here
waits for the GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..cuda import StreamGraph
from ..errors import GraphCaptureError
from ._slot import Destinations

if TYPE_CHECKING:
    from ..cuda import Context
    from ._frame import Frame
    from ._slot import Slot
    from ._stats import SchedulerStats

__all__ = ["FIRST", "MAX_VARIANTS", "NO_WORK", "VALIDATION", "FrameGraphs", "SlotGraph", "key_change"]

_log = logging.getLogger("optixasync")

VALIDATION = ("validation mode: OptiX checks every launch and makes it wait for the GPU; frames run eagerly so "
              "that this stays visible")
NO_WORK = "no work function: the frame's GPU work is in its with block (pass it as sched.frame(work))"
FIRST = "first frame of this shape on the slot"


def key_change(old: Any, new: Any) -> str:
    """Why a frame's ``key`` differs from the one its slot's graph was captured for (names a mapping's entries)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        changed = sorted(str(k) for k in set(old) | set(new) if old.get(k, _MISSING) != new.get(k, _MISSING))
        if changed:
            return "key changed: " + ", ".join(changed)
    return "key changed"


_MISSING = object()


#: The most graphs (each with its own readback destinations) a slot keeps for one shape.
MAX_VARIANTS = 3


class _Variant:
    """One graph of a slot's shape and the destinations it copies into."""

    __slots__ = ("graph", "destinations", "names", "generation")

    def __init__(self, destinations: Destinations, graph: StreamGraph) -> None:
        self.graph = graph
        self.destinations = destinations
        self.names: tuple[str, ...] = ()
        self.generation = -1  # the destinations' generation when captured

    def free(self) -> bool:
        """Whether its destinations are the captured ones and nothing holds them."""
        return (self.destinations.generation == self.generation
                and self.destinations.held(self.names) is None)


class SlotGraph:
    """One slot's frame graphs (its variants) and the shape they were captured for.

    Attributes
    ----------
    shape : tuple or None
        (key, buffer generation) of the captures.
    variants : list
        The graphs of that shape, least recently replayed first.
    warm : tuple or None
        The shape of the slot's last eager frame: the next frame of that shape captures.
    refused : tuple or None
        (shape, reason) of a refused capture: that shape runs eagerly until it changes.
    """

    def __init__(self) -> None:
        self.shape: tuple | None = None
        self.variants: list[_Variant] = []
        self.warm: tuple | None = None
        self.refused: tuple[tuple, str] | None = None
        self._stale = ""
        self._spares: list[StreamGraph] = []  # graphs of an earlier shape: recorded again, updated in place if they can

    def variant(self, destinations: Destinations) -> _Variant:
        """A new variant copying into ``destinations``, on a spare graph when there is one."""
        return _Variant(destinations, self._spares.pop() if self._spares else StreamGraph())

    def retire_variants(self) -> None:
        """The variants' shape is gone: their graphs become spares."""
        self._spares += [variant.graph for variant in self.variants]
        self.variants = []

    def pick(self) -> tuple[_Variant | None, str | None]:
        """A variant to replay, or (None, why the variants are out of date) or (None, None: all are held)."""
        for variant in self.variants:
            stale = variant.graph.stale()
            if stale is not None:
                return None, stale  # what they captured changed: all of them (the same work)
        for variant in self.variants:
            if variant.free():
                return variant, None
        return None, None

    def forget(self, reason: str) -> None:
        """The graphs no longer match what they captured (``reason``): the slot's next frames start over."""
        self.retire_variants()
        self.shape = self.warm = None
        self._stale = reason

    def change(self, shape: tuple, slot: Slot) -> str:
        """Why ``shape`` differs from the captures'."""
        if self.shape is None:
            return self._stale or FIRST
        if self.shape[0] != shape[0]:
            return key_change(self.shape[0], shape[0])
        return f"buffer {slot.reallocated!r} reallocated"

    def close(self) -> None:
        self.retire_variants()
        for graph in self._spares:
            graph.close()
        self._spares = []


class FrameGraphs:
    """Runs a frame's work as its slot's graph (replay or capture) or eagerly, and counts which and why.

    Parameters
    ----------
    ctx : Context
    stats : SchedulerStats
        Where the counts go (``stats.graphs``).
    """

    def __init__(self, ctx: Context, stats: SchedulerStats) -> None:
        self._ctx = ctx
        self._stats = stats
        self._logged: set[str] = set()

    def run(self, frame: Frame, slot: Slot, fence: Any) -> None:
        """Enqueue ``frame``'s work and record ``fence`` after it."""
        if not frame.graph or self._ctx.validation or frame.eager_reason is not None:
            if frame.graph:
                self._eager(frame, VALIDATION if self._ctx.validation else frame.eager_reason)
            frame.run_work()
            fence.record(frame.stream)
            return
        graph = slot.graph if slot.graph is not None else self._new(slot)
        shape = (frame.key, slot.generation)
        if shape == graph.shape:
            variant, stale = graph.pick()
            if variant is not None:
                self._replay(frame, graph, variant, fence)
                return
            if stale is None:  # every variant's destinations are held
                self._capture_variant(frame, graph, fence)
                return
            graph.forget(stale)
        reason = graph.change(shape, slot)
        if graph.refused is not None and graph.refused[0] == shape:
            self._run_eagerly(frame, graph.refused[1], fence)
        elif graph.warm == shape:
            graph.retire_variants()
            if slot.destinations.hand_over(slot.destinations.names()):  # the first variant copies into these
                self._stats.count_held(handed_over=True)
            self._capture(frame, graph, graph.variant(slot.destinations), shape, reason, fence)
        else:
            self._run_eagerly(frame, f"{reason}: runs eagerly once, the next frame of the slot captures", fence)
            graph.warm = (frame.key, slot.generation)  # with the buffers its work made: that is the shape now

    @staticmethod
    def _new(slot: Slot) -> SlotGraph:
        slot.graph = SlotGraph()
        return slot.graph

    def count_eager(self, frame: Frame, reason: str) -> None:
        """A frame that asked for a graph ran eagerly for ``reason`` (counted, logged once per reason)."""
        self._eager(frame, reason)

    def _eager(self, frame: Frame, reason: str) -> None:
        frame.stats.graph, frame.stats.graph_reason = "eager", reason
        self._stats.count_graph("eager", reason)
        if reason not in self._logged:
            self._logged.add(reason)
            _log.info("frame %d runs eagerly instead of as its slot's graph: %s (logged once; counted in "
                      "stats.graphs)", frame.index, reason)

    def _run_eagerly(self, frame: Frame, reason: str, fence: Any) -> None:
        self._eager(frame, reason)
        frame.run_work()
        fence.record(frame.stream)

    def _replay(self, frame: Frame, graph: SlotGraph, variant: _Variant, fence: Any) -> None:
        frame.begin_gpu_work()  # the span's start, before the graph
        variant.graph.launch(frame.stream, end=fence, check=False)
        frame.launched = True
        frame.readbacks = variant.destinations.views(variant.names)  # (no cache: a reference would count as held)
        if graph.variants[-1] is not variant:  # least recently replayed first
            graph.variants.remove(variant)
            graph.variants.append(variant)
        frame.stats.graph = "replay"
        self._stats.graphs.replays += 1  # the submitting thread's count (SchedulerStats.count_graph)

    def _capture_variant(self, frame: Frame, graph: SlotGraph, fence: Any) -> None:
        """Every variant's destinations are held: capture into a new set, or hand the oldest one's over."""
        first = graph.variants[0]
        if len(graph.variants) < MAX_VARIANTS:
            destinations = Destinations(self._ctx)
            destinations.like(first.destinations, first.names)
            variant, reason = graph.variant(destinations), "readbacks still held: another set of destinations"
            self._stats.count_held(handed_over=False)
        else:
            variant = graph.variants.pop(0)  # recorded again below: its executable graph is updated in place
            variant.destinations.hand_over(variant.names)
            reason = variant.destinations.reason
            self._stats.count_held(handed_over=True)
        self._capture(frame, graph, variant, graph.shape, reason, fence)

    def _capture(self, frame: Frame, graph: SlotGraph, variant: _Variant, shape: tuple, reason: str,
                 fence: Any) -> None:
        frame.begin_gpu_work()  # outside the capture: the span's start is recorded on the stream, not captured
        state = frame.snapshot()
        frame.destinations = variant.destinations
        frame.capturing = True
        try:
            variant.graph.record(frame.stream, lambda _stream: frame.run_work())
        except GraphCaptureError as exc:
            frame.capturing = False
            frame.rollback(state)  # nothing was enqueued
            frame.destinations = frame.slot_destinations
            graph.refused = (shape, exc.reason)
            self._run_eagerly(frame, exc.reason, fence)
            return
        finally:
            frame.capturing = False
        variant.names = tuple(name for name, _view in frame.readbacks)
        variant.generation = variant.destinations.generation
        graph.variants.append(variant)
        graph.shape, graph.refused, graph._stale = shape, None, ""
        variant.graph.launch(frame.stream, end=fence, check=False)
        frame.stats.graph, frame.stats.graph_reason = "capture", reason
        self._stats.count_graph("capture", reason)
        _log.debug("frame %d captured slot %d's graph: %s", frame.index, frame.slot, reason)
