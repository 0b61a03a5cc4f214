"""The path tracer's denoiser inputs and a render pipeline with the denoise stages, on the GPU.

The albedo and normal the launch writes are compared with the Cornell box's own numbers on pixels that see
one face only; a denoised 4-spp frame, and a denoised 4-spp still, are compared with a 4096-spp render of the
same camera; frames with the stages on and off; steady-state denoised frames are watched for host stalls.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from optixasync.denoise import Denoise
from optixasync.io import tonemap_srgb
from optixasync.render import RenderOptions, RenderPipeline, Tonemap
from optixasync.scene import cornell_box
from optixasync.scheduler import FrameScheduler

OUT = os.environ.get("OUT")  # a folder to leave the compared images in, when set
#: What a denoising pipeline makes: the sRGB of the denoised image, the denoised radiance, and the noisy one.
OUTPUTS = ("image", "denoised", "radiance")


def load_reference():
    spec = importlib.util.spec_from_file_location(
        "render_reference", Path(__file__).resolve().parents[1] / "render" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def oidn_cuda():
    from optixasync.denoise import available_denoisers

    state = available_denoisers().get("oidn-cuda", "")
    if not state.startswith("available"):
        pytest.skip(f"OIDN's CUDA device: {state}")


def denoising(ctx, options: RenderOptions, denoise_options=None, **kwargs) -> RenderPipeline:
    """The Cornell box through the denoise and tonemap stages."""
    kwargs.setdefault("outputs", OUTPUTS)
    return RenderPipeline(ctx, cornell_box(), options, stages=[Denoise(denoise_options), Tonemap("denoised")],
                          **kwargs)


def progressive(pipeline: RenderPipeline, frames: int, readback) -> dict[str, np.ndarray]:
    """``frames`` frames of 1 spp through the pipeline's scheduler; copies of the last frame's readbacks."""
    results = list(pipeline.frames(frames, 1, readback=readback, last_only=True))
    assert [r.index for r in results] == sorted(r.index for r in results) and len(results) == frames
    with results[-1] as last:
        return {name: np.array(view) for name, view in last.readbacks.items()}


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2)))


@pytest.mark.gpu
def test_aovs_equal_the_faces_albedo_and_normal(ctx):
    ref = load_reference()
    scene = cornell_box()
    width = height = 64
    tris = ref.scene_triangles(scene)
    outputs = ("radiance", "albedo", "normal")
    with RenderPipeline(ctx, scene, RenderOptions(width=width, height=height), outputs=outputs) as pipeline:
        assert pipeline.readback == outputs and pipeline.stages == []
        result = progressive(pipeline, 4, outputs)
    albedo, normal, radiance = result["albedo"], result["normal"], result["radiance"]
    assert np.isfinite(radiance).all() and (radiance[..., 3] == 1.0).all()
    assert (albedo[..., 3] == 1.0).all() and (normal[..., 3] == 0.0).all()
    checked = 0
    for name in ("floor", "ceiling", "back", "green_wall", "red_wall"):
        k = scene.find(name)
        mask = ref.covered_pixels(scene.camera, tris, width, height, k)
        assert mask.sum() >= 20, name
        mesh = scene.meshes[k]
        facing = mesh.face_normals()[0]
        facing = facing if np.dot(facing, np.asarray(scene.camera.eye) - mesh.corners()[0][0]) > 0 else -facing
        np.testing.assert_allclose(albedo[mask][:, :3], np.broadcast_to(mesh.material.reflectance, (mask.sum(), 3)),
                                   atol=2e-6, err_msg=name)
        np.testing.assert_allclose(normal[mask][:, :3], np.broadcast_to(facing, (mask.sum(), 3)), atol=2e-6,
                                   err_msg=name)
        checked += int(mask.sum())
    light = scene.find("light")
    mask = ref.covered_pixels(scene.camera, tris, width, height, light, grid=3)
    if mask.any():  # the light shows with its emission clamped to [0, 1]: every channel 1
        np.testing.assert_allclose(albedo[mask][:, :3], 1.0, atol=1e-6)
    assert checked > 500


def check_closer_to_the_reference(reference: np.ndarray, noisy: np.ndarray, denoised: np.ndarray, label: str) -> None:
    """The denoised image is 3x closer to the reference than the noisy one, and keeps its mean, in [0, 1]."""
    # Compared in the displayed range [0, 1]: unclipped, the light (radiance up to 18) and its edge pixels,
    # which neither image gets right at 4 spp, outweigh the whole rest of the image.
    shown = {name: np.clip(image, 0.0, 1.0) for name, image in (("ref", reference), ("noisy", noisy),
                                                               ("denoised", denoised))}
    rmse_noisy, rmse_denoised = rmse(shown["noisy"], shown["ref"]), rmse(shown["denoised"], shown["ref"])
    mean_ref = float(reference.mean())
    print(f"{label}, 4 spp vs 4096 spp: RMSE in [0, 1] noisy {rmse_noisy:.4f}, denoised {rmse_denoised:.4f} "
          f"({rmse_noisy / rmse_denoised:.2f}x lower); unclipped noisy {rmse(noisy, reference):.4f}, denoised "
          f"{rmse(denoised, reference):.4f}; mean ref {mean_ref:.4f}, noisy {noisy.mean():.4f}, denoised "
          f"{denoised.mean():.4f}")
    assert rmse_denoised * 3 <= rmse_noisy
    # The mean in the displayed range: measured on an H200, the unclipped mean differs by 1.2%, all of it in
    # the 392 pixels of the light (radiance 12.7 on average, 2.5% lower after denoising); elsewhere 0.26%.
    mean_shown = float(shown["ref"].mean())
    assert abs(float(shown["denoised"].mean()) - mean_shown) <= 0.01 * mean_shown


def within_one_code(image: np.ndarray, linear: np.ndarray) -> bool:
    """Whether an sRGB ``image`` (H, W, 4) is the host tonemap of ``linear`` (H, W, 3) to one code (fast pow)."""
    return bool(np.abs(image[..., :3].astype(int) - tonemap_srgb(linear).astype(int)).max() <= 1)


@pytest.mark.gpu
def test_denoised_frame_is_closer_to_the_reference(ctx, oidn_cuda):
    width = height = 256
    with denoising(ctx, RenderOptions(width=width, height=height)) as pipeline:
        reference = pipeline.render(4096)
        result = progressive(pipeline, 4, OUTPUTS)
    noisy, denoised = result["radiance"][..., :3], result["denoised"][..., :3]
    if OUT:
        for name, image in (("ref", reference), ("noisy", noisy), ("denoised", denoised)):
            np.save(Path(OUT) / f"denoise_{name}.npy", image)
    check_closer_to_the_reference(reference, noisy, denoised, "progressive frames")
    image = result["image"]
    assert image.shape == (height, width, 4) and (image[..., 3] == 255).all()
    assert within_one_code(image, denoised)  # the tonemap stage's sRGB of the denoised radiance


@pytest.mark.gpu
def test_a_denoised_still_runs_the_stages_once_after_its_last_launch(ctx, oidn_cuda):
    width = height = 256
    options = RenderOptions(width=width, height=height, spp=4)
    with denoising(ctx, options) as pipeline:
        reference = pipeline.render(4096)
        pipeline.options = dataclasses.replace(options, samples_per_launch=2)  # the still: two launches of 2
        calls: list[int] = []
        with pipeline.still(progress=calls.append) as result:
            assert sorted(result.readbacks) == ["denoised", "image", "radiance", "sums"]
            still = {name: np.array(view) for name, view in result.readbacks.items()}
        assert calls == [2, 4] and pipeline.samples_done == 0  # a still leaves the progressive image alone
        frame = progressive(pipeline, 4, ("radiance",))  # samples 0 ... 3 too, one per frame
    np.testing.assert_array_equal(still["radiance"], frame["radiance"])  # the same sums: the same mean, bit for bit
    np.testing.assert_array_equal(still["radiance"][..., :3], still["sums"][..., :3] * np.float32(1 / 4))
    denoised = still["denoised"][..., :3]
    check_closer_to_the_reference(reference, still["radiance"][..., :3], denoised, "a still")
    assert (still["image"][..., 3] == 255).all() and within_one_code(still["image"], denoised)


@pytest.mark.gpu
def test_frames_with_the_stages_on_and_off(ctx, oidn_cuda):
    """Off: the launch's own noisy image (and radiance). On: the denoised one; the first-hit sums restart the image."""
    staged = [False, False, True, True, False]
    with denoising(ctx, RenderOptions(width=64, height=64, seed=8)) as pipeline, \
            FrameScheduler(ctx, 2, params_dtype=pipeline.params_dtype, stream=pipeline.stream) as sched:
        made, samples = [], []
        for on in staged:
            with sched.frame() as f:
                made.append(sorted(pipeline.record(f, 1, stages=on, readback=OUTPUTS if on else "image")))
            samples.append(pipeline.samples_done)
        results = sched.drain()
        offline = {n: pipeline.render(n) for n in (1, 2, 3)}
        frames = [{name: np.array(view) for name, view in r.readbacks.items()} for r in results]
        for r in results:
            r.release()
    # off: what the launch writes itself (the image, and the radiance this pipeline makes); on: the stages' inputs,
    # the denoised radiance and its image
    staged_buffers = ["albedo", "denoised", "image", "normal", "radiance"]
    assert made == [["image", "radiance"], ["image", "radiance"], staged_buffers, staged_buffers, ["image", "radiance"]]
    # the first denoised frame restarts the accumulation (the first-hit sums would not cover the earlier
    # samples); a frame without the stages goes on adding to it
    assert samples == [1, 2, 1, 2, 3]
    assert [sorted(f) for f in frames] == [["image"], ["image"], sorted(OUTPUTS), sorted(OUTPUTS), ["image"]]
    assert within_one_code(frames[0]["image"], offline[1]) and within_one_code(frames[1]["image"], offline[2])
    assert within_one_code(frames[4]["image"], offline[3])  # samples 0 ... 2 since the restart: noisy again
    for k in (2, 3):
        on = frames[k]
        np.testing.assert_array_equal(on["radiance"][..., :3], offline[k - 1])  # the noisy mean of k - 1 samples
        denoised = on["denoised"][..., :3]  # the denoiser writes RGB; the fourth channel is the slot buffer's own
        assert np.isfinite(denoised).all() and within_one_code(on["image"], denoised)
        assert not within_one_code(on["image"], on["radiance"][..., :3])  # the image shows the denoised radiance


