"""Statistics that compare two Monte Carlo renderings of one scene: a per-pixel z/t test and an RMSE ratio.

Pure numpy. The test is the reference renderer's (Mitsuba 3's
``src/render/tests/test_renders.py``): per pixel and per channel, the
two-sided p-value of ``|mean - reference| / standard error``; a pixel
channel passes when its p-value exceeds the Šidák-corrected significance
``1 - (1 - alpha) ** (1 / pixel_count)`` (alpha = 0.01 over all pixels),
and the image passes when at least :data:`PASS_FRACTION` (99.75 %) of the
pixel channels pass. Mitsuba compares one noisy image with a converged
reference whose per-sample variance it knows; here both sides are noisy
(our renderer and the reference renderer, equal samples per pixel), so the
standard error is Welch's, ``sqrt(var_a / n_a + var_b / n_b)``.

Where the variances come from: a renderer returns only the mean image of
each render, so each side is rendered ``K`` times with different seeds
(:func:`batch_statistics`); the spread of the ``K`` batch means estimates
the per-sample variance with ``K - 1`` degrees of freedom. With few batches
that estimate is itself noisy and the z statistic has heavier tails than a
normal one: passing the degrees of freedom to :func:`z_test` turns it into
Welch's t test (Student's t with the Welch-Satterthwaite degrees of
freedom), which keeps the false-rejection rate at the stated level.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "MIN_VARIANCE",
    "PASS_FRACTION",
    "BatchStatistics",
    "batch_statistics",
    "normal_sf",
    "rmse",
    "rmse_ratio",
    "sidak_level",
    "student_t_sf",
    "z_test",
]

#: The fraction of pixel channels that must pass for the image to pass (Mitsuba's render tests: 99.75 %).
PASS_FRACTION = 0.9975
#: Floor of a per-sample variance (Mitsuba's ``np.maximum(reference_var, 1e-4)``): a pixel whose samples are
#: all equal (an emitter seen directly, a constant sky) would otherwise have a zero standard error.
MIN_VARIANCE = 1e-4


class BatchStatistics(NamedTuple):
    """One renderer's estimate of an image from ``K`` independent batches.

    Attributes
    ----------
    mean : ndarray (H, W, C) float64
        The mean of all samples (the mean of the batch means).
    variance : ndarray (H, W, C) float64
        The estimated variance of one sample: ``spp_per_batch`` times the
        unbiased variance of the batch means.
    count : int
        Samples per pixel in ``mean``: ``K * spp_per_batch``.
    dof : int
        Degrees of freedom of ``variance``: ``K - 1``.
    """

    mean: np.ndarray
    variance: np.ndarray
    count: int
    dof: int


def batch_statistics(batches: Any, spp_per_batch: int) -> BatchStatistics:
    """Mean and per-sample variance of a pixel estimate from ``K >= 2`` renders with different seeds.

    Parameters
    ----------
    batches : array (K, H, W, C)
        ``K`` mean images, each the average of ``spp_per_batch`` independent
        samples per pixel.
    spp_per_batch : int

    Notes
    -----
    The batch means of a pixel are independent with variance
    ``sigma^2 / spp_per_batch``, where ``sigma^2`` is the variance of one
    sample; their unbiased sample variance times ``spp_per_batch``
    estimates ``sigma^2``. That is what the test needs: the standard error of
    the overall mean is ``sqrt(sigma^2 / (K * spp_per_batch))``.
    """
    images = np.asarray(batches, dtype=np.float64)
    if images.ndim < 2 or images.shape[0] < 2:
        raise ValueError(f"batch_statistics needs at least 2 batches along axis 0, got shape {images.shape}")
    spp = int(spp_per_batch)
    if spp < 1:
        raise ValueError(f"spp_per_batch must be >= 1, got {spp_per_batch}")
    k = images.shape[0]
    return BatchStatistics(images.mean(axis=0), images.var(axis=0, ddof=1) * spp, k * spp, k - 1)


def sidak_level(alpha: float, tests: int) -> float:
    """The per-test level that keeps the chance of any false rejection among ``tests`` independent ones at ``alpha``.

    ``1 - (1 - alpha) ** (1 / tests)``, computed without cancellation.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if tests < 1:
        raise ValueError(f"tests must be >= 1, got {tests}")
    return -math.expm1(math.log1p(-alpha) / tests)


def normal_sf(z: Any) -> np.ndarray:
    """``P(Z > z)`` of a standard normal ``Z``, elementwise (through ``math.erfc``: no scipy)."""
    z = np.asarray(z, dtype=np.float64)
    return 0.5 * np.vectorize(math.erfc, otypes=[np.float64])(z / math.sqrt(2.0))


