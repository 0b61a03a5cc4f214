"""Frame graphs on the CPU: the capture, replay, invalidation and fallback logic of a real FrameScheduler.

CUDA and OptiX are stubbed (:class:`optixasync.testing.StubCuda`, recording): every call the frames make
is logged, and work enqueued on the scheduler's stream while it is captured goes into the stub's graph
instead, as CUDA does. So these tests see what a frame enqueues eagerly, what its slot's graph holds,
and what a replayed frame enqueues (its timing event, the graph's launch, its fence). Whether the GPU
computes the same in both is the GPU tests' part (``test_graphs_gpu.py``).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from optixasync.errors import FrameAbortedError
from optixasync.program import PipelineOptions
from optixasync.scheduler import FrameScheduler
from optixasync.scheduler._graphs import FIRST, NO_WORK, VALIDATION, key_change
from optixasync.testing import BUSY_PARAMS, StubCuda

N = 16


@pytest.fixture
def cuda():
    with StubCuda(record=True) as stub:
        yield stub


class Rig:
    """A scheduler over the stub with a pipeline, an SBT and the busy frame's work."""

    def __init__(self, cuda: StubCuda, slots: int = 2, validation: bool = False, graphs: bool = True,
                 **pipeline: object) -> None:
        self.cuda = cuda
        self.ctx = cuda.context(validation=validation)
        self.pipeline = cuda.pipeline(self.ctx, **pipeline)
        self.sbt = cuda.sbt(self.ctx)
        self.sched = FrameScheduler(self.ctx, slots, params_dtype=BUSY_PARAMS, graphs=graphs,
                                    options={"completion_thread": False})
        self.shape = (N,)
        self.calls = 0
        self.kept: list = []

    def work(self, f) -> None:
        self.calls += 1
        f.launch(self.pipeline, self.sbt, N)
        f.readback(f.buffer("out", self.shape, np.float32), "out")

    def frame(self, k: int, work=None, keep: bool = False, **options):
        with self.sched.frame(work or self.work, **options) as f:
            f.params["frame"] = k
            f.params["out"] = f.buffer("out", self.shape, np.float32).data.ptr
        for result in self.sched.poll():
            if keep:
                self.kept.append(result)
            else:
                result.release()
        return f

    def modes(self) -> list[str]:
        return [s.graph for s in self.sched.stats.frames]

    def reasons(self) -> list[str]:
        return [s.graph_reason for s in self.sched.stats.frames]


def test_optix_launches_the_driver_cannot_replay_run_eagerly_with_the_reason(cuda):
    from optixasync.program._pipeline import LAUNCH_NOT_REPLAYABLE

    rig = Rig(cuda)
    rig.ctx.api.launches_replay = False  # as the real driver's: a launch inside a capture is refused
    for k in range(8):
        rig.frame(k)
    assert rig.modes() == ["eager"] * 8
    assert rig.reasons()[2:] == [LAUNCH_NOT_REPLAYABLE] * 6  # each slot tried once, then stays eager
    assert rig.calls == 8 + 2  # every frame ran its work; the two refused captures ran it once more each
    launches = [entry for entry in cuda.calls if entry[0] == "optixLaunch"]
    assert len(launches) == 8  # no launch was lost or doubled by the refused captures


def test_a_slot_runs_eagerly_once_captures_then_replays(cuda):
    rig = Rig(cuda)
    for k in range(8):
        rig.frame(k)
    assert rig.modes() == ["eager", "eager", "capture", "capture"] + ["replay"] * 4
    assert rig.reasons()[2] == FIRST and rig.reasons()[0].startswith(FIRST)
    # The work ran for the eager frames and the captures only.
    assert rig.calls == 4
    graphs = cuda.graph_api.graphs
    assert len(graphs) == 2  # one per slot
    for nodes in graphs.values():  # the parameters' copy first, the launch, the readback
        assert [n[0] for n in nodes] == ["memcpy", "optixLaunch", "memcpy"]
        assert nodes[0][1][3] == 1 and nodes[2][1][3] == 2  # host to device, device to host
    stats = rig.sched.stats
    assert (stats.graphs.replays, stats.graphs.captures, stats.graphs.eager) == (4, 2, 2)
    rig.sched.close()


