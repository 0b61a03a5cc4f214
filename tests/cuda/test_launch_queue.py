"""The launch queue of an OptiX context on the CPU: what it counts, which event it waits on, when it is on.

Real :class:`~optixasync.program.Pipeline` launches over the recording stub (:class:`optixasync.testing.StubCuda`):
``cuda.pause()`` holds the stub GPU back, so recorded launches stay queued until a synchronization reaches them,
and the stub's call log shows which event each launch recorded after itself. The wait is spied on where the
queue makes it (its module's ``synchronize``), the real one still called.
"""

from __future__ import annotations

import numpy as np
import pytest

from optixasync import _config
from optixasync.cuda import LaunchQueue, _launch_queue
from optixasync.cuda._launch_queue import OTHER_LAUNCH, OWN_LAUNCH
from optixasync.scheduler import SchedulerOptions
from optixasync.testing import StubCuda


@pytest.fixture
def cuda(monkeypatch):
    monkeypatch.delenv(_config.OPTIX_QUEUE_LIMIT_ENV, raising=False)
    with StubCuda(record=True) as stub:
        yield stub


@pytest.fixture
def waits(monkeypatch):
    """The events the launch queue synchronized on, in order (the real wait still made)."""
    seen: list = []
    real = _launch_queue.synchronize

    def spy(event, what=""):
        seen.append(event.ptr)
        real(event, what)

    monkeypatch.setattr(_launch_queue, "synchronize", spy)
    return seen


class Launcher:
    """A pipeline and SBT of one context over the stub, launching on one stream."""

    def __init__(self, cuda: StubCuda, ctx=None) -> None:
        self.cuda = cuda
        self.ctx = ctx or cuda.context()
        self.pipeline = cuda.pipeline(self.ctx)
        self.sbt = cuda.sbt(self.ctx)
        self.stream = self.ctx.stream
        self.params = np.zeros(16, np.uint8)

    def launch(self, owner=None) -> int:
        """Launch once; the event the queue recorded after it (0 when none was)."""
        start = len(self.cuda.calls)
        self.pipeline.launch(self.sbt, 0xD000, 8, stream=self.stream, params_size=16, queue_owner=owner)
        after = self.cuda.calls[start:]
        names = [c[0] if c[0] != "captured" else c[2][0] for c in after]
        launch = names.index("optixLaunch")
        records = [c for c in after[launch + 1:] if c[0] == "event_record"]
        return records[0][2] if records else 0


def test_the_queue_is_off_by_default_and_records_nothing(cuda, waits):
    assert SchedulerOptions().optix_queue_limit is None
    one = Launcher(cuda)
    assert one.ctx.launch_queue.limit is None
    cuda.pause()
    assert [one.launch() for _ in range(12)] == [0] * 12  # no event after any launch
    assert waits == [] and one.ctx.launch_queue.launches == 0 and one.ctx.launch_queue.waits == 0


def test_a_launch_beyond_the_limit_waits_on_the_oldest_launch_event(cuda, waits):
    one = Launcher(cuda)
    queue = one.ctx.launch_queue
    queue.request("test", 2)
    cuda.pause()  # nothing completes unless waited for
    events = [one.launch(), one.launch()]
    assert all(events) and waits == []  # two queued, within the limit
    assert queue.queued == 2
    events.append(one.launch())
    assert waits == [events[0]]  # the third waited for the first launch's event, not another
    events.append(one.launch())
    assert waits == [events[0], events[1]]  # then for the second: always the oldest
    assert queue.waits == 2 and queue.launches == 4 and queue.queued == 2


def test_launches_that_have_passed_are_not_counted(cuda, waits):
    one = Launcher(cuda)
    one.ctx.launch_queue.request("test", 1)
    for _ in range(10):  # the stub GPU is infinitely fast: each launch has passed before the next
        assert one.launch()
    assert waits == [] and one.ctx.launch_queue.launches == 10


