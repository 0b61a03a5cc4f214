"""A pipeline, its scheduler and its frames dropped while frames are in flight, in every order: nothing that a
queued launch reads is freed before the frame's fence has passed, and everything is freed after.

On the CPU, over :class:`~optixasync.testing.StubCuda` paused (no recorded work completes until ``resume()``):
the real pipeline, device scene, structures, scheduler and slots. "Freed" is a stream-ordered free enqueued
(``cuda.allocations`` loses the block) or an object collected (a weak reference dies): the launch program and its
records, the scene tables, the accumulation, the slots' parameter staging and buffers. The GPU test doing the
same on a device is ``tests/render/test_dropped_in_flight_gpu.py``.
"""

from __future__ import annotations

import gc
import itertools
import weakref

import pytest

from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import cornell_box
from optixasync.scheduler import FrameScheduler
from optixasync.testing import StubCuda, StubRender

NO_THREAD = {"completion_thread": False}
HOLDERS = ("pipeline", "scheduler", "frames")


@pytest.fixture
def cuda():
    with StubCuda() as stub, StubRender(stub):
        yield stub


def _record_three_frames(ctx, cuda):
    """The issue's repro: a pipeline, a scheduler of 3 slots of its layout, 3 frames of 64 samples in flight."""
    pipeline = RenderPipeline(ctx, cornell_box(), RenderOptions(width=16, height=16, spp=1),
                              scheduler_options=NO_THREAD)
    sched = FrameScheduler(ctx, 3, params_dtype=pipeline.params_dtype, options=NO_THREAD)
    pipeline.render(1)  # set-up work done and passed: what is held from here on is the frames'
    cuda.pause()
    frames = []
    for _ in range(3):
        with sched.frame() as f:
            pipeline.record(f, 64)
        frames.append(f)
    watched = {"pipeline": pipeline, "integrator": pipeline.integrator, "device scene": pipeline.device_scene,
               "accel": pipeline.device_scene.accel}
    for k, slot in enumerate(sched._slots):
        watched[f"slot {k}"] = slot
        watched[f"slot {k} parameters"] = slot.params
        watched[f"slot {k} staging"] = slot.params._staging
    for k, (_raygen, program, sbt) in enumerate(pipeline.integrator.variants.values()):
        watched[f"program {k}"], watched[f"records {k}"] = program, sbt
    refs = {name: weakref.ref(obj) for name, obj in watched.items()}
    return {"pipeline": [pipeline], "scheduler": [sched], "frames": frames}, refs


@pytest.mark.parametrize("order", list(itertools.permutations(HOLDERS)), ids="-then-".join)
def test_nothing_a_frame_in_flight_reads_is_freed_before_its_fence_whatever_is_dropped_first(cuda, order):
    ctx = cuda.context()
    holders, refs = _record_three_frames(ctx, cuda)
    in_use = dict(cuda.allocations)
    assert in_use and all(ref() is not None for ref in refs.values())
    for name in order:
        holders[name].clear()  # the caller lets go of it, without close()
        gc.collect()
        freed = sorted(hex(ptr) for ptr in in_use if ptr not in cuda.allocations)
        gone = sorted(k for k, ref in refs.items() if ref() is None)
        assert not freed and not gone, f"after dropping the {name}: freed {freed}, collected {gone}"
    assert len(ctx.deferred) >= 3  # each frame's set, behind its fence
    cuda.resume()  # the GPU passes the fences
    ctx.deferred.collect()
    gc.collect()
    kept = sorted(k for k, ref in refs.items() if ref() is not None)
    assert not kept, f"held after their fences passed: {kept}"
    ctx.close()
    assert cuda.used_bytes() == 0, cuda.allocations


def test_the_check_can_fail_a_frame_that_holds_nothing_lets_the_pipeline_go(cuda, monkeypatch):
    """Without the context's hold on the frames' sets (the code before), dropping the pipeline first frees it."""
    monkeypatch.setattr(type(cuda.context().deferred), "hold", lambda self, event, *objects: None)
    ctx = cuda.context()
    holders, refs = _record_three_frames(ctx, cuda)
    for frame in holders["frames"]:
        frame.holds.clear()  # and the frames' own holds (their ring goes with the scheduler)
    holders["pipeline"].clear()
    gc.collect()
    assert refs["pipeline"]() is None
    cuda.resume()


def test_a_closed_scheduler_and_pipeline_leave_nothing_held(cuda):
    ctx = cuda.context()
    holders, refs = _record_three_frames(ctx, cuda)
    sched, = holders["scheduler"]
    pipeline, = holders["pipeline"]
    cuda.resume()
    sched.close()
    pipeline.close()
    assert len(ctx.deferred) == 0
    holders.clear()
    del sched, pipeline
    gc.collect()
    assert refs["pipeline"]() is None and refs["slot 0 staging"]() is None


def test_a_release_collected_with_sets_held_hands_them_on_until_their_events_pass(cuda):
    from optixasync.cuda import DeferredRelease

    ctx = cuda.context()
    cuda.pause()

    class Held:
        pass

    release, kept = DeferredRelease(), Held()
    gone = weakref.ref(kept)
    release.after(ctx.stream, kept)
    del kept, release  # a context dropped without close(): its release goes with it
    gc.collect()
    assert gone() is not None
    cuda.resume()
    ctx.deferred.collect()  # any later collection drops the sets whose events have passed
    assert gone() is None
