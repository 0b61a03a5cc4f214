"""Per-frame measurements of the frame scheduler, kept in bounded memory, and their summary.

The newest ``window`` frames keep their :class:`FrameStats` (for medians,
percentiles, timelines and traces); frames that leave the window are folded
into running totals (count, sum, min, max per measurement), so together they
cover the whole run in constant memory. Recording a frame is one list
append; once ``2 * window`` frames are held, the oldest ``window`` of them
are folded with numpy in one batch (about 5 ms for 4096 frames, so about
1 us per frame on average). The scheduler appends while it retires
frames, under its own lock, and folds after releasing it: the thread that
retired the frames (the completion thread, or one retiring inline, such as
a caller of ``poll()``) pays for the fold, and holds the scheduler's lock
through none of it (another retirement appending meanwhile waits for the
fold to end, holding the scheduler's lock). A render loop at thousands of
frames per second for hours holds the same memory after an hour as after
a minute.

The statistics are read while the thread that retires frames adds to them:
a small lock of their own guards the list and the totals; readers copy
them under it and compute outside it.

Blocking calls
--------------
None: host-side bookkeeping. The statistics' lock is held for an append,
a copy of at most ``2 * window`` references, or a fold; a reader may wait
for a fold in progress.
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["FrameStats", "GRAPH_MODES", "GraphCounts", "RunningStat", "SchedulerStats", "MEASUREMENTS"]

#: The per-frame measurements summarised by :meth:`SchedulerStats.summary`.
MEASUREMENTS = ("submit_ms", "launch_ms", "fence_wait_ms", "queue_wait_ms", "retire_ms", "gpu_ms", "gap_us", "in_flight",
                "ahead")

#: How a frame with a work function ran (:attr:`FrameStats.graph`); "" for a frame without one.
GRAPH_MODES = ("replay", "capture", "eager")


@dataclass(init=False)
class FrameStats:
    """What one frame cost.

    Attributes
    ----------
    index : int
        Frame number.
    submit_ms : float
        Host time spent inside the scheduler's calls recording the frame
        (parameter copy, launches, uploads, readbacks, fence record).
    launch_ms : float
        Host time spent inside ``optixLaunch`` calls (part of ``submit_ms``).
    fence_wait_ms : float
        Host time blocked in ``begin_frame`` on the fence of the frame that last used the slot.
    queue_wait_ms : float
        Host time blocked in :meth:`Frame.launch` on the OptiX context's launch queue (its oldest launch's
        event, with ``optix_queue_limit`` on): the other designed wait. Not part of ``submit_ms``.
    queue_waits : int
        How many of the frame's launches waited so.
    retire_ms : float
        Host time the scheduler spent retiring the frame once its fence had
        passed (timing readout, result, delivery), callbacks excluded.
    waited : bool
        Whether ``begin_frame`` had to wait at all.
    in_flight : int
        Frames submitted and not complete right after this frame was submitted, this one included.
    ahead : int
        Earlier frames still in flight when this frame was submitted: how far the host ran ahead.
    gpu_ms : float
        GPU time from the frame's first to its last operation (timing events), NaN without timing.
    gap_us : float
        GPU idle time between the end of the previous frame and the start of this one, NaN for the first.
    host_begin : float
        ``time.perf_counter()`` when the frame began recording (for timelines).
    host_submit : float
        ``time.perf_counter()`` when it was submitted.
    host_done : float
        ``time.perf_counter()`` when the scheduler saw its fence pass (an upper bound on completion).
    host_wait_start : float
        ``time.perf_counter()`` when ``begin_frame`` started waiting on the slot fence, NaN if it did not wait.
    gpu_start_ms, gpu_end_ms : float
        GPU times of the frame's first and last operation, in ms after the
        scheduler's origin event (recorded when it was created; see
        :attr:`SchedulerStats.gpu_origin_host`), NaN without timing. Read when
        the frame retires, from events that have passed: no host wait.
    graph : str
        How a frame with a work function ran: ``"replay"`` (its slot's graph launched), ``"capture"``
        (captured into the slot's graph, then launched), ``"eager"`` (graphs asked for, the work run
        eagerly); ``""`` for other frames.
    graph_reason : str
        Why it was captured or ran eagerly (empty for a replay).
    """

    index: int
    submit_ms: float = 0.0
    launch_ms: float = 0.0
    fence_wait_ms: float = 0.0
    queue_wait_ms: float = 0.0
    queue_waits: int = 0
    retire_ms: float = 0.0
    waited: bool = False
    in_flight: int = 0
    ahead: int = 0
    gpu_ms: float = float("nan")
    gap_us: float = float("nan")
    host_begin: float = 0.0
    host_submit: float = 0.0
    host_done: float = float("nan")
    host_wait_start: float = float("nan")
    gpu_start_ms: float = float("nan")
    gpu_end_ms: float = float("nan")
    graph: str = ""
    graph_reason: str = ""

    def __init__(self, index: int, host_begin: float = 0.0, **values: Any) -> None:
        # One per frame: the defaults are the class's (a dataclass keeps them as class attributes), so a new
        # frame sets two attributes instead of eighteen.
        self.index = index
        self.host_begin = host_begin
        if values:
            unknown = sorted(set(values) - set(_FIELDS))
            if unknown:
                raise TypeError(f"FrameStats has no field {unknown[0]!r}")
            for name, value in values.items():
                setattr(self, name, value)


class GraphCounts:
    """Whole-run counts of frame graphs: replays, captures and eager frames, the last two by reason.

    Attributes
    ----------
    replays, captures, eager : int
    capture_reasons, eager_reasons : collections.Counter
        Reason -> frames.
    held_readbacks : int
        Frames whose slot came round with its graph's readbacks still held by a result (the frame neither
        waited nor copied: it captured another variant with destinations of its own, or handed the held
        buffers over, see :mod:`optixasync.scheduler._graphs`).
    handovers : int
        Those of them whose held buffers went to their holders (new destinations, the variant captured again).
    """

    def __init__(self) -> None:
        self.replays = self.captures = self.eager = 0
        self.held_readbacks = self.handovers = 0
        self.capture_reasons: Counter[str] = Counter()
        self.eager_reasons: Counter[str] = Counter()

    def add(self, mode: str, reason: str) -> None:
        if mode == "replay":
            self.replays += 1
        elif mode == "capture":
            self.captures += 1
            self.capture_reasons[reason] += 1
        else:
            self.eager += 1
            self.eager_reasons[reason] += 1

    def as_dict(self) -> dict[str, Any]:
        return {"replays": self.replays, "captures": self.captures, "eager": self.eager,
                "capture_reasons": dict(self.capture_reasons), "eager_reasons": dict(self.eager_reasons),
                "held_readbacks": self.held_readbacks, "handovers": self.handovers}


_FIELDS = tuple(FrameStats.__dataclass_fields__)


class RunningStat:
    """Count, sum, min and max of a stream of numbers (NaN skipped), in constant memory."""

    __slots__ = ("count", "total", "low", "high")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.low = math.inf
        self.high = -math.inf

    def add_many(self, values: np.ndarray) -> None:
        """Fold an array of values in (NaN entries are no measurement)."""
        values = values[~np.isnan(values)]
        if values.size:
            self.count += int(values.size)
            self.total += float(values.sum())
            self.low = min(self.low, float(values.min()))
            self.high = max(self.high, float(values.max()))

    def copy(self) -> RunningStat:
        out = RunningStat()
        out.count, out.total, out.low, out.high = self.count, self.total, self.low, self.high
        return out

    def merged(self, values: np.ndarray) -> RunningStat:
        """A copy of this stat with ``values`` folded in (this one unchanged)."""
        out = self.copy()
        out.add_many(values)
        return out

    def as_dict(self) -> dict[str, float]:
        if self.count == 0:
            return {"n": 0, "mean": float("nan"), "min": float("nan"), "max": float("nan"), "sum": 0.0}
        return {"n": self.count, "mean": self.total / self.count, "min": self.low, "max": self.high, "sum": self.total}


def _summary(values: Iterable[float]) -> dict[str, float]:
    data = np.asarray([v for v in values if v == v], dtype=np.float64)  # drop NaN
    if data.size == 0:
        return {"median": float("nan"), "p95": float("nan"), "mean": float("nan"), "n": 0}
    return {
        "median": float(np.median(data)),
        "p95": float(np.percentile(data, 95)),
        "mean": float(data.mean()),
        "n": int(data.size),
    }


def _covers(kept: list[FrameStats], frames_total: int) -> dict[str, int]:
    if not kept:
        return {"first": -1, "last": -1, "kept": 0, "frames_total": frames_total}
    return {"first": kept[0].index, "last": kept[-1].index, "kept": len(kept), "frames_total": frames_total}


def _gpu_span_ms(frames: list[FrameStats]) -> float:
    """GPU time from the first frame's start to the last frame's end, 0 without GPU timestamps."""
    starts = [f.gpu_start_ms for f in frames if f.gpu_start_ms == f.gpu_start_ms]
    ends = [f.gpu_end_ms for f in frames if f.gpu_end_ms == f.gpu_end_ms]
    if len(starts) != len(frames) or len(ends) != len(frames):
        return 0.0
    return max(ends) - min(starts)


class SchedulerStats:
    """The newest frames' :class:`FrameStats` and running totals over every frame.

    Parameters
    ----------
    window : int
        How many of the newest frames keep their :class:`FrameStats`.

    Attributes
    ----------
    frames_total : int
        Frames retired since the scheduler was created (the window holds the newest ones).
    dropped_results : int
        Results dropped from the ``poll()`` queue by the ``drop_oldest`` policy.
    gpu_origin_host : float
        ``time.perf_counter()`` just after the scheduler recorded its origin
        event on its (then idle) stream: the host time of GPU time 0 of
        ``FrameStats.gpu_start_ms``/``gpu_end_ms``, to a launch latency. NaN without timing.
    graphs : GraphCounts
        Frame graphs over the whole run (counted as frames are submitted).
    queue_waits : collections.Counter
        The launch-queue waits of the whole run (``optix_queue_limit``) by cause
        (:data:`~optixasync.cuda._launch_queue.OWN_LAUNCH`, ``OTHER_LAUNCH``), counted as they happen.
    """

    def __init__(self, window: int = 4096) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.window = int(window)
        self._lock = threading.Lock()  # the list, the totals and frames_total change together under it
        self._frames: list[FrameStats] = []  # below 2 * window after each fold (the oldest window are folded)
        self._folded: dict[str, RunningStat] = {name: RunningStat() for name in MEASUREMENTS}
        self._folded_waits = 0
        self.frames_total = 0
        self.dropped_results = 0
        self.gpu_origin_host = float("nan")
        self.graphs = GraphCounts()
        self.queue_waits: Counter[str] = Counter()

    def count_queue_wait(self, cause: str) -> None:
        """Count a launch-queue wait of the submitting thread, by its cause."""
        with self._lock:
            self.queue_waits[cause] += 1

    @property
    def designed_waits(self) -> dict[str, int]:
        """Every designed wait of the whole run by cause: ``"slot fence"`` and the launch queue's causes."""
        with self._lock:
            queue = dict(self.queue_waits)
        return {"slot fence": self.waits_total, **queue}

    def count_graph(self, mode: str, reason: str) -> None:
        """Count a frame with a work function: ``mode`` one of :data:`GRAPH_MODES`, and why (capture, eager).

        Called by the submitting thread only; a replay is one increment (no lock: it runs every frame).
        """
        if mode == "replay":
            self.graphs.replays += 1
            return
        with self._lock:
            self.graphs.add(mode, reason)

    def count_held(self, handed_over: bool) -> None:
        """Count a frame that found its slot's graph readbacks still held (``handed_over``: given to their holders)."""
        with self._lock:
            self.graphs.held_readbacks += 1
            self.graphs.handovers += bool(handed_over)

    def add(self, stats: FrameStats, fold: bool = True) -> None:
        """Record one retired frame.

        With ``fold`` (the default), frames older than the window are folded
        into the totals right away when ``2 * window`` are held; without it,
        the caller calls :meth:`fold` later (the scheduler does, after its lock
        is released).
        """
        with self._lock:
            self._frames.append(stats)
            self.frames_total += 1
        if fold:
            self.fold()

    def fold(self) -> None:
        """Fold the frames older than the window into the totals, once ``2 * window`` frames are held."""
        with self._lock:
            if len(self._frames) >= 2 * self.window:
                self._fold_frames(self._frames[: -self.window])
                del self._frames[: -self.window]

    def _fold_frames(self, frames: list[FrameStats]) -> None:
        for name, running in self._folded.items():
            running.add_many(np.fromiter((getattr(f, name) for f in frames), np.float64, len(frames)))
        self._folded_waits += sum(1 for f in frames if f.waited)

    def _snapshot(self) -> tuple[list[FrameStats], dict[str, RunningStat], int, int]:
        """Copies, taken together: every held frame, the folded totals, folded waits, ``frames_total``."""
        with self._lock:
            return (list(self._frames), {name: running.copy() for name, running in self._folded.items()},
                    self._folded_waits, self.frames_total)

    @property
    def frames(self) -> list[FrameStats]:
        """The kept frames, oldest first (a new list: the newest ``window`` frames)."""
        with self._lock:
            return self._frames[-self.window :]

    @property
    def totals(self) -> dict[str, RunningStat]:
        """Whole-run count/sum/min/max of each measurement in :data:`MEASUREMENTS` (computed on request)."""
        held, folded, _waits, _total = self._snapshot()
        return _totals(held, folded)

    @property
    def waits_total(self) -> int:
        """Frames of the whole run that waited on their slot's fence."""
        held, _folded, folded_waits, _total = self._snapshot()
        return folded_waits + sum(1 for f in held if f.waited)

    def covers(self) -> dict[str, int]:
        """Which frames the window holds: ``first`` and ``last`` index, ``kept``, ``frames_total``."""
        held, _folded, _waits, frames_total = self._snapshot()
        return _covers(held[-self.window :], frames_total)

    def summary(self, skip: int = 0, count: int | None = None) -> dict[str, Any]:
        """Median, p95 and mean of each measurement over the kept frames after the first ``skip`` (``count`` of them).

        Also ``fps``, ``wall_s``, ``gpu_busy`` (summed frame GPU time over the
        host wall time), with GPU timestamps ``gpu_utilization`` (summed frame
        GPU time over the GPU span of the frames, on the GPU clock), ``covers``
        (which frames the numbers come from: ``first``, ``last``, ``kept``,
        ``frames_total``, as :meth:`covers` but for the frames summarised),
        ``dropped_results``, ``graphs`` (the summarised frames by how they ran:
        replay, capture, eager), ``whole_run_graphs`` (:class:`GraphCounts` of the
        whole run, with the reasons) and ``whole_run`` (count/mean/min/max of each
        measurement over every frame, ``waits``, and ``queue_waits`` by cause), and ``optix_queue_waits``
        (the summarised frames' launch-queue waits).
        """
        return self._summary(self._snapshot(), skip, count)

    def _summary(self, snapshot: tuple[list[FrameStats], dict[str, RunningStat], int, int], skip: int,
                 count: int | None) -> dict[str, Any]:
        held, folded, folded_waits, frames_total = snapshot
        kept = held[-self.window :]
        frames = kept[skip:] if count is None else kept[skip : skip + count]
        out: dict[str, Any] = {"frames": len(frames)}
        for name in MEASUREMENTS:
            out[name] = _summary(float(getattr(f, name)) for f in frames)
        out["waits_per_frame"] = float(np.mean([f.waited for f in frames])) if frames else float("nan")
        out["optix_queue_waits"] = sum(f.queue_waits for f in frames)
        if len(frames) >= 2:
            wall = frames[-1].host_done - frames[0].host_begin
            out["wall_s"] = wall
            out["fps"] = (len(frames) - 1) / (frames[-1].host_done - frames[0].host_done) if wall > 0 else float("nan")
            gpu = sum(f.gpu_ms for f in frames if f.gpu_ms == f.gpu_ms) / 1e3
            out["gpu_busy"] = gpu / wall if wall > 0 else float("nan")
            span = _gpu_span_ms(frames)
            if span > 0:
                # On the GPU's own clock: the part of the span from the first frame's GPU start to the last
                # frame's GPU end that the GPU spent on frames (1.0: no idle gap between frames).
                out["gpu_utilization"] = min(1.0, gpu * 1e3 / span)
        out["covers"] = _covers(frames, frames_total)
        out["dropped_results"] = self.dropped_results
        out["graphs"] = {mode: sum(1 for f in frames if f.graph == mode) for mode in GRAPH_MODES}
        with self._lock:
            out["whole_run_graphs"] = self.graphs.as_dict()
        out["whole_run"] = {name: running.as_dict() for name, running in _totals(held, folded).items()}
        out["whole_run"]["waits"] = folded_waits + sum(1 for f in held if f.waited)
        with self._lock:
            out["whole_run"]["queue_waits"] = dict(self.queue_waits)
        return out

    def to_json(self, path: str | None = None, skip: int = 0) -> str:
        """JSON with the summary, which frames it covers, and every kept frame; written to ``path`` when given.

        All three come from one copy of the statistics, so they agree while frames keep retiring.
        """
        snapshot = self._snapshot()
        kept = snapshot[0][-self.window :]
        text = json.dumps({"summary": self._summary(snapshot, skip, None), "covers": _covers(kept, snapshot[3]),
                           "frames": [asdict(f) for f in kept]}, indent=1)
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text


def _totals(held: list[FrameStats], folded: dict[str, RunningStat]) -> dict[str, RunningStat]:
    """The folded totals with the held frames merged in (new objects)."""
    return {name: running.merged(np.fromiter((getattr(f, name) for f in held), np.float64, len(held)))
            for name, running in folded.items()}
