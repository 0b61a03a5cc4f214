"""Chrome-trace export from the scheduler's own measurements, and the GPU-clock statistics behind it (no GPU)."""

from __future__ import annotations

import json
import math

import pytest

from optixasync.diagnostics import SyncRecord, SyncReport, chrome_trace, export_chrome_trace
from optixasync.scheduler import FrameStats, SchedulerStats

ORIGIN = 100.0  # perf_counter seconds when the origin event was recorded


def make_stats(n: int = 6, period_ms: float = 2.5, gpu_ms: float = 2.0, host_ms: float = 0.4) -> SchedulerStats:
    """A GPU-bound run: frame k records on the host at k*period, runs on the GPU 1 ms later."""
    stats = SchedulerStats()
    stats.gpu_origin_host = ORIGIN
    for k in range(n):
        begin = ORIGIN + 0.001 + k * period_ms / 1e3
        gpu_start = 1.0 + 1.2 + k * period_ms  # ms after the origin: 1.2 ms after the host began
        stats.add(FrameStats(
            index=k, submit_ms=host_ms, launch_ms=0.05, fence_wait_ms=0.3 if k >= 2 else 0.0, waited=k >= 2,
            in_flight=2, ahead=1, gpu_ms=gpu_ms, gap_us=float("nan") if k == 0 else (period_ms - gpu_ms) * 1e3,
            host_begin=begin, host_submit=begin + host_ms / 1e3, host_done=ORIGIN + (gpu_start + gpu_ms + 0.05) / 1e3,
            host_wait_start=begin + 0.00001 if k >= 2 else float("nan"),
            gpu_start_ms=gpu_start, gpu_end_ms=gpu_start + gpu_ms,
        ))
    return stats


def events(trace, pid=None, tid=None, ph=None):
    return [e for e in trace["traceEvents"] if (pid is None or e.get("pid") == pid) and (tid is None or e.get("tid") == tid)
            and (ph is None or e["ph"] == ph)]


def test_lanes_and_durations():
    stats = make_stats()
    trace = chrome_trace(stats)
    names = {(e["pid"], e.get("tid"), e["args"]["name"]) for e in events(trace, ph="M")}
    assert (1, 1, "record + submit") in names and (2, 1, "frames") in names and (1, 2, "slot fence waits") in names
    record = events(trace, pid=1, tid=1, ph="X")
    assert [e["name"] for e in record] == [f"frame {k}" for k in range(6)]
    assert record[0]["ts"] == 0.0  # the earliest host event is time 0
    assert all(e["dur"] == pytest.approx(400.0) for e in record)  # 0.4 ms in microseconds
    assert record[1]["ts"] == pytest.approx(2500.0)
    gpu = events(trace, pid=2, tid=1, ph="X")
    assert len(gpu) == 6 and all(e["dur"] == pytest.approx(2000.0) for e in gpu)
    # GPU start of frame k = origin + 2.2 ms + k*2.5 ms; host frame 0 began at origin + 1 ms
    assert gpu[0]["ts"] == pytest.approx(1200.0) and gpu[3]["ts"] == pytest.approx(1200.0 + 3 * 2500.0)
    fences = events(trace, pid=1, tid=2, ph="X")
    assert [e["name"] for e in fences] == [f"fence wait (frame {k})" for k in range(2, 6)]
    assert all(e["dur"] == pytest.approx(300.0) for e in fences)
    retired = events(trace, pid=1, tid=3, ph="i")
    assert len(retired) == 6 and all(r["ts"] > g["ts"] + g["dur"] for r, g in zip(retired, gpu, strict=True))
    assert gpu[0]["args"]["gap_us"] is None  # NaN becomes null: JSON has no NaN


