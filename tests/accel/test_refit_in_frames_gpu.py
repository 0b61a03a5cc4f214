"""A refit inside a frame never changes what an earlier, still running frame traces."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.accel import AccelOptions, GeometryAccel, TriangleInput
from optixasync.cuda import spin_gpu
from optixasync.scheduler import FrameScheduler
from optixasync.testing import HELLO_PARAMS, HelloRenderer, grid_mesh

pytestmark = pytest.mark.gpu

VIEW = (-0.7, -0.7, 0.7, 0.7)  # inside the 1.6-wide grid: every pixel hits


def test_refit_is_ordered_after_frames_in_flight(ctx):
    sched = FrameScheduler(ctx, 3, params_dtype=HELLO_PARAMS)
    renderer = HelloRenderer(ctx)
    vertices, indices = grid_mesh(64, size=1.6, z=0.0)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_update=True), stream=sched.stream)
    # warm-up: every slot gets its buffers and staging before the timed part
    for _ in range(3):
        with sched.frame() as f:
            gas.refit(vertices, stream=f.stream)
            renderer.record(f, gas.handle, 64, 64)
    sched.drain()
    depths = [0.0, 0.5, 1.25, 0.25]
    handles = []
    for k, z in enumerate(depths):
        with sched.frame() as f:
            gas.refit(vertices + np.array([0, 0, z], np.float32), stream=f.stream)
            spin_gpu(100_000_000, f.stream)  # 100 ms: the next frame is recorded while this one still runs
            renderer.record(f, gas.handle, 64, 64, view=VIEW)
        handles.append(f.handle)
        if k > 0:
            # frame k (and its refit) was enqueued while frame k-1 was still in flight
            assert not handles[k - 1].done()
    results = sched.drain()
    for z, result in zip(depths, results, strict=True):
        distance = result["image"][..., 3]
        assert (distance > 0).all()  # the grid covers the whole view
        np.testing.assert_allclose(distance, 1.0 + z, atol=1e-5)  # eye at z=-1
    sched.close()
