"""The delivery rule, the bounded result queue and failure handling, on the CPU with fake fences.

The retirement logic (:class:`optixasync.scheduler._completion.Completion`) has no public door that
runs without a GPU, so these tests drive it directly with frames whose fences are plain objects; the
GPU tests (``test_delivery_gpu.py``) check the same rule through ``FrameScheduler``. Where a test needs
``FrameScheduler``'s own methods (``begin_frame``, ``submit``, ``poll``, ``close``), it runs them on a
scheduler assembled without ``__init__`` (which needs a CUDA stream) around such a ``Completion``.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import pytest

from optixasync.errors import FrameAbortedError
from optixasync.scheduler import (
    Frame,
    FrameHandle,
    FrameResult,
    FrameRing,
    FrameScheduler,
    FrameStats,
    SchedulerOptions,
    SchedulerStats,
)
from optixasync.scheduler._completion import Completion  # pure retirement logic: no public CPU door
from optixasync.scheduler._results import ResultQueue  # the poll queue's bound and policy


class FakeFence:
    def __init__(self, done: bool = True) -> None:
        self.done = done

    def synchronize(self) -> None:
        self.done = True

    def record(self, stream) -> None:
        pass


class FakeFrame:
    def __init__(self, index: int, owner: Completion, readbacks=None, error=None) -> None:
        self.index = index
        self.stats = FrameStats(index=index)
        self.handle = FrameHandle(index, owner)
        self.readbacks = list((readbacks or {}).items())
        self.holds = [object()]
        self.span = None
        self.error = error

    retire = Frame.retire  # what retirement asks of a frame: the scheduler's own Frame does it


def make(keep_results=True, max_queued_results=4, on_full="drop_oldest", window=8, thread=False, slots=2):
    options = SchedulerOptions(timing=False, completion_thread=thread, keep_results=keep_results,
                               max_queued_results=max_queued_results, on_full=on_full, stats_window=window)
    ring: FrameRing = FrameRing(slots)
    stats = SchedulerStats(options.stats_window)
    completion = Completion(ring, threading.RLock(), options, stats, stream=None)
    return completion, ring, completion, stats  # the completion side owns the frames' handles


def submit(ring: FrameRing, frame: FakeFrame, done: bool = True, fence=None) -> None:
    """What FrameScheduler.submit does to the ring and the handle (callers of a threaded Completion hold its lock)."""
    index, _slot, blocker = ring.begin()
    assert index == frame.index
    if blocker is not None:
        blocker.fence.synchronize()
    ring.submit(FakeFence(done) if fence is None else fence, frame)
    frame.handle.set_submitted()


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
    scheduler, ring, completion, _ = make()
    frame = FakeFrame(0, scheduler)
    submit(ring, frame, done=False)
    handle = frame.handle

    waits = []
    wait_for = completion.wait_for
    monkeypatch.setattr(completion, "wait_for", lambda h, deadline: waits.append(deadline) or wait_for(h, deadline))
    start = time.perf_counter()
    with pytest.raises(TimeoutError):
        handle.result(timeout=0.2)
    assert time.perf_counter() - start >= 0.19  # it waited its timeout (a bound that cannot flake: no upper one)
    assert len(waits) == 1 and waits[0] is not None  # once, with the deadline


def test_a_polled_result_is_the_object_its_handle_gives():
    """The delivery rule: poll() returns a result once; its handle gives the same object, released for both."""
    scheduler, ring, completion, _ = make()
    frames = run(scheduler, ring, completion, 2, readbacks={"x": np.zeros(2)})
    polled = completion.results.take_all()
    assert [r.index for r in polled] == [0, 1] and completion.results.take_all() == []
    assert frames[0].handle.result() is polled[0]
    polled[0].release()
    with pytest.raises(RuntimeError, match="released"):
        frames[0].handle.result()["x"]


# -- failures: no handle is left pending ---------------------------------------------------------------------------

class Interrupt(BaseException):
    """Stands for KeyboardInterrupt or SystemExit raised by a callback."""


class BlockingFence:
    """A fence whose wait blocks until released, then passes or raises (a device error)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.release = threading.Event()
        self.error = error
        self.passed = False

    @property
    def done(self) -> bool:
        return self.passed

    def record(self, stream) -> None:
        pass

    def synchronize(self) -> None:
        assert self.release.wait(10), "the test never released the fence"
        if self.error is not None:
            raise self.error
        self.passed = True