def test_skip_and_report_lane(tmp_path):
    stats = make_stats()
    stall = SyncRecord("cuStreamSynchronize", "stream-sync", 1.5, start_ns=int((ORIGIN + 0.004) * 1e9),
                       user_frame=("/app.py", 9, "main"))
    fence = SyncRecord("cuEventSynchronize", "event-sync", 0.3, start_ns=int((ORIGIN + 0.006) * 1e9),
                       designed="slot fence")
    path = tmp_path / "trace.json"
    trace = export_chrome_trace(stats, str(path), skip=2, report=SyncReport(stalls=[stall], designed=[fence]))
    loaded = json.loads(path.read_text())
    assert loaded == trace
    assert [e["name"] for e in events(loaded, pid=1, tid=1, ph="X")] == [f"frame {k}" for k in range(2, 6)]
    lane = events(loaded, pid=1, tid=4, ph="X")
    assert [(e["name"], e["cat"]) for e in lane] == [("cuStreamSynchronize", "stall"),
                                                     ("cuEventSynchronize (slot fence)", "designed")]
    assert lane[0]["dur"] == pytest.approx(1500.0) and lane[0]["args"]["where"] == "/app.py:9 in main"
    assert loaded["otherData"]["frames"] == 4
    # which frames the trace covers
    assert (loaded["otherData"]["first_frame"], loaded["otherData"]["last_frame"]) == (2, 5)
    assert loaded["otherData"]["frames_total"] == 6


def test_accepts_a_scheduler_like_object_and_a_list():
    stats = make_stats(3)

    class Scheduler:
        pass

    sched = Scheduler()
    sched.stats = stats
    assert chrome_trace(sched) == chrome_trace(stats)
    plain = chrome_trace(list(stats.frames))  # no origin: GPU placed by the host-begin bound alone
    assert len(events(plain, pid=2, ph="X")) == 3
    with pytest.raises(TypeError, match="FrameScheduler"):
        chrome_trace(42)


def gpu_clock_offset(source) -> float | None:
    """Where the trace placed GPU time 0 on the host clock (None: no GPU timestamps)."""
    return chrome_trace(source)["otherData"]["gpu_clock_offset_s"]


def test_gpu_clock_offset_bounds():
    stats = make_stats()
    assert gpu_clock_offset(stats) == pytest.approx(ORIGIN)
    # If the origin ran late (a busy stream), no frame's GPU work may start before the host began recording it.
    late = make_stats()
    for f in late.frames:  # the stats' own FrameStats objects
        f.gpu_start_ms -= 5.0
        f.gpu_end_ms -= 5.0
    offset = gpu_clock_offset(late)
    assert offset == pytest.approx(max(f.host_begin - f.gpu_start_ms / 1e3 for f in late.frames))
    assert all(offset + f.gpu_start_ms / 1e3 >= f.host_begin - 1e-12 for f in late.frames)
    # on the trace: every GPU frame starts no earlier than the host began recording it
    trace = chrome_trace(late)
    host, gpu = events(trace, pid=1, tid=1, ph="X"), events(trace, pid=2, tid=1, ph="X")
    assert all(g["ts"] >= h["ts"] - 1e-3 for h, g in zip(host, gpu, strict=True))
    assert gpu_clock_offset([FrameStats(index=0)]) is None  # NaN: no origin, no GPU timestamps


def test_frames_without_timing_have_no_gpu_lane():
    stats = SchedulerStats()
    for k in range(3):
        stats.add(FrameStats(index=k, host_begin=k * 0.01, host_submit=k * 0.01 + 0.001))
    trace = chrome_trace(stats)
    assert events(trace, pid=2, ph="X") == []
    assert len(events(trace, pid=1, tid=1, ph="X")) == 3
    json.dumps(trace, allow_nan=False)


def test_gpu_utilization_from_gpu_timestamps():
    summary = make_stats(period_ms=2.5, gpu_ms=2.0).summary()
    # 6 frames of 2 ms over a GPU span of 5*2.5 + 2 ms
    assert summary["gpu_utilization"] == pytest.approx(12.0 / 14.5)
    assert "gpu_busy" in summary  # the host-wall measure is still there
    no_timestamps = SchedulerStats()
    for k in range(3):
        no_timestamps.add(FrameStats(index=k, gpu_ms=1.0, host_begin=k, host_done=k + 0.5))
    assert "gpu_utilization" not in no_timestamps.summary()


def test_new_frame_fields_default_to_nan():
    f = FrameStats(index=0)
    assert math.isnan(f.gpu_start_ms) and math.isnan(f.gpu_end_ms) and math.isnan(f.host_wait_start)
    assert math.isnan(SchedulerStats().gpu_origin_host)
    one = SchedulerStats()
    one.add(f)
    assert "gpu_start_ms" in json.loads(one.to_json())["frames"][0]
