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
mapping names what changed), the slot's buffer generation (a buffer
reallocated) and its destinations' generation (a readback made anew), and
asks the graph's own checks (a refit's structure rebuilt or compacted, the
refit policy's next refit a full rebuild). Same shape: **replay** (one
``cuGraphLaunch``). A different shape: the first frame of it on the slot
runs **eagerly** (its one-time work: allocations, the first stream orders,
OptiX's first-use loads happen outside any graph), and the slot's next
frame **captures** (updating the executable graph in place when the
topology allows). A destination handed over while held (below) is the only
change that captures at once. Captures are counted by reason
(``stats.graphs``).

A frame runs eagerly, with its reason counted and logged once, when the
context has OptiX validation mode on (every launch waits inside
``optixLaunch``; that serializing effect stays visible), when the work
launches a pipeline with exception checks, when it has no work function,
and when its capture was refused (:class:`~optixasync.errors.GraphCaptureError`:
an allocation, an upload of host data, a wait for another stream, a
download into a per-frame lease, a capture the driver invalidated). A
refused shape is not tried again until the shape changes. The work of a
frame whose capture was refused is run again, eagerly: it must enqueue its
work and change nothing else on the host before its GPU calls (or leave its
host state in the ``with`` block).

Readbacks
---------
A captured copy always writes to the same address, so a graph's readbacks
go to the slot's fixed destinations (:mod:`._slot`; eager frames use them
too). When the slot comes round while a result (or an array taken from it)
still holds its buffer, the frame neither waits nor copies: the held buffer
goes with its holder, the slot takes a new one and captures again (counted
as "readback ... still held"). Release results (``with result:``) or
``copy()`` what you keep to stay on replays.

Blocking calls
--------------
A capture instantiates or updates an executable graph (CPU work in the
driver, see :mod:`optixasync.cuda._graph`), once per shape and slot. A replay
is one ``cuGraphLaunch`` and the fence's event record. Nothing here waits
for the GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..cuda import StreamGraph
from ..errors import GraphCaptureError

if TYPE_CHECKING:
    from ..cuda import Context
    from ._frame import Frame
    from ._slot import Slot
    from ._stats import SchedulerStats

__all__ = ["FIRST", "NO_WORK", "VALIDATION", "FrameGraphs", "SlotGraph", "key_change"]

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


class SlotGraph:
    """One slot's frame graph and the shape it was captured for.

    Attributes
    ----------
    graph : StreamGraph
    signature : tuple or None
        (key, buffer generation, destination generation) of the capture.
    names : tuple of str
        The captured frame's readbacks, in order.
    warm : tuple or None
        (key, buffer generation) of the slot's last eager frame: the next frame of that shape captures.
    refused : tuple or None
        ((key, buffer generation), reason) of a refused capture: that shape runs eagerly until it changes.
    """

    def __init__(self) -> None:
        self.graph = StreamGraph()
        self.signature: tuple | None = None
        self.names: tuple[str, ...] = ()
        self.warm: tuple | None = None
        self.refused: tuple[tuple, str] | None = None
        self._stale = ""

    def forget(self, reason: str) -> None:
        """The graph no longer matches what it captured (``reason``): the slot's next frames start over."""
        self.signature = self.warm = None
        self._stale = reason

    def captured(self, signature: tuple, names: tuple[str, ...]) -> None:
        """The graph now holds a frame of ``signature`` whose readbacks are ``names``."""
        self.signature, self.names, self.refused, self._stale = signature, names, None, ""

    def change(self, signature: tuple, slot: Slot) -> str:
        """Why ``signature`` differs from the capture's."""
        if self.signature is None:
            return self._stale or FIRST
        key, generation, destinations = self.signature
        if key != signature[0]:
            return key_change(key, signature[0])
        if generation != signature[1]:
            return f"buffer {slot.reallocated!r} reallocated"
        if destinations != signature[2]:
            return slot.destinations.reason
        return "recorded again"

    def close(self) -> None:
        self.graph.close()


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
        stream = frame.stream
        if not frame.graph or self._ctx.validation:
            if frame.graph:
                self._eager(frame, VALIDATION)
            frame.run_work()
            fence.record(stream)
            return
        graph = slot.graph if slot.graph is not None else self._new(slot)
        # A graph copies into fixed destinations: those still held by a result are handed over first.
        slot.destinations.hand_over(slot.destinations.names())
        signature = (frame.key, slot.generation, slot.destinations.generation)
        if signature == graph.signature:
            stale = graph.graph.stale()
            if stale is None:
                self._replay(frame, slot, graph, fence)
                return
            graph.forget(stale)  # what the graph captured changed: as a new shape
        reason = graph.change(signature, slot)
        shape = signature[:2]  # the key and the buffers; new destinations alone need no eager frame first
        if graph.refused is not None and graph.refused[0] == shape:
            self._run_eagerly(frame, graph.refused[1], fence)
        elif graph.warm == shape:
            self._capture(frame, graph, signature, reason, fence)
        else:
            self._run_eagerly(frame, f"{reason}: runs eagerly once, the next frame of the slot captures", fence)
            graph.warm = shape

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

    def _replay(self, frame: Frame, slot: Slot, graph: SlotGraph, fence: Any) -> None:
        frame.begin_gpu_work()  # the span's start, before the graph
        graph.graph.launch(frame.stream, end=fence, check=False)
        frame.launched = True
        frame.readbacks = slot.destinations.views(graph.names)
        frame.stats.graph = "replay"
        self._stats.count_graph("replay", "")

    def _capture(self, frame: Frame, graph: SlotGraph, signature: tuple, reason: str, fence: Any) -> None:
        frame.begin_gpu_work()  # outside the capture: the span's start is recorded on the stream, not captured
        state = frame.snapshot()
        frame.capturing = True
        try:
            graph.graph.record(frame.stream, lambda _stream: frame.run_work())
        except GraphCaptureError as exc:
            frame.capturing = False
            frame.rollback(state)  # nothing was enqueued
            graph.refused = (signature[:2], exc.reason)
            self._run_eagerly(frame, exc.reason, fence)
            return
        finally:
            frame.capturing = False
        graph.captured(signature, tuple(name for name, _view in frame.readbacks))
        graph.graph.launch(frame.stream, end=fence, check=False)
        frame.stats.graph, frame.stats.graph_reason = "capture", reason
        self._stats.count_graph("capture", reason)
        _log.debug("frame %d captured slot %d's graph: %s", frame.index, frame.slot, reason)
