"""The delivery rule and the bounded result queue, on the CPU with fake fences.

The retirement logic (:class:`optixasync.scheduler._completion.Completion`) has no public door that
runs without a GPU, so these tests drive it directly with frames whose fences are plain objects; the
GPU tests (``test_delivery_gpu.py``) check the same rule through ``FrameScheduler``.
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

from optixasync.errors import FrameAbortedError
from optixasync.scheduler import FrameHandle, FrameResult, FrameRing, FrameStats, SchedulerOptions, SchedulerStats
from optixasync.scheduler._completion import Completion  # pure retirement logic: no public CPU door
from optixasync.scheduler._results import ResultQueue  # the poll queue's bound and policy


class FakeFence:
    def __init__(self, done: bool = True) -> None:
        self.done = done

    def synchronize(self) -> None:
        self.done = True


class FakeScheduler:
    """What a FrameHandle asks of its scheduler."""

    def __init__(self) -> None:
        self.completion: Completion | None = None
        self._threaded = False

    def _claim(self, handle: FrameHandle) -> None:
        from optixasync.scheduler import FrameScheduler

        FrameScheduler._claim(self, handle)  # the scheduler's own rule, with this stand-in's lock and queue

    @property
    def _lock(self):
        return self.completion._lock

    @property
    def _completion(self):
        return self.completion

    def _wait_for(self, handle: FrameHandle, deadline: float | None) -> bool:
        return self.completion.retire_through(handle.index, deadline) and handle._done.wait(0)


class FakeFrame:
    def __init__(self, index: int, scheduler: FakeScheduler, readbacks=None, error=None) -> None:
        self.index = index
        self.stats = FrameStats(index=index)
        self.handle = FrameHandle(index, scheduler)
        self.readbacks = list((readbacks or {}).items())
        self.holds = [object()]
        self.span = None
        self.error = error


def make(keep_results=True, max_queued_results=4, on_full="drop_oldest", window=8):
    options = SchedulerOptions(timing=False, completion_thread=False, keep_results=keep_results,
                               max_queued_results=max_queued_results, on_full=on_full, stats_window=window)
    scheduler = FakeScheduler()
    ring: FrameRing = FrameRing(2)
    stats = SchedulerStats(options.stats_window)
    completion = Completion(ring, threading.RLock(), options, stats, stream=None)
    scheduler.completion = completion
    return scheduler, ring, completion, stats


def submit(ring: FrameRing, frame: FakeFrame, done: bool = True) -> None:
    index, _slot, blocker = ring.begin()
    assert index == frame.index
    if blocker is not None:
        blocker.fence.synchronize()
    ring.submit(FakeFence(done), frame)


def run(scheduler, ring, completion, count, **frame_args):
    frames = []
    for k in range(count):
        frame = FakeFrame(k, scheduler, **frame_args)
        if k >= ring.slots:
            completion.retire_through(k - ring.slots)
        submit(ring, frame)
        frames.append(frame)
    completion.run_callbacks(completion.retire_completed())
    return frames


# -- the queue ---------------------------------------------------------------------------------------------------

def result(k: int) -> FrameResult:
    return FrameResult(k, {"x": np.full(3, k)}, FrameStats(index=k))


def test_queue_drops_the_oldest_beyond_its_bound_and_counts():
    queue = ResultQueue(3, drop_oldest=True)
    dropped = [queue.put(result(k)) for k in range(5)]
    assert [d.index if d else None for d in dropped] == [None, None, None, 0, 1]
    assert queue.dropped == 2 and len(queue) == 3
    assert [r.index for r in queue.take_all()] == [2, 3, 4]
    assert len(queue) == 0


def test_queue_without_dropping_reports_overflow():
    queue = ResultQueue(2, drop_oldest=False)
    for k in range(3):
        assert queue.put(result(k)) is None
    assert queue.overflowing and queue.dropped == 0 and len(queue) == 3


def test_queue_discard_removes_one_result():
    queue = ResultQueue(4, drop_oldest=True)
    for k in range(3):
        queue.put(result(k))
    queue.discard(1)
    queue.discard(7)  # unknown: nothing happens
    assert [r.index for r in queue.take_all()] == [0, 2]


# -- results -----------------------------------------------------------------------------------------------------

def test_result_views_copy_and_release():
    data = np.arange(6, dtype=np.float32)
    r = FrameResult(3, {"image": data[:3]}, FrameStats(index=3))
    assert r["image"].base is data  # a view, no copy
    kept = r.copy()
    assert kept["image"].base is None and np.array_equal(kept["image"], [0, 1, 2])
    with r:
        assert r["image"][2] == 2
    assert r.released
    with pytest.raises(RuntimeError, match="released"):
        r["image"]
    with pytest.raises(RuntimeError, match="released"):
        r.copy()
    assert np.array_equal(kept["image"], [0, 1, 2])
    with pytest.raises(KeyError, match="no readback 'depth'"):
        kept["depth"]


def test_release_lets_the_buffer_go():
    class Buffer(bytearray):
        pass

    buffer = Buffer(16)
    alive = weakref.ref(buffer)
    r = FrameResult(0, {"x": np.frombuffer(buffer, np.uint8)}, FrameStats(index=0))
    del buffer
    gc.collect()
    assert alive() is not None  # the result's view holds it
    r.release()
    gc.collect()
    assert alive() is None  # nothing else did


# -- the delivery rule -------------------------------------------------------------------------------------------

def test_unclaimed_results_go_to_the_poll_queue_in_order():
    scheduler, ring, completion, stats = make()
    frames = run(scheduler, ring, completion, 4, readbacks={"x": np.zeros(2)})
    assert [r.index for r in completion.results.take_all()] == [0, 1, 2, 3]
    assert all(f.handle.done() for f in frames)
    assert stats.frames_total == 4 and [f.index for f in stats.frames] == [0, 1, 2, 3]
    assert all(f.holds == [] and f.readbacks == [] for f in frames)  # temporaries and views let go


def test_a_result_asked_for_before_completion_skips_the_queue():
    scheduler, ring, completion, _ = make()
    frames = [FakeFrame(k, scheduler) for k in range(3)]
    seen = []
    frames[1].handle.add_done_callback(lambda h: seen.append(h.result().index))
    for frame in frames:
        submit(ring, frame, done=False)
        if frame.index == 1:
            break
    completion.retire_through(1)
    submit(ring, frames[2])
    completion.retire_through(2)
    assert seen == [1]
    assert [r.index for r in completion.results.take_all()] == [0, 2]


def test_a_result_taken_by_handle_after_completion_leaves_the_queue():
    scheduler, ring, completion, _ = make()
    frames = run(scheduler, ring, completion, 3)
    assert frames[1].handle.result().index == 1
    assert [r.index for r in completion.results.take_all()] == [0, 2]


def test_keep_results_off_queues_nothing_and_handles_still_deliver():
    scheduler, ring, completion, _ = make(keep_results=False)
    frames = run(scheduler, ring, completion, 3)
    assert completion.results.take_all() == []
    assert [f.handle.result().index for f in frames] == [0, 1, 2]


def test_drop_oldest_counts_in_the_stats(caplog):
    scheduler, ring, completion, stats = make(max_queued_results=2)
    run(scheduler, ring, completion, 5)
    assert [r.index for r in completion.results.take_all()] == [3, 4]
    assert stats.dropped_results == 3
    assert sum("was dropped" in m for m in caplog.messages) == 1  # logged once, counted always


def test_raise_policy_keeps_everything_and_reports_overflow():
    scheduler, ring, completion, stats = make(max_queued_results=2, on_full="raise")
    run(scheduler, ring, completion, 4)
    assert completion.results.overflowing and stats.dropped_results == 0
    assert [r.index for r in completion.results.take_all()] == [0, 1, 2, 3]


def test_aborted_frames_deliver_no_result():
    scheduler, ring, completion, _ = make()
    frame = FakeFrame(0, scheduler, error=ValueError("boom"))
    submit(ring, frame)
    completion.retire_through(0)
    with pytest.raises(FrameAbortedError, match="boom"):
        frame.handle.result()
    assert completion.results.take_all() == []


def test_result_timeout_waits_once(monkeypatch):
    """Without the completion thread, result(timeout) on a frame that never completes waits ``timeout``, once."""
    import time

    from optixasync.scheduler import FrameScheduler

    scheduler, ring, completion, _ = make()
    frame = FakeFrame(0, scheduler)
    submit(ring, frame, done=False)
    handle = frame.handle

    class Unthreaded:  # what FrameScheduler._wait_for reads of its scheduler
        _threaded = False
        _completion = completion

    scheduler._wait_for = lambda h, deadline: FrameScheduler._wait_for(Unthreaded, h, deadline)
    start = time.perf_counter()
    with pytest.raises(TimeoutError):
        handle.result(timeout=0.2)
    elapsed = time.perf_counter() - start
    assert 0.19 <= elapsed < 0.35, elapsed