def _log_beta(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def _beta_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray, iterations: int = 300) -> np.ndarray:
    """The continued fraction of the incomplete beta function (modified Lentz), elementwise."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
    h = d.copy()
    for m in range(1, iterations + 1):
        m2 = 2.0 * m
        for numerator in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                          -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + numerator * d
            d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
            c = 1.0 + numerator / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            step = d * c
            h = h * step
        if np.all(np.abs(step - 1.0) < 1e-13):
            break
    return h


def _incomplete_beta(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularised incomplete beta function ``I_x(a, b)``, elementwise (``x`` in [0, 1])."""
    out = np.where(x >= 1.0, 1.0, 0.0)
    inner = (x > 0.0) & (x < 1.0)
    if not inner.any():
        return out
    a, b, x = a[inner], b[inner], x[inner]
    log_front = a * np.log(x) + b * np.log1p(-x) - _log_beta(a, b)
    # The fraction converges fast for x < (a + 1) / (a + b + 2); beyond, use I_x(a, b) = 1 - I_(1-x)(b, a).
    direct = x < (a + 1.0) / (a + b + 2.0)
    value = np.empty_like(x)
    value[direct] = np.exp(log_front[direct]) * _beta_fraction(a[direct], b[direct], x[direct]) / a[direct]
    flip = ~direct
    value[flip] = 1.0 - np.exp(log_front[flip]) * _beta_fraction(b[flip], a[flip], 1.0 - x[flip]) / b[flip]
    out[inner] = value
    return out


def student_t_sf(t: Any, dof: Any) -> np.ndarray:
    """``P(T > t)`` of Student's t with ``dof`` (> 0, may be fractional or infinite) degrees of freedom, elementwise.

    ``0.5 * I_(dof / (dof + t^2))(dof / 2, 1 / 2)`` for ``t >= 0`` (and
    ``1 -`` that below); an infinite ``dof`` is the normal distribution.
    """
    t, dof = np.broadcast_arrays(np.asarray(t, dtype=np.float64), np.asarray(dof, dtype=np.float64))
    if np.any(~(dof > 0.0)):
        raise ValueError("student_t_sf: degrees of freedom must be > 0")
    out = np.empty(t.shape)
    finite = np.isfinite(dof)
    out[~finite] = normal_sf(t[~finite])
    tf, nu = np.abs(t[finite]), dof[finite]
    with np.errstate(over="ignore"):
        x = nu / (nu + tf * tf)
    tail = 0.5 * _incomplete_beta(nu / 2.0, np.full_like(nu, 0.5), x)
    out[finite] = np.where(t[finite] >= 0.0, tail, 1.0 - tail)
    return out


def z_test(ours_mean: Any, ours_var: Any, ref_mean: Any, ref_var: Any, n_ours: int, n_ref: int,
           alpha: float = 0.01, *, dof_ours: float | None = None, dof_ref: float | None = None,
           min_variance: float = MIN_VARIANCE) -> tuple[float, np.ndarray]:
    """Mitsuba's render test for two noisy images: per-pixel-channel Welch z (or t) test with Šidák correction.

    Parameters
    ----------
    ours_mean, ref_mean : array (H, W, C)
        Each renderer's mean image (linear radiance).
    ours_var, ref_var : array (H, W, C)
        The per-sample variance of each (as :func:`batch_statistics` gives),
        floored at ``min_variance``.
    n_ours, n_ref : int
        Samples per pixel behind each mean.
    alpha : float
        Significance over the whole image: each pixel channel is tested at
        the Šidák level ``1 - (1 - alpha) ** (1 / (H * W))`` (per pixel, as
        Mitsuba counts it).
    dof_ours, dof_ref : float, optional
        Degrees of freedom of each variance estimate (``K - 1`` for ``K``
        batches). Given (either or both), the p-value comes from Student's t
        with the Welch-Satterthwaite degrees of freedom; a side without one
        counts as exactly known. Neither: the standard normal (Mitsuba's
        z test, right when the variances are known or estimated from many
        batches).
    min_variance : float

    Returns
    -------
    pass_fraction : float
        The fraction of pixel channels whose p-value exceeds the Šidák
        level; the image passes when it is at least :data:`PASS_FRACTION`.
    p_values : ndarray (H, W, C)
        Two-sided p-values.
    """
    a, b = np.asarray(ours_mean, np.float64), np.asarray(ref_mean, np.float64)
    if a.shape != b.shape or a.ndim != 3:
        raise ValueError(f"z_test needs two (H, W, C) images of one shape, got {a.shape} and {b.shape}")
    if n_ours < 1 or n_ref < 1:
        raise ValueError(f"sample counts must be >= 1, got {n_ours} and {n_ref}")
    se_a = np.maximum(np.asarray(ours_var, np.float64), min_variance) / n_ours  # squared standard errors
    se_b = np.maximum(np.asarray(ref_var, np.float64), min_variance) / n_ref
    se2 = se_a + se_b
    statistic = np.abs(a - b) / np.sqrt(se2)
    if dof_ours is None and dof_ref is None:
        p_values = 2.0 * normal_sf(statistic)
    else:
        # Welch-Satterthwaite: a side whose variance is known contributes nothing to the denominator.
        denominator = np.zeros_like(se2)
        for se, dof in ((se_a, dof_ours), (se_b, dof_ref)):
            if dof is not None:
                if not dof > 0:
                    raise ValueError(f"degrees of freedom must be > 0, got {dof}")
                denominator += se * se / dof
        with np.errstate(divide="ignore"):
            welch = np.where(denominator > 0.0, se2 * se2 / denominator, np.inf)
        p_values = 2.0 * student_t_sf(statistic, welch)
    level = sidak_level(alpha, a.shape[0] * a.shape[1])
    return float(np.mean(p_values > level)), p_values


