"""syncwatch on the GPU: real stalls caught at the line of this file that caused them; the scheduler's steady
state has none (its slot fences reported apart); validation mode's waits inside optixLaunch are found."""

from __future__ import annotations

import gc
import inspect
import os
import statistics

import numpy as np
import pytest

from optixasync.cuda import create_stream, spin_gpu
from optixasync.diagnostics import SyncDetected, syncwatch
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, BusyWorkload, expected_busy_output

pytestmark = pytest.mark.gpu

HERE = os.path.abspath(__file__)
N = 1 << 20
BUSY_NS = 20_000_000  # 20 ms of GPU work queued ahead of each stall, so its wait is measurable
WAITED_MS = 10.0  # a stall waits for most of it


@pytest.fixture(scope="module", autouse=True)
def _cupti():
    try:
        import cupti.cupti  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"cupti-python is not installed ({exc}): pip install 'optixasync[diagnostics]'")


def next_line() -> int:
    """The line after the caller's: where the call under test is."""
    return inspect.currentframe().f_back.f_lineno + 1


@pytest.fixture(scope="module")
def busy(ctx):
    return BusyWorkload(ctx)


@pytest.fixture
def data(ctx):
    stream = create_stream()
    expected = np.arange(N, dtype=np.float32)
    device = ctx.upload(expected, stream)
    spin_gpu(0, stream)  # loads the spin kernel outside the watches
    stream.synchronize()
    return stream, device, expected


def test_cupy_asnumpy_is_caught_at_its_line(data):
    import cupy

    stream, device, expected = data
    with syncwatch() as watch:
        spin_gpu(BUSY_NS, stream)  # queued inside the watch: starting a watch may itself wait for the GPU
        line = next_line()
        host = cupy.asnumpy(device, stream=stream)
    report = watch.report
    here = report.at(HERE, line)
    assert here, report.render(stack=8)
    assert {r.category for r in here} & {"sync-memcpy", "pageable-memcpy", "stream-sync"}, report.render()
    assert sum(r.host_ms for r in here) >= WAITED_MS, report.render()  # it waited for the queued work
    assert all(r.user_frame == (HERE, line, "test_cupy_asnumpy_is_caught_at_its_line") for r in here)
    np.testing.assert_array_equal(host, expected)


def test_stream_synchronize_is_caught_at_its_line(data):
    stream, _, _ = data
    with syncwatch() as watch:
        spin_gpu(BUSY_NS, stream)
        line = next_line()
        stream.synchronize()
    syncs = [r for r in watch.report.at(HERE, line) if r.category == "stream-sync"]
    assert len(syncs) == 1, watch.report.render(stack=8)
    assert syncs[0].api.startswith("cuStreamSynchronize")
    assert syncs[0].host_ms >= WAITED_MS
    assert syncs[0].designed is None


def test_pageable_device_to_host_copy_is_caught_and_pinned_is_not(ctx, data):
    import cupy

    stream, device, expected = data
    host = np.empty(N, np.float32)  # pageable
    pinned, pinned_view = ctx.pinned.array((N,), np.float32)
    with syncwatch() as watch:
        spin_gpu(BUSY_NS, stream)
        pinned.copy_from_device_async(device, stream, device.nbytes)  # pinned: asynchronous, not a stall
        line = next_line()
        cupy.cuda.runtime.memcpyAsync(host.ctypes.data, device.data.ptr, device.nbytes, cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr)
    report = watch.report
    pageable = [r for r in report.at(HERE, line) if r.category == "pageable-memcpy"]
    assert len(pageable) == 1, report.render(stack=8)
    assert pageable[0].memory == "device -> pageable" and pageable[0].nbytes == device.nbytes
    assert pageable[0].host_ms >= WAITED_MS  # the copy waited for the queued work
    assert not [r for r in report.stalls if r.memory and "pinned" in r.memory], report.render()
    assert report.counts["async_copies_ok"] >= 1
    stream.synchronize()
    np.testing.assert_array_equal(host, expected)
    np.testing.assert_array_equal(pinned_view, expected)


def test_scheduler_steady_state_has_no_stall(ctx, busy):
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS)

    def frame(k: int) -> None:
        with sched.frame() as f:
            busy.record(f, spin_ns=1_000_000, scale=0.5 * k, n_out=64)
        sched.poll()

    for k in range(5):  # first use: readback staging of each slot, SBT readiness
        frame(k)
    gc.collect()  # earlier tests' garbage (pinned buffers of closed contexts) is freed now, not inside the watch
    with syncwatch() as watch:
        for k in range(5, 55):
            frame(k)
    results = sched.drain()
    report = watch.report
    report.assert_no_sync()  # slot fences and the completion thread's waits are excluded by design...
    kinds = [r.designed for r in report.designed]
    assert kinds.count("slot fence") >= 25, report.render()  # ...and reported apart: GPU-bound, the host waits
    assert "completion thread" in kinds, report.render()
    assert all(r.category == "event-sync" for r in report.designed)
    with pytest.raises(SyncDetected):
        report.assert_no_sync(include_designed=True)
    launches = [c for c in report.optix_calls if c.api == "optixLaunch"]
    assert len(launches) == 50 and not any(c.blocked for c in launches)
    for result in results:
        np.testing.assert_array_equal(result["out"], expected_busy_output(result.index, 0.5 * result.index, 64))
    sched.close()


def _validation_run(frames: int = 5):
    import optixasync

    local = optixasync.Context(validation=True)
    busy = BusyWorkload(local)
    sched = FrameScheduler(local, 2, params_dtype=BUSY_PARAMS)
    for _ in range(3):
        with sched.frame() as f:
            busy.record(f, spin_ns=0, scale=1.0)
    sched.drain()
    with syncwatch() as watch:
        for _ in range(frames):
            with sched.frame() as f:
                line = next_line()
                busy.record(f, spin_ns=BUSY_NS, scale=1.0)
    sched.drain()
    local.close()
    return watch.report, line


def test_validation_mode_launch_blocks_at_the_callers_line():
    report, line = _validation_run()
    launches = [c for c in report.optix_calls if c.api == "optixLaunch"]
    assert len(launches) == 5 and all(c.blocked for c in launches), report.render()
    assert all(c.user_frame[:2] == (HERE, line) for c in launches)
    assert statistics.median(c.host_ms for c in launches) >= 4.0  # it waited for the 5 ms launch itself
    assert [r for r in report.stalls if r.api == "optixLaunch"]
    with pytest.raises(SyncDetected, match="optixLaunch"):
        report.assert_no_sync()


def test_validation_mode_synchronization_is_seen_inside_optix_launch():
    """The issue's case: a profiler shows a synchronization inside ``optixLaunch``; syncwatch names it and the line."""
    report, line = _validation_run()
    inside = [r for r in report.stalls if r.inside == "optixLaunch"]
    assert inside, report.render(stack=10)
    assert {r.category for r in inside} & {"stream-sync", "context-sync", "event-sync", "implicit-sync"}
    assert all(r.user_frame[:2] == (HERE, line) for r in inside)
