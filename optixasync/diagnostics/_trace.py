"""Chrome-trace (Perfetto, ``chrome://tracing``) timelines from the frame scheduler's own measurements.

Lanes, one per row of the viewer:

* host / record + submit: each frame from ``begin_frame`` to ``submit``;
* host / slot fence waits: the designed waits in ``begin_frame``;
* host / frame retired: when the scheduler saw each frame's fence pass;
* GPU / frames: each frame's first to last GPU operation (timing events);
* host / stalls (syncwatch): optional, the stalls of a :class:`SyncReport`.

A frame that ran as its slot's CUDA graph is a frame like any other here
(its timing events surround the graph's launch); its name says so
(``frame 12 (graph replay)``, ``(graph capture)``) and its ``graph`` argument
holds how it ran, with the reason of a capture or an eager fallback.

The GPU times are CUDA event times relative to an origin event the
scheduler records when it is created. They are placed on the host clock at
the moment the origin was recorded (its stream is idle then, so the error is
the launch latency, a few microseconds), moved later if needed so that no
frame's GPU work starts before the host began recording it.

The trace covers the frames the scheduler's statistics still hold (its
window of the newest frames); its metadata says which.

Blocking calls
--------------
None: pure logic over :class:`~optixasync.scheduler.FrameStats`, no CUDA call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["chrome_trace", "export_chrome_trace", "gpu_clock_offset"]

HOST_PID, GPU_PID = 1, 2
TID_RECORD, TID_FENCE, TID_RETIRED, TID_STALLS = 1, 2, 3, 4
TID_GPU_FRAMES = 1


def _frames_of(source: Any) -> tuple[list[Any], float]:
    """(frames, GPU origin on the host clock) of a FrameScheduler, SchedulerStats or list of FrameStats."""
    stats = getattr(source, "stats", source)
    frames = getattr(stats, "frames", stats)
    if not isinstance(frames, Sequence):
        raise TypeError(f"expected a FrameScheduler, SchedulerStats or a list of FrameStats, got {type(source).__name__}")
    origin = float(getattr(stats, "gpu_origin_host", math.nan))
    return list(frames), origin


def _frames_total(source: Any, default: int) -> int:
    """Frames the scheduler has retired in all (more than the trace holds once its window is full)."""
    stats = getattr(source, "stats", source)
    return int(getattr(stats, "frames_total", default))


def _finite(*values: float) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def gpu_clock_offset(frames: Sequence[Any], origin_host: float) -> float:
    """Host time (s, ``perf_counter``) of GPU time 0 (the origin event), or NaN without GPU timestamps.

    The origin event executed no earlier than it was recorded, and no
    frame's GPU work started before the host began recording that frame:
    the offset is the latest of those lower bounds.
    """
    bounds = [origin_host] if _finite(origin_host) else []
    for f in frames:
        start = getattr(f, "gpu_start_ms", math.nan)
        if _finite(start, f.host_begin):
            bounds.append(f.host_begin - start / 1e3)
    return max(bounds) if bounds else math.nan


def _frame_name(f: Any) -> tuple[str, dict[str, Any]]:
    """A frame's name in the trace (a graph's replay or capture says so) and its host arguments."""
    graph = getattr(f, "graph", "")
    name = f"frame {f.index}" + (f" (graph {graph})" if graph in ("replay", "capture") else "")
    args = {"submit_ms": f.submit_ms, "launch_ms": f.launch_ms, "fence_wait_ms": f.fence_wait_ms,
            "ahead": f.ahead, "in_flight": f.in_flight}
    if getattr(f, "queue_waits", 0):  # the launch queue's designed waits (optix_queue_limit)
        args["queue_waits"], args["queue_wait_ms"] = f.queue_waits, f.queue_wait_ms
    if graph:
        args["graph"] = graph
        if getattr(f, "graph_reason", ""):
            args["graph_reason"] = f.graph_reason
    return name, args


def chrome_trace(source: Any, *, skip: int = 0, report: Any = None) -> dict[str, Any]:
    """The trace as a dict (``{"traceEvents": [...]}``).

    Parameters
    ----------
    source : FrameScheduler, SchedulerStats or sequence of FrameStats
    skip : int
        Leave out the first ``skip`` frames (warm-up).
    report : SyncReport, optional
        Add its stalls (and designed waits) as a host lane.
    """
    frames, origin = _frames_of(source)
    offset = gpu_clock_offset(frames, origin)
    frames = frames[skip:]
    times = [f.host_begin for f in frames]
    if report is not None:
        times += [r.start_ns / 1e9 for r in list(report.stalls) + list(report.designed)]
    t0 = min(times) if times else 0.0

    def us(t: float) -> float:
        return round((t - t0) * 1e6, 3)

    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": HOST_PID, "args": {"name": "optixasync host"}},
        {"ph": "M", "name": "process_name", "pid": GPU_PID, "args": {"name": "GPU (scheduler stream)"}},
        {"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": TID_RECORD, "args": {"name": "record + submit"}},
        {"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": TID_FENCE, "args": {"name": "slot fence waits"}},
        {"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": TID_RETIRED, "args": {"name": "frame retired"}},
        {"ph": "M", "name": "thread_name", "pid": GPU_PID, "tid": TID_GPU_FRAMES, "args": {"name": "frames"}},
    ]
    for f in frames:
        name, args = _frame_name(f)
        if _finite(f.host_begin, f.host_submit):
            events.append({"ph": "X", "name": name, "cat": "host", "pid": HOST_PID, "tid": TID_RECORD,
                           "ts": us(f.host_begin), "dur": round(max(0.0, f.host_submit - f.host_begin) * 1e6, 3),
                           "args": args})
        if f.waited and _finite(f.fence_wait_ms):
            wait_start = getattr(f, "host_wait_start", math.nan)
            wait_start = wait_start if _finite(wait_start) else f.host_begin
            events.append({"ph": "X", "name": f"fence wait ({name})", "cat": "fence", "pid": HOST_PID,
                           "tid": TID_FENCE, "ts": us(wait_start), "dur": round(f.fence_wait_ms * 1e3, 3)})
        if _finite(f.host_done):
            events.append({"ph": "i", "s": "t", "name": f"{name} retired", "cat": "host", "pid": HOST_PID,
                           "tid": TID_RETIRED, "ts": us(f.host_done)})
        start, end = getattr(f, "gpu_start_ms", math.nan), getattr(f, "gpu_end_ms", math.nan)
        if _finite(start, end, offset):
            events.append({"ph": "X", "name": name, "cat": "gpu", "pid": GPU_PID, "tid": TID_GPU_FRAMES,
                           "ts": us(offset + start / 1e3), "dur": round((end - start) * 1e3, 3),
                           "args": {"gpu_ms": f.gpu_ms, "gap_us": f.gap_us}})
    if report is not None:
        events.append({"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": TID_STALLS,
                       "args": {"name": "stalls (syncwatch)"}})
        for record in list(report.stalls) + list(report.designed):
            label = record.api + (f" ({record.designed})" if record.designed else "")
            events.append({"ph": "X", "name": label, "cat": "designed" if record.designed else "stall",
                           "pid": HOST_PID, "tid": TID_STALLS, "ts": us(record.start_ns / 1e9),
                           "dur": round(record.host_ms * 1e3, 3),
                           "args": {"where": record.where, "code": record.code, "thread": record.thread}})
    return _clean({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"source": "optixasync", "frames": len(frames), "gpu_clock_offset_s": offset,
                      "host_clock": "time.perf_counter",
                      # which frames the trace covers: the scheduler keeps a window of the newest ones
                      "first_frame": frames[0].index if frames else None,
                      "last_frame": frames[-1].index if frames else None,
                      "frames_total": _frames_total(source, len(frames) + skip)},
    })


def _clean(value: Any) -> Any:
    """NaN and infinities become None: JSON has no NaN, and the viewers reject it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def export_chrome_trace(source: Any, path: str, *, skip: int = 0, report: Any = None) -> dict[str, Any]:
    """Write the scheduler's timeline as Chrome-trace JSON to ``path`` (open it in Perfetto); returns the dict.

    Parameters
    ----------
    source : FrameScheduler, SchedulerStats or sequence of FrameStats
    path : str
    skip : int
        Leave out the first ``skip`` frames.
    report : SyncReport, optional
        Add its stalls and designed waits as a host lane.
    """
    trace = chrome_trace(source, skip=skip, report=report)
    with open(path, "w") as f:
        json.dump(trace, f, allow_nan=False, default=str)
    return trace
