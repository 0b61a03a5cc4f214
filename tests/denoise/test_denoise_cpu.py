"""Denoising results on OIDN's CPU device: the error drops, the mean is kept, layouts and in-place agree."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.denoise import Denoiser

GUIDED = {"albedo": True, "normal": True, "clean_aux": True}


def _denoise(scene, options, color=None, output=None, guides=True) -> np.ndarray:
    h, w = scene.noisy.shape[:2]
    color = scene.noisy.copy() if color is None else color
    output = np.zeros_like(scene.noisy) if output is None else output
    with Denoiser(w, h, options, device="cpu") as den:
        aux = (scene.albedo, scene.normal) if guides else ()
        assert den.denoise(color, output, *aux) is output
    return output


def test_rmse_drops_threefold_and_mean_is_kept(oidn_cpu, scene_factory) -> None:
    scene = scene_factory(256, 256, sigma=0.1, seed=1)
    color, albedo, normal = scene.noisy.copy(), scene.albedo.copy(), scene.normal.copy()
    output = np.zeros_like(color)
    with Denoiser(256, 256, GUIDED, device="cpu") as den:
        den.denoise(color, output, albedo, normal)
    noisy_rmse = scene.rmse(scene.noisy, scene.truth)
    denoised_rmse = scene.rmse(output, scene.truth)
    print(f"\nRMSE noisy {noisy_rmse:.4f} (sigma {scene.sigma}), denoised {denoised_rmse:.4f}: "
          f"{noisy_rmse / denoised_rmse:.2f}x lower")
    assert abs(noisy_rmse - scene.sigma) < 0.01 * scene.sigma * 10
    assert denoised_rmse * 3 <= noisy_rmse
    assert abs(output.mean() / scene.truth.mean() - 1) < 0.01
    # the inputs are read, never written
    np.testing.assert_array_equal(color, scene.noisy)
    np.testing.assert_array_equal(albedo, scene.albedo)
    np.testing.assert_array_equal(normal, scene.normal)


@pytest.mark.parametrize("quality", ["high", "balanced", "fast"])
def test_every_quality_denoises(oidn_cpu, scene_factory, quality) -> None:
    scene = scene_factory(96, 128, sigma=0.1, seed=2)
    output = _denoise(scene, {**GUIDED, "quality": quality})
    assert scene.rmse(output, scene.truth) * 2 <= scene.rmse(scene.noisy, scene.truth)


def test_without_guides(oidn_cpu, scene_factory) -> None:
    scene = scene_factory(128, 128, sigma=0.1, seed=3)
    output = _denoise(scene, None, guides=False)
    assert scene.rmse(output, scene.truth) * 2 <= scene.rmse(scene.noisy, scene.truth)
    assert abs(output.mean() / scene.truth.mean() - 1) < 0.01


def test_prefiltered_noisy_guides(oidn_cpu, scene_factory) -> None:
    scene = scene_factory(160, 160, sigma=0.1, seed=4, aux_sigma=0.1)
    albedo, normal = scene.albedo.copy(), scene.normal.copy()
    raw = _denoise(scene, {"albedo": True, "normal": True})
    prefiltered = np.zeros_like(scene.noisy)
    with Denoiser(160, 160, {"albedo": True, "normal": True, "prefilter_aux": True}, device="cpu") as den:
        den.denoise(scene.noisy, prefiltered, albedo, normal)
        assert den.stats.commits == 3  # albedo prefilter, normal prefilter, main filter
    noisy = scene.rmse(scene.noisy, scene.truth)
    print(f"\nnoisy guides: RMSE ratio {noisy / scene.rmse(raw, scene.truth):.2f}x as they are, "
          f"{noisy / scene.rmse(prefiltered, scene.truth):.2f}x prefiltered")
    assert scene.rmse(prefiltered, scene.truth) * 1.5 <= scene.rmse(raw, scene.truth)
    assert scene.rmse(prefiltered, scene.truth) * 2 <= noisy
    np.testing.assert_array_equal(albedo, scene.albedo)  # prefiltered into the denoiser's own buffers
    np.testing.assert_array_equal(normal, scene.normal)


def test_albedo_only(oidn_cpu, scene_factory) -> None:
    scene = scene_factory(96, 96, sigma=0.1, seed=5)
    output = np.zeros_like(scene.noisy)
    with Denoiser(96, 96, {"albedo": True, "clean_aux": True}, device="cpu") as den:
        den.denoise(scene.noisy, output, albedo=scene.albedo)
    assert scene.rmse(output, scene.truth) * 2 <= scene.rmse(scene.noisy, scene.truth)


def test_in_place_matches_separate_output(oidn_cpu, scene_factory) -> None:
    scene = scene_factory(96, 128, seed=6)
    separate = _denoise(scene, GUIDED)
    inplace = scene.noisy.copy()
    with Denoiser(128, 96, GUIDED, device="cpu") as den:
        den.denoise(inplace, inplace, scene.albedo, scene.normal)
    np.testing.assert_allclose(inplace, separate, rtol=1e-4, atol=1e-4)


def test_rgba_layouts_match_rgb(oidn_cpu, scene_factory) -> None:
    """(H, W, 4) arrays and RGB views of them (pixel stride 16) give the RGB result; alpha is left alone."""
    scene = scene_factory(64, 96, seed=7)
    reference = _denoise(scene, GUIDED)

    def rgba(rgb: np.ndarray, alpha: float) -> np.ndarray:
        out = np.full(rgb.shape[:2] + (4,), alpha, np.float32)
        out[..., :3] = rgb
        return out

    color4, output4 = rgba(scene.noisy, 0.25), np.full((64, 96, 4), 7.0, np.float32)
    albedo4, normal4 = rgba(scene.albedo, 1.0), rgba(scene.normal, 0.0)
    with Denoiser(96, 64, GUIDED, device="cpu") as den:
        den.denoise(color4, output4, albedo4, normal4)
        np.testing.assert_allclose(output4[..., :3], reference, rtol=1e-4, atol=1e-4)
        assert np.all(output4[..., 3] == 7.0)
        view_out = np.zeros((64, 96, 4), np.float32)
        den.denoise(color4[..., :3], view_out[..., :3], albedo4[..., :3], normal4[..., :3])
        np.testing.assert_allclose(view_out[..., :3], reference, rtol=1e-4, atol=1e-4)
        assert np.all(view_out[..., 3] == 0.0)
        # rows padded to a larger pitch
        padded = np.zeros((64, 128, 3), np.float32)
        padded_out = np.zeros((64, 128, 3), np.float32)
        padded[:, :96] = scene.noisy
        den.denoise(padded[:, :96], padded_out[:, :96], scene.albedo, scene.normal)
        np.testing.assert_allclose(padded_out[:, :96], reference, rtol=1e-4, atol=1e-4)
        assert np.all(padded_out[:, 96:] == 0.0)


def test_ldr(oidn_cpu, scene_factory) -> None:
    scene = scene_factory(128, 128, sigma=0.1, seed=8)
    scale = 0.45  # brings the truth into [0.25, 0.9]
    noisy, truth = np.clip(scene.noisy * scale, 0.0, 1.0), scene.truth * scale
    output = np.zeros_like(noisy)
    with Denoiser(128, 128, {**GUIDED, "hdr": False}, device="cpu") as den:
        den.denoise(noisy, output, scene.albedo, scene.normal)
    assert scene.rmse(output, truth) * 2 <= scene.rmse(noisy, truth)


def test_input_scale(oidn_cpu, scene_factory) -> None:
    scene = scene_factory(128, 128, sigma=0.1, seed=9)
    automatic = _denoise(scene, GUIDED)
    given = _denoise(scene, {**GUIDED, "input_scale": float(1.0 / scene.noisy.mean())})
    assert scene.rmse(given, scene.truth) * 2.5 <= scene.rmse(scene.noisy, scene.truth)
    assert scene.rmse(given, automatic) < 0.5 * scene.sigma