def test_a_replayed_frame_enqueues_its_timing_event_the_graph_and_its_fence(cuda):
    rig = Rig(cuda)
    for k in range(5):
        rig.frame(k)
    start = len(cuda.calls)
    rig.frame(5)
    on_stream = [c[0] for c in cuda.calls[start:] if c[1] == rig.sched.stream.ptr]
    assert on_stream == ["event_record", "graph_launch", "event_record"]
    assert "optixLaunch" not in [c[0] for c in cuda.calls[start:]]
    rig.sched.close()


def test_replayed_results_are_the_slot_destinations_the_graph_copies_into(cuda):
    rig = Rig(cuda)
    for k in range(4):
        rig.frame(k)
    with rig.sched.frame(rig.work) as f:  # frame 4: slot 0, replayed
        f.params["frame"] = 4
    result = f.handle.result()  # claimed before any poll: not released by the rig
    assert rig.sched.stats.frames[4].graph == "replay"
    slot0 = cuda.graph_api.graphs[min(cuda.graph_api.graphs)]
    destination = slot0[2][1][0]  # the captured device-to-host copy's target
    assert result["out"].ctypes.data == destination and result["out"].shape == (N,)
    rig.sched.close()


def test_the_per_frame_parameters_are_written_before_the_graph_launches(cuda):
    rig = Rig(cuda)
    seen = []
    for k in range(6):
        f = rig.frame(k)
        seen.append(int(f.params["frame"]))
    assert seen == list(range(6))  # the with block ran for every frame, replayed ones included
    rig.sched.close()


# -- what changes a frame's shape -----------------------------------------------------------------------------

def test_a_new_key_runs_eagerly_then_captures_again_and_names_what_changed(cuda):
    rig = Rig(cuda, slots=1)
    for k in range(3):
        rig.frame(k, key={"size": (N,), "outputs": ("image",)})
    rig.frame(3, key={"size": (2 * N,), "outputs": ("image",)})
    rig.frame(4, key={"size": (2 * N,), "outputs": ("image",)})
    rig.frame(5, key={"size": (2 * N,), "outputs": ("image",)})
    assert rig.modes() == ["eager", "capture", "replay", "eager", "capture", "replay"]
    assert rig.reasons()[4] == "key changed: size"
    assert rig.sched.stats.graphs.capture_reasons["key changed: size"] == 1
    rig.sched.close()


def test_key_change_names_the_entries_of_mappings_only():
    assert key_change({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 0}) == "key changed: b, c"
    assert key_change((1, 2), (1, 3)) == "key changed"


def test_a_reallocated_buffer_captures_again(cuda):
    rig = Rig(cuda, slots=1)
    for k in range(3):
        rig.frame(k)
    rig.shape = (2 * N,)
    for k in range(3, 6):
        rig.frame(k)
    assert rig.modes() == ["eager", "capture", "replay", "eager", "capture", "replay"]
    assert rig.reasons()[4] == "buffer 'out' reallocated"
    rig.sched.close()


def test_a_check_that_fails_captures_again_after_one_eager_frame(cuda):
    from optixasync.cuda import capture_of

    rig = Rig(cuda, slots=1)
    moved = []

    def work(f):
        capture_of(int(f.stream.ptr)).check(lambda: "the structure was rebuilt" if moved else None) \
            if f.capturing else None
        rig.work(f)

    for k in range(3):
        rig.frame(k, work=work)
    moved.append(True)
    rig.frame(3, work=work)
    moved.clear()
    rig.frame(4, work=work)
    rig.frame(5, work=work)
    assert rig.modes() == ["eager", "capture", "replay", "eager", "capture", "replay"]
    assert rig.reasons()[3].startswith("the structure was rebuilt") and rig.reasons()[4] == "the structure was rebuilt"
    rig.sched.close()