def in_thread(fn, timeout: float = 5.0):
    """Start ``fn`` in a daemon thread; returns the thread and ``outcome()``: what ``fn`` returned or raised.

    ``outcome()`` waits up to ``timeout`` seconds and fails the test if ``fn`` is still running (it would hang).
    """
    out: list = []

    def target():
        try:
            out.append(fn())
        except BaseException as exc:  # the outcome under test
            out.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()

    def outcome():
        thread.join(timeout)
        if not out:
            pytest.fail("still waiting after the frame could no longer complete: it would hang")
        return out[0]

    return thread, outcome


def submit_threaded(completion, ring, frame, fence) -> None:
    with completion._lock:
        submit(ring, frame, fence=fence)
        completion.notify()


def test_a_device_error_in_the_completion_thread_aborts_the_waiting_handles(caplog):
    scheduler, ring, completion, _ = make(thread=True)
    device_lost = RuntimeError("device lost")
    fence = BlockingFence(error=device_lost)
    frames = [FakeFrame(0, scheduler), FakeFrame(1, scheduler)]
    submit_threaded(completion, ring, frames[0], fence)
    submit_threaded(completion, ring, frames[1], FakeFence(False))
    waiting = [in_thread(f.handle.result) for f in frames]  # result() without timeout, already waiting
    fence.release.set()
    for _thread, outcome in waiting:
        error = outcome()
        assert isinstance(error, FrameAbortedError) and error.__cause__ is device_lost
    assert not completion.threaded  # later frames retire inline
    assert "completion thread stops" in caplog.text
    completion.stop()


def test_await_on_a_frame_aborted_by_the_completion_thread_is_chained_to_the_cause():
    import asyncio

    scheduler, ring, completion, _ = make(thread=True)
    device_lost = RuntimeError("device lost")
    fence = BlockingFence(error=device_lost)
    frame = FakeFrame(0, scheduler)
    submit_threaded(completion, ring, frame, fence)

    async def main():
        waiter = asyncio.ensure_future(asyncio.wait_for(_await(frame.handle), 5))
        await asyncio.sleep(0.05)  # the await is registered before the thread stops
        fence.release.set()
        return await waiter

    with pytest.raises(FrameAbortedError, match="device lost") as info:
        asyncio.run(main())
    assert info.value.__cause__ is device_lost
    completion.stop()


async def _await(handle):
    return await handle


def test_await_on_an_aborted_frame_chains_its_error():
    import asyncio

    scheduler, ring, completion, _ = make(thread=True)
    boom = ValueError("boom")
    frame = FakeFrame(0, scheduler, error=boom)
    submit_threaded(completion, ring, frame, FakeFence(True))
    with pytest.raises(FrameAbortedError, match="boom") as info:
        asyncio.run(asyncio.wait_for(_await(frame.handle), 5))
    assert info.value.__cause__ is boom
    completion.stop()


def test_a_callback_base_exception_in_the_completion_thread_loses_no_frame(caplog):
    scheduler, ring, completion, _ = make(thread=True, slots=4)
    frames = [FakeFrame(k, scheduler) for k in range(3)]
    seen = []

    def interrupt(_handle):
        raise Interrupt()

    frames[0].handle.add_done_callback(interrupt)
    frames[1].handle.add_done_callback(lambda h: seen.append(h.index))
    with completion._lock:  # one batch: frames 0 and 1 have passed, frame 2 never will
        for frame, done in zip(frames, (True, True, False), strict=True):
            submit(ring, frame, done=done)
        completion.notify()
    with pytest.raises(FrameAbortedError) as info:
        frames[2].handle.result(timeout=5)
    assert isinstance(info.value.__cause__, Interrupt)
    assert seen == [1]  # the callback after the raising one still ran
    assert frames[1].handle.result().index == 1
    completion.stop()


def test_a_failing_retirement_finishes_the_rest_of_its_batch():
    scheduler, ring, completion, _ = make(slots=4)
    frames = [FakeFrame(k, scheduler) for k in range(3)]
    for frame in frames:
        submit(ring, frame)
    frames[1].holds = None  # retiring frame 1 raises
    seen = []
    frames[0].handle.add_done_callback(lambda h: seen.append(h.index))
    frames[2].handle.add_done_callback(lambda h: seen.append(h.index))
    with pytest.raises(AttributeError):
        completion.retire_completed()
    assert seen == [0, 2]  # the callbacks of the whole batch ran
    assert frames[0].handle.result().index == 0
    for frame in frames[1:]:
        assert frame.handle.done()
        with pytest.raises(FrameAbortedError) as info:
            frame.handle.result()
        assert isinstance(info.value.__cause__, AttributeError)
    assert len(ring) == 0


