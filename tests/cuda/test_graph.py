"""StreamGraph and what the cuda layer's mechanisms do while a stream is captured, on the CPU.

The CUDA calls and the driver's graph calls are stubbed and recorded (:class:`optixasync.testing.StubCuda`):
work enqueued on a stream being captured goes into the stub's graph, as CUDA does, so these tests see
what a capture holds and what its launches enqueue.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from optixasync.cuda import Capture, GpuTimer, Readiness, StreamGraph, capture_of, join_streams, record_event
from optixasync.cuda._capture import _active
from optixasync.errors import CudaError, GraphCaptureError, StaleGraphError
from optixasync.testing import StubCuda, StubStream


@pytest.fixture
def cuda():
    with StubCuda(record=True) as stub:
        yield stub


@pytest.fixture
def ctx(cuda):
    return cuda.context()


def copy_work(ctx, device, staging):
    """A host-to-device copy from fixed pinned staging, as a frame's parameters travel."""
    return lambda stream: staging.copy_to_device_async(device, stream)


def test_record_captures_the_work_and_launch_replays_it(cuda, ctx):
    stream = StubStream(non_blocking=True)
    device = ctx.memory.alloc(64, stream)
    staging = ctx.pinned.allocate(64)
    graph = StreamGraph()
    assert graph.record(stream, lambda s: (copy_work(ctx, device, staging)(s), "value")[1]) == "value"
    assert [n[0] for n in cuda.graph_api.graphs[min(cuda.graph_api.graphs)]] == ["memcpy"]
    before = len(cuda.calls)
    for _ in range(3):
        graph.launch(stream)
    assert [c[0] for c in cuda.calls[before:]] == ["graph_launch"] * 3  # nothing else enqueued
    assert (graph.captures, graph.instantiations, graph.updates, graph.launches) == (1, 1, 0, 3)
    assert _active == {}  # the stream is not captured any more
    graph.close()
    assert "destroy_exec" in cuda.names() and not graph.recorded


def test_a_capture_waits_for_an_idle_device_first_and_a_replay_does_not(cuda, ctx):
    """OptiX's own outstanding work would become dependencies on uncaptured work inside a capture: the device is
    settled (cuCtxSynchronize) right before each capture begins, never before a replay."""
    stream = StubStream(non_blocking=True)
    device = ctx.memory.alloc(64, stream)
    staging = ctx.pinned.allocate(64)
    graph = StreamGraph()
    graph.record(stream, copy_work(ctx, device, staging))
    names = cuda.names()
    assert names.count("settle") == 1 and names.index("settle") == names.index("begin_capture") - 1
    graph.launch(stream)
    graph.record(stream, copy_work(ctx, device, staging))  # a new recording settles again
    assert cuda.names().count("settle") == 2


def test_recording_again_updates_in_place_or_instantiates_anew(cuda, ctx):
    stream = StubStream(non_blocking=True)
    device = ctx.memory.alloc(64, stream)
    graph = StreamGraph()
    graph.record(stream, copy_work(ctx, device, ctx.pinned.allocate(64)))
    graph.record(stream, copy_work(ctx, device, ctx.pinned.allocate(64)))  # same topology
    assert (graph.instantiations, graph.updates) == (1, 1)
    graph.record(stream, lambda s: (copy_work(ctx, device, ctx.pinned.allocate(64))(s),
                                    copy_work(ctx, device, ctx.pinned.allocate(64))(s)))  # two copies: another shape
    assert (graph.instantiations, graph.updates) == (2, 1)
    assert cuda.names().count("destroy_exec") == 1  # the replaced executable graph
    graph.close()


def test_launch_records_the_end_event_after_the_graph(cuda):
    import cupy

    stream = StubStream(non_blocking=True)
    graph = StreamGraph()
    with pytest.raises(RuntimeError, match="recorded nothing"):
        graph.launch(stream)
    graph.record(stream, lambda s: None)
    end = cupy.cuda.Event()  # the stub's, while it is entered
    assert graph.launch(stream, end=end) is end
    assert cuda.names()[-2:] == ["graph_launch", "event_record"]  # the end is recorded after the launch
    graph.close()


def test_checks_make_a_graph_stale_and_launch_refuses_it(cuda):
    stream = StubStream(non_blocking=True)
    moved = []
    graph = StreamGraph()
    graph.record(stream, lambda s: capture_of(s.ptr).check(lambda: "moved" if moved else None))
    graph.launch(stream)
    moved.append(1)
    assert graph.stale() == "moved"
    with pytest.raises(StaleGraphError, match="moved"):
        graph.launch(stream)
    graph.launch(stream, check=False)  # the caller's own decision
    graph.close()


def test_after_replay_hooks_get_the_end_event_and_can_ask_for_a_new_recording(cuda):
    stream = StubStream(non_blocking=True)
    seen = []
    graph = StreamGraph()
    graph.record(stream, lambda s: capture_of(s.ptr).after_replay(
        lambda end, st: (seen.append(end), "again" if len(seen) == 2 else None)[1]))
    first = graph.launch(stream)
    assert first is not None and seen == [first]  # no end given: one was made and recorded
    graph.launch(stream)
    assert graph.stale() == "again"
    graph.record(stream, lambda s: None)
    assert graph.stale() is None  # a new recording starts clean
    graph.close()