@pytest.mark.gpu
def test_denoised_frames_do_not_stall_the_host(ctx, oidn_cuda):
    from optixasync.diagnostics import syncwatch

    with denoising(ctx, RenderOptions(width=256, height=256), outputs=("image",)) as pipeline:  # the viewer's
        sched = pipeline.scheduler

        def frame():
            with sched.frame() as f:
                pipeline.record(f, 1)
            for result in sched.poll():
                result.release()

        for _ in range(30):  # warm-up: each slot's filter is committed, the pinned pool reaches its size
            frame()
        with syncwatch() as watch:
            for _ in range(40):
                frame()
        sched.drain()
        with syncwatch() as through_frames:  # the pipeline's own loop, its drain (a designed wait) included
            for result in pipeline.frames(40):
                result.release()
    for report in (watch.report, through_frames.report):
        print(report.render())
        report.assert_no_sync()


def test_guides_are_required():
    """CPU: the stage refuses options without both guides, before any GPU work."""
    with pytest.raises(ValueError, match="albedo=True and normal=True"):
        Denoise({"albedo": False, "normal": False})
    with pytest.raises(ValueError, match="albedo=True and normal=True"):
        Denoise({"albedo": True, "normal": False})
    stage = Denoise()
    assert stage.needs == {"radiance", "albedo", "normal"} and stage.writes == {"denoised"}
    assert stage.denoiser is None  # made by the first frame: its stream, device and slot count