def test_result_of_a_frame_not_yet_submitted_raises():
    import asyncio

    scheduler, ring, completion, _ = make(thread=True)
    frame = FakeFrame(0, scheduler)
    with pytest.raises(RuntimeError, match="not been submitted"):
        frame.handle.result(timeout=0.2)
    _thread, outcome = in_thread(frame.handle.result)
    assert isinstance(outcome(), RuntimeError)
    with pytest.raises(RuntimeError, match="not been submitted"):
        asyncio.run(asyncio.wait_for(_await(frame.handle), 1))
    assert not frame.handle.claimed  # asking too early claims nothing
    submit_threaded(completion, ring, frame, FakeFence(True))
    assert frame.handle.result(timeout=5).index == 0
    completion.stop()


def test_retire_through_waits_without_holding_the_lock():
    scheduler, ring, completion, _ = make()
    fence = BlockingFence()
    frame = FakeFrame(0, scheduler)
    submit(ring, frame, fence=fence)
    waiter, outcome = in_thread(frame.handle.result)
    time.sleep(0.05)  # the waiter is in the fence wait
    acquired = completion._lock.acquire(timeout=2)
    if acquired:
        completion._lock.release()
    fence.release.set()
    assert acquired, "the wait held the scheduler's lock"
    assert outcome().index == 0


def test_retirement_folds_the_stats_outside_the_lock():
    scheduler, ring, completion, stats = make(window=2, slots=4)
    folds = []
    fold = stats.fold
    stats.fold = lambda: (folds.append(completion._lock._is_owned()), fold())
    run(scheduler, ring, completion, 9)
    assert folds and not any(folds)
    assert len(stats._frames) < 2 * stats.window and stats.totals["submit_ms"].count == 9


# -- FrameScheduler's own methods, on a scheduler assembled around a CPU Completion ----------------------------------

class FakeStream:
    ptr = 0x5000


class StubSlot:
    def __init__(self, index: int) -> None:
        self.index = index
        self.params = self.params_view = self.destinations = None
        self.released = False

    def release(self) -> None:
        self.released = True


class FakeDeferred:
    """The context's deferred release over fake fences: sets held until their fence is done."""

    def __init__(self) -> None:
        self.held: list = []

    def hold(self, fence, *objects) -> None:
        self.held.append((fence, objects))
        self.collect()

    def collect(self) -> int:
        before = len(self.held)
        while self.held and self.held[0][0].done:
            self.held.pop(0)
        return before - len(self.held)


class FakeContext:
    def __init__(self) -> None:
        self.deferred = FakeDeferred()


def cpu_scheduler(slots: int = 4, thread: bool = False, fences=None) -> FrameScheduler:
    """A FrameScheduler without a GPU: fake fences (from ``fences``, else passed ones), no timing, stub slots."""
    _fake, ring, completion, stats = make(thread=thread, slots=slots)
    fences = iter(fences or ())
    completion.new_fence = lambda: next(fences, None) or FakeFence(True)
    sched = object.__new__(FrameScheduler)
    sched.options, sched.stats, sched.stream, sched.params_dtype = completion._options, stats, FakeStream(), None
    sched.ctx = FakeContext()  # the stub slots and fences need no device; submitted frames' sets are held here
    sched.graphs = False
    sched.queue_token, sched._bounded = object(), None
    sched.frames_in_flight, sched._ring, sched._lock, sched._completion = slots, ring, completion._lock, completion
    sched._slots = [StubSlot(i) for i in range(slots)]
    sched._current, sched._closed = None, False
    return sched


def test_close_ends_the_frame_being_recorded():
    sched = cpu_scheduler()
    with sched.frame():
        pass
    frame = sched.begin_frame()
    slots = sched._slots
    sched.close()
    assert frame.handle.done()
    with pytest.raises(FrameAbortedError, match="closed before frame 1 was submitted"):
        frame.handle.result(timeout=1)
    for work in (lambda: frame.buffer("x", 4, "f4"), lambda: frame.upload(np.zeros(4)), lambda: frame.hold(1)):
        with pytest.raises(RuntimeError, match="closed"):
            work()
    assert sched.closed and all(slot.released for slot in slots)


def test_submit_marks_the_handle_and_result_before_it_raises():
    sched = cpu_scheduler()
    frame = sched.begin_frame()
    _thread, outcome = in_thread(frame.handle.result)  # no timeout: it must not wait for a frame never submitted
    assert isinstance(outcome(), RuntimeError) and "not been submitted" in str(outcome())
    sched.submit(frame)
    assert frame.handle.result(timeout=1).index == 0
    sched.close()


