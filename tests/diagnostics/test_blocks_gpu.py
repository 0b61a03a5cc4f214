"""``blocks()`` on the GPU: validation-mode launches and pageable uploads wait for queued work; normal launches,
builds from device or pinned arrays and pinned uploads do not."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.accel import GeometryAccel, TriangleInput
from optixasync.cuda import create_stream
from optixasync.diagnostics import blocks
from optixasync.testing import BUSY_PARAMS, BusyWorkload, grid_mesh

pytestmark = pytest.mark.gpu

N_OUT = 64


def busy_launcher(ctx, stream):
    """A zero-spin launch of the busy raygen on ``stream``, parameters already on the device."""
    busy = BusyWorkload(ctx)
    out = ctx.memory.empty((N_OUT,), np.float32, stream)
    params = np.zeros((), BUSY_PARAMS)
    params["out"], params["spin_ns"], params["frame"], params["scale"] = out.data.ptr, 0, 1, 2.0
    params_device = ctx.upload(params, stream)

    def launch():
        busy.pipeline.launch(busy.sbt, params_device, N_OUT, stream=stream, params_size=BUSY_PARAMS.itemsize)

    return launch, (busy, out, params_device)


def test_probe_sanity_stream_synchronize_blocks():
    stream = create_stream()
    result = blocks(stream.synchronize, stream)
    assert result, str(result)
    assert result.gpu_done_at_return and result.host_ms >= 10.0


def test_normal_launch_does_not_block(ctx):
    stream = create_stream()
    launch, _keep = busy_launcher(ctx, stream)
    result = blocks(launch, stream)
    assert not result, str(result)
    assert not result.gpu_done_at_return and result.host_ms < 5.0


def test_validation_mode_launch_blocks():
    import optixasync

    local = optixasync.Context(validation=True)
    stream = create_stream()
    launch, _keep = busy_launcher(local, stream)
    result = blocks(launch, stream)
    assert result, str(result)
    assert result.host_ms >= 10.0  # of the 20 ms queued ahead
    del _keep
    local.close()


def test_accel_builds_from_device_and_pinned_staging_do_not_block(ctx):
    vertices, indices = grid_mesh(300)  # 180,000 triangles
    stream = create_stream()
    dv, di = ctx.upload(vertices, stream), ctx.upload(indices, stream)
    from_device = blocks(lambda: GeometryAccel(ctx, TriangleInput(dv, di), stream=stream), stream)
    assert not from_device, str(from_device)

    def from_host():
        ctx.deferred.collect()  # staging of the previous run back to the pinned pool: no new cuMemHostAlloc
        return GeometryAccel(ctx, TriangleInput(vertices, indices), stream=stream)

    pinned = blocks(from_host, stream, busy_ms=50.0)
    assert not pinned, str(pinned)


def test_pageable_upload_blocks_and_pinned_upload_does_not(ctx):
    import cupy

    runtime = cupy.cuda.runtime
    stream = create_stream()
    host = np.arange(16 << 20, dtype=np.float32)  # 64 MiB of pageable memory
    device = ctx.memory.empty(host.shape, np.float32, stream)
    pageable = blocks(lambda: runtime.memcpyAsync(device.data.ptr, host.ctypes.data, host.nbytes,
                                                  runtime.memcpyHostToDevice, stream.ptr), stream, busy_ms=50.0)
    assert pageable, str(pageable)
    staging, view = ctx.pinned.array(host.shape, np.float32)
    view[...] = host
    pinned = blocks(lambda: staging.copy_to_device_async(device, stream, host.nbytes), stream, busy_ms=50.0)
    assert not pinned, str(pinned)
    np.testing.assert_array_equal(cupy.asnumpy(device[:1000], stream=stream), host[:1000])
