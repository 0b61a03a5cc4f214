"""Multi-GPU rendering on real GPUs: by-sample equality, by-frame sequences, device errors, device choice.

On a machine with one GPU the farm's two workers share it (``LocalGPUs([0, 0])``): the orchestration,
summation and ordering are the same; the tests that need two devices skip with their reason.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from PIL import Image

import optixasync
from optixasync.errors import WorkerError
from optixasync.multi import Farm, LocalGPUs, split_samples
from optixasync.render import CameraSwing, ClothMotion, RenderOptions, RenderPipeline
from optixasync.scene import ClothAnimation, cornell_box
from optixasync.testing import FaultAt, FaultyUpdate

pytestmark = pytest.mark.gpu


def _devices() -> list[int]:
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    return list(range(count)) if count > 1 else [0, 0]


def two_gpus() -> None:
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")


@pytest.fixture(scope="module")
def workers():
    with LocalGPUs(_devices()) as backend:
        yield backend


def max_relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    scale = np.maximum(np.abs(b), 1e-6)  # black pixels: compared absolutely below 1e-6
    return float(np.max(np.abs(a - b) / scale))


def test_by_sample_equals_the_single_gpu_image(workers):
    options = RenderOptions(width=256, height=256, spp=512, seed=3)
    with optixasync.Context() as ctx, RenderPipeline(ctx, cornell_box(), options) as pipeline:
        single = pipeline.render()
        sums = [pipeline.render_sums(r.first, r.count) for r in split_samples(512, 2)]
    with Farm(cornell_box(), options, backend=workers) as farm:
        split = farm.render()
        assert [r.count for r in farm.last_parts] == [256, 256]
    difference = max_relative_difference(split, single)
    print(f"by-sample vs one GPU: max relative difference {difference:.3g}")
    assert difference <= 1e-5
    # The ranges really are different samples: each half alone is a different (noisier) image.
    half = sums[0][..., :3] / 256
    assert max_relative_difference(half, single) > 1e-2


def test_render_sums_of_a_range_is_part_of_the_whole():
    options = RenderOptions(width=64, height=64, spp=64)
    with optixasync.Context() as ctx, RenderPipeline(ctx, cornell_box(), options) as pipeline:
        whole = pipeline.render_sums(0, 64)
        np.testing.assert_allclose(whole[..., :3] / 64, pipeline.render(), rtol=1e-6, atol=1e-7)
        parts = pipeline.render_sums(0, 40) + pipeline.render_sums(40, 24)
        assert max_relative_difference(parts[..., :3], whole[..., :3]) <= 1e-5
        with pytest.raises(ValueError, match="32-bit"):
            pipeline.render_sums(2**32 - 10, 20)
        with pytest.raises(ValueError, match="first_sample"):
            pipeline.render_sums(-1, 4)


def _single_gpu_cloth_frames(cloth: ClothAnimation, options: RenderOptions, count: int, dt: float) -> list[np.ndarray]:
    """The frames as ``optixasync render --frames`` makes them on one GPU (the pipeline's frames, each its own
    image, moved by the frame update)."""
    frames = []
    with optixasync.Context() as ctx, RenderPipeline(ctx, cloth.scene(), options) as pipeline:
        for result in pipeline.frames(count, options.spp, update=ClothMotion(cloth, dt), readback="image"):
            with result:
                frames.append(result["image"][..., :3].copy())
    assert len(frames) == count
    return frames


def test_by_frame_cloth_sequence_in_order_equal_to_one_gpu(workers, tmp_path):
    cloth = ClothAnimation(48)
    options = RenderOptions(width=96, height=96, spp=4)
    dt = 1 / 24
    reference = _single_gpu_cloth_frames(cloth, options, 12, dt)
    with Farm(cloth.scene(), options, backend=workers) as farm:
        before = list(workers.tasks_done)
        outputs = list(farm.frames(12, update=ClothMotion(cloth, dt), out=tmp_path / "out.png"))
        done = [after - b for after, b in zip(workers.tasks_done, before, strict=False)]
    assert [o.index for o in outputs] == list(range(12))
    assert [o.path.name for o in outputs] == [f"out_{k:04d}.png" for k in range(12)]
    assert sum(done) == 12 and all(d > 0 for d in done)  # every worker rendered some
    for k, output in enumerate(outputs):
        np.testing.assert_array_equal(np.asarray(Image.open(output.path)), reference[k], err_msg=f"frame {k}")
    assert not list(tmp_path.glob(".*partial*"))  # no temporary file left behind
    assert not np.array_equal(reference[0], reference[6])  # the cloth moves


def test_frames_without_files_return_images_and_a_sample_job_undoes_the_motion(workers):
    cloth = ClothAnimation(32)
    options = RenderOptions(width=64, height=64, spp=16)
    with Farm(cloth.scene(), options, backend=workers) as farm:
        still_before = farm.render(16)
        images = [o.image for o in farm.frames(4, spp=2, update=ClothMotion(cloth, 0.5))]
        still_after = farm.render(16)
    assert all(img.shape == (64, 64, 3) and img.dtype == np.uint8 for img in images)
    np.testing.assert_array_equal(still_after, still_before)


def test_frames_without_an_update_after_a_camera_swing_show_the_scene_camera(workers):
    """A camera-only update leaves no geometry to put back (a static scene cannot even refit)."""
    scene = cornell_box()
    options = RenderOptions(width=32, height=32, spp=2)
    with Farm(scene, options, backend=workers) as farm:
        swung = [o.image for o in farm.frames(4, update=CameraSwing(scene.camera, 4, degrees=30.0))]
        plain = [o.image for o in farm.frames(4)]
    assert not np.array_equal(swung[1], plain[1])  # frame 1 turned the camera by 30 degrees
    for image in plain[1:]:
        np.testing.assert_array_equal(image, plain[0])  # same camera, same seed and samples: the same image


def test_a_gpu_error_fails_the_job_naming_the_device_without_hanging(workers):
    options = RenderOptions(width=64, height=64, spp=1)
    with Farm(cornell_box(), options, backend=workers) as farm:
        t0 = time.perf_counter()
        with pytest.raises(WorkerError, match=r"GPU \d.*CudaError.*cudaErrorMemoryAllocation") as info:
            list(farm.frames(40, update=FaultyUpdate(FaultAt(5, "out_of_memory"))))
        print(f"out-of-memory job failed after {time.perf_counter() - t0:.2f} s: {info.value}")
        assert time.perf_counter() - t0 < 30
        assert info.value.device.startswith("GPU ")
        # the failed worker's context was replaced: the farm renders on
        assert len(list(farm.frames(6))) == 6


def test_a_scene_with_device_arrays_is_refused():
    import cupy

    scene = cornell_box()
    scene.meshes[0].vertices = cupy.asarray(scene.meshes[0].vertices)
    with pytest.raises(TypeError, match="host"):
        Farm(scene, backend=LocalGPUs._unchecked([]))


def test_context_on_the_second_gpu_and_cross_device_misuse():
    two_gpus()
    import cupy

    with optixasync.Context(device=1) as ctx1, optixasync.Context(device=0) as ctx0:
        assert ctx1.device_id == 1 and ctx0.device_id == 0
        options = RenderOptions(width=32, height=32, spp=4)
        with RenderPipeline(ctx1, cornell_box(), options) as pipeline:
            assert pipeline.accumulation.data.device_id == 1
            image = pipeline.render()
            assert image.mean() > 0.01
            sched = optixasync.FrameScheduler(ctx0, 2, params_dtype=pipeline.params_dtype)
            with pytest.raises(ValueError, match="belongs to another context \\(device 1\\); this context is on device 0"):
                with sched.frame() as f:
                    pipeline.record(f, 1)
            sched.close()
        assert cupy.cuda.Device().id in (0, 1)


def test_every_gpu_renders_part_of_the_job():
    two_gpus()
    with LocalGPUs("all") as backend, Farm(cornell_box(), {"width": 128, "height": 128}, backend=backend) as farm:
        list(farm.frames(16, spp=4))
        assert all(n > 0 for n in backend.tasks_done)
        assert len(backend.tasks_done) >= 2