def test_a_hook_that_asks_for_a_new_capture_is_heard_at_the_next_frame(cuda):
    from optixasync.cuda import capture_of

    rig = Rig(cuda, slots=1)
    launches = []

    def hook(end, stream):
        launches.append(end)
        return "the next refit is a full rebuild" if len(launches) == 3 else None

    def work(f):
        if f.capturing:
            capture_of(int(f.stream.ptr)).after_replay(hook)
        rig.work(f)

    for k in range(5):
        rig.frame(k, work=work)
    # frame 1 captures (launch 1), frame 2 replays (2), frame 3 replays (3: the hook asks), frame 4 runs eagerly
    assert rig.modes() == ["eager", "capture", "replay", "replay", "eager"]
    assert rig.reasons()[4].startswith("the next refit is a full rebuild")
    assert all(end is not None for end in launches)  # each hook saw the event recorded after its launch
    rig.sched.close()


# -- readbacks still held as their slot comes round ---------------------------------------------------------------

def test_a_held_result_keeps_its_buffer_and_the_slot_captures_another_variant_at_once(cuda):
    rig = Rig(cuda, slots=1)
    for k in range(3):
        rig.frame(k)
    held = rig.frame(3, keep=True)  # replayed; its result stays referenced
    result = rig.kept[-1]
    address = result["out"].ctypes.data
    rig.frame(4)
    rig.frame(5)
    assert rig.modes() == ["eager", "capture", "replay", "replay", "capture", "replay"]
    assert rig.reasons()[4] == "readbacks still held: another set of destinations"
    assert result["out"].ctypes.data == address  # the held view was not redirected
    latest = cuda.graph_api.graphs[max(cuda.graph_api.graphs)]
    assert latest[2][1][0] != address  # the new variant copies into destinations of its own
    assert held.handle.result() is result
    assert len(rig.sched._slots[0].graph.variants) == 2
    rig.sched.close()


def test_a_loop_that_polls_after_each_frame_settles_on_two_variants_per_slot(cuda):
    rig = Rig(cuda, slots=2)
    cuda.pause()  # the GPU is behind: a frame retires when the host waits for its slot, before the poll
    for k in range(12):
        rig.frame(k)
    cuda.resume()
    rig.sched.drain()
    assert rig.modes() == ["eager"] * 2 + ["capture"] * 4 + ["replay"] * 6
    assert rig.reasons()[4] == rig.reasons()[5] == "readbacks still held: another set of destinations"
    assert [len(slot.graph.variants) for slot in rig.sched._slots] == [2, 2]
    rig.sched.close()


def test_with_every_result_kept_the_oldest_variant_is_handed_over_and_captured_again(cuda):
    from optixasync.scheduler._graphs import MAX_VARIANTS

    rig = Rig(cuda, slots=1)
    for k in range(2):
        rig.frame(k)
    for k in range(2, 8):
        rig.frame(k, keep=True)
    assert rig.modes()[:2] == ["eager", "capture"] and rig.modes()[2:] == ["replay"] + ["capture"] * 5
    assert len(rig.sched._slots[0].graph.variants) == MAX_VARIANTS
    assert rig.reasons()[-1] == "readback 'out' still held when its slot came round"
    addresses = [r["out"].ctypes.data for r in rig.kept]
    assert len(set(addresses)) == len(addresses)  # every kept result has its own buffer
    assert [c[0] for c in cuda.calls].count("update") >= 1  # a recycled variant updates its graph in place
    rig.sched.close()


def test_an_array_taken_from_a_released_result_still_holds_the_buffer(cuda):
    rig = Rig(cuda, slots=1, graphs=False)
    rig.frame(0, keep=True)
    result = rig.kept.pop()
    image = result["out"][2:]  # a view of the destination, kept after the result is released
    result.release()
    del result
    rig.frame(1)
    rig.frame(2)
    slot = rig.sched._slots[0]
    assert slot.destinations.handovers == 1  # frame 1 took a new destination, frame 2 reused that one
    copies = [c for c in cuda.calls if c[0] == "memcpy" and c[2][3] == 2]
    assert copies[0][2][0] != copies[1][2][0] == copies[2][2][0]
    assert image.ctypes.data == copies[0][2][0] + 8
    rig.sched.close()