def rmse(a: Any, b: Any) -> float:
    """Root mean square difference over every pixel and channel (float64)."""
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.shape != y.shape:
        raise ValueError(f"rmse needs arrays of one shape, got {x.shape} and {y.shape}")
    return float(np.sqrt(np.mean((x - y) ** 2)))


def rmse_ratio(ours_seed0: Any, ours_seed1: Any, reference: Any, reference_seed1: Any = None, *,
               compress: bool = False) -> float:
    """How far the reference is from our image, in units of the noise of the estimates.

    ``rmse(ours_seed0, reference) / rmse(ours_seed0, ours_seed1)``, every
    image an independent estimate with the same samples per pixel.

    Why about 1 means "the same image": for independent estimates ``x`` and
    ``y`` of images with per-pixel variances ``s_x^2`` and ``s_y^2`` and a
    difference ``d`` of their expectations, ``E[(x - y)^2] = s_x^2 + s_y^2 +
    d^2``. The denominator compares two of our estimates (``2 s_o^2``); the
    numerator ours with the reference (``s_o^2 + s_r^2 + d^2``). Equal
    images rendered with equally noisy estimators give 1; a bias shows as
    ``sqrt(1 + d^2 / (2 s^2))``.

    When the two renderers' noise differs (another light-sampling
    strategy), that ratio is ``sqrt((s_o^2 + s_r^2) / (2 s_o^2))`` even
    without bias. Passing ``reference_seed1`` (a second independent
    reference estimate) gives the balanced form:

    ``sqrt(mean of the 4 cross terms rmse(o_i, r_j)^2) / sqrt((rmse(o_0, o_1)^2 + rmse(r_0, r_1)^2) / 2)``

    Both squares have expectation ``s_o^2 + s_r^2`` (plus ``d^2`` above), so
    the ratio is ``sqrt(1 + d^2 / (s_o^2 + s_r^2))``: 1 for equal images
    whatever either renderer's noise. It is also robust to rare, very bright
    samples (fireflies, which dominate a squared error): each of the four
    images enters the numerator and the denominator with the same weight,
    so one firefly moves both alike, to first order; fireflies that land
    on the same pixel of two images still swing it by tens of percent.
    ``compress`` maps every image through ``x / (1 + x)`` first: a fixed,
    bounded, increasing map, so equal images stay equal in distribution and
    the argument above holds for the mapped images, while no sample can
    contribute more than 1 to a squared difference. Measured on the
    reference renderer against itself (64x64, 128 spp a half, sky-lit
    mirror and glass spheres): 0.79 to 1.14 raw, 0.98 to 1.02 compressed.
    Without heavy tails the ratio is precise to about ``1 / sqrt(H * W * C)``.
    """
    if compress:
        ours_seed0, ours_seed1, reference = (_compressed(x) for x in (ours_seed0, ours_seed1, reference))
        reference_seed1 = None if reference_seed1 is None else _compressed(reference_seed1)
    if reference_seed1 is None:
        noise = rmse(ours_seed0, ours_seed1)
        distance = rmse(ours_seed0, reference)
    else:
        noise = math.sqrt(0.5 * (rmse(ours_seed0, ours_seed1) ** 2 + rmse(reference, reference_seed1) ** 2))
        distance = math.sqrt(sum(rmse(o, r) ** 2 for o in (ours_seed0, ours_seed1)
                                 for r in (reference, reference_seed1)) / 4.0)
    if noise == 0.0:
        return 1.0 if distance == 0.0 else math.inf
    return distance / noise


def _compressed(image: Any) -> np.ndarray:
    x = np.maximum(np.asarray(image, np.float64), 0.0)
    return x / (1.0 + x)
