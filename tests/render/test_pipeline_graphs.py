"""The render pipeline's frame graphs on the CPU: what a slot's graph holds, what captures it again, what runs
eagerly, and what happens to readbacks still held.

The pipeline, its device scene (tables, structure, refits) and its scheduler are the real ones, over the
recording CUDA stand-in (``graph_rig.py``): every call is logged, and what a frame enqueues while its stream is
captured goes into the stand-in's graph. Whether the GPU computes the same replayed as eagerly is the GPU
tests' part (``test_pipeline_graphs_gpu.py``).
"""

from __future__ import annotations

import dataclasses
import logging

import pytest
from graph_rig import Rig, StubCuda, StubRender, params_of, work_calls

from optixasync import ExceptionFlags
from optixasync.program import PipelineOptions
from optixasync.render import CameraSwing, FrameRecorder, Integrator, RenderOptions, Stage, Tonemap
from optixasync.render._graphs import FRAME_VALUES, NO_PREPARE
from optixasync.scheduler import FrameScheduler
from optixasync.scheduler._graphs import FIRST, MAX_VARIANTS, VALIDATION
from optixasync.testing import StubPathIntegrator


@pytest.fixture
def cuda():
    with StubCuda(record=True) as stub, StubRender(stub):
        yield stub


# -- what a slot's graph holds ------------------------------------------------------------------------------

def test_a_progressive_frame_is_captured_once_per_slot_then_replayed(cuda):
    rig = Rig(cuda)
    rig.run(8)
    assert rig.modes() == ["eager", "eager", "capture", "capture"] + ["replay"] * 4
    assert rig.reasons()[2] == FIRST
    # One graph per slot: the parameters' copy up, the launch, the image's copy down.
    assert rig.graphs() == [["memcpy", "optixLaunch", "memcpy"]] * 2
    assert rig.pipeline.samples_done == 8
    rig.close()


def test_a_slot_graph_holds_what_its_eager_frame_enqueued(cuda):
    rig = Rig(cuda, slots=1, stages=[Tonemap("radiance")])
    start = len(cuda.calls)
    rig.run(1)
    eager = [n for n in work_calls(rig.on_stream(start)) if n != "optixAccelCompact"]  # the set-up's, not the frame's
    rig.run(1)
    assert rig.modes() == ["eager", "capture"]
    assert eager == rig.graphs()[0] == ["memcpy", "optixLaunch", "tonemap_srgb8", "memcpy"]
    rig.close()


def test_a_replayed_frame_writes_its_parameters_and_launches_the_graph_only(cuda):
    rig = Rig(cuda, slots=1)
    rig.run(3)
    start = len(cuda.calls)
    with rig.frame() as frame:
        rig.pipeline.record(frame, 1)
        assert cuda.names()[start:].count("optixLaunch") == 0  # nothing enqueued by record() itself
    assert rig.modes()[-1] == "replay"
    assert rig.on_stream(start) == ["event_record", "graph_launch", "event_record"]  # span start, graph, fence
    assert params_of(frame)["sample_offset"] == 3 and params_of(frame)["accumulate"] == 1
    rig.close()


