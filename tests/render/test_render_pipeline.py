"""The render pipeline's logic on the CPU: launches, outputs, stages, stills and frames over stand-ins of the GPU.

The pipeline is the real one; what needs a GPU below it (the device scene, the compiled integrator, the
scheduler's frames) is replaced by the recording stand-ins of ``fake_gpu.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from fake_gpu import RADIANCE, FakeContext, FakeDeviceScene, FakeIntegrator, FakeScheduler, install

from optixasync.render import RenderOptions, RenderPipeline, Stage, Tonemap
from optixasync.scene import Camera, cornell_box


@pytest.fixture
def gpu(monkeypatch):
    install(monkeypatch)


def pipeline(**kwargs) -> RenderPipeline:
    options = kwargs.pop("options", RenderOptions(width=8, height=6, spp=4))
    return RenderPipeline(FakeContext(), cornell_box(), options, **kwargs)


class Recorder(Stage):
    """A stage that reads one output and makes another, and records the frames it saw."""

    def __init__(self, needs: str = "radiance", writes: str = "denoised", log: list | None = None) -> None:
        self.needs = frozenset({needs})
        self.writes = frozenset({writes})
        self.log = log if log is not None else []
        self.delivered: list[int] = []
        self.closed = False

    def record(self, frame, buffers) -> None:
        (made,) = self.writes
        (read,) = self.needs
        buffers[made][...] = buffers[read]  # a copy stands in for the stage's work
        self.log.append((type(self).__name__, frame.index, sorted(buffers.made())))

    def deliver(self, result) -> None:
        self.delivered.append(result.index)

    def close(self) -> None:
        self.closed = True


def test_each_record_is_one_launch_adding_its_samples(gpu):
    p = pipeline()
    sched = p.scheduler
    for spp in (2, 3):
        with sched.frame() as frame:
            buffers = p.record(frame, spp)
        (launch,) = frame.launches
        assert launch.spp == spp and not launch.own_params  # the frame's own parameters
        assert list(buffers) == ["image"] and set(frame.readbacks) == {"image"}
    assert [(f.launches[0].offset, f.launches[0].accumulate) for f in sched.frames] == [(0, False), (2, True)]
    assert p.samples_done == 5
    np.testing.assert_array_equal(p.accumulation[..., :3], RADIANCE * 5)
    assert (sched.frames[-1].readbacks["image"][..., :3] == 188).all()  # the sRGB of the mean 0.5
    assert FakeIntegrator.instances[0].variants == [frozenset({"image"}), frozenset({"image"}), frozenset()]


def test_a_new_camera_or_options_restart_the_accumulation(gpu):
    p = pipeline()
    with p.scheduler.frame() as frame:
        p.record(frame, 4)
    with p.scheduler.frame() as frame:
        p.record(frame, 1, camera=Camera((0, 0, 3), (0, 0, 0)))
    assert frame.launches[0].offset == 0 and p.samples_done == 1
    p.options = RenderOptions(width=8, height=6, seed=7)
    assert p.samples_done == 0
    with pytest.raises(ValueError, match="image size is fixed"):
        p.options = RenderOptions(width=16, height=6)


def test_stages_get_what_they_need_written_and_run_in_order(gpu):
    log: list = []
    first, second = Recorder("radiance", "denoised", log), Tonemap("denoised")
    p = pipeline(outputs=("image",), stages=[first, second])
    with p.scheduler.frame() as frame:
        buffers = p.record(frame, 2)
    # the integrator writes what the denoiser needs, not the image (the tonemap makes it from the denoised)
    assert frame.launches[0].outputs == ["radiance"]
    assert log == [("Recorder", 0, ["denoised", "radiance"])] and sorted(buffers) == ["denoised", "image", "radiance"]
    assert (frame.readbacks["image"][..., :3] == 188).all()
    # without the stages: the image straight from the launch, the stages untouched
    with p.scheduler.frame() as frame:
        p.record(frame, 2, stages=False)
    assert frame.launches[0].outputs == ["image"] and len(log) == 1
    with p.scheduler.frame() as frame, pytest.raises(ValueError, match="frames without the stages do not make"):
        p.record(frame, 1, readback="denoised", stages=False)


def test_outputs_that_need_the_first_hit_sums_restart_frames_that_did_not_keep_them(gpu):
    p = pipeline(stages=[Recorder("albedo", "denoised")], readback="image")
    sched = p.scheduler
    for stages in (False, False, True, True):
        with sched.frame() as frame:
            p.record(frame, 1, stages=stages)
    launches = [f.launches[0] for f in sched.frames]
    assert [(la.offset, la.sums) for la in launches] == [(0, False), (1, False), (0, True), (1, True)]


def test_a_frame_of_another_layout_or_launched_already_is_refused(gpu):
    p = pipeline()
    with p.scheduler.frame() as frame:
        frame.params = np.zeros((), np.dtype([("x", "<u4")]))
        with pytest.raises(ValueError, match="params_dtype=pipeline.params_dtype"):
            p.record(frame, 1)
    with p.scheduler.frame() as frame:
        frame.launched = True
        with pytest.raises(RuntimeError, match="once per frame"):
            p.record(frame, 1)
    with p.scheduler.frame() as frame, pytest.raises(ValueError, match="unknown output 'depth'"):
        p.record(frame, 1, readback="depth")


def test_progressive_frames_accumulate_and_come_back_in_order(gpu):
    stage = Recorder()
    p = pipeline(outputs=("image",), stages=[stage], frames_in_flight=3)
    results = list(p.frames(5, 2))
    assert [r.index for r in results] == [0, 1, 2, 3, 4]
    sched = p.scheduler
    assert [f.launches[0].offset for f in sched.frames] == [0, 2, 4, 6, 8] and p.samples_done == 10
    assert stage.delivered == [0, 1, 2, 3, 4]  # each result seen by the stages before it is yielded


def test_animated_frames_call_the_update_and_are_each_their_own_image(gpu):
    calls = []

    def update(pipe, index, frame):
        calls.append((pipe, index, frame))

    stage = Recorder()
    p = pipeline(stages=[stage])
    results = list(p.frames(3, 4, update=update, last_only=True))
    sched = p.scheduler
    assert [(c[0], c[1], c[2]) for c in calls] == [(p, k, sched.frames[k]) for k in range(3)]
    assert [f.launches[0].offset for f in sched.frames] == [0, 0, 0]  # reset before every frame
    assert [bool(r.readbacks) for r in results] == [False, False, True]  # last_only: the last frame's readback
    assert stage.delivered == [2]


def test_a_still_is_one_frame_of_launches_with_their_own_parameters(gpu):
    p = pipeline(options=RenderOptions(width=8, height=6, spp=10, samples_per_launch=4))
    done = []
    linear = p.render(progress=done.append)
    (frame,) = p.scheduler.frames
    assert [(la.spp, la.offset, la.accumulate, la.own_params, la.outputs) for la in frame.launches] == [
        (4, 0, False, True, []), (4, 4, True, True, []), (2, 8, True, True, [])]
    assert done == [4, 8, 10] and p.last_render_ms == 60.0  # three launches of 20 ms
    np.testing.assert_array_equal(linear, RADIANCE)
    assert linear.shape == (6, 8, 3) and p.samples_done == 0  # the progressive accumulation is left alone
    assert FakeDeviceScene.instances[0].compactions == [True]  # offline: compacted first, waiting for the size


def test_sample_ranges_and_stills_with_stages(gpu):
    log: list = []
    p = pipeline(outputs=("image",), stages=[Recorder("radiance", "denoised", log), Tonemap("denoised")])
    sums = p.render_sums(100, 3)
    assert p.scheduler.frames[0].launches[0].offset == 100
    np.testing.assert_array_equal(sums[..., :3], RADIANCE * 3)
    with p.still(6) as result:
        assert set(result.readbacks) == {"sums", "image"} and (result["image"][..., :3] == 188).all()
    (launch,) = p.scheduler.frames[1].launches
    assert launch.outputs == ["radiance"] and len(log) == 1  # the stages ran once, after the last launch


def test_close_releases_everything_once(gpu):
    stage = Recorder()
    p = pipeline(stages=[stage])
    sched = p.scheduler
    with p:
        pass
    assert sched.closed and stage.closed and FakeIntegrator.instances[0].closed and FakeDeviceScene.instances[0].closed
    p.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        p.render(1)


def test_the_scheduler_is_made_for_the_pipeline(gpu):
    p = pipeline(frames_in_flight=3, scheduler_options={"keep_results": False})
    sched = p.scheduler
    assert isinstance(sched, FakeScheduler) and sched is p.scheduler
    assert (sched.n, sched.params_dtype, sched.stream, sched.options) == (3, p.params_dtype, "stream",
                                                                          {"keep_results": False})


def test_frames_without_the_stages_read_back_what_they_make_by_default(gpu):
    """A pipeline reading back a stage's output: its stage-less frames read back the rest, not an error."""
    p = pipeline(outputs=("image", "denoised"), stages=[Recorder("radiance", "denoised")])
    assert set(p.readback) == {"image", "denoised"}
    with p.scheduler.frame() as frame:
        p.record(frame, 1, stages=False)
    assert set(frame.readbacks) == {"image"}
    results = list(p.frames(2, stages=False))  # with the frame above, which completes among them
    assert [r.index for r in results] == [0, 1, 2] and all(set(r.readbacks) == {"image"} for r in results)