@pytest.mark.gpu
def test_every_slot_keeps_its_filter_and_a_foreign_scheduler_is_refused(ctx, oidn_cuda):
    options = RenderOptions(width=32, height=32)
    with denoising(ctx, options, frames_in_flight=5, readback=None) as pipeline:
        results = list(pipeline.frames(20, 1))
        assert len(results) == 20 and all(r.readbacks == {} for r in results)
        stats = pipeline.stages[0].denoiser.stats
    # five slots, five buffer sets, each committed once and then found in the cache (the default holds 4)
    assert (stats.frames, stats.filter_sets_created, stats.filter_sets_rebound) == (20, 5, 0)
    assert stats.cache_hits == 15
    with denoising(ctx, options, frames_in_flight=1, readback=None) as pipeline, \
            FrameScheduler(ctx, 2, params_dtype=pipeline.params_dtype, stream=pipeline.stream) as more_slots, \
            FrameScheduler(ctx, 1, params_dtype=pipeline.params_dtype) as other_stream:
        assert len(list(pipeline.frames(1))) == 1  # the stage learns the pipeline's scheduler: one slot
        for sched in (more_slots, other_stream):
            with pytest.raises(ValueError, match="serves the frames of one scheduler"), sched.frame() as f:
                pipeline.record(f, 1)
            assert sched.drain() == []  # the refused frame delivers nothing
        assert len(list(pipeline.frames(2))) == 2  # its own frames still run


@pytest.mark.gpu
def test_prefiltered_guides_run_on_the_gpu(ctx, oidn_cuda):
    options = {"hdr": True, "albedo": True, "normal": True, "clean_aux": False, "prefilter_aux": True}
    with denoising(ctx, RenderOptions(width=64, height=64), options) as pipeline:
        assert pipeline.stages[0].options.prefilter_aux
        result = progressive(pipeline, 4, ("denoised", "radiance"))
    denoised, noisy = result["denoised"][..., :3], result["radiance"][..., :3]
    assert np.isfinite(denoised).all()
    assert abs(float(denoised.mean()) - float(noisy.mean())) <= 0.1 * float(noisy.mean())
    assert np.abs(np.diff(denoised, axis=1)).mean() < np.abs(np.diff(noisy, axis=1)).mean()
