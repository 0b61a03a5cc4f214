"""The launch-queue bound on the GPU: with ``optix_queue_limit`` on, no host stall inside ``optixLaunch`` in steady
state, the queue's waits designed, counted by cause and reported by syncwatch as ``optix queue``.

The limit is ``OPTIXASYNC_TEST_QUEUE_LIMIT`` (``benchmarks/gpu_runs/stall.sh`` sets it to what the raw rows of
``bench_launch_wait.py`` measured as the ring's depth), else 1: at most one launch queued per context, which
leaves OptiX's ring nothing to wait for whatever its depth.
"""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

from optixasync.cuda import create_stream
from optixasync.diagnostics import syncwatch
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, BusyWorkload, expected_busy_output

pytestmark = pytest.mark.gpu

LIMIT = int(os.environ.get("OPTIXASYNC_TEST_QUEUE_LIMIT") or 1)
FRAMES = 200
WARMUP = 10


@pytest.fixture(scope="module", autouse=True)
def _cupti():
    try:
        import cupti.cupti  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"cupti-python is not installed ({exc}): pip install 'optixasync[diagnostics]'")


@pytest.fixture(scope="module")
def busy(ctx):
    return BusyWorkload(ctx)


def watched_frames(sched, record, frames=FRAMES):
    for k in range(WARMUP):  # first use: readback staging of each slot, SBT readiness
        with sched.frame() as f:
            record(f, k)
        sched.poll()
    gc.collect()
    before = sum(sched.stats.queue_waits.values())
    with syncwatch() as watch:
        for k in range(WARMUP, WARMUP + frames):
            with sched.frame() as f:
                record(f, k)
            sched.poll()
    waits = sum(sched.stats.queue_waits.values()) - before
    return watch.report, waits, sched.drain()


def check_report(report, waits):
    assert report.launch_stalls() == 0, report.render(stack=6)
    assert [r for r in report.stalls if r.inside == "optixLaunch"] == [], report.render(stack=6)
    causes = report.designed_by_cause()
    assert causes.get("optix queue", {}).get("calls", 0) >= waits, report.render()  # every counted wait reported
    assert all(r.category == "event-sync" for r in report.designed if r.designed == "optix queue")


@pytest.mark.parametrize("in_flight", [2, 3, 4])
def test_busy_steady_state_with_the_bound_has_no_stall_inside_optix_launch(ctx, busy, in_flight):
    sched = FrameScheduler(ctx, in_flight, params_dtype=BUSY_PARAMS, options={"optix_queue_limit": LIMIT})
    assert ctx.launch_queue.limit == LIMIT

    def record(f, k):
        busy.record(f, spin_ns=1_000_000, scale=0.5 * k, n_out=64)

    report, waits, results = watched_frames(sched, record)
    check_report(report, waits)
    report.assert_no_sync()  # nothing else stalled either: the slot fences and the queue's waits are designed
    if LIMIT < in_flight:
        assert waits > 0 and set(sched.stats.queue_waits) == {"optix queue (own launch)"}
    for result in results:
        np.testing.assert_array_equal(result["out"], expected_busy_output(result.index, 0.5 * result.index, 64))
    sched.close()
    assert ctx.launch_queue.limit is None  # withdrawn with the scheduler


@pytest.mark.parametrize("in_flight", [2, 3, 4])
def test_path_tracer_steady_state_with_the_bound_has_no_stall_inside_optix_launch(ctx, in_flight):
    from optixasync.render import RenderOptions, RenderPipeline
    from optixasync.scene import cornell_box

    stream = create_stream()
    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=256, height=256, spp=1, max_depth=4),
                        stream=stream) as pipeline:
        sched = FrameScheduler(ctx, in_flight, params_dtype=pipeline.params_dtype, stream=stream,
                               options={"optix_queue_limit": LIMIT})
        report, waits, results = watched_frames(sched, lambda f, k: pipeline.record(f, 1, readback="image"), 100)
        check_report(report, waits)
        assert results and all(np.isfinite(r["image"]).all() for r in results)
        sched.close()


def test_the_queue_waits_on_real_launch_events(ctx, busy):
    """Raw launches of 2 ms each, bounded at 2: every launch after the second waits, and the work is right."""
    import cupy

    from optixasync.cuda import synchronize

    stream = create_stream()
    out = cupy.zeros(64, cupy.float32)
    params = np.zeros(1, BUSY_PARAMS)
    params["out"], params["spin_ns"], params["frame"], params["scale"] = out.data.ptr, 2_000_000, 3, 0.5
    device = cupy.asarray(np.frombuffer(params.tobytes(), np.uint8))
    busy.pipeline.launch(busy.sbt, int(device.data.ptr), 64, stream=stream, params_size=BUSY_PARAMS.itemsize)
    synchronize(stream)
    queue = ctx.launch_queue
    queue.request("test", 2)
    try:
        start = queue.waits
        for _ in range(6):
            busy.pipeline.launch(busy.sbt, int(device.data.ptr), 64, stream=stream, params_size=BUSY_PARAMS.itemsize)
        assert queue.waits - start == 4  # launches 3 to 6 each found two queued
        synchronize(stream)
        assert queue.queued == 0
    finally:
        queue.withdraw("test")
    np.testing.assert_array_equal(cupy.asnumpy(out), expected_busy_output(3, 0.5, 64))