def test_frames_check_their_arguments_and_the_pipeline_before_the_first_frame(gpu):
    p = pipeline()
    with pytest.raises(ValueError, match="spp"):
        p.frames(3, 0)  # at the call, not inside the first frame
    with pytest.raises(TypeError, match="update must be callable"):
        p.frames(3, update="swing")
    assert p.scheduler.frames == []
    p.close()
    with pytest.raises(RuntimeError, match="closed"):
        p.frames(1)


class Refuser(Recorder):
    def prepare(self, frame, shape) -> None:
        raise ValueError(f"refused a frame of {shape}")


def test_a_stage_that_refuses_a_frame_refuses_it_before_the_launch(gpu):
    p = pipeline(stages=[Refuser()])
    with p.scheduler.frame() as frame, pytest.raises(ValueError, match=r"refused a frame of \(6, 8\)"):
        p.record(frame, 2)
    assert frame.launches == [] and p.samples_done == 0  # no launch, no samples counted
    with pytest.raises(ValueError, match="refused"):
        p.still(2)
    assert all(f.launches == [] for f in p.scheduler.frames)


def test_written_images_are_numbered_from_the_first_frame_they_are_handed(gpu, tmp_path):
    from optixasync.render import WriteImages

    writer = WriteImages(tmp_path / "out.png")
    p = pipeline(stages=[writer])
    p.render(1)  # a still first: its frame takes a scheduler index, not a file number
    for result in p.frames(3, update=lambda *args: None):
        result.release()
    p.close()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["out_0000.png", "out_0001.png", "out_0002.png"]
    assert writer.written == 3
