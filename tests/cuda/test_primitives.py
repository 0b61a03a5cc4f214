"""The CUDA layer's shared mechanisms, on the CPU with stand-in streams and events.

``Readiness`` (ordering a stream after an event once), ``GpuTimer`` (pooled
timing events), ``EventPool`` and the CUDA error translation are used by every
layer above; their logic is checked here with objects that record what the
driver would be asked to do.
"""

from __future__ import annotations

import pytest

from optixasync import cuda
from optixasync.errors import CudaError


class FakeEvent:
    created = 0

    def __init__(self) -> None:
        FakeEvent.created += 1
        self.ptr = 0x1000 + FakeEvent.created
        self.done = False
        self.recorded_on: list[int] = []

    def record(self, stream) -> None:
        self.recorded_on.append(stream.ptr)
        self.done = False


class FakeStream:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


@pytest.fixture
def waits(monkeypatch):
    """Every cudaStreamWaitEvent asked for, as (stream handle, event ptr)."""
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr("optixasync.cuda._ready.wait_event", lambda stream, event: calls.append((stream, event.ptr)))
    monkeypatch.setattr("optixasync.cuda._ready.as_cupy_stream", lambda stream: stream)
    monkeypatch.setattr("optixasync.cuda._ready.record_event", lambda stream: _recorded(stream))
    monkeypatch.setattr("optixasync.cuda._ready.event_done", lambda event: event.done)  # the query, of a stand-in
    return calls


def _recorded(stream):
    event = FakeEvent()
    event.record(stream)
    return event


def test_readiness_orders_each_stream_once_per_event(waits):
    a, b, c = FakeStream(11), FakeStream(12), FakeStream(13)
    ready = cuda.Readiness()
    assert ready.order(b) == 12 and waits == []  # nothing recorded yet: nothing to wait for
    event = ready.record(a)
    ready.order(a)  # the recording stream is ordered already
    ready.order(b)
    ready.order(b)
    ready.order(c)
    assert waits == [(12, event.ptr), (13, event.ptr)]
    second = ready.record(b)
    ready.order(a)
    ready.order(b)
    assert waits[2:] == [(11, second.ptr)]


def test_readiness_adopt_takes_an_existing_event(waits):
    ready = cuda.Readiness()
    event = FakeEvent()
    ready.adopt(event, FakeStream(21))
    assert not ready.done
    ready.order(FakeStream(22))
    assert waits == [(22, event.ptr)]
    event.done = True
    assert ready.done


def test_readiness_refuses_the_legacy_default_stream(waits):
    ready = cuda.Readiness()
    ready.adopt(FakeEvent(), FakeStream(30))
    with pytest.raises(ValueError, match="legacy default stream"):
        ready.order(0)


def test_event_pool_reuses_given_back_events(monkeypatch):
    made = []
    monkeypatch.setattr("optixasync.cuda._events.timing_event", lambda: made.append(FakeEvent()) or made[-1])
    pool = cuda.EventPool(timing=True)
    first = pool.acquire()
    pool.release(first)
    assert pool.acquire() is first and pool.created == 1
    pool.acquire()
    assert pool.created == 2 and len(made) == 2


def test_gpu_timer_reads_finished_spans_in_order_and_recycles_their_events(monkeypatch):
    monkeypatch.setattr("optixasync.cuda._events.timing_event", FakeEvent)
    monkeypatch.setattr("optixasync.cuda._timer.elapsed_ms", lambda a, b: float(b.ptr - a.ptr))
    timer = cuda.GpuTimer()
    stream = FakeStream(5)
    spans = []
    for _ in range(3):
        span = timer.start(stream)
        timer.stop(span, stream)
        spans.append(span)
    assert timer.poll() is None and timer.pending == 3
    spans[0].end.done = spans[0].start.done = True
    spans[2].end.done = True  # finished out of order: read only after the ones before it
    assert timer.poll() == spans[0].end.ptr - spans[0].start.ptr and timer.pending == 2
    spans[1].end.done = True
    assert timer.poll() == spans[2].end.ptr - spans[2].start.ptr and timer.pending == 0
    created = FakeEvent.created
    span = timer.start(stream)
    timer.stop(span, stream)
    assert FakeEvent.created == created  # both events came from the pool


