"""The render pipeline's own frames on a GPU: ``frames()``, ``still()``, ``render_sums()`` and its stages.

* ``frames()`` through the pipeline's scheduler: progressive frames are the offline render of as many samples,
  bit for bit in the sums; ``last_only``, ``readback=None`` and ``accumulate=False`` deliver what they say;
  the frames run ``frames_in_flight`` deep.
* ``frames()`` with a frame update (:class:`ClothMotion`, :class:`CameraSwing`) equals the same frames recorded
  by hand into a scheduler of one's own.
* ``render_sums()`` over two ranges adds up to one range over both; ``still()`` runs the stages once, on the
  mean of all its samples; ``record()`` with the stages on and off; the :class:`WriteImages` stage writes the
  frames it is handed.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from optixasync.io import tonemap_srgb
from optixasync.render import CameraSwing, ClothMotion, RenderOptions, RenderPipeline, Tonemap, WriteImages
from optixasync.scene import ClothAnimation, cornell_box
from optixasync.scheduler import FrameScheduler

pytestmark = pytest.mark.gpu


def within_one_code(image: np.ndarray, linear: np.ndarray) -> bool:
    """Whether an sRGB ``image`` (H, W, 4) is the host tonemap of ``linear`` (H, W, 3) to one code (fast pow)."""
    expected = tonemap_srgb(linear).astype(int)
    return bool(np.abs(image[..., :3].astype(int) - expected).max() <= 1)


def images_of(results) -> list[np.ndarray]:
    """Copies of the results' images, the results released."""
    out = []
    for result in results:
        with result:
            out.append(result["image"].copy())
    return out


# --- frames() -------------------------------------------------------------------------------------------------------


def test_progressive_frames_equal_the_offline_render_of_as_many_samples(ctx):
    import cupy

    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=32, height=32, spp=16, seed=3)) as pipeline:
        indices, images = [], []
        for result in pipeline.frames(4, 4):  # no update: the frames accumulate
            with result:
                indices.append(result.index)
                assert result["image"].shape == (32, 32, 4) and result["image"].dtype == np.uint8
                images.append(result["image"].copy())
        assert indices == [0, 1, 2, 3]  # in order, each once
        assert pipeline.samples_done == 16
        accum = cupy.asnumpy(pipeline.accumulation)  # frames() drained its frames: every one has completed
        offline = [pipeline.render(4 * (k + 1)) for k in range(4)]  # the same camera and seed, one launch each
        np.testing.assert_array_equal(accum[..., :3] / np.float32(16), offline[-1])  # bit for bit
        assert (accum[..., 3] == 0).all()
        for image, linear in zip(images, offline, strict=True):
            assert (image[..., 3] == 255).all() and within_one_code(image, linear)
        assert not np.array_equal(images[0], images[-1])

        pipeline.reset()
        last_only = list(pipeline.frames(3, 2, last_only=True))
        assert [sorted(r.readbacks) for r in last_only] == [[], [], ["image"]]  # a progressive still
        (last,) = images_of(last_only[-1:])
        assert pipeline.samples_done == 6 and within_one_code(last, pipeline.render(6))

        unread = list(pipeline.frames(2, 1, readback=None))
        assert len(unread) == 2 and all(r.readbacks == {} for r in unread)
        assert pipeline.samples_done == 8  # they still added their samples

        separate = images_of(pipeline.frames(3, 4, accumulate=False))  # each frame its own image
        assert pipeline.samples_done == 4
        for image in separate:
            np.testing.assert_array_equal(image, images[0])  # samples 0 ... 3 every time, as frame 0 above
        assert list(pipeline.frames(0)) == []


def test_frames_run_frames_in_flight_deep_through_the_pipelines_scheduler(ctx):
    from optixasync.cuda import spin_gpu

    def slow(pipeline, index, frame):  # a frame update: 30 ms of GPU work, so the host runs ahead
        spin_gpu(30_000_000, frame)

    count = 7
    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=32, height=32), frames_in_flight=3,
                        scheduler_options={"stats_window": 64}) as pipeline:
        scheduler = pipeline.scheduler
        assert scheduler is pipeline.scheduler and scheduler.stream is pipeline.stream
        assert scheduler.frames_in_flight == 3 and scheduler.options.stats_window == 64
        assert scheduler.params_dtype == pipeline.params_dtype
        results = list(pipeline.frames(count, 1, update=slow, accumulate=True))
        assert [r.index for r in results] == list(range(count))
        assert pipeline.samples_done == count  # accumulate=True: the update does not restart the image
        # frame 1 found frame 0 running; from frame 2 on, three frames were in flight (the third slot's wait)
        assert [s.in_flight for s in scheduler.stats.frames[1:count]] == [2] + [3] * (count - 2)
        for result in results:
            result.release()