def test_poll_loses_no_result_when_a_callback_raises_a_base_exception():
    sched = cpu_scheduler()
    seen = []

    def interrupt(_handle):
        raise Interrupt()

    for k in range(3):
        with sched.frame() as f:
            pass
        if k == 0:
            f.handle.add_done_callback(interrupt)
        elif k == 1:
            f.handle.add_done_callback(lambda h: seen.append(h.index))
    with pytest.raises(Interrupt):
        sched.poll()
    assert seen == [1]  # the later callback still ran
    assert [r.index for r in sched.poll()] == [2]  # the queued result was kept for the next poll
    sched.close()


def test_begin_frame_recovers_from_a_raising_retirement():
    sched = cpu_scheduler(slots=1, fences=[FakeFence(False)])

    def interrupt(_handle):
        raise Interrupt()

    with sched.frame() as f:
        pass
    f.handle.add_done_callback(interrupt)
    with pytest.raises(Interrupt):
        sched.begin_frame()  # waits for frame 0, retires it, its callback raises
    assert sched.begin_frame().index == 1  # no frame was left half-begun
    sched.close()


def test_close_tears_down_when_draining_raises():
    device_lost = RuntimeError("device lost")
    fence = BlockingFence(error=device_lost)
    fence.release.set()
    sched = cpu_scheduler(fences=[fence])
    with sched.frame() as f:
        pass
    with pytest.raises(RuntimeError, match="device lost"):
        sched.close()
    assert sched.closed
    assert not f.handle.done() and len(sched._ring) == 1  # still in flight: its slots are not released
    assert not any(slot.released for slot in sched._slots)
    with pytest.raises(RuntimeError, match="closed"):
        sched.begin_frame()


def test_close_from_a_callback_on_the_completion_thread():
    sched = cpu_scheduler(thread=True)
    closed = threading.Event()
    errors = []

    def close(handle):
        try:
            sched.close()
        except BaseException as exc:
            errors.append(exc)
        finally:
            closed.set()

    with sched.frame() as f:
        pass
    f.handle.add_done_callback(close)
    assert closed.wait(5)
    assert errors == [] and sched.closed and sched._slots == []
    sched._completion._thread.join(5)
    assert not sched._completion._thread.is_alive()


def test_a_result_with_an_8_bit_image_shows_as_a_png_in_a_notebook():
    import io

    from PIL import Image

    image = np.zeros((6, 8, 4), np.uint8)
    image[..., 0], image[..., 3] = 200, 0  # alpha is not shown: a path-traced image is opaque
    with Image.open(io.BytesIO(FrameResult(0, {"image": image}, FrameStats(index=0))._repr_png_())) as picture:
        assert picture.mode == "RGB" and picture.size == (8, 6)
        assert picture.getpixel((3, 2)) == (200, 0, 0)
    assert FrameResult(0, {"image": image.astype(np.float32)}, FrameStats(index=0))._repr_png_() is None
    assert FrameResult(0, {"x": image}, FrameStats(index=0))._repr_png_() is None


@pytest.mark.parametrize("on_full", ["drop_oldest", "raise"])
def test_drain_returns_every_frame_it_waits_for_beyond_the_queue_bound(on_full):
    """8 frames in flight, a bound of 4: the 8 retire inside drain(), and drain() returns the 8 (the policy was
    meant for results nobody polls, and drain() is about to return them)."""
    fences = [FakeFence(False) for _ in range(8)]
    sched = cpu_scheduler(slots=8, fences=fences)
    sched._completion.results.bound = 2
    sched._completion.results.drop_oldest = on_full == "drop_oldest"
    for _ in range(8):
        with sched.frame():
            pass
    assert [r.index for r in sched.drain()] == list(range(8))
    assert sched.stats.dropped_results == 0 and not sched._completion.results.overflowing
    for _ in range(4):  # outside drain the policy applies again
        with sched.frame():
            pass
    assert len(sched.poll()) == (2 if on_full == "drop_oldest" else 4)


def test_holding_results_keeps_every_result_queued_until_it_ends():
    sched = cpu_scheduler(slots=4)
    sched._completion.results.bound = 1
    with sched.holding_results():
        for _ in range(4):
            with sched.frame():
                pass
        sched._completion.retire_completed()  # the four retire together (what the completion thread does)
        assert len(sched._completion.results) == 4 and not sched._completion.results.overflowing
    assert sched._completion.results.overflowing  # over the bound once the block ended: the policy again
    assert [r.index for r in sched.poll()] == [0, 1, 2, 3]