def test_the_count_is_per_context_shared_by_its_pipelines(cuda, waits):
    a = Launcher(cuda)
    a2 = Launcher(cuda, a.ctx)  # another pipeline of the same context
    b = Launcher(cuda)  # another context
    a.ctx.launch_queue.request("test", 2)
    b.ctx.launch_queue.request("test", 2)
    cuda.pause()
    first = a.launch()
    a2.launch()
    b.launch()
    b.launch()  # b's own two: b waits for none of a's
    assert waits == []
    a2.launch()  # the context's third: waits for the first pipeline's launch
    assert waits == [first]
    assert a.ctx.launch_queue.waits == 1 and b.ctx.launch_queue.waits == 0


def test_the_smallest_limit_asked_for_applies_and_withdrawing_restores(cuda):
    one = Launcher(cuda)
    queue = one.ctx.launch_queue
    queue.request("x", 4)
    queue.request("y", 2)
    assert queue.limit == 2
    queue.withdraw("y")
    assert queue.limit == 4
    queue.withdraw("x")
    queue.withdraw("x")  # idempotent
    assert queue.limit is None


def test_lowering_the_limit_waits_until_a_launch_fits(cuda, waits):
    one = Launcher(cuda)
    queue = one.ctx.launch_queue
    queue.request("x", 4)
    cuda.pause()
    events = [one.launch() for _ in range(4)]
    queue.request("y", 2)
    wait = queue.make_room("x")
    # Four queued, room for one under a limit of 2: the three oldest are waited for, oldest first.
    assert waits == events[:3]
    assert wait is not None and wait.launch == 0 and wait.limit == 2 and queue.queued == 1
    assert queue.waits == 1  # one designed wait (of three events)


def test_the_cause_tells_an_own_launch_from_another_launchers(cuda):
    one = Launcher(cuda)
    queue = one.ctx.launch_queue
    queue.request("x", 1)
    cuda.pause()
    mine, theirs = object(), object()
    one.launch(owner=mine)
    assert queue.make_room(mine).cause == OWN_LAUNCH
    one.launch(owner=theirs)
    assert queue.make_room(mine).cause == OTHER_LAUNCH
    one.launch()  # a direct launch: no owner
    assert queue.make_room(None).cause == OTHER_LAUNCH


def test_a_captured_launch_is_not_counted(cuda, waits):
    from optixasync.cuda import StreamGraph

    one = Launcher(cuda)
    one.ctx.launch_queue.request("x", 1)
    cuda.pause()
    recorded: list = []
    StreamGraph().record(one.stream, lambda s: recorded.extend([one.launch(), one.launch()]))
    assert recorded == [0, 0]  # no event record, no wait inside the capture
    assert waits == [] and one.ctx.launch_queue.launches == 0


def test_the_environment_sets_a_limit_for_every_new_context(cuda, monkeypatch):
    monkeypatch.setenv(_config.OPTIX_QUEUE_LIMIT_ENV, "3")
    assert LaunchQueue().limit == 3
    ctx = cuda.context()
    assert ctx.launch_queue.limit == 3
    ctx.launch_queue.request("x", 5)
    assert ctx.launch_queue.limit == 3  # the smallest wins
    monkeypatch.setenv(_config.OPTIX_QUEUE_LIMIT_ENV, "")
    assert LaunchQueue().limit is None


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5"])
def test_a_bad_environment_limit_is_refused_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv(_config.OPTIX_QUEUE_LIMIT_ENV, text)
    with pytest.raises(ValueError, match=_config.OPTIX_QUEUE_LIMIT_ENV):
        LaunchQueue()


@pytest.mark.parametrize("limit", [0, -1, True, 2.0, "2"])
def test_a_bad_limit_is_refused(limit, monkeypatch):
    monkeypatch.delenv(_config.OPTIX_QUEUE_LIMIT_ENV, raising=False)
    with pytest.raises(ValueError, match="optix_queue_limit"):
        SchedulerOptions(optix_queue_limit=limit)
    with pytest.raises(ValueError, match="optix_queue_limit"):
        LaunchQueue().request("x", limit)