def test_frames_with_a_cloth_motion_equal_the_frames_recorded_by_hand(ctx):
    from optixasync.render._updates import write_cloth

    cloth = ClothAnimation(32)
    scene = cloth.scene()
    options = RenderOptions(width=48, height=48, spp=2, max_depth=3)
    count, dt = 6, 0.4
    motion = ClothMotion(cloth, dt)
    with RenderPipeline(ctx, scene, options) as pipeline:
        results = list(pipeline.frames(count, 2, update=motion))
        assert [r.index for r in results] == list(range(count))
        framed = images_of(results)
        assert pipeline.samples_done == 2  # with an update, every frame is an image of its own
        device = pipeline.vertices(cloth.mesh_index).get(stream=pipeline.stream)
        pipeline.stream.synchronize()
        np.testing.assert_allclose(device, cloth.positions((count - 1) * dt), atol=3e-5)
        still = pipeline.render(2)  # after the last refit: the cloth where the last frame left it
        assert within_one_code(framed[-1], still)
        motion.move(pipeline, 0.0, pipeline.stream)  # back to t = 0, on the pipeline's stream
        assert pipeline.samples_done == 0  # the refit restarted the accumulation
        assert within_one_code(framed[0], pipeline.render(2))

    with RenderPipeline(ctx, scene, options) as by_hand, \
            FrameScheduler(ctx, 2, params_dtype=by_hand.params_dtype, stream=by_hand.stream) as sched:
        for k in range(count):
            with sched.frame() as f:
                write_cloth(cloth, by_hand.vertices(cloth.mesh_index, f), k * dt, f)  # ordered after the set-up
                by_hand.refit(f)
                by_hand.record(f, 2)
        hand = images_of(sched.drain())
    assert len(hand) == count
    for k in range(count):
        np.testing.assert_array_equal(framed[k], hand[k], err_msg=f"frame {k}")
    assert not np.array_equal(hand[0], hand[3])  # the cloth moves


def test_frames_with_a_camera_swing_show_the_swung_camera(ctx):
    scene = cornell_box()
    swing = CameraSwing(scene.camera, 4, degrees=30.0)
    with RenderPipeline(ctx, scene, RenderOptions(width=32, height=32, seed=1)) as pipeline:
        swung = images_of(pipeline.frames(4, 2, update=swing))
        assert pipeline.camera == swing.camera_of(3)  # an update changes the pipeline: the camera stays
        for k in (0, 1):
            pipeline.camera = swing.camera_of(k)
            assert within_one_code(swung[k], pipeline.render(2))
    assert not np.array_equal(swung[0], swung[1])  # frame 1 turned the camera by 30 degrees


# --- stills and sums --------------------------------------------------------------------------------------------------


def test_render_sums_over_two_ranges_add_up_to_one_range(ctx):
    options = RenderOptions(width=64, height=64, spp=64, seed=9)
    with RenderPipeline(ctx, cornell_box(), options) as pipeline:
        whole = pipeline.render_sums(0, 64)
        assert whole.shape == (64, 64, 4) and whole.dtype == np.float32
        np.testing.assert_array_equal(whole[..., :3] / np.float32(64), pipeline.render(64))  # the same sums
        first, second = pipeline.render_sums(0, 40), pipeline.render_sums(40, 24)
        parts = first + second
        np.testing.assert_array_equal(parts[..., 3], whole[..., 3])  # dropped samples: counted once, in one part
        scale = np.maximum(np.abs(whole[..., :3]), 1e-6)
        assert np.max(np.abs(parts[..., :3] - whole[..., :3]) / scale) <= 1e-5  # up to the float32 sum order
        lit = whole[..., :3].sum(axis=2) > 0
        # different ranges are different samples: 40 and 24 samples of the same pixels are not proportional
        assert (first[..., :3] / 40 != second[..., :3] / 24).all(axis=2)[lit].mean() > 0.95
        split = RenderPipeline(ctx, cornell_box(), RenderOptions(width=64, height=64, spp=64, seed=9,
                                                                  samples_per_launch=24))
        with split:
            np.testing.assert_array_equal(split.render_sums(0, 64), whole)  # launches of 24, 24, 16: the same bits
        with pytest.raises(ValueError, match="32-bit"):
            pipeline.render_sums(2**32 - 10, 20)
        with pytest.raises(ValueError, match="first_sample"):
            pipeline.render_sums(-1, 4)


