"""The delivery rule, zero-copy results and flat memory, through FrameScheduler on the GPU."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest

from optixasync import AccelOptions, GeometryAccel, TriangleInput
from optixasync.cuda import spin_gpu
from optixasync.errors import ResultsOverflowError
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, BusyWorkload, expected_busy_output, grid_mesh

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def busy(ctx):
    return BusyWorkload(ctx)


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def record(sched, busy, k, n_out=64):
    with sched.frame() as f:
        busy.record(f, spin_ns=5_000, scale=0.5, n_out=n_out)
    return f


def test_results_are_views_of_pinned_memory_and_correct(ctx, busy):
    with FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS) as sched:
        for k in range(6):
            record(sched, busy, k)
        results = sched.drain()
    assert [r.index for r in results] == list(range(6))
    for r in results:
        out = r["out"]
        assert out.base is not None and not out.flags.owndata  # a view: the completion thread copied nothing
        np.testing.assert_array_equal(out, expected_busy_output(r.index, 0.5, 64))
        kept = r.copy()
        r.release()
        np.testing.assert_array_equal(kept["out"], expected_busy_output(r.index, 0.5, 64))


def test_a_handle_claimed_before_completion_is_not_polled(ctx, busy):
    with FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS) as sched:
        delivered = []
        for k in range(20):
            f = record(sched, busy, k)
            if k % 2:
                f.handle.add_done_callback(lambda h: delivered.append(h.result().index))
        polled = [r.index for r in sched.drain()]
    assert sorted(delivered) == list(range(1, 20, 2))
    assert polled == list(range(0, 20, 2))  # each result exactly once, in order


def test_unconsumed_results_are_bounded_and_drops_counted(ctx, busy):
    with FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS, options={"max_queued_results": 5}) as sched:
        for k in range(40):
            record(sched, busy, k)
        sched.drain()
        assert sched.stats.dropped_results == 35
        assert sched.stats.summary()["dropped_results"] == 35
    with FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS, options={"max_queued_results": 5}) as sched:
        for k in range(12):
            record(sched, busy, k)
        assert [r.index for r in sched.drain()] == list(range(7, 12))  # the newest five


def test_raise_policy_stops_the_producer_until_polled(ctx, busy):
    options = {"max_queued_results": 3, "on_full": "raise"}
    with FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS, options=options) as sched:
        with pytest.raises(ResultsOverflowError, match="poll"):
            for k in range(50):
                record(sched, busy, k)
                time.sleep(0.001)
        polled = sched.drain()
        assert [r.index for r in polled] == list(range(len(polled))) and len(polled) >= 4
        assert sched.stats.dropped_results == 0
        record(sched, busy, len(polled))  # usable again once drained


def test_result_timeout_waits_once_without_the_completion_thread(ctx, busy):
    with FrameScheduler(ctx, 1, params_dtype=BUSY_PARAMS, options={"completion_thread": False}) as sched:
        with sched.frame() as f:
            spin_gpu(2_000_000_000, f)  # 2 s of GPU work in the frame
            busy.record(f, spin_ns=0, scale=1.0, n_out=8)
        start = time.perf_counter()
        with pytest.raises(TimeoutError):
            f.handle.result(timeout=0.3)
        elapsed = time.perf_counter() - start
        assert 0.29 <= elapsed < 0.5, elapsed  # before the fix it waited the timeout twice
        np.testing.assert_array_equal(f.handle.result()["out"], expected_busy_output(0, 1.0, 8))


def test_work_passed_the_frame_counts_in_its_gpu_time(ctx, busy):
    with FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS) as sched:
        for _ in range(3):
            with sched.frame() as f:
                spin_gpu(3_000_000, f)  # 3 ms, enqueued through the frame before its launch
                busy.record(f, spin_ns=0, scale=1.0, n_out=8)
        sched.drain()
        frames = sched.stats.frames
    assert all(s.gpu_ms >= 2.9 for s in frames), [s.gpu_ms for s in frames]


def test_refit_through_the_frame_is_ordered_and_timed(ctx, busy):
    vertices, indices = grid_mesh(64)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_update=True))
    with FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS) as sched:
        for k in range(5):
            with sched.frame() as f:
                gas.refit(vertices + np.float32(0.01 * k), stream=f)
                busy.record(f, spin_ns=0, scale=1.0, n_out=8)
        sched.drain()
        assert all(s.gpu_ms == s.gpu_ms and s.gpu_ms > 0 for s in sched.stats.frames)
    assert gas.refits == 5 and gas.refit_ms is not None


@pytest.mark.parametrize("mode", ["poll", "handles", "callbacks", "none"])
def test_memory_stays_flat(ctx, busy, mode):
    """Host RSS and device memory after warm-up stay flat over 3000 frames in each consumption mode."""
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS, options={"stats_window": 256})
    seen: list[int] = []
    pending: list = []

    def run(start, count):
        for k in range(start, start + count):
            f = record(sched, busy, k, n_out=4096)
            if mode == "handles":
                pending.append(f.handle)
                if len(pending) > 2:
                    seen.append(pending.pop(0).result().index)
            elif mode == "callbacks":
                f.handle.add_done_callback(lambda h: seen.append(h.result().index))
            elif mode == "poll":
                seen.extend(r.index for r in sched.poll())

    def finish():
        results = sched.drain()
        if mode == "poll":
            seen.extend(r.index for r in results)
        while pending:
            seen.append(pending.pop(0).result().index)
        sched.stream.synchronize()  # the test may wait: every stream-ordered free has run
        gc.collect()

    run(0, 500)
    finish()
    rss, device = rss_mib(), ctx.memory.used_bytes()
    run(500, 3000)
    finish()
    growth, device_after = rss_mib() - rss, ctx.memory.used_bytes()
    sched.close()
    print(f"{mode}: RSS growth {growth:.1f} MiB, device used {device} -> {device_after} bytes")
    assert growth < 20, f"host memory grew by {growth:.1f} MiB over 3000 frames ({mode})"
    assert device_after == device, f"device memory {device} -> {device_after} bytes ({mode})"
    assert len(sched.stats.frames) == 256 and sched.stats.frames_total == 3500
    if mode == "none":
        # each drain() took the newest bound's worth; everything older was dropped and counted
        assert sched.stats.dropped_results == 3500 - 2 * sched.options.max_queued_results
    else:
        assert sorted(seen) == list(range(3500)) and sched.stats.dropped_results == 0
