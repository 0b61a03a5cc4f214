"""Per-frame measurements of the frame scheduler and their summary."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["FrameStats", "SchedulerStats"]


@dataclass
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
        Host time spent inside ``optixLaunch`` / ``optixAccelBuild`` calls (part of ``submit_ms``).
    fence_wait_ms : float
        Host time blocked in ``begin_frame`` on the fence of the frame that last used the slot.
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
    """

    index: int
    submit_ms: float = 0.0
    launch_ms: float = 0.0
    fence_wait_ms: float = 0.0
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


def _summary(values: list[float]) -> dict[str, float]:
    data = np.asarray([v for v in values if v == v], dtype=np.float64)  # drop NaN
    if data.size == 0:
        return {"median": float("nan"), "p95": float("nan"), "mean": float("nan"), "n": 0}
    return {
        "median": float(np.median(data)),
        "p95": float(np.percentile(data, 95)),
        "mean": float(data.mean()),
        "n": int(data.size),
    }


def _gpu_span_ms(frames: list[FrameStats]) -> float:
    """GPU time from the first frame's start to the last frame's end, 0 without GPU timestamps."""
    starts = [f.gpu_start_ms for f in frames if f.gpu_start_ms == f.gpu_start_ms]
    ends = [f.gpu_end_ms for f in frames if f.gpu_end_ms == f.gpu_end_ms]
    if len(starts) != len(frames) or len(ends) != len(frames):
        return 0.0
    return max(ends) - min(starts)


@dataclass
class SchedulerStats:
    """All completed frames' :class:`FrameStats`, with summaries.

    Attributes
    ----------
    frames : list of FrameStats
    gpu_origin_host : float
        ``time.perf_counter()`` just after the scheduler recorded its origin
        event on its (then idle) stream: the host time of GPU time 0 of
        ``FrameStats.gpu_start_ms``/``gpu_end_ms``, to a launch latency. NaN without timing.
    """

    frames: list[FrameStats] = field(default_factory=list)
    gpu_origin_host: float = float("nan")

    def summary(self, skip: int = 0, count: int | None = None) -> dict[str, Any]:
        """Median, p95 and mean of each measurement over the frames after the first ``skip`` (``count`` of them).

        Also ``fps``, ``wall_s``, ``gpu_busy`` (summed frame GPU time over the
        host wall time) and, with GPU timestamps, ``gpu_utilization`` (summed
        frame GPU time over the GPU span of the frames, on the GPU clock).
        """
        frames = self.frames[skip:] if count is None else self.frames[skip : skip + count]
        out: dict[str, Any] = {"frames": len(frames)}
        for name in ("submit_ms", "launch_ms", "fence_wait_ms", "gpu_ms", "gap_us", "in_flight", "ahead"):
            out[name] = _summary([float(getattr(f, name)) for f in frames])
        out["waits_per_frame"] = float(np.mean([f.waited for f in frames])) if frames else float("nan")
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
        return out

    def to_json(self, path: str | None = None, skip: int = 0) -> str:
        """JSON with the summary and every frame; written to ``path`` when given."""
        text = json.dumps({"summary": self.summary(skip), "frames": [asdict(f) for f in self.frames]}, indent=1)
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text