def test_still_runs_the_stages_once_on_the_mean_of_all_its_samples(ctx):
    options = RenderOptions(width=32, height=32, spp=32, seed=4)
    with RenderPipeline(ctx, cornell_box(), options, stages=[Tonemap("radiance")]) as pipeline:
        assert pipeline.outputs == ("image",) and pipeline.readback == ("image",)
        calls: list[int] = []
        with pipeline.still(progress=calls.append, readback=("image", "radiance")) as result:
            assert sorted(result.readbacks) == ["image", "radiance", "sums"]
            sums, image, radiance = (np.array(result[name]) for name in ("sums", "image", "radiance"))
        assert calls == [16, 32]  # two launches of 16 with a progress callback, the stages after the last
        assert pipeline.last_nonfinite == 0 and pipeline.last_render_ms > 0
        mean = sums[..., :3] / np.float32(32)
        np.testing.assert_array_equal(mean, pipeline.render(32))  # the same samples as a plain still
        np.testing.assert_allclose(radiance[..., :3], mean, rtol=1e-6)  # the integrator's mean, read after launch 2
        assert (radiance[..., 3] == 1.0).all()
        assert sums.shape == (32, 32, 4) and image.shape == (32, 32, 4) and image.dtype == np.uint8
        assert (image[..., 3] == 255).all() and within_one_code(image, mean)  # the tonemap stage's image
        assert pipeline.samples_done == 0  # a still leaves the progressive accumulation alone


def test_record_with_the_stages_on_and_off(ctx):
    """A tonemap stage in place of the launch's own: the same image either way, and what each frame makes."""
    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=32, height=32, seed=2),
                        stages=[Tonemap("radiance")]) as pipeline, \
            FrameScheduler(ctx, 2, params_dtype=pipeline.params_dtype, stream=pipeline.stream) as sched:
        made = []
        for k in range(4):
            with sched.frame() as f:
                made.append(pipeline.record(f, 4, stages=k % 2 == 1))  # off, on, off, on
        for buffers, staged in zip(made, (False, True, False, True), strict=True):
            assert sorted(buffers) == (["image", "radiance"] if staged else ["image"])
            assert buffers["image"].shape == (32, 32, 4) and buffers["image"].dtype == np.uint8
        with pytest.raises(ValueError, match="frames without the stages do not make 'radiance'"), \
                sched.frame() as f:
            pipeline.record(f, 1, readback="radiance", stages=False)
        images = images_of(sched.drain())
        assert pipeline.samples_done == 16  # the stages' frames kept adding to the same accumulation
        offline = [pipeline.render(4 * (k + 1)) for k in range(4)]
    assert len(images) == 4  # the refused frame delivered nothing
    for k, (image, linear) in enumerate(zip(images, offline, strict=True)):
        assert (image[..., 3] == 255).all() and within_one_code(image, linear), f"frame {k}"


def test_the_write_images_stage_writes_every_frame_it_is_handed(ctx, tmp_path):
    base = tmp_path / "frames" / "cloth.png"
    cloth = ClothAnimation(16)
    with RenderPipeline(ctx, cloth.scene(), RenderOptions(width=32, height=32), stages=[WriteImages(base)]) as pipeline:
        images = images_of(pipeline.frames(3, 1, update=ClothMotion(cloth, 0.5)))
        writer = pipeline.stages[0]
        assert writer.written == 3
    # closing the pipeline waited for the files
    names = sorted(p.name for p in base.parent.iterdir())
    assert names == ["cloth_0000.png", "cloth_0001.png", "cloth_0002.png"]  # no temporary file left behind
    for k, image in enumerate(images):
        np.testing.assert_array_equal(np.asarray(Image.open(base.parent / names[k])), image[..., :3])