def test_replayed_frames_write_the_parameters_eager_frames_write(cuda):
    def parameters(graphs: bool) -> list[dict]:
        rig = Rig(cuda, graphs=graphs)
        out = []
        for k in range(6):
            with rig.frame() as frame:
                rig.pipeline.record(frame, 1 + k % 2, camera=CameraSwing(rig.pipeline.camera, 6).camera_of(k // 3))
            out.append(params_of(frame))
        rig.close()
        return out

    assert parameters(True) == parameters(False)


def test_a_static_scene_compacted_under_the_frames_keeps_replaying(cuda):
    rig = Rig(cuda, slots=1)
    rig.run(5)
    accel = rig.pipeline.device_scene.accel
    assert accel.compacted and "optixAccelCompact" in cuda.names()
    assert rig.modes() == ["eager", "capture", "replay", "replay", "replay"]
    assert int(rig.pipeline.device_scene.record["handle"]) == accel.handle  # the launch reads it from the params
    rig.close()


# -- the cloth: its vertex kernel and refit inside the graph ------------------------------------------------

def test_the_cloth_refit_is_inside_the_captured_sequence(cuda):
    rig = Rig(cuda, cloth=True, slots=1)
    rig.run(6)
    assert rig.modes() == ["eager", "capture"] + ["replay"] * 4
    (nodes,) = rig.graphs()
    assert nodes == ["memcpy", "memcpy", "cloth_positions_at", "optixAccelBuild(update)", "optixLaunch", "memcpy"]
    captured = cuda.graph_api.graphs[min(cuda.graph_api.graphs)]
    with rig.frame() as frame:
        values = rig.pipeline.graphs.values(frame)  # the slot's (one slot: every frame's)
    (_grid, _block, args) = captured[2][1]
    assert args[2] == values.device_ptr + FRAME_VALUES.fields["time"][1]  # the kernel reads the time on the GPU
    assert captured[1][1][1] == values._staging.ptr  # copied up from the slot's pinned frame values
    assert rig.pipeline.device_scene.accel.refits == 6  # every replay refitted (counted by the graph's hook)
    rig.close()


def test_each_cloth_frame_writes_its_time_and_only_the_eager_ones_launch_the_kernel(cuda):
    rig = Rig(cuda, cloth=True, slots=1)
    times = []
    for k in range(5):
        with rig.frame() as frame:
            rig.motion.host(rig.pipeline, k, frame)
            rig.pipeline._record(frame, 1, ("image",), True, True, (rig.motion,))
        times.append(float(rig.pipeline.graphs.values(frame).host["time"]))
    assert times == pytest.approx([k * rig.motion.dt for k in range(5)])
    on_stream = rig.on_stream()
    assert "cloth_positions" not in cuda.names()  # the time is never baked into the kernel's arguments
    assert on_stream.count("cloth_positions_at") == 1  # frame 0, eager; the others are the graph's
    assert on_stream.count("graph_launch") == 4
    rig.close()


def test_eager_cloth_frames_bake_the_time_and_refit_outside_any_graph(cuda):
    rig = Rig(cuda, cloth=True, graphs=False)
    rig.run(3)
    assert "begin_capture" not in cuda.names() and rig.modes() == [""] * 3
    assert cuda.names().count("cloth_positions") == 3 and cuda.names().count("optixAccelBuild(update)") == 3
    rig.close()


# -- each invalidation captures again, with its reason -------------------------------------------------------

def test_a_new_image_size_captures_again(cuda):
    rig = Rig(cuda, slots=1)
    rig.run(3)
    # No public call changes a pipeline's size yet (its options refuse it): set what such a call would.
    rig.pipeline._options = RenderOptions(width=16, height=6)
    rig.pipeline.reset()
    rig.run(3)
    assert rig.modes() == ["eager", "capture", "replay", "eager", "capture", "replay"]
    assert rig.reasons()[4] == "key changed: image size"
    assert rig.counts()["capture_reasons"]["key changed: image size"] == 1
    rig.close()


def test_other_outputs_or_readbacks_capture_again(cuda):
    rig = Rig(cuda, slots=1, stages=[Tonemap("radiance")])
    rig.run(3)
    rig.run(3, stages=False)  # the integrator writes the image itself: another program variant, no stage
    rig.run(3, stages=False, readback=None)
    assert rig.modes() == ["eager", "capture", "replay"] * 3
    assert rig.reasons()[4] == "key changed: outputs, stages"
    assert rig.reasons()[7] == "key changed: readback"
    rig.close()


def test_a_scene_table_placed_anew_captures_again(cuda):
    rig = Rig(cuda, slots=1)
    rig.run(3)
    rig.pipeline.device_scene.generation += 1  # what placing a table anew does
    rig.run(3)
    assert rig.modes() == ["eager", "capture", "replay"] * 2
    assert rig.reasons()[4] == "key changed: scene tables"
    rig.close()


def test_a_rebuild_instead_of_a_refit_runs_eagerly_then_captures_again(cuda):
    rig = Rig(cuda, cloth=True, slots=1)
    accel = rig.pipeline.device_scene.accel
    accel.options = dataclasses.replace(accel.options, rebuild_every=3)  # the refit policy: a rebuild every 4th
    rig.run(10)
    rebuilt = [k for k, r in enumerate(rig.reasons()) if "full rebuild" in r]
    assert rebuilt and rig.modes()[rebuilt[0]] == "eager" and rig.modes()[rebuilt[0] + 1] == "capture"
    assert rig.reasons()[rebuilt[0] + 1].startswith("the structure's next refit is a full rebuild")
    assert accel.rebuilds >= 1 and accel.refits == 10  # the rebuild ran in the eager frame, outside any graph
    assert all(n.count("optixAccelBuild") == 0 for n in rig.graphs())  # no graph holds a build
    rig.close()


def test_a_new_camera_count_captures_again(cuda):
    rig = Rig(cuda, slots=1)
    graphs = rig.pipeline.graphs
    defer = graphs.defer
    rig.run(3)
    # One camera per frame is what the pipeline renders today; a frame of two views keys its graph apart.
    graphs.defer = lambda frame, work, graph: defer(frame, work, graph, cameras=2)
    rig.run(3)
    assert rig.modes() == ["eager", "capture", "replay"] * 2
    assert rig.reasons()[4] == "key changed: cameras"
    rig.close()


def test_the_key_is_the_same_mapping_while_nothing_changes(cuda):
    rig = Rig(cuda, slots=1)
    keys = []
    for _ in range(3):
        with rig.frame() as frame:
            rig.pipeline.record(frame, 1)
            keys.append(frame.key)
    assert keys[0] is keys[1] is keys[2]  # compared by identity first: a replay pays no dict comparison
    assert set(keys[0]) == {"image size", "outputs", "stages", "readback", "scene tables", "cameras", "updates"}
    rig.close()


# -- what runs eagerly, and why ------------------------------------------------------------------------------

def test_validation_mode_never_captures(cuda, caplog):
    rig = Rig(cuda, validation=True)
    with caplog.at_level(logging.INFO, logger="optixasync"):
        rig.run(6)
    assert rig.modes() == ["eager"] * 6 and set(rig.reasons()) == {VALIDATION}
    assert "begin_capture" not in cuda.names() and cuda.names().count("optixLaunch") == 6
    assert sum("validation mode" in m for m in caplog.messages) == 1  # logged once, counted always
    rig.close()


def test_a_pipeline_with_debug_exceptions_runs_eagerly():
    with StubCuda(record=True) as cuda, StubRender(cuda, PipelineOptions(exception_flags=ExceptionFlags.STACK_OVERFLOW)):
        rig = Rig(cuda, slots=1)
        rig.run(5)
        assert rig.modes() == ["eager"] * 5 and "exception checks" in rig.reasons()[1]
        assert cuda.names().count("begin_capture") == 1  # refused once; the shape is not tried again
        assert cuda.names().count("optixLaunch") == 5
        rig.close()


class Uncapturable(Stage):
    needs = frozenset({"radiance"})

    def __init__(self) -> None:
        self.frames = 0

    def record(self, frame, buffers) -> None:
        self.frames += 1

    def uncapturable(self) -> str:
        return "it reads the image on the host"


def test_a_stage_that_cannot_be_captured_records_eagerly_with_its_reason(cuda, caplog):
    stage = Uncapturable()
    rig = Rig(cuda, stages=[stage], readback="radiance")
    with caplog.at_level(logging.INFO, logger="optixasync"):
        rig.run(4)
    assert rig.modes() == ["eager"] * 4 and stage.frames == 4
    assert rig.reasons()[0] == "stage " + repr(stage) + ": it reads the image on the host"
    assert rig.counts()["eager_reasons"] == {rig.reasons()[0]: 4}
    assert "begin_capture" not in cuda.names()
    assert sum("reads the image on the host" in m for m in caplog.messages) == 1
    rig.close()


def test_the_denoise_stage_says_why_it_is_not_captured_unless_asked():
    from optixasync.denoise import Denoise
    from optixasync.denoise._stage import UNCHECKED

    assert Denoise().uncapturable() == UNCHECKED and Denoise(capture=True).uncapturable() is None
    with pytest.raises(TypeError, match="capture must be a bool"):
        Denoise(capture=1)


class OneCall(StubPathIntegrator):
    """An integrator that writes its parameters and launches in one call (no prepare)."""

    def launch(self, frame, launch, params=None) -> None:
        prepared = StubPathIntegrator.prepare(self, frame.params, launch)
        frame.launch(prepared.pipeline, prepared.sbt, prepared.width, prepared.height)

    def prepare(self, params, launch):
        return Integrator.prepare(self, params, launch)


def test_an_integrator_that_cannot_split_its_launch_runs_eagerly(cuda, monkeypatch):
    from optixasync.render import _pipeline

    monkeypatch.setattr(_pipeline, "integrator_class", lambda name: OneCall)
    rig = Rig(cuda, slots=1)
    rig.run(3)
    assert rig.modes() == ["eager"] * 3 and set(rig.reasons()) == {NO_PREPARE}
    assert cuda.names().count("optixLaunch") == 3
    rig.close()


def test_a_plain_update_runs_before_the_graph_and_the_frames_keep_replaying(cuda):
    rig = Rig(cuda, slots=1)
    swing = CameraSwing(rig.pipeline.camera, 16)
    eyes = []
    recorder = rig.pipeline.recorder(update=swing)
    for k in range(4):
        with rig.frame() as frame:
            recorder.record(frame, k)
        eyes.append(params_of(frame)["eye"])
    assert rig.modes() == ["eager", "capture", "replay", "replay"]
    assert len(set(eyes)) == 4  # each frame's camera reached its parameters
    rig.close()


# -- readbacks still held as their slot comes round ----------------------------------------------------------

def test_held_results_neither_wait_nor_copy_and_are_counted(cuda):
    rig = Rig(cuda, slots=1)
    results = rig.run(10, keep=True)
    counts = rig.counts()
    assert counts["held_readbacks"] >= MAX_VARIANTS and counts["handovers"] >= 1
    addresses = [r["image"].ctypes.data for r in results]
    assert len(set(addresses)) == len(addresses)  # every held result kept a buffer of its own
    assert rig.counts()["capture_reasons"]["readbacks still held: another set of destinations"] == MAX_VARIANTS - 1
    assert "readback 'image' still held when its slot came round" in counts["capture_reasons"]
    rig.close()


def test_a_loop_that_polls_and_releases_replays_from_the_third_frame(cuda):
    rig = Rig(cuda, slots=1)
    rig.run(12)
    assert rig.modes()[2:] == ["replay"] * 10 and rig.counts()["held_readbacks"] == 0
    rig.close()


# -- frames an application drives itself ---------------------------------------------------------------------

def test_a_recorder_replays_frames_of_an_application_scheduler(cuda):
    rig = Rig(cuda, graphs=False)
    sched = FrameScheduler(rig.ctx, 2, params_dtype=rig.pipeline.params_dtype, graphs=True,
                           options={"completion_thread": False})
    recorder = rig.pipeline.recorder(readback="image")
    assert isinstance(recorder, FrameRecorder)
    images = []
    for k in range(6):
        with sched.frame() as frame:
            recorder.record(frame, k)
        images += [r.copy() for r in sched.poll()]
    images += [r.copy() for r in sched.drain()]
    assert [s.graph for s in sched.stats.frames] == ["eager", "eager", "capture", "capture", "replay", "replay"]
    assert [sorted(r.readbacks) for r in images] == [["image"]] * 6
    sched.close()
    rig.close()


def test_a_frame_work_function_of_its_own_runs_after_the_pipeline_work(cuda):
    rig = Rig(cuda, slots=1)
    order = []

    def own(frame):
        order.append(cuda.names()[-1])  # the pipeline's readback was enqueued just before

    for _ in range(4):
        with rig.frame(own, key="mine") as frame:
            rig.pipeline.record(frame, 1)
    assert order == ["memcpy", "captured"]  # eager frame, then captured with the graph; replays run no Python
    assert frame.key["frame"] == "mine" and rig.modes() == ["eager", "capture", "replay", "replay"]
    rig.close()


def test_record_twice_into_a_graph_frame_is_refused(cuda):
    rig = Rig(cuda)
    with rig.frame() as frame:
        rig.pipeline.record(frame, 1)
        with pytest.raises(RuntimeError, match="once per frame"):
            rig.pipeline.record(frame, 1)
    rig.close()


def test_eager_frames_enqueue_their_work_inside_record(cuda):
    rig = Rig(cuda, graphs=False)
    with rig.frame() as frame:
        start = len(cuda.calls)
        rig.pipeline.record(frame, 1)
        # (the static structure's compaction first, once its size has arrived)
        assert work_calls(rig.on_stream(start)) == ["optixAccelCompact", "memcpy", "optixLaunch", "memcpy"]
    assert frame.work is None and rig.scheduler.stats.graphs.as_dict()["eager"] == 0
    rig.close()


def test_closing_waits_for_the_graph_frames_and_releases_the_frame_values(cuda):
    rig = Rig(cuda, cloth=True)
    rig.run(4)
    with rig.frame() as frame:
        values = rig.pipeline.graphs.values(frame)
    start = len(cuda.calls)
    rig.close()
    stream = int(rig.pipeline.stream.ptr)
    assert ("event_record", stream) in [(c[0], c[1]) for c in cuda.calls[start:]]  # recorded, then waited for
    assert values.host is None and values.device is None  # released


def test_a_graph_frame_aborted_after_record_restarts_the_accumulation(cuda):
    rig = Rig(cuda, slots=1)
    rig.run(3)
    with pytest.raises(KeyError), rig.frame() as frame:
        rig.pipeline.record(frame, 1)  # its samples counted; its work will not run
        raise KeyError("the application failed after record()")
    assert rig.pipeline.samples_done == 4
    with rig.frame() as frame:
        rig.pipeline.record(frame, 1)
    assert rig.pipeline.samples_done == 1 and params_of(frame)["sample_offset"] == 0  # started over
    rig.close()
