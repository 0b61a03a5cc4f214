"""Context lifetime and ownership on the GPU: every resource closes with its context, foreign ones are refused."""

from __future__ import annotations

import numpy as np
import pytest

import optixasync
from optixasync import (
    AccelOptions,
    CudaError,
    GeometryAccel,
    Instance,
    InstanceAccel,
    Module,
    Pipeline,
    ProgramGroup,
    ShaderBindingTable,
    TriangleInput,
)
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import cornell_box
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, DEFAULT_TRIANGLE, BusyWorkload

pytestmark = pytest.mark.gpu


def test_close_releases_every_resource_however_it_was_made(ctx):
    before = ctx.memory.used_bytes()
    other = optixasync.Context(warm_up=False)
    module = Module(other, "busy.cu")
    busy = BusyWorkload(other)  # made with the constructors, not the factories
    gas = GeometryAccel(other, TriangleInput(DEFAULT_TRIANGLE))
    ias = InstanceAccel(other, [Instance(gas)])
    sched = FrameScheduler(other, 2, params_dtype=BUSY_PARAMS)
    pipeline = RenderPipeline(other, cornell_box(), RenderOptions(width=32, height=32, spp=1))
    pipeline.render(1)  # its own scheduler, frame slots and a launch, all released with the context
    programs = [(raygen, linked, sbt) for raygen, linked, sbt in pipeline.integrator.variants.values()]
    integrator_module = pipeline.integrator.module
    gas_of_pipeline = pipeline.device_scene.accel
    with sched.frame() as f:
        busy.record(f, spin_ns=0, scale=1.0, n_out=8)
    other.close()
    assert other.closed and other.handle == 0
    assert module.handle == 0 and busy.pipeline.handle == 0 and busy.module.handle == 0
    assert gas.handle == 0 and ias.handle == 0 and gas.buffer is None
    assert sched.closed and pipeline.scheduler.closed
    assert programs and all(linked.handle == 0 and raygen.handle == 0 for raygen, linked, _ in programs)
    assert integrator_module.handle == 0 and gas_of_pipeline.handle == 0
    with pytest.raises(RuntimeError, match="closed"):
        pipeline.render(1)
    other.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        Module(other, "busy.cu")
    import cupy

    cupy.cuda.Device().synchronize()  # the test may wait: the stream-ordered frees have run
    assert ctx.memory.used_bytes() == before  # the closed context left no device memory behind, `f` alive or not


def test_objects_of_another_context_are_refused(ctx):
    with optixasync.Context(warm_up=False) as other:
        module = Module(other, "busy.cu")
        raygen = ProgramGroup.raygen(other, module, "__raygen__busy")
        with pytest.raises(ValueError, match="another context"):
            Pipeline(ctx, [raygen])
        with pytest.raises(ValueError, match="another context"):
            ShaderBindingTable(ctx, raygen)
        gas = GeometryAccel(other, TriangleInput(DEFAULT_TRIANGLE))
        with pytest.raises(ValueError, match="another context"):
            InstanceAccel(ctx, [Instance(gas)])
        busy = BusyWorkload(other)
        sched = FrameScheduler(ctx, 1, params_dtype=BUSY_PARAMS)
        with pytest.raises(ValueError, match="another context"):
            with sched.frame() as f:
                busy.record(f, spin_ns=0, scale=1.0)
        sched.close()


def test_cuda_failures_are_cuda_errors(ctx):
    with pytest.raises(CudaError, match="cudaErrorMemoryAllocation") as info:
        ctx.memory.alloc(1 << 52, ctx.stream)  # 4 PiB
    assert info.value.status == 2
    gas = GeometryAccel(ctx, TriangleInput(DEFAULT_TRIANGLE), AccelOptions(allow_update=True))
    gas.refit(DEFAULT_TRIANGLE + np.float32(0.5))  # the context still works
    ctx.stream.synchronize()


def test_a_missing_device_is_a_cuda_error():
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    with pytest.raises(CudaError, match="device"):
        optixasync.Context(device=count + 3, warm_up=False)


def test_event_done_follows_the_work_it_fences(ctx):
    from optixasync.cuda import create_stream, event_done, record_event, spin_gpu, synchronize

    stream = create_stream()
    spin_gpu(50_000_000, stream)  # 50 ms of work ahead of the event
    event = record_event(stream)
    assert event_done(event) is False
    synchronize(event)
    assert event_done(event) is True