def test_eager_frames_reuse_a_released_destination(cuda):
    rig = Rig(cuda, slots=2, graphs=False)
    for k in range(6):
        rig.frame(k)
    copies = [c[2][0] for c in cuda.calls if c[0] == "memcpy" and c[2][3] == 2]
    assert copies[0] == copies[2] == copies[4] and copies[1] == copies[3] == copies[5] and copies[0] != copies[1]
    assert sum(1 for c in cuda.calls if c[0] == "pinned_alloc" and c[2] == 4 * N) == 2  # one per slot
    rig.sched.close()


# -- what runs eagerly ----------------------------------------------------------------------------------------

def test_validation_mode_never_captures_and_launches_every_frame(cuda, caplog):
    rig = Rig(cuda, validation=True)
    with caplog.at_level(logging.INFO, logger="optixasync"):
        for k in range(6):
            rig.frame(k)
    assert rig.modes() == ["eager"] * 6 and set(rig.reasons()) == {VALIDATION}
    assert "begin_capture" not in cuda.names()
    assert cuda.names().count("optixLaunch") == 6
    assert sum("validation mode" in m for m in caplog.messages) == 1  # logged once, counted always
    assert rig.sched.stats.graphs.eager_reasons[VALIDATION] == 6
    rig.sched.close()


def test_a_pipeline_with_exception_checks_runs_eagerly_and_is_not_tried_again(cuda):
    from optixasync import ExceptionFlags

    rig = Rig(cuda, slots=1, pipeline_options=PipelineOptions(exception_flags=ExceptionFlags.STACK_OVERFLOW))
    for k in range(5):
        rig.frame(k)
    assert rig.modes() == ["eager"] * 5
    assert "exception checks" in rig.reasons()[1] and rig.reasons()[1] == rig.reasons()[4]
    assert cuda.names().count("begin_capture") == 1  # refused once; the shape is not tried again
    assert cuda.names().count("optixLaunch") == 5  # every frame launched, eagerly
    rig.sched.close()


def test_a_refused_capture_enqueues_nothing_and_runs_the_work_again_eagerly(cuda):
    rig = Rig(cuda, slots=1)

    def work(f):
        rig.work(f)
        f.upload(np.zeros(4, np.float32))  # an upload of host data: a new device array every frame

    for k in range(3):
        rig.frame(k, work=work, keep=True)
    assert rig.modes() == ["eager"] * 3
    assert "device allocation" in rig.reasons()[1]
    # The failed capture's readback was forgotten (else the eager run's would have been refused as a second one).
    assert [sorted(r.readbacks) for r in rig.kept] == [["out"]] * 3
    assert rig.calls == 4  # frame 1's work ran under the capture, then again eagerly
    api = cuda.graph_api
    assert api.capturing == {} and set(api.graphs) == api.destroyed  # the capture was ended and discarded
    assert "instantiate" not in cuda.names()
    assert cuda.names().count("optixLaunch") == 3  # frames 0, 1 (its eager run) and 2: nothing captured ran
    rig.sched.close()


def test_a_capture_the_driver_invalidates_runs_eagerly(cuda):
    import cupy

    rig = Rig(cuda, slots=1)

    def work(f):
        rig.work(f)
        if f.capturing:
            cupy.cuda.runtime.mallocAsync(64, int(f.stream.ptr))  # behind the library's back: invalidates it

    for k in range(3):
        rig.frame(k, work=work)
    assert rig.modes() == ["eager"] * 3
    assert "invalidated the capture" in rig.reasons()[1]
    rig.sched.close()


def test_frames_without_a_work_function_run_eagerly_and_say_why(cuda):
    rig = Rig(cuda)
    for _ in range(3):
        with rig.sched.frame() as f:
            f.launch(rig.pipeline, rig.sbt, N)
    rig.sched.drain()
    assert rig.modes() == ["eager"] * 3 and set(rig.reasons()) == {NO_WORK}
    rig.sched.close()


