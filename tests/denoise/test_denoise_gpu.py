"""The 'cuda' denoiser on a GPU: OIDN's CUDA device on our non-blocking stream, CuPy arrays shared without a copy.

These tests carry the ``gpu`` marker (they skip, with the reason, where no GPU can run them) and also skip
where OIDN's CUDA device is not available (``available_denoisers()["oidn-cuda"]`` says why).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from optixasync.denoise import Denoiser
from optixasync.denoise._oidn import load_library

pytestmark = pytest.mark.gpu

GUIDED = {"albedo": True, "normal": True, "clean_aux": True}


@pytest.fixture(scope="module")
def cupy(oidn_cuda):
    return pytest.importorskip("cupy")


@pytest.fixture()
def stream(cupy):
    return cupy.cuda.Stream(non_blocking=True)


def _upload(cupy, stream, *arrays: np.ndarray) -> list:
    with stream:
        return [cupy.asarray(a) for a in arrays]


def _check_denoised(scene, result: np.ndarray, label: str) -> float:
    noisy, denoised = scene.rmse(scene.noisy, scene.truth), scene.rmse(result, scene.truth)
    mean_error = abs(float(result[..., :3].mean()) / float(scene.truth.mean()) - 1)
    print(f"\n{label}: RMSE noisy {noisy:.4f}, denoised {denoised:.4f} ({noisy / denoised:.2f}x lower), "
          f"mean off by {100 * mean_error:.3f}%")
    assert denoised * 3 <= noisy, f"{label}: the error dropped only {noisy / denoised:.2f}x"
    assert mean_error < 0.01, f"{label}: the mean moved by {100 * mean_error:.2f}%"
    return noisy / denoised


def test_cuda_device_is_bound_to_our_non_blocking_stream(cupy, stream) -> None:
    class Wrapped:
        def __cuda_stream__(self) -> tuple[int, int]:
            return (0, stream.ptr)

    for given in (stream, Wrapped(), stream.ptr):
        with Denoiser(64, 64, device="cuda", stream=given) as den:
            assert den.kind == "cuda" and den.device_id == 0
            assert den.stream_handle == stream.ptr and den.stream is given
            assert den.oidn_version.startswith("2.")
    with Denoiser(64, 64) as den:  # no stream given: a new non-blocking one of its own
        assert isinstance(den.stream, cupy.cuda.Stream) and den.stream_handle not in (0, 1)
        assert den.stream_handle == den.stream.ptr


def test_denoise_returns_without_waiting(cupy, stream, scene_factory) -> None:
    """1920x1080 HDR with clean guides: host time of the call against GPU time; correct after the fence."""
    scene = scene_factory(1080, 1920, sigma=0.1, seed=11)
    color, albedo, normal = _upload(cupy, stream, scene.noisy, scene.albedo, scene.normal)
    with stream:
        output = cupy.zeros_like(color)
    with Denoiser(1920, 1080, GUIDED, stream=stream) as den:
        t0 = time.perf_counter()
        den.prepare(color, output, albedo, normal)  # set-up: create and commit the filter
        prepare_ms = 1e3 * (time.perf_counter() - t0)
        den.denoise(color, output, albedo, normal)  # first execution: OIDN's lazy initialisation
        stream.synchronize()
        with stream:
            output.fill(0.0)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        host_ms, gpu_ms, done_at_return = [], [], []
        for _ in range(10):
            start.record(stream)
            t0 = time.perf_counter()
            den.denoise(color, output, albedo, normal)
            host_ms.append(1e3 * (time.perf_counter() - t0))
            end.record(stream)
            done_at_return.append(end.done)
            end.synchronize()
            gpu_ms.append(cupy.cuda.get_elapsed_time(start, end))
        result = output.get(stream=stream)  # waits for the stream: the fence
        stats = den.stats
    print(f"\nprepare (create + commit): {prepare_ms:.2f} ms host")
    print(f"denoise 1920x1080 (median of 10): host {np.median(host_ms):.3f} ms (max {max(host_ms):.3f}), "
          f"GPU {np.median(gpu_ms):.3f} ms; GPU work already done when the call returned: "
          f"{sum(done_at_return)} of 10")
    _check_denoised(scene, result, "1920x1080 on the GPU")
    assert stats.commits == 1 and stats.filter_sets_created == 1 and stats.frames == 11


def test_producer_stream_is_joined_without_host_wait(cupy, stream, scene_factory) -> None:
    """Inputs made by a kernel on another stream, output consumed there: only that stream is synchronized."""
    scene = scene_factory(512, 512, sigma=0.1, seed=12)
    producer = cupy.cuda.Stream(non_blocking=True)
    truth, noise, albedo, normal = _upload(
        cupy, producer, scene.truth, scene.noisy - scene.truth, scene.albedo, scene.normal
    )
    with Denoiser(512, 512, GUIDED, stream=stream) as den:
        with producer:
            color = truth + noise  # a kernel on the producer stream
            output = cupy.zeros_like(color)
            den.prepare(color, output, albedo, normal)
        for _ in range(3):
            with producer:
                output.fill(-1.0)  # enqueued on the producer: must land before the denoise writes
            den.denoise(color, output, albedo, normal, stream=producer)
            with producer:
                copy = output.copy()  # enqueued on the producer: must see the denoised image
            producer.synchronize()
            _check_denoised(scene, copy.get(), "512x512, inputs from another stream")


def test_rmse_drop_on_gpu_every_quality(cupy, stream, scene_factory) -> None:
    scene = scene_factory(512, 512, sigma=0.1, seed=13)
    color, albedo, normal = _upload(cupy, stream, scene.noisy, scene.albedo, scene.normal)
    for quality in ("high", "balanced", "fast"):
        with stream:
            output = cupy.zeros_like(color)
        with Denoiser(512, 512, {**GUIDED, "quality": quality}, stream=stream) as den:
            den.denoise(color, output, albedo, normal)
            result = output.get(stream=stream)
        ratio = scene.rmse(scene.noisy, scene.truth) / scene.rmse(result, scene.truth)
        print(f"\nquality {quality}: {ratio:.2f}x lower RMSE")
        assert ratio >= 2.0
        if quality == "high":
            _check_denoised(scene, result, "512x512 high")


def test_resize_recommits_on_gpu(cupy, stream, scene_factory) -> None:
    small, large = scene_factory(192, 256, seed=14), scene_factory(240, 320, seed=15)
    with Denoiser(256, 192, GUIDED, stream=stream) as den:
        for scene, size, commits in ((small, None, 1), (large, (320, 240), 2), (small, (256, 192), 3)):
            if size is not None:
                t0 = time.perf_counter()
                assert den.resize(*size)
                print(f"\nresize to {size}: {1e3 * (time.perf_counter() - t0):.2f} ms host (waits, releases)")
            color, albedo, normal = _upload(cupy, stream, scene.noisy, scene.albedo, scene.normal)
            with stream:
                output = cupy.zeros_like(color)
            den.denoise(color, output, albedo, normal)
            _check_denoised(scene, output.get(stream=stream), f"{scene.noisy.shape[1]}x{scene.noisy.shape[0]}")
            assert den.stats.commits == commits


def test_frame_slots_reuse_their_filters_on_gpu(cupy, stream, scene_factory) -> None:
    slots, h, w = 3, 256, 256
    scenes = [scene_factory(h, w, seed=20 + s) for s in range(slots)]
    buffers = []
    for scene in scenes:
        color, albedo, normal = _upload(cupy, stream, scene.noisy, scene.albedo, scene.normal)
        with stream:
            buffers.append((color, cupy.zeros_like(color), albedo, normal))
    with Denoiser(w, h, {**GUIDED, "max_filters": slots}, stream=stream) as den:
        for color, output, albedo, normal in buffers:
            den.prepare(color, output, albedo, normal)
        results = []
        for frame in range(3 * slots):
            color, output, albedo, normal = buffers[frame % slots]
            den.denoise(color, output, albedo, normal)
            with stream:
                results.append(output.copy())  # the frame's "readback", in stream order
        stream.synchronize()
        stats = den.stats
    assert stats.commits == slots and stats.filter_sets_rebound == 0 and stats.cache_hits == 3 * slots
    for frame, result in enumerate(results):
        _check_denoised(scenes[frame % slots], result.get(), f"frame {frame}")


def test_rgba_views_and_in_place_on_gpu(cupy, stream, scene_factory) -> None:
    scene = scene_factory(256, 320, seed=16)
    color, albedo, normal = _upload(cupy, stream, scene.noisy, scene.albedo, scene.normal)
    with stream:
        rgba = cupy.full((256, 320, 4), 0.5, cupy.float32)
        rgba[..., :3] = color
        out4 = cupy.full((256, 320, 4), 7.0, cupy.float32)
        separate = cupy.zeros_like(color)
    with Denoiser(320, 256, GUIDED, stream=stream) as den:
        den.denoise(color, separate, albedo, normal)
        den.denoise(rgba, out4, albedo, normal)  # pixel stride 16, alpha untouched
        with stream:
            view_out = cupy.zeros((256, 320, 4), cupy.float32)
        den.denoise(rgba[..., :3], view_out[..., :3], albedo, normal)
        with stream:
            inplace = color.copy()
        den.denoise(inplace, inplace, albedo, normal)
        separate_h, out4_h, view_h, inplace_h = (a.get(stream=stream) for a in (separate, out4, view_out, inplace))
    _check_denoised(scene, separate_h, "RGB")
    assert np.all(out4_h[..., 3] == 7.0) and np.all(view_h[..., 3] == 0.0)
    for label, result in (("RGBA", out4_h), ("RGB view of RGBA", view_h), ("in place", inplace_h)):
        _check_denoised(scene, result, label)
        assert scene.rmse(result, separate_h) < 0.1 * scene.sigma, label


def test_host_arrays_refused_before_any_oidn_call(cupy, stream, scene_factory) -> None:
    scene = scene_factory(64, 64)
    lib = load_library()
    with stream:
        device_output = cupy.zeros((64, 64, 3), cupy.float32)
    with Denoiser(64, 64, stream=stream) as den:
        calls = lib.total_calls()
        with pytest.raises(TypeError, match="color is a numpy array"):
            den.denoise(scene.noisy, device_output)
        with pytest.raises(ValueError, match="stream: the legacy default stream"):
            den.denoise(*_upload(cupy, stream, scene.noisy, scene.noisy * 0), stream=0)
        assert lib.total_calls() == calls


def test_gpu_agrees_with_cpu(cupy, stream, scene_factory, oidn_cpu) -> None:
    scene = scene_factory(256, 256, seed=17)
    cpu_out = np.zeros_like(scene.noisy)
    with Denoiser(256, 256, GUIDED, device="cpu") as den:
        den.denoise(scene.noisy, cpu_out, scene.albedo, scene.normal)
    color, albedo, normal = _upload(cupy, stream, scene.noisy, scene.albedo, scene.normal)
    with stream:
        output = cupy.zeros_like(color)
    with Denoiser(256, 256, GUIDED, stream=stream) as den:
        den.denoise(color, output, albedo, normal)
        gpu_out = output.get(stream=stream)
    assert scene.rmse(gpu_out, cpu_out) < 0.2 * scene.sigma
