"""Device memory the render pipeline leaves behind, on the CPU: none once what held it is closed.

The pipeline, its device scene, its scheduler and the structures are the real ones over
:class:`~optixasync.testing.StubCuda`, which counts the stream-ordered allocations (``ctx.memory.used_bytes()``
reads them). The GPU tests check the same on the device's pool (``test_context_gpu.py``,
``test_bad_input_matrix_gpu.py``).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from optixasync import GeometryAccel, Instance, InstanceAccel, TriangleInput
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import cornell_box
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, DEFAULT_TRIANGLE, StubCuda, StubRender

NO_THREAD = {"completion_thread": False}


@pytest.fixture
def cuda():
    with StubCuda() as stub, StubRender(stub):
        yield stub


def test_a_closed_context_leaves_none_of_its_device_memory_behind_whatever_the_caller_still_holds(cuda):
    before = cuda.used_bytes()
    ctx = cuda.context()
    gas = GeometryAccel(ctx, TriangleInput(DEFAULT_TRIANGLE))
    ias = InstanceAccel(ctx, [Instance(gas)])
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS, options=NO_THREAD)
    pipeline = RenderPipeline(ctx, cornell_box(), RenderOptions(width=32, height=32, spp=1),
                              scheduler_options=NO_THREAD)
    pipeline.render(1)  # a still: the slot's still sums, 32 x 32 float4
    for result in pipeline.frames(2):  # progressive frames: the accumulation and the slots' images
        result.release()
    programs = list(pipeline.integrator.variants.values())
    busy_pipeline, busy_sbt = cuda.pipeline(ctx), cuda.sbt(ctx)
    with sched.frame() as f:
        out = f.buffer("out", (8,), np.float32)
        f.launch(busy_pipeline, busy_sbt, 8)
        f.readback(out, "out")
    del out
    assert cuda.used_bytes() > before
    ctx.close()
    # pipeline, programs, ias and the frame f are still held here: none of them may hold device memory.
    assert ctx.memory.used_bytes() == before, cuda.allocations
    assert pipeline.scheduler.closed and sched.closed and ias.handle == 0 and programs


def test_a_closed_scheduler_leaves_no_slot_buffer_behind_while_the_pipeline_lives(cuda):
    ctx = cuda.context()
    pipeline = RenderPipeline(ctx, cornell_box(), RenderOptions(width=16, height=16, spp=1),
                              scheduler_options=NO_THREAD)
    for _ in range(pipeline.frames_in_flight):
        pipeline.render(1)  # every slot of the pipeline's own scheduler has its still buffer
    before = cuda.used_bytes()
    sched = FrameScheduler(ctx, 1, params_dtype=pipeline.params_dtype, options=NO_THREAD)
    f = sched.begin_frame()
    pipeline.record(f, 1, readback=None)  # the slot's 16 x 16 image buffer, 1 KiB
    with pytest.raises(RuntimeError, match="once per frame"):
        pipeline.record(f, 1, readback=None)
    sched.close()
    del f
    gc.collect()
    assert cuda.used_bytes() == before, cuda.allocations
    pipeline.render(1)  # the pipeline still renders, and its stills leave nothing behind either
    assert cuda.used_bytes() == before
    ctx.close()
    assert cuda.used_bytes() == 0


def test_a_still_launch_is_filled_whole_and_not_remembered(cuda):
    ctx = cuda.context()
    pipeline = RenderPipeline(ctx, cornell_box(), RenderOptions(width=8, height=8, spp=4, samples_per_launch=1),
                              scheduler_options=NO_THREAD)
    pipeline.render()  # four launches, each with parameters of its own
    assert pipeline.integrator._refill._blocks == {}
    for result in pipeline.frames(2):
        result.release()
    assert len(pipeline.integrator._refill._blocks) == 2  # one per slot of the pipeline's scheduler
    ctx.close()
    assert pipeline.integrator._refill._blocks == {}