def test_graph_false_for_one_frame_runs_it_eagerly_without_counting(cuda):
    rig = Rig(cuda, slots=1)
    for k in range(3):
        rig.frame(k)
    rig.frame(3, graph=False)
    rig.frame(4)
    assert rig.modes() == ["eager", "capture", "replay", "", "replay"]
    rig.sched.close()


def test_graphs_off_by_default(cuda):
    ctx = cuda.context()
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS, options={"completion_thread": False})
    assert sched.graphs is False
    sched.close()


def test_a_capture_updates_the_executable_graph_in_place_when_it_can(cuda):
    rig = Rig(cuda, slots=1)
    for k in range(3):
        rig.frame(k, key=1)
    for k in range(3, 6):
        rig.frame(k, key=2)
    updates = [c[2] for c in cuda.calls if c[0] == "update"]
    assert len(updates) == 1 and updates[0][2] is True  # same topology: updated
    assert [c[0] for c in cuda.calls].count("instantiate") == 1
    cuda.graph_api.refuse_update = True
    for k in range(6, 9):
        rig.frame(k, key=3)
    assert [c[0] for c in cuda.calls].count("instantiate") == 2 and "destroy_exec" in cuda.names()
    rig.sched.close()


# -- errors ---------------------------------------------------------------------------------------------------

def test_a_work_function_that_raises_aborts_its_frame_and_the_scheduler_goes_on(cuda):
    rig = Rig(cuda, slots=1)
    for k in range(3):
        rig.frame(k)

    def broken(f):
        raise ZeroDivisionError("in the work")

    with pytest.raises(ZeroDivisionError):
        with rig.sched.frame(broken, key="other") as f:  # a new key: an eager frame
            pass
    with pytest.raises(FrameAbortedError, match="in the work"):
        f.handle.result(timeout=1)
    assert rig.frame(4).handle.result(timeout=1).index == 4
    with pytest.raises(TypeError, match="work must be callable"):
        rig.sched.begin_frame(work=3)
    with pytest.raises(TypeError, match="graph must be a bool"):
        rig.sched.begin_frame(rig.work, graph="yes")
    with pytest.raises(TypeError, match="graphs must be a bool"):
        FrameScheduler(rig.ctx, 2, graphs=1)
    rig.sched.close()


def test_a_work_function_that_raises_during_its_capture_aborts_the_frame(cuda):
    from optixasync.cuda._capture import _active

    rig = Rig(cuda, slots=1)

    def work(f):
        if f.capturing:
            raise ValueError("bad frame")
        rig.work(f)

    rig.frame(0, work=work)  # eager: the next frame of the shape captures
    with pytest.raises(ValueError, match="bad frame"):
        with rig.sched.frame(work) as f:
            pass
    assert cuda.graph_api.capturing == {} and _active == {}  # the capture ended and was discarded
    assert cuda.names().count("end_capture") == 1 and "instantiate" not in cuda.names()
    with pytest.raises(FrameAbortedError, match="bad frame"):
        f.handle.result(timeout=1)
    assert rig.frame(2).handle.result(timeout=1).index == 2  # another work: the scheduler goes on
    rig.sched.close()


# -- statistics and traces --------------------------------------------------------------------------------------

def test_the_summary_and_the_trace_show_how_frames_ran(cuda):
    from optixasync.diagnostics import chrome_trace

    rig = Rig(cuda)
    for k in range(6):
        rig.frame(k)
    rig.sched.drain()
    summary = rig.sched.stats.summary()
    assert summary["graphs"] == {"replay": 2, "capture": 2, "eager": 2}
    assert summary["whole_run_graphs"]["capture_reasons"] == {FIRST: 2}
    trace = chrome_trace(rig.sched)
    names = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "host"]
    assert "frame 4 (graph replay)" in names and "frame 2 (graph capture)" in names and "frame 0" in names
    host = {e["name"]: e for e in trace["traceEvents"] if e.get("cat") == "host" and e["ph"] == "X"}
    assert host["frame 0"]["args"]["graph"] == "eager" and host["frame 4 (graph replay)"]["args"]["graph"] == "replay"
    assert '"graph": "replay"' in rig.sched.stats.to_json()
    rig.sched.close()
