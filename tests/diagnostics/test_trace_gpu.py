"""The scheduler's per-frame GPU timestamps on a real GPU, the Chrome trace built from them, and NVTX ranges."""

from __future__ import annotations

import json

import numpy as np
import pytest

from optixasync.diagnostics import chrome_trace, disable_nvtx, enable_nvtx, export_chrome_trace
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, BusyWorkload, expected_busy_output

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def busy(ctx):
    return BusyWorkload(ctx)


def run_frames(ctx, busy, count: int, spin_ns: int = 1_000_000) -> FrameScheduler:
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS)
    for _ in range(count):
        with sched.frame() as f:
            busy.record(f, spin_ns=spin_ns, scale=1.0, n_out=32)
        sched.poll()
    results = sched.drain()
    for r in results:
        np.testing.assert_array_equal(r["out"], expected_busy_output(r.index, 1.0, 32))
    return sched


def test_gpu_timestamps_line_up_with_gpu_time_and_host_clock(ctx, busy, tmp_path):
    sched = run_frames(ctx, busy, 12)
    stats = sched.stats
    frames = stats.frames
    assert np.isfinite(stats.gpu_origin_host)
    for f in frames:
        assert f.gpu_end_ms - f.gpu_start_ms == pytest.approx(f.gpu_ms, abs=0.01)
        assert f.gpu_ms >= 0.95  # the 1 ms spin
    for before, after in zip(frames, frames[1:], strict=False):
        assert after.gpu_start_ms >= before.gpu_end_ms - 1e-3  # one stream: frames run in order
    offset = chrome_trace(sched)["otherData"]["gpu_clock_offset_s"]  # where the trace puts GPU time 0
    assert offset >= stats.gpu_origin_host  # the origin event ran no earlier than it was recorded
    for f in frames:
        assert offset + f.gpu_start_ms / 1e3 >= f.host_begin - 1e-6  # no GPU work before the host recorded it
        assert offset + f.gpu_end_ms / 1e3 <= f.host_done + 1e-4  # done before the host saw its fence pass
    summary = stats.summary()
    assert 0.8 <= summary["gpu_utilization"] <= 1.0  # GPU-bound: almost no gap between frames
    path = tmp_path / "frames.json"
    export_chrome_trace(sched, str(path))
    trace = json.loads(path.read_text())
    gpu = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 2]
    assert len(gpu) == 12 and all(e["dur"] >= 950 for e in gpu)
    sched.close()


def test_frames_with_nvtx_ranges_on(ctx, busy):
    pytest.importorskip("nvtx")
    enable_nvtx()
    try:
        sched = run_frames(ctx, busy, 5, spin_ns=0)
        assert len(sched.stats.frames) == 5
        sched.close()
    finally:
        disable_nvtx()