def test_cuda_errors_become_cuda_error():
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    with pytest.raises(CudaError, match=r"cudaErrorMemoryAllocation: cudaMallocAsync of 64 bytes failed") as info:
        with cuda.cuda_errors("cudaMallocAsync of 64 bytes"):
            raise CUDARuntimeError(2)
    assert info.value.status == 2 and info.value.name == "cudaErrorMemoryAllocation"
    with pytest.raises(KeyError):  # other exceptions pass through untouched
        with cuda.cuda_errors("x"):
            raise KeyError("k")


def test_stream_handle_accepts_stream_likes_and_refuses_the_default():
    class Protocol:
        def __cuda_stream__(self):
            return (0, 77)

    assert cuda.stream_handle(FakeStream(9)) == 9
    assert cuda.stream_handle(Protocol()) == 77
    assert cuda.stream_handle(123) == 123
    for bad in (0, 1):
        with pytest.raises(ValueError, match="legacy default stream"):
            cuda.stream_handle(bad)
    with pytest.raises(TypeError, match="expected a CUDA stream"):
        cuda.stream_handle("stream")
    with pytest.raises(TypeError):
        cuda.stream_handle(True)


# --- event queries and deferred release ---------------------------------------------------------------------------


def fake_runtime(monkeypatch, status: int):
    """A CUDA runtime whose ``cudaEventQuery`` answers ``status``, with CuPy's real error type."""
    pytest.importorskip("cupy")
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    queried: list[int] = []
    runtime = type("Runtime", (), {"CUDARuntimeError": CUDARuntimeError,
                                   "eventQuery": staticmethod(lambda ptr: queried.append(ptr) or status)})
    monkeypatch.setattr("optixasync.cuda._events._get_runtime", lambda: runtime)
    return queried


@pytest.mark.parametrize(("status", "done"), [(0, True), (600, False)])
def test_event_done_reads_success_and_not_ready(monkeypatch, status, done):
    queried = fake_runtime(monkeypatch, status)
    event = FakeEvent()
    assert cuda.event_done(event) is done
    assert queried == [event.ptr]


def test_event_done_raises_the_error_of_failed_work(monkeypatch):
    fake_runtime(monkeypatch, 700)  # cudaErrorIllegalAddress: sticky, CuPy's Event.done would say False for ever
    with pytest.raises(CudaError, match="cudaErrorIllegalAddress: querying an event") as info:
        cuda.event_done(FakeEvent())
    assert info.value.status == 700


@pytest.fixture
def deferred(monkeypatch):
    """A DeferredRelease over stand-in events (their ``done`` is the query's answer)."""
    monkeypatch.setattr("optixasync.cuda._deferred.as_cupy_stream", lambda stream: stream)
    monkeypatch.setattr("optixasync.cuda._deferred.record_event", _recorded)
    monkeypatch.setattr("optixasync.cuda._deferred.event_done", _query)
    return cuda.DeferredRelease()


def _query(event) -> bool:
    if getattr(event, "failed", False):
        raise CudaError(700, "cudaErrorIllegalAddress", "querying an event failed")
    return event.done


def test_deferred_release_frees_in_order_up_to_the_first_pending(deferred):
    events = [deferred.after(FakeStream(40), object()) for _ in range(3)]
    events[0].done = events[2].done = True
    assert deferred.collect() == 1 and len(deferred) == 2  # the third waits behind the second
    events[1].done = True
    assert deferred.collect() == 2 and len(deferred) == 0


def test_deferred_release_keeps_objects_when_the_query_fails(deferred):
    event = deferred.after(FakeStream(41), object())
    event.failed = True
    with pytest.raises(CudaError, match="cudaErrorIllegalAddress"):
        deferred.collect()
    assert len(deferred) == 1  # never known to be free of the GPU: still held


def test_deferred_release_collects_each_set_once_across_threads(deferred):
    import threading

    events = [deferred.after(FakeStream(42), object()) for _ in range(2000)]
    for event in events:
        event.done = True
    counts: list[int] = []
    threads = [threading.Thread(target=lambda: counts.append(deferred.collect())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == 2000 and len(deferred) == 0
