"""The scheduler's bound on queued OptiX launches (``optix_queue_limit``) on the CPU, over the recording stub.

A real :class:`FrameScheduler` and real pipelines over :class:`optixasync.testing.StubCuda`; ``cuda.pause()``
holds the stub GPU back so launches stay queued until a wait reaches them. What is checked: the bound is off
unless asked for; a frame's launch beyond it waits on the oldest launch of the context (the event recorded
after it), counted in the frame's and the scheduler's statistics with its cause; the bound is the context's,
shared by every scheduler and pipeline of it, and lifted when the scheduler that asked for it closes.
"""

from __future__ import annotations

import numpy as np
import pytest

from optixasync import _config
from optixasync.cuda import _launch_queue
from optixasync.cuda._launch_queue import OTHER_LAUNCH, OWN_LAUNCH
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, StubCuda

N = 8


@pytest.fixture
def cuda(monkeypatch):
    monkeypatch.delenv(_config.OPTIX_QUEUE_LIMIT_ENV, raising=False)
    with StubCuda(record=True) as stub:
        yield stub


@pytest.fixture
def waits(monkeypatch):
    """The events the launch queue waited on (the real wait still made)."""
    seen: list = []
    real = _launch_queue.synchronize

    def spy(event, what=""):
        seen.append(event.ptr)
        real(event, what)

    monkeypatch.setattr(_launch_queue, "synchronize", spy)
    return seen


@pytest.fixture
def recorded(monkeypatch):
    """The events the launch queue recorded after launches, in order (the real record still made)."""
    seen: list = []
    real = _launch_queue._record_raw

    def spy(event, stream):
        seen.append(event.ptr)
        real(event, stream)

    monkeypatch.setattr(_launch_queue, "_record_raw", spy)
    return seen


class Rig:
    """Schedulers over one stub context, each frame one launch of one pipeline."""

    def __init__(self, cuda: StubCuda, recorded: list) -> None:
        self.cuda = cuda
        self.recorded = recorded
        self.ctx = cuda.context()
        self.pipeline = cuda.pipeline(self.ctx)
        self.sbt = cuda.sbt(self.ctx)

    def scheduler(self, slots: int, limit: int | None = None) -> FrameScheduler:
        options = {"completion_thread": False, "optix_queue_limit": limit}
        return FrameScheduler(self.ctx, slots, params_dtype=BUSY_PARAMS, options=options)

    def frame(self, sched: FrameScheduler, k: int, launches: int = 1) -> int:
        """Record frame ``k``; the event the queue recorded after its (first) launch, 0 if none."""
        start = len(self.recorded)
        with sched.frame() as f:
            f.params["frame"] = k
            for _ in range(launches):
                f.launch(self.pipeline, self.sbt, N)
        for result in sched.poll():
            result.release()
        mine = self.recorded[start:]
        return mine[0] if mine else 0


def test_off_by_default_no_event_no_wait(cuda, waits, recorded):
    rig = Rig(cuda, recorded)
    sched = rig.scheduler(4)
    cuda.pause()
    assert [rig.frame(sched, k) for k in range(12)] == [0] * 12  # no event recorded after any launch
    assert waits == [] and rig.ctx.launch_queue.limit is None
    assert sum(f.queue_waits for f in sched.stats.frames) == 0
    assert sched.stats.designed_waits == {"slot fence": sched.stats.waits_total}
    sched.close()


def test_a_frame_beyond_the_bound_waits_on_the_oldest_launch_counted_with_its_cause(cuda, waits, recorded):
    rig = Rig(cuda, recorded)
    sched = rig.scheduler(4, limit=2)  # four slots, but at most two launches queued on the context
    cuda.pause()
    events = [rig.frame(sched, 0), rig.frame(sched, 1)]
    assert all(events) and waits == []
    events.append(rig.frame(sched, 2))
    assert waits == [events[0]]  # frame 2's launch waited for frame 0's
    events.append(rig.frame(sched, 3))
    assert waits == [events[0], events[1]]
    sched.drain()
    frames = {f.index: f for f in sched.stats.frames}
    assert [frames[k].queue_waits for k in range(4)] == [0, 0, 1, 1]
    assert all(frames[k].queue_wait_ms >= 0.0 for k in range(4))
    assert [frames[k].waited for k in range(4)] == [False] * 4  # no slot fence: the queue bounded them first
    assert sched.stats.queue_waits == {OWN_LAUNCH: 2}
    assert sched.stats.designed_waits == {"slot fence": 0, OWN_LAUNCH: 2}
    summary = sched.stats.summary()
    assert summary["optix_queue_waits"] == 2 and summary["whole_run"]["queue_waits"] == {OWN_LAUNCH: 2}
    sched.close()


def test_several_launches_of_one_frame_count_each(cuda, waits, recorded):
    rig = Rig(cuda, recorded)
    sched = rig.scheduler(2, limit=2)
    cuda.pause()
    rig.frame(sched, 0, launches=3)  # the third launch waits for the first, inside the frame
    assert len(waits) == 1
    sched.drain()
    assert sched.stats.frames[0].queue_waits == 1
    sched.close()


def test_the_bound_is_the_contexts_shared_across_schedulers(cuda, waits, recorded):
    rig = Rig(cuda, recorded)
    bounded = rig.scheduler(4, limit=2)
    free = rig.scheduler(4)  # asks for no bound, but launches on the same context
    cuda.pause()
    first = rig.frame(bounded, 0)
    assert first and rig.frame(free, 0)  # the other scheduler's launches are counted too
    assert waits == []
    rig.frame(free, 1)  # the context's third queued launch: waits for bounded's frame 0
    assert waits == [first]
    free.drain()
    assert free.stats.queue_waits == {OTHER_LAUNCH: 1}
    assert bounded.stats.queue_waits == {}
    bounded.close()  # withdraws its bound: the context is unbounded again
    assert rig.ctx.launch_queue.limit is None
    count = len(waits)
    for k in range(2, 10):
        assert rig.frame(free, k) == 0
    assert len(waits) == count
    free.close()


def test_two_bounded_schedulers_take_the_smaller_bound(cuda, recorded):
    rig = Rig(cuda, recorded)
    a, b = rig.scheduler(2, limit=3), rig.scheduler(2, limit=1)
    assert rig.ctx.launch_queue.limit == 1
    b.close()
    assert rig.ctx.launch_queue.limit == 3
    a.close()
    assert rig.ctx.launch_queue.limit is None


def test_the_bound_also_holds_direct_launches_of_the_context(cuda, waits, recorded):
    rig = Rig(cuda, recorded)
    sched = rig.scheduler(4, limit=1)
    cuda.pause()
    event = rig.frame(sched, 0)
    rig.pipeline.launch(rig.sbt, 0xD000, N, stream=rig.ctx.stream, params_size=16)  # not through a frame
    assert waits == [event]
    assert rig.ctx.launch_queue.waits == 1
    sched.close()


def test_a_frame_without_a_launch_never_meets_the_bound(cuda, waits, recorded):
    rig = Rig(cuda, recorded)
    sched = rig.scheduler(2, limit=1)
    cuda.pause()
    for k in range(4):
        with sched.frame() as f:
            f.params["frame"] = k
            f.readback(f.buffer("out", (N,), np.float32), "out")
    assert waits == [] and rig.ctx.launch_queue.launches == 0
    sched.close()
