"""Size changes: resize() releases the filters and the next frame commits at the new size, correctly."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.denoise import Denoiser
from optixasync.denoise._oidn import load_library

GUIDED = {"albedo": True, "normal": True, "clean_aux": True}


def _fresh(scene, options) -> np.ndarray:
    h, w = scene.noisy.shape[:2]
    out = np.zeros_like(scene.noisy)
    with Denoiser(w, h, options, device="cpu") as den:
        den.denoise(scene.noisy, out, scene.albedo, scene.normal)
    return out


@pytest.mark.parametrize("options", [GUIDED, {"albedo": True, "normal": True, "prefilter_aux": True}],
                         ids=["clean", "prefiltered"])
def test_resize_recommits_and_is_correct(oidn_cpu, scene_factory, options) -> None:
    small, large = scene_factory(48, 64, seed=1), scene_factory(80, 112, seed=2)
    small_ref, large_ref = _fresh(small, options), _fresh(large, options)
    per_set = 3 if options.get("prefilter_aux") else 1
    with Denoiser(64, 48, options, device="cpu") as den:
        out = np.zeros_like(small.noisy)
        den.denoise(small.noisy, out, small.albedo, small.normal)
        np.testing.assert_allclose(out, small_ref, rtol=1e-4, atol=1e-4)
        assert den.stats.commits == per_set and den.stats.cached == 1

        assert den.resize(112, 80) is True
        assert (den.width, den.height) == (112, 80)
        assert den.stats.cached == 0 and den.stats.resizes == 1
        out = np.zeros_like(large.noisy)
        den.denoise(large.noisy, out, large.albedo, large.normal)
        np.testing.assert_allclose(out, large_ref, rtol=1e-4, atol=1e-4)
        assert den.stats.commits == 2 * per_set and den.stats.filter_sets_created == 2

        den.denoise(large.noisy, out, large.albedo, large.normal)  # steady state again: no commit
        assert den.stats.commits == 2 * per_set

        den.resize(64, 48)  # and back
        out = np.zeros_like(small.noisy)
        den.denoise(small.noisy, out, small.albedo, small.normal)
        np.testing.assert_allclose(out, small_ref, rtol=1e-4, atol=1e-4)
        assert den.stats.resizes == 2


def test_same_size_is_a_no_op(oidn_cpu) -> None:
    lib = load_library()
    with Denoiser(64, 48, device="cpu") as den:
        calls = lib.total_calls()
        assert den.resize(64, 48) is False
        assert lib.total_calls() == calls and den.stats.resizes == 0


def test_old_size_after_resize_is_refused_before_oidn(oidn_cpu, scene_factory) -> None:
    scene = scene_factory(48, 64)
    lib = load_library()
    with Denoiser(64, 48, GUIDED, device="cpu") as den:
        den.resize(96, 48)
        calls = lib.total_calls()
        with pytest.raises(ValueError, match=r"color is 64x48 \(width x height\) but the denoiser is 96x48.*resize"):
            den.denoise(scene.noisy, np.zeros_like(scene.noisy), scene.albedo, scene.normal)
        assert lib.total_calls() == calls


@pytest.mark.parametrize(("size", "error"), [((0, 8), ValueError), ((8, -1), ValueError), ((8.0, 8), TypeError),
                                             ((8, None), TypeError)])
def test_bad_sizes(oidn_cpu, size, error) -> None:
    lib = load_library()
    with Denoiser(16, 16, device="cpu") as den:
        calls = lib.total_calls()
        with pytest.raises(error, match="width|height"):
            den.resize(*size)
        assert lib.total_calls() == calls and (den.width, den.height) == (16, 16)