def test_work_that_raises_discards_the_capture_and_keeps_the_old_graph(cuda, ctx):
    stream = StubStream(non_blocking=True)
    device = ctx.memory.alloc(64, stream)
    graph = StreamGraph()
    graph.record(stream, copy_work(ctx, device, ctx.pinned.allocate(64)))
    with pytest.raises(ZeroDivisionError):
        graph.record(stream, lambda s: 1 / 0)
    assert _active == {} and cuda.graph_api.capturing == {}
    assert graph.recorded and graph.captures == 1
    before = len(cuda.calls)
    graph.launch(stream)
    assert [c[0] for c in cuda.calls[before:]] == ["graph_launch"]
    graph.close()


def test_an_invalidated_capture_raises_graph_capture_error(cuda):
    import cupy

    stream = StubStream(non_blocking=True)
    graph = StreamGraph()
    with pytest.raises(GraphCaptureError, match="invalidated") as info:
        graph.record(stream, lambda s: cupy.cuda.runtime.mallocAsync(16, s.ptr))
    assert isinstance(info.value.__cause__, CudaError)
    assert not graph.recorded and _active == {}


def test_a_stream_is_captured_once_at_a_time(cuda):
    stream = StubStream(non_blocking=True)
    outer = StreamGraph()
    with pytest.raises(GraphCaptureError, match="already being captured"):
        outer.record(stream, lambda s: StreamGraph().record(s, lambda s2: None))
    assert _active == {}


def test_the_garbage_collector_pauses_during_a_capture(cuda):
    states = []
    StreamGraph().record(StubStream(non_blocking=True), lambda s: states.append(gc.isenabled()))
    assert states == [False] and gc.isenabled()


# -- the mechanisms while their stream is captured ------------------------------------------------------------------

def captured(stream, work):
    graph = StreamGraph()
    graph.record(stream, work)
    return graph


@pytest.mark.parametrize("what, call", [
    ("device allocation", lambda ctx, s: ctx.memory.alloc(16, s)),
    ("device allocation", lambda ctx, s: ctx.upload(np.zeros(4, np.float32), s)),
    ("deferred release", lambda ctx, s: ctx.deferred.after(s, object())),
    ("newly leased pinned buffer", lambda ctx, s: ctx.pinned.download(ctx_array(ctx), s)),
    ("event record", lambda ctx, s: record_event(s)),
    ("another stream's work", lambda ctx, s: join_streams(s, ctx.stream)),
])
def test_work_a_graph_cannot_hold_is_refused(cuda, ctx, what, call):
    stream = StubStream(non_blocking=True)
    with pytest.raises(GraphCaptureError, match=what):
        captured(stream, lambda s: call(ctx, s))
    assert _active == {}


def ctx_array(ctx):
    return ctx.memory.empty((4,), np.float32, ctx.stream)  # made on another stream, before the capture


def test_a_free_on_the_captured_stream_waits_for_the_graph(cuda, ctx):
    stream = StubStream(non_blocking=True)
    doomed = [ctx.memory.alloc(16, stream)]
    graph = captured(stream, lambda s: doomed.clear())  # the last reference goes inside the capture
    assert "free_async" not in cuda.names()  # neither captured nor enqueued
    graph.close()
    assert cuda.names().count("free_async") == 1  # freed with the graph, on the stream


def test_readiness_inside_a_capture_adopts_the_end_of_every_launch(cuda, ctx):
    stream = StubStream(non_blocking=True)
    other = StubStream(non_blocking=True)
    ready = Readiness()
    ready.record(ctx.stream)
    before = ready.event
    graph = captured(stream, lambda s: ready.record(s))  # a refit's end, inside the capture
    assert ready.event is before  # nothing happened yet: the graph has not run
    end = graph.launch(stream)
    assert ready.event is end
    ready.order(other)
    assert cuda.calls[-1] == ("stream_wait_event", other.ptr, end.ptr)
    graph.close()


def test_readiness_refuses_a_wait_inside_a_capture_only_when_one_is_needed(cuda, ctx):
    stream = StubStream(non_blocking=True)
    ready = Readiness()
    ready.record(ctx.stream)
    with pytest.raises(GraphCaptureError, match="another stream"):
        captured(stream, lambda s: ready.order(s))
    ready.order(stream)  # ordered outside a capture: from now on the capture needs no wait
    captured(stream, lambda s: ready.order(s)).close()


def test_a_gpu_timer_measures_nothing_inside_a_capture(cuda):
    stream = StubStream(non_blocking=True)
    timer = GpuTimer()
    spans = []
    captured(stream, lambda s: spans.append(timer.start(s)) or spans.append(timer.stop(spans[0], s))).close()
    assert spans[0].start is None and spans[1] is None and timer.pending == 0
    assert "event_record" not in cuda.names(stream)


def test_capture_holds_keeps_objects_until_the_graph_is_closed(cuda):
    import weakref

    class Thing:
        pass

    things = [Thing()]
    alive = weakref.ref(things[0])
    graph = captured(StubStream(non_blocking=True), lambda s: capture_of(s.ptr).hold(things.pop()))
    gc.collect()
    assert alive() is not None
    graph.close()
    gc.collect()
    assert alive() is None


def test_capture_of_is_none_outside_captures():
    assert capture_of(0x5000) is None
    capture = Capture(0x5000)
    capture.hold(1)
    assert capture.holds == [1]


def test_a_cuda_or_optix_error_inside_a_capture_means_uncapturable(cuda):
    from optixasync.errors import OptixError

    def fails(stream):
        raise OptixError(7900, "OPTIX_ERROR_CUDA_ERROR", "optixAccelBuild failed")

    with pytest.raises(GraphCaptureError, match="failed inside the capture") as info:
        StreamGraph().record(StubStream(non_blocking=True), fails)
    assert isinstance(info.value.__cause__, OptixError) and _active == {}
