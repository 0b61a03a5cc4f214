"""The frame scheduler on the GPU: correct, complete, in-order readbacks; run-ahead; validation mode."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import numpy as np
import pytest

from optixasync.scheduler import FrameAbortedError, FrameScheduler
from optixasync.testing import BUSY_PARAMS, BusyWorkload, expected_busy_output

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def busy(ctx):
    return BusyWorkload(ctx)


@pytest.mark.parametrize("frames_in_flight", [1, 2, 3])
def test_readbacks_correct_complete_in_order(ctx, busy, frames_in_flight):
    scales = np.random.default_rng(frames_in_flight).uniform(-10, 10, 40).astype(np.float32)
    # every result waits for the drain below: the poll queue must hold them all (it is bounded)
    sched = FrameScheduler(ctx, frames_in_flight, params_dtype=BUSY_PARAMS,
                           options={"max_queued_results": len(scales)})
    handles = []
    for scale in scales:
        with sched.frame() as f:
            busy.record(f, spin_ns=20_000, scale=float(scale), n_out=64)
        handles.append(f.handle)
    results = sched.drain()
    assert [r.index for r in results] == list(range(len(scales)))
    assert sched.stats.dropped_results == 0
    for k, (scale, result, handle) in enumerate(zip(scales, results, handles, strict=True)):
        np.testing.assert_array_equal(result["out"], expected_busy_output(k, scale, 64))
        assert handle.result() is result
    sched.close()


def test_stress_10000_frames_random_host_delays(ctx, busy):
    rng = random.Random(7)
    sched = FrameScheduler(ctx, 3, params_dtype=BUSY_PARAMS, options={"keep_results": False})
    seen: list[int] = []
    wrong: list[int] = []
    lock = threading.Lock()

    def check(handle):
        result = handle.result()
        with lock:
            seen.append(result.index)
            if not np.array_equal(result["out"], expected_busy_output(result.index, result.index * 0.5, 8)):
                wrong.append(result.index)

    for k in range(10_000):
        if rng.random() < 0.05:
            time.sleep(rng.uniform(0, 200e-6))
        with sched.frame() as f:
            busy.record(f, spin_ns=rng.choice([0, 0, 5_000]), scale=k * 0.5, n_out=8)
        f.handle.add_done_callback(check)
    sched.drain()
    sched.close()
    assert wrong == []
    # every frame exactly once; callbacks of two frames may run in two threads (FrameHandle.add_done_callback), so
    # not necessarily in order: a callback added to a frame already retired runs at once in the adding thread
    assert sorted(seen) == list(range(10_000))


def test_host_runs_ahead_under_slow_gpu_work(ctx, busy):
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS)
    with sched.frame() as f0:
        busy.record(f0, spin_ns=50_000_000, scale=1.0)  # 50 ms of GPU work
    submitted_at = time.perf_counter()
    with sched.frame() as f1:
        busy.record(f1, spin_ns=1_000, scale=2.0)
    # frame 1 was recorded and submitted while frame 0 was still running on the GPU
    assert not f0.handle.done()
    assert sched.in_flight == 2
    assert time.perf_counter() - submitted_at < 0.025
    r1 = f1.handle.result(timeout=5)
    assert f0.handle.done()  # frames complete in order
    np.testing.assert_array_equal(r1["out"], expected_busy_output(1, 2.0, 256))
    stats = sched.stats.frames
    assert stats[1].ahead == 1 and stats[1].in_flight == 2
    sched.close()


def test_result_timeout_and_abort_keep_scheduler_usable(ctx, busy):
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS)
    with sched.frame() as f:
        busy.record(f, spin_ns=200_000_000, scale=1.0)
    with pytest.raises(TimeoutError):
        f.handle.result(timeout=0.01)
    with pytest.raises(ZeroDivisionError):
        with sched.frame() as bad:
            busy.record(bad, spin_ns=0, scale=3.0)
            1 / 0  # noqa: B018
    with pytest.raises(FrameAbortedError):
        bad.handle.result(timeout=5)
    with sched.frame() as g:
        busy.record(g, spin_ns=0, scale=4.0)
    result = g.handle.result(timeout=5)
    np.testing.assert_array_equal(result["out"], expected_busy_output(g.index, 4.0, 256))
    assert f.handle.result().index == 0  # the completed frame was not lost
    sched.close()


def test_asyncio_await(ctx, busy):
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS)

    async def main():
        with sched.frame() as f:
            busy.record(f, spin_ns=1_000_000, scale=5.0)
        return await f.handle

    result = asyncio.run(main())
    np.testing.assert_array_equal(result["out"], expected_busy_output(0, 5.0, 256))
    sched.close()


def test_close_context_with_frames_in_flight():
    import optixasync

    local = optixasync.Context()
    busy = BusyWorkload(local)
    sched = FrameScheduler(local, 3, params_dtype=BUSY_PARAMS)
    for _ in range(3):
        with sched.frame() as f:
            busy.record(f, spin_ns=5_000_000, scale=1.0)
    local.close()  # waits for the device, then closes the scheduler and the pipeline
    assert f.handle.done()
    assert local.closed


def test_validation_mode_blocks_launch():
    import optixasync

    timings = {}
    for validation in (False, True):
        local = optixasync.Context(validation=validation)
        busy = BusyWorkload(local)
        sched = FrameScheduler(local, 2, params_dtype=BUSY_PARAMS)
        for _ in range(6):
            with sched.frame() as f:
                busy.record(f, spin_ns=20_000_000, scale=1.0)
        sched.drain()
        frames = sched.stats.frames[2:]
        timings[validation] = (np.median([s.launch_ms for s in frames]), np.median([s.ahead for s in frames]))
        local.close()
    # validation off: optixLaunch returns long before the 20 ms of GPU work ends; the host runs ahead
    assert timings[False][0] < 5.0 and timings[False][1] >= 1
    # validation on: optixLaunch waits for the GPU work, no frame is left in flight
    assert timings[True][0] > 18.0 and timings[True][1] == 0
