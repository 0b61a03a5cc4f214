"""The image comparison statistics: the Welch z/t test with Šidák correction, and the RMSE ratio (pure numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optixasync.testing._compare import (
    PASS_FRACTION,
    batch_statistics,
    normal_sf,
    rmse,
    rmse_ratio,
    sidak_level,
    student_t_sf,
    z_test,
)

SHAPE = (64, 64, 3)


def batches(rng: np.random.Generator, truth: np.ndarray, k: int, spp: int, sigma: float) -> np.ndarray:
    """``k`` batch means of ``spp`` samples each: Gaussian samples around ``truth`` with per-sample deviation ``sigma``."""
    return truth + rng.normal(0.0, sigma / math.sqrt(spp), size=(k, *truth.shape))


def heavy_batches(rng: np.random.Generator, truth: np.ndarray, k: int, spp: int) -> np.ndarray:
    """Batch means of skewed samples (exponential, mean ``truth``): a renderer's radiance is far from Gaussian.

    The mean of ``spp`` exponential samples of mean ``m`` is Gamma-distributed, shape ``spp`` and scale ``m / spp``.
    """
    return rng.gamma(spp, truth / spp, size=(k, *truth.shape))


@pytest.mark.parametrize("t, dof, two_sided_p", [(2.228138852, 10, 0.05), (12.70620474, 1, 0.05),
                                                  (63.65674116, 1, 0.01), (2.756385, 29, 0.01)])
def test_student_t_matches_its_table(t, dof, two_sided_p):
    assert 2.0 * student_t_sf(t, dof) == pytest.approx(two_sided_p, rel=2e-3)


def test_student_t_tends_to_the_normal():
    assert student_t_sf(5.25, 1e7) == pytest.approx(normal_sf(5.25), rel=1e-4)
    assert student_t_sf(5.25, math.inf) == pytest.approx(normal_sf(5.25), rel=1e-12)
    assert 2.0 * normal_sf(1.959963985) == pytest.approx(0.05, rel=1e-8)
    assert student_t_sf(-1.0, 4) == pytest.approx(1.0 - student_t_sf(1.0, 4))


def test_sidak_level_keeps_the_familywise_rate():
    level = sidak_level(0.01, 65536)
    assert 1.0 - (1.0 - level) ** 65536 == pytest.approx(0.01, rel=1e-9)
    assert level == pytest.approx(0.01 / 65536, rel=1e-2)  # close to Bonferroni for a small alpha


def test_batch_statistics_estimate_the_per_sample_variance():
    rng = np.random.default_rng(1)
    stats = batch_statistics(batches(rng, np.full(SHAPE, 0.5), 16, 64, sigma=2.0), 64)
    assert stats.count == 16 * 64 and stats.dof == 15
    assert stats.variance.mean() == pytest.approx(4.0, rel=0.02)
    assert stats.mean.mean() == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("k", [4, 16])
def test_two_renders_of_one_image_pass(k):
    rng = np.random.default_rng(k)
    truth = rng.uniform(0.05, 2.0, SHAPE)
    spp = 1024 // k
    ours = batch_statistics(heavy_batches(rng, truth, k, spp), spp)
    ref = batch_statistics(heavy_batches(rng, truth, k, spp), spp)
    fraction, p = z_test(ours.mean, ours.variance, ref.mean, ref.variance, ours.count, ref.count,
                         dof_ours=ours.dof, dof_ref=ref.dof)
    assert p.shape == SHAPE and ((0.0 <= p) & (p <= 1.0 + 1e-12)).all()
    assert fraction >= 0.995 and fraction >= PASS_FRACTION


def test_the_z_test_without_degrees_of_freedom_is_mitsubas_rule():
    """A converged reference with known variance against a noisy image: the plain z test, as Mitsuba runs it."""
    rng = np.random.default_rng(3)
    truth = rng.uniform(0.1, 1.0, SHAPE)
    sigma = 0.5
    image = batches(rng, truth, 1, 256, sigma)[0]
    # Mitsuba: z = |image - reference| * sqrt(spp / reference_var); the reference's mean counts as exact.
    fraction, _ = z_test(image, np.full(SHAPE, sigma**2), truth, np.zeros(SHAPE), 256, 1 << 40)
    assert fraction >= PASS_FRACTION


def test_few_batches_need_the_t_distribution():
    """With 4 batches a side the variance estimates are noisy: the z test rejects more than it should, t does not."""
    rng = np.random.default_rng(4)
    truth = np.full((128, 128, 3), 1.0)
    ours = batch_statistics(batches(rng, truth, 4, 64, 1.0), 64)
    ref = batch_statistics(batches(rng, truth, 4, 64, 1.0), 64)
    args = (ours.mean, ours.variance, ref.mean, ref.variance, ours.count, ref.count)
    z_fraction, _ = z_test(*args)
    t_fraction, _ = z_test(*args, dof_ours=ours.dof, dof_ref=ref.dof)
    assert t_fraction == 1.0 or t_fraction >= 0.9999
    assert z_fraction < t_fraction  # the normal tails are too thin for 6 degrees of freedom


def test_a_biased_render_fails():
    """30 % too bright everywhere, 13 standard errors of the difference: the per-pixel test rejects."""
    rng = np.random.default_rng(5)
    truth = rng.uniform(0.05, 2.0, SHAPE)
    ours = batch_statistics(heavy_batches(rng, truth * 1.3, 16, 256), 256)
    ref = batch_statistics(heavy_batches(rng, truth, 16, 256), 256)
    fraction, _ = z_test(ours.mean, ours.variance, ref.mean, ref.variance, ours.count, ref.count,
                         dof_ours=ours.dof, dof_ref=ref.dof)
    assert fraction < 0.5


def test_a_small_global_bias_escapes_the_pixel_test_but_not_the_rmse_ratio():
    """5 % too bright is about one standard error per pixel: invisible pixel by pixel, plain over the image."""
    rng = np.random.default_rng(9)
    truth = rng.uniform(0.05, 2.0, SHAPE)
    ours = heavy_batches(rng, truth * 1.05, 4, 256)
    ref = heavy_batches(rng, truth, 4, 256)
    a, b = batch_statistics(ours, 256), batch_statistics(ref, 256)
    fraction, _ = z_test(a.mean, a.variance, b.mean, b.variance, a.count, b.count, dof_ours=a.dof, dof_ref=b.dof)
    assert fraction >= PASS_FRACTION
    halves = (ours[:2].mean(axis=0), ours[2:].mean(axis=0), ref[:2].mean(axis=0), ref[2:].mean(axis=0))
    assert rmse_ratio(*halves) > 1.2  # sqrt(1 + bias^2 / (2 sigma^2)) with bias / sigma about 0.8 here
    assert rmse_ratio(*halves, compress=True) > 1.2


def test_compressing_tames_fireflies():
    """Fireflies on one pixel of one of ours and one reference image: raw, the ratio falls to about 0.7."""
    rng = np.random.default_rng(10)
    truth = rng.uniform(0.1, 1.0, SHAPE)
    ours0, ours1, ref0, ref1 = batches(rng, truth, 4, 256, 0.8)
    ours0[5, 5] += 500.0
    ref0[5, 5] += 500.0
    assert rmse_ratio(ours0, ours1, ref0, ref1) < 0.75
    assert rmse_ratio(ours0, ours1, ref0, ref1, compress=True) == pytest.approx(1.0, abs=0.05)


def test_a_small_wrong_region_fails():
    """A 16 x 16 patch (6 % of the image) twice as bright must fail although most pixels agree."""
    rng = np.random.default_rng(6)
    truth = rng.uniform(0.2, 1.0, SHAPE)
    wrong = truth.copy()
    wrong[:16, :16] *= 2.0
    ours = batch_statistics(batches(rng, wrong, 8, 128, 1.0), 128)
    ref = batch_statistics(batches(rng, truth, 8, 128, 1.0), 128)
    fraction, p = z_test(ours.mean, ours.variance, ref.mean, ref.variance, ours.count, ref.count,
                         dof_ours=ours.dof, dof_ref=ref.dof)
    assert fraction < PASS_FRACTION
    level = sidak_level(0.01, SHAPE[0] * SHAPE[1])
    assert (p[16:, 16:] > level).mean() > 0.999 and (p[:16, :16] <= level).mean() > 0.5


def test_zero_variance_pixels_use_the_floor():
    """Equal constant pixels (an emitter seen directly) pass; a constant pixel off by more than the floor allows fails."""
    a = np.full((8, 8, 3), 2.0)
    zero = np.zeros((8, 8, 3))
    assert z_test(a, zero, a, zero, 64, 64)[0] == 1.0
    assert z_test(a, zero, a + 0.5, zero, 64, 64)[0] == 0.0


def test_rmse():
    a = np.zeros((2, 2, 3))
    b = np.full((2, 2, 3), 3.0)
    assert rmse(a, b) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="one shape"):
        rmse(a, b[:1])


def test_rmse_ratio_is_one_for_equal_images_and_grows_with_bias():
    rng = np.random.default_rng(7)
    truth = rng.uniform(0.1, 1.0, SHAPE)
    ours0, ours1, ref0, ref1 = batches(rng, truth, 4, 256, 0.8)
    assert rmse_ratio(ours0, ours1, ref0) == pytest.approx(1.0, abs=0.03)
    assert rmse_ratio(ours0, ours1, ref0, ref1) == pytest.approx(1.0, abs=0.03)
    biased = ref0 + 0.05  # sigma of a pixel estimate is 0.8 / 16 = 0.05: expect sqrt(1 + 0.05^2 / (2 * 0.05^2))
    assert rmse_ratio(ours0, ours1, biased) == pytest.approx(math.sqrt(1.5), abs=0.04)


def test_rmse_ratio_with_a_noisier_reference_needs_its_second_estimate():
    rng = np.random.default_rng(8)
    truth = rng.uniform(0.1, 1.0, SHAPE)
    ours0, ours1 = batches(rng, truth, 2, 256, 0.5)
    ref0, ref1 = batches(rng, truth, 2, 256, 1.5)  # three times our noise, no bias
    assert rmse_ratio(ours0, ours1, ref0) == pytest.approx(math.sqrt((1 + 9) / 2), rel=0.03)
    assert rmse_ratio(ours0, ours1, ref0, ref1) == pytest.approx(1.0, abs=0.03)
