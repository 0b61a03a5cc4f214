"""The BSDF families of the path tracer, on the CPU: their math, sampling and energy.

``bsdf_host.cpp`` compiles the device headers (``kernels/pathtracer/bsdf_*.h``, ``microfacet.h``, ``fresnel.h``)
with the host C++ compiler; ``bsdf_harness.py`` drives it on arrays of directions. Checked here, for every family
over a grid of parameters and directions:

* sampling: a chi-square goodness-of-fit test of the sampled directions against ``pdf()`` (the reference
  renderer's own BSDF test: cells with low expected counts pooled, significance 0.01 with the Sidak correction
  over all such tests), and the consistency of each sample's weight and pdf with ``eval()`` and ``pdf()``;
* energy: the directional albedo by quadrature of ``eval()`` is at most 1 and equals the mean sample weight;
* reciprocity of the reflection lobes (and Veach's generalised reciprocity of refraction);
* Fresnel against closed forms and an independent complex-arithmetic computation;
* the glTF BRDF against the specification's formula written out independently in numpy;
* values of the reference renderer (Mitsuba 3.9.1) for the rough conductor, dielectric and plastic, and its
  plastic constants;
* safety: finite values at grazing angles, at wo.z = 0 and at the smallest roughness;
* and that every header compiles with NVRTC (fast math, no local memory, no double precision).

The tests of the host build are skipped, with the reason, without a C++ compiler; the NVRTC and pure-Python ones
run regardless.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from optixasync._config import kernels_dir  # where the package's kernels live has no public door
from optixasync.program import compile_ptx
from optixasync.render._path import COMPILE_OPTIONS  # the path tracer's NVRTC options (fast math)
from optixasync.scene.bsdfs._plastic_tables import (  # the host precomputation has no public door yet
    PLASTIC_TABLE_SIZE,
    plastic_constants,
    specular_sampling_weight,
    table_cosines,
)

HERE = Path(__file__).resolve().parent


def _load_harness():
    """tests/render/bsdf_harness.py, loaded once per process (tests/ is no package; GPU tests load it too)."""
    if "bsdf_harness" in sys.modules:
        return sys.modules["bsdf_harness"]
    spec = importlib.util.spec_from_file_location("bsdf_harness", HERE / "bsdf_harness.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bsdf_harness"] = module
    spec.loader.exec_module(module)
    return module


H = _load_harness()


@pytest.fixture(scope="module")
def host():
    if H.compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the BSDF headers")
    return H.load()


def unit(v) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def random_directions(rng, n: int, upper: bool = True) -> np.ndarray:
    v = unit(rng.normal(size=(n, 3)))
    if upper:
        v[:, 2] = np.abs(v[:, 2])
    return v


GOLD = {"eta": (0.2, 0.92, 1.1), "k": (3.9, 2.45, 2.2)}  # roughly gold's RGB complex IOR


# --- chi-square goodness of fit -----------------------------------------------------------------------------------


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for X chi-square with ``dof`` degrees of freedom: the regularised upper incomplete gamma
    function Q(dof / 2, x / 2), by its power series below a + 1 and its continued fraction above."""
    a, x = 0.5 * dof, 0.5 * x
    if x <= 0.0:
        return 1.0
    log_prefactor = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:
        term = total = 1.0 / a
        n = 0
        while abs(term) > 1e-16 * abs(total) and n < 100000:
            n += 1
            term *= x / (a + n)
            total += term
        return max(0.0, 1.0 - total * math.exp(log_prefactor))
    tiny = 1e-300
    b = x + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return math.exp(log_prefactor) * h


def pooled_chi2(observed: np.ndarray, expected: np.ndarray, threshold: float = 5.0) -> tuple[float, int]:
    """The chi-square statistic and its degrees of freedom, cells sorted by expected count and those expecting
    fewer than ``threshold`` pooled into running groups until each group expects more (the reference renderer's
    rule). Empty cells that expect nothing are left out."""
    order = np.argsort(expected, kind="stable")
    obs, exp = observed[order], expected[order]
    keep = ~((obs == 0) & (exp == 0))
    obs, exp = obs[keep], exp[keep]
    small = exp < threshold
    stat, dof = 0.0, 0
    pooled_obs = pooled_exp = 0.0
    for o, e in zip(obs[small], exp[small], strict=True):
        pooled_obs += o
        pooled_exp += e
        if pooled_exp > threshold:
            stat += (pooled_obs - pooled_exp) ** 2 / pooled_exp
            dof += 1
            pooled_obs = pooled_exp = 0.0
    big_obs, big_exp = obs[~small], exp[~small]
    stat += float(np.sum((big_obs - big_exp) ** 2 / big_exp))
    dof += big_obs.size
    return stat, dof - 1


# Histogram cells: COARSE rows of polar angle by 2 COARSE columns of azimuth. The expected count of a cell is the
# integral of pdf() over it by a FINE x FINE grid of sub-cells with 2 x 2 Gauss-Legendre nodes each, fine enough
# for the narrowest lobe tested (alpha 0.05) to be integrated to well under the sampling noise.
COARSE, FINE, ORDER = 64, 4, 2
CHI2_SAMPLES = 300_000


def cell_of(directions: np.ndarray) -> np.ndarray:
    rows, cols = COARSE, 2 * COARSE
    theta = np.arccos(np.clip(directions[:, 2].astype(np.float64), -1.0, 1.0))
    phi = np.mod(np.arctan2(directions[:, 1].astype(np.float64), directions[:, 0].astype(np.float64)), 2 * np.pi)
    r = np.minimum((theta * (rows / np.pi)).astype(np.int64), rows - 1)
    c = np.minimum((phi * (cols / (2 * np.pi))).astype(np.int64), cols - 1)
    return r * cols + c


@functools.lru_cache(maxsize=1)
def _coarse_nodes():
    dirs, weights, fine_cells = H.sphere_quadrature(COARSE * FINE, 2 * COARSE * FINE, ORDER)
    fine_cols = 2 * COARSE * FINE
    coarse = (fine_cells // fine_cols // FINE) * (2 * COARSE) + (fine_cells % fine_cols) // FINE
    return dirs, weights, coarse


def expected_counts(host, family: str, params: dict, wo: np.ndarray, n: int) -> np.ndarray:
    dirs, weights, coarse = _coarse_nodes()
    pdf = host.pdf(family, params, wo, dirs)
    assert np.isfinite(pdf).all() and (pdf >= 0).all()
    return np.bincount(coarse, weights=pdf * weights, minlength=2 * COARSE * COARSE) * n


def chi2_p_value(host, family: str, params: dict, wo: np.ndarray, samples, pdf_params: dict | None = None):
    """p-value of the sampled directions of ``samples`` (those of nonzero weight) under pdf() of ``pdf_params``
    (default: the sampled BSDF's own), the pooled statistic with its degrees of freedom, and the number of samples
    in cells where pdf() is 0 everywhere (which rejects the pdf whatever the statistic)."""
    used = np.any(samples.weight != 0, axis=1)
    n = len(samples.pdf)
    observed = np.bincount(cell_of(samples.wi[used]), minlength=2 * COARSE * COARSE).astype(np.float64)
    expected = expected_counts(host, family, pdf_params or params, wo, n)
    stray = int(observed[expected == 0].sum())
    stat, dof = pooled_chi2(observed, expected)
    assert dof > 10
    return chi2_sf(stat, dof), stat, dof, stray


def test_chi2_tail_matches_known_values():
    assert chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-9)
    assert chi2_sf(124.34211340400407, 100) == pytest.approx(0.05, rel=1e-9)
    # Even dof 2k: the closed form exp(-x/2) sum_{i<k} (x/2)^i / i!, on both branches (series, continued fraction).
    for x, dof in ((0.5, 2), (11.0, 2), (900.0, 1000), (1000.0, 1000), (1200.0, 1000), (60.0, 20)):
        closed = math.fsum(math.exp(-x / 2 + i * math.log(x / 2) - math.lgamma(i + 1)) for i in range(dof // 2))
        assert chi2_sf(x, dof) == pytest.approx(closed, rel=1e-9, abs=1e-300)


def test_pooling_merges_small_cells_into_groups():
    observed = np.array([0, 1, 2, 3, 50, 60, 0.0])
    expected = np.array([1, 2, 2.5, 3, 55, 55, 0.0])
    stat, dof = pooled_chi2(observed, expected)
    # [1, 2, 2.5] pool to 5.5 (observed 3); 3 alone never exceeds the threshold and is left out; two big cells.
    assert dof == 3 - 1
    assert stat == pytest.approx((3 - 5.5) ** 2 / 5.5 + 25 / 55 + 25 / 55)


CONDUCTOR = [("conductor", {**GOLD, "alpha": a}, c) for a in (0.05, 0.2, 0.5, 1.0) for c in (1.0, 0.7, 0.2)]
DIELECTRIC = [("dielectric", {"eta": e, "alpha": a}, c) for a in (0.05, 0.2, 0.5) for e in (1.5, 1 / 1.5)
              for c in (0.8, 0.3, -0.6)]
PLASTIC = [("plastic", {"diffuse": (0.3, 0.5, 0.8), "eta": 1.5, "alpha": a}, c) for a in (0.05, 0.2, 0.5)
           for c in (0.9, 0.4)]
GLTF = [("metallic_roughness", {"base": (0.9, 0.6, 0.3), "metallic": m, "roughness": r}, c)
        for r in (0.25, 0.5, 1.0) for m in (0.0, 0.5, 1.0) for c in (0.8, 0.3)]
DIFFUSE = [("diffuse", {"albedo": (0.5, 0.6, 0.7)}, c) for c in (0.9, 0.25)]
CHI2_CASES = DIFFUSE + CONDUCTOR + DIELECTRIC + PLASTIC + GLTF
SIGNIFICANCE = 1.0 - (1.0 - 0.01) ** (1.0 / len(CHI2_CASES))  # Sidak: 1% for the whole family of tests


def case_id(case) -> str:
    family, params, c = case
    values = ",".join(f"{k}={v:.3g}" for k, v in params.items() if isinstance(v, float))
    return f"{family}[{values}]cos={c:g}"


@functools.cache
def _samples(index: int):
    family, params, c = CHI2_CASES[index]
    return H.load().sample(family, params, H.local_direction(c), CHI2_SAMPLES, seed=1000 + index)


@pytest.mark.parametrize("index", range(len(CHI2_CASES)), ids=[case_id(c) for c in CHI2_CASES])
def test_sampling_density_matches_pdf(host, index):
    family, params, c = CHI2_CASES[index]
    wo = H.local_direction(c)
    p, stat, dof, stray = chi2_p_value(host, family, params, wo, _samples(index))
    assert stray == 0, f"{stray} samples where pdf() is 0"
    assert p >= SIGNIFICANCE, f"chi2 = {stat:.1f} for {dof} dof: p = {p:.3g} < {SIGNIFICANCE:.3g}"


@pytest.mark.parametrize("index", range(len(CHI2_CASES)), ids=[case_id(c) for c in CHI2_CASES])
def test_sample_weight_is_eval_over_pdf(host, index):
    family, params, c = CHI2_CASES[index]
    wo = H.local_direction(c)
    s = H.Samples(*(a[:100_000] for a in _samples(index)))
    assert np.isfinite(s.weight).all() and np.isfinite(s.pdf).all() and np.isfinite(s.wi).all()
    assert not s.delta.any()
    used = np.any(s.weight != 0, axis=1)
    assert used.mean() > 0.45  # GGX alpha = 1 at normal incidence sends half its mirror directions below
    assert (s.pdf[~used] == 0).all()
    value = host.eval(family, params, wo, s.wi[used])
    pdf = host.pdf(family, params, wo, s.wi[used])
    assert (pdf > 0).all()
    np.testing.assert_allclose(s.weight[used], value / pdf[:, None], rtol=1e-5, atol=1e-7)
    # The sample's pdf comes from the sampled microfacet normal, pdf() from the half vector recomputed from the
    # two directions: they agree to float rounding except where the refraction's Fresnel term nears total
    # internal reflection and 1 - F loses its digits.
    error = np.abs(s.pdf[used] - pdf) / pdf
    assert np.quantile(error, 0.9999) < 1e-3 and error.max() < 2e-2, (np.quantile(error, 0.9999), error.max())
    # Sampled directions are unit and on the side their lobe allows.
    np.testing.assert_allclose(np.linalg.norm(s.wi[used], axis=1), 1.0, atol=1e-5)
    if family != "dielectric":
        assert (s.wi[used, 2] > 0).all()


def test_chi2_rejects_a_wrong_density(host):
    """The test has power: samples of alpha = 0.2 against the pdf of alpha = 0.22, or of another IOR."""
    wo = H.local_direction(0.6)
    params = {**GOLD, "alpha": 0.2}
    samples = host.sample("conductor", params, wo, CHI2_SAMPLES, seed=5)
    p, _, _, stray = chi2_p_value(host, "conductor", params, wo, samples, pdf_params={**params, "alpha": 0.22})
    assert p < 1e-9 and stray == 0
    glass = {"eta": 1.5, "alpha": 0.3}
    samples = host.sample("dielectric", glass, wo, CHI2_SAMPLES, seed=6)
    p, _, _, _ = chi2_p_value(host, "dielectric", glass, wo, samples, pdf_params={**glass, "eta": 1.4})
    assert p < 1e-9
    p, _, _, _ = chi2_p_value(host, "dielectric", glass, wo, samples, pdf_params=glass)
    assert p >= SIGNIFICANCE


# --- energy ---------------------------------------------------------------------------------------------------------

WHITE_METAL = {"eta": 0.0, "k": 1.0}  # F = 1 at every angle: what is lost is lost to masking alone
ENERGY_CASES = (
    [("conductor", {**WHITE_METAL, "alpha": a}, c) for a in (0.05, 0.3, 1.0) for c in (0.9, 0.1)]
    + [("conductor", {**GOLD, "alpha": 0.2}, 0.5)]
    + [("dielectric", {"eta": e, "alpha": a}, c) for e in (1.5, 1 / 1.5) for a in (0.05, 0.3) for c in (0.8, 0.2, -0.5)]
    + [("plastic", {"diffuse": 1.0, "eta": 1.5, "alpha": a}, c) for a in (0.05, 0.2) for c in (0.9, 0.2)]
    + [("metallic_roughness", {"base": (0.8, 0.5, 0.2), "metallic": m, "roughness": 0.4}, 0.6) for m in (0.0, 1.0)]
)
ENERGY_SAMPLES = 200_000


@pytest.mark.parametrize("case", ENERGY_CASES, ids=[case_id(c) for c in ENERGY_CASES])
def test_directional_albedo_is_at_most_one_and_the_mean_sample_weight(host, case):
    family, params, c = case
    energy = H.directional_albedo(family, params, c, radiance=False)
    assert (energy <= 1.0 + 1e-3).all() and (energy > 0.05).all(), energy
    radiance = H.directional_albedo(family, params, c) if family == "dielectric" else energy
    s = host.sample(family, params, H.local_direction(c), ENERGY_SAMPLES, seed=77)
    weights = s.weight.astype(np.float64)
    mean, stderr = weights.mean(axis=0), weights.std(axis=0) / math.sqrt(ENERGY_SAMPLES)
    # The quadrature is exact to ~1e-4 for smooth lobes; a rough refraction's half vector flips across a curve
    # that no grid edge follows, which costs the dielectric up to ~1e-3.
    quadrature = (2e-3 if family == "dielectric" else 5e-4) * radiance
    assert (np.abs(mean - radiance) <= 5 * stderr + quadrature).all(), (mean, radiance, stderr)


def test_diffuse_albedo_and_mirror_limits(host):
    albedo = (0.5, 0.6, 0.7)
    np.testing.assert_allclose(H.directional_albedo("diffuse", {"albedo": albedo}, 0.3), albedo, rtol=1e-5)
    # A white metal of vanishing roughness reflects everything at normal incidence; a glass sphere's interface
    # sends out F + (1 - F) / eta^2 of the radiance from outside (radiance scaling), and everything as energy.
    assert H.directional_albedo("conductor", {**WHITE_METAL, "alpha": 0.02}, 1.0)[0] == pytest.approx(1.0, abs=2e-3)
    f = ((1.5 - 1) / (1.5 + 1)) ** 2
    glass = {"eta": 1.5, "alpha": 0.0}
    assert H.directional_albedo("dielectric", glass, 1.0)[0] == pytest.approx(f + (1 - f) / 2.25, rel=1e-6)
    assert H.directional_albedo("dielectric", glass, -1.0)[0] == pytest.approx(f + (1 - f) * 2.25, rel=1e-6)
    assert H.directional_albedo("dielectric", glass, 0.3, radiance=False)[0] == pytest.approx(1.0, rel=1e-6)


# --- reciprocity -----------------------------------------------------------------------------------------------------

RECIPROCAL = [
    ("diffuse", {"albedo": (0.5, 0.6, 0.7)}),
    ("conductor", {**GOLD, "alpha": 0.3}),
    ("conductor", {**GOLD, "alpha": 0.05}),
    ("plastic", {"diffuse": (0.3, 0.5, 0.8), "eta": 1.5, "alpha": 0.2}),
    ("metallic_roughness", {"base": (0.9, 0.6, 0.3), "metallic": 0.5, "roughness": 0.5}),
    ("dielectric", {"eta": 1.5, "alpha": 0.3}),
]


@pytest.mark.parametrize("family, params", RECIPROCAL, ids=[f for f, _ in RECIPROCAL])
def test_reflection_is_reciprocal(host, family, params):
    rng = np.random.default_rng(11)
    wo, wi = random_directions(rng, 4000), random_directions(rng, 4000)
    if family == "dielectric":  # its reflection lobe, on both sides
        wo[::2, 2] *= -1
        wi[::2, 2] *= -1
    forward = host.eval(family, params, wo, wi) / np.abs(wi[:, 2:3])
    backward = host.eval(family, params, wi, wo) / np.abs(wo[:, 2:3])
    assert (forward > 0).mean() > 0.9
    np.testing.assert_allclose(forward, backward, rtol=2e-4, atol=1e-7 * forward.max())


def test_refraction_obeys_generalised_reciprocity(host):
    """Radiance BTDFs are not symmetric: f(wo, wi) / n(wo)^2 = f(wi, wo) / n(wi)^2 (Veach 1997, 5.2)."""
    rng = np.random.default_rng(12)
    wo, wi = random_directions(rng, 4000), random_directions(rng, 4000)
    wi[:, 2] *= -1
    wo[::2, 2] *= -1
    wi[::2, 2] *= -1
    eta = 1.5
    params = {"eta": eta, "alpha": 0.3}
    n_wo, n_wi = np.where(wo[:, 2] > 0, 1.0, eta), np.where(wi[:, 2] > 0, 1.0, eta)
    forward = host.eval("dielectric", params, wo, wi)[:, 0] / np.abs(wi[:, 2]) / n_wo**2
    backward = host.eval("dielectric", params, wi, wo)[:, 0] / np.abs(wo[:, 2]) / n_wi**2
    assert (forward > 0).mean() > 0.15  # a rough refraction joins only directions some microfacet can
    np.testing.assert_allclose(forward, backward, rtol=5e-4, atol=1e-6 * forward.max())


# --- Fresnel -------------------------------------------------------------------------------------------------------


def numpy_fresnel(cos_i: np.ndarray, n: complex) -> np.ndarray:
    """Unpolarised reflectance from the s and p amplitudes of a (complex) relative IOR n, light from outside:
    written with complex arithmetic, independently of the kernel's real closed forms."""
    c = np.asarray(cos_i, np.complex128)
    cos_t = np.sqrt(1 - (1 - c * c) / (n * n))
    r_s = (c - n * cos_t) / (c + n * cos_t)
    r_p = (n * c - cos_t) / (n * c + cos_t)
    return 0.5 * (np.abs(r_s) ** 2 + np.abs(r_p) ** 2)


def test_dielectric_fresnel(host):
    for eta in (1.33, 1.5, 2.4, 1 / 1.5):
        r0 = ((eta - 1) / (eta + 1)) ** 2
        out = host.fresnel_dielectric([1.0, -1.0], eta)
        np.testing.assert_allclose(out[:, 0], r0, rtol=1e-5)  # normal incidence, from either side
        np.testing.assert_allclose(out[:, 1], [-1.0, 1.0], atol=1e-6)
    cos = np.linspace(-1, 1, 2001)
    cos = cos[cos != 0]
    eta = 1.5
    out = host.fresnel_dielectric(cos, eta)
    n = np.where(cos > 0, eta, 1 / eta)  # IOR of the far side relative to the near side
    sin_t2 = (1 - cos**2) / n**2
    tir = sin_t2 > 1
    expected = np.where(tir, 1.0, numpy_fresnel(np.abs(cos), n + 0j))
    np.testing.assert_allclose(out[:, 0], expected, atol=2e-6)
    assert tir.sum() > 100 and (out[tir, 0] == 1.0).all() and (out[tir, 1] == 0.0).all()
    # Snell's law and the sides: the refracted cosine is on the other side, |sin_t| = |sin_i| / n.
    ok = ~tir
    np.testing.assert_allclose(out[ok, 1], -np.sign(cos[ok]) * np.sqrt(1 - sin_t2[ok]), atol=2e-6)
    np.testing.assert_allclose(out[:, 2], n, rtol=1e-6)
    np.testing.assert_allclose(out[:, 3], 1 / n, rtol=1e-6)
    # The limits the formula cannot divide its way to: a matched interface, a grazing direction.
    assert host.fresnel_dielectric([0.3, -0.7], 1.0)[:, 0].tolist() == [0.0, 0.0]
    assert host.fresnel_dielectric([0.0], 1.5)[0, 0] == 1.0


def test_conductor_fresnel(host):
    cos = np.linspace(0.0, 1.0, 501)
    for eta, k in ((0.2, 3.9), (1.1, 2.2), (2.9, 3.1), (1.5, 0.0), (0.05, 0.5)):
        out = host.fresnel_conductor(cos, eta, k)
        np.testing.assert_allclose(out, numpy_fresnel(cos, complex(eta, k)), atol=3e-6)
        assert host.fresnel_conductor([1.0], eta, k)[0] == pytest.approx(((eta - 1) ** 2 + k**2) / ((eta + 1) ** 2 + k**2),
                                                                          rel=1e-5)
        assert host.fresnel_conductor([0.0], eta, k)[0] == pytest.approx(1.0, abs=1e-6)  # grazing: all reflected
    # No absorption: the dielectric's reflectance; eta = 0 + 1i (the reference renderer's default): a mirror.
    np.testing.assert_allclose(host.fresnel_conductor(cos, 1.5, 0.0), host.fresnel_dielectric(cos, 1.5)[:, 0],
                               atol=2e-6)
    np.testing.assert_allclose(host.fresnel_conductor(cos, 0.0, 1.0), 1.0, atol=1e-6)
    # Degenerate IORs give their limits, not NaN.
    assert np.isfinite(host.fresnel_conductor([0.0, 0.5, 1.0], 1.0, 0.0)).all()
    assert np.isfinite(host.fresnel_conductor([0.0, 0.5, 1.0], 0.0, 0.0)).all()


def test_schlick(host):
    cos = np.linspace(-1, 1, 101)
    np.testing.assert_allclose(host.fresnel_schlick(cos, 0.04), 0.04 + 0.96 * (1 - np.abs(cos)) ** 5, atol=1e-6)


# --- GGX ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.05, 0.2, 0.5, 1.0])
def test_ggx_normalisation(host, alpha):
    """The projected area of the microfacets is the macro surface's (int D(m) m.z = 1), the visible normals' density
    integrates to 1, and G1 is Smith's closed form."""
    dirs, weights, _ = H.sphere_quadrature(512, 256, 3)
    up = dirs[:, 2] > 0
    m, w = dirs[up], weights[up]
    for c in (1.0, 0.5, 0.1):
        out = host.ggx(alpha, H.local_direction(c), m)
        if c == 1.0:
            assert float(w @ (out[:, 0] * m[:, 2])) == pytest.approx(1.0, abs=2e-4)
        assert float(w @ out[:, 2]) == pytest.approx(1.0, abs=2e-4)
        tan2 = (1 - c * c) / (c * c)
        g1 = host.ggx(alpha, H.local_direction(c), [0.0, 0.0, 1.0])[0, 1]
        assert g1 == pytest.approx(2 / (1 + math.sqrt(1 + alpha * alpha * tan2)), rel=1e-6)
    # Masking of a direction that sees the back of the facet.
    assert host.ggx(alpha, [0.0, 0.6, 0.8], unit([0.0, -0.9, 0.1]))[0, 1] == 0.0


# --- the glTF BRDF ------------------------------------------------------------------------------------------------


def gltf_reference(base, metallic: float, roughness: float, view: np.ndarray, light: np.ndarray) -> np.ndarray:
    """f(view, light) |n.light| of the glTF 2.0 specification, appendix B, written out from its formulas (n = z)."""
    alpha = max(roughness * roughness, 1e-3)
    a2 = alpha * alpha
    base = np.asarray(base, np.float64)
    v, lt = view, light
    h = unit(v + lt)
    n_v, n_l, n_h, v_h = v[:, 2], lt[:, 2], h[:, 2], np.sum(v * h, axis=1)
    c_diff = base * (1 - metallic)
    f0 = 0.04 * (1 - metallic) + base * metallic
    fresnel = f0 + (1 - f0) * ((1 - np.abs(v_h)) ** 5)[:, None]
    d = a2 * (n_h > 0) / (np.pi * (n_h * n_h * (a2 - 1) + 1) ** 2)
    g = (2 * np.abs(n_l) * (np.sum(h * lt, axis=1) > 0) / (np.abs(n_l) + np.sqrt(a2 + (1 - a2) * n_l * n_l))
         * 2 * np.abs(n_v) * (v_h > 0) / (np.abs(n_v) + np.sqrt(a2 + (1 - a2) * n_v * n_v)))
    f = (1 - fresnel) * c_diff / np.pi + fresnel * (d * g / (4 * np.abs(n_l) * np.abs(n_v)))[:, None]
    return f * np.abs(n_l)[:, None]


@pytest.mark.parametrize("metallic", [0.0, 0.5, 1.0, 0.3])
@pytest.mark.parametrize("roughness", [0.1, 0.3, 0.7, 1.0])
def test_gltf_brdf_matches_the_specification(host, metallic, roughness):
    rng = np.random.default_rng(int(100 * metallic + 10 * roughness))
    v, lt = random_directions(rng, 3000), random_directions(rng, 3000)
    v[:, 2] = np.maximum(v[:, 2], 0.01)
    v = unit(v)
    base = rng.uniform(0, 1, 3)
    params = {"base": base, "metallic": metallic, "roughness": roughness}
    expected = gltf_reference(base, metallic, roughness, v, lt)
    got = host.eval("metallic_roughness", params, v, lt)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=1e-6 * expected.max())
    # Below the surface, either way, nothing.
    assert (host.eval("metallic_roughness", params, v, lt * [1, 1, -1]) == 0).all()
    assert (host.eval("metallic_roughness", params, v * [1, 1, -1], lt) == 0).all()


def test_gltf_white_furnace(host):
    """Base colour 1: at most 1 for metals and half-metals at every angle and for dielectrics at normal incidence.
    The specification's dielectric (metallic 0) weights its diffuse term by 1 - F of each microfacet rather than
    by what the specular lobe takes in total, and gains energy at grazing views; that gain is the formula's (an
    independent integral of it agrees), not the implementation's."""
    dirs, weights, _ = H.sphere_quadrature(128, 256, 3)
    grid = {}
    for metallic in (0.0, 0.5, 1.0):
        for roughness in (0.2, 0.3, 0.6, 1.0):
            params = {"base": 1.0, "metallic": metallic, "roughness": roughness}
            for c in (1.0, 0.5, 0.1):
                albedo = H.directional_albedo("metallic_roughness", params, c, n_theta=128, n_phi=256)
                grid[metallic, roughness, c] = albedo[0]
                if metallic > 0 or c == 1.0:
                    assert (albedo <= 1.0 + 1e-3).all(), (metallic, roughness, c, albedo)
                else:
                    v = np.broadcast_to(H.local_direction(c), dirs.shape)
                    up = dirs[:, 2] > 0
                    reference = weights[up] @ gltf_reference(np.ones(3), 0.0, roughness, v[up],
                                                             dirs[up].astype(np.float64))
                    np.testing.assert_allclose(albedo, reference, rtol=2e-3)
    assert grid[0.0, 0.3, 0.1] > 1.2 and grid[0.0, 0.6, 0.5] > 1.0  # the gain, pinned
    assert grid[0.0, 1.0, 0.1] < 1.0


# --- the reference renderer ---------------------------------------------------------------------------------------

# eval (f |cos wi|, RGB) and pdf of Mitsuba 3.9.1 (llvm_ad_rgb) `roughconductor`, `roughdielectric` and
# `roughplastic` (distribution "ggx"), at directions (cos theta, phi) of wo (its si.wi) and wi (its wo).
_PAIRS_ABOVE = [((0.9, 0.3), (0.7, 3.0)), ((0.5, 0.0), (0.45, 3.2)), ((0.2, 1.0), (0.8, -2.0)), ((0.05, 0.0), (0.1, 2.9))]
_PAIRS_BOTH = _PAIRS_ABOVE + [((0.6, 0.2), (-0.8, 3.0)), ((-0.7, 0.5), (-0.5, 3.5)), ((-0.9, 0.0), (0.3, 3.1)),
                              ((0.3, 1.0), (-0.95, 4.0))]
MITSUBA = [
    ("conductor", {**GOLD, "alpha": 0.3}, _PAIRS_ABOVE, [
        ((0.3964419, 0.2583215, 0.2188687), 0.4262842), ((1.34951, 0.8972456, 0.7797012), 1.544576),
        ((0.5323979, 0.3508807, 0.3025687), 0.5693392), ((0.03355055, 0.02718762, 0.02566031), 0.07298822)]),
    ("dielectric", {"eta": 1.5, "alpha": 0.2}, _PAIRS_BOTH, [
        (0.01902905, 0.01922509), (0.3062634, 0.317884), (0.03588673, 0.03608747), (0.01322055, 0.02133206),
        (0.3784221, 0.8562124), (1.099677, 1.131733), (0.005028545, 0.002441741), (0.0, 0.0)]),
    ("dielectric", {"eta": 1 / 1.5, "alpha": 0.5}, _PAIRS_BOTH, [
        (0.02076848, 0.02204146), (0.4451351, 0.5361089), (0.4278294, 0.4423756), (0.03806665, 0.1156169),
        (0.2787687, 0.1281097), (0.02029166, 0.0235675), (0.0, 0.0), (0.0, 0.0)]),
    ("plastic", {"diffuse": (0.2, 0.5, 0.8), "eta": 1.5, "alpha": 0.1}, _PAIRS_ABOVE, [
        ((0.05043495, 0.1104814, 0.1705279), 0.2244245), ((0.8384447, 0.8727911, 0.9071376), 1.56251),
        ((0.04872206, 0.1004126, 0.1521031), 0.2227031), ((0.009381052, 0.01270241, 0.01602377), 0.0240934)]),
]


@pytest.mark.parametrize("family, params, pairs, values", MITSUBA, ids=[f"{m[0]}-{i}" for i, m in enumerate(MITSUBA)])
def test_values_of_the_reference_renderer(host, family, params, pairs, values):
    wo = np.array([H.local_direction(c, phi) for (c, phi), _ in pairs])
    wi = np.array([H.local_direction(c, phi) for _, (c, phi) in pairs])
    expected_f = np.array([np.broadcast_to(f, (3,)) for f, _ in values])
    expected_pdf = np.array([p for _, p in values])
    # To float rounding: a few 1e-4 where a refraction nears total internal reflection and 1 - F loses digits.
    np.testing.assert_allclose(host.eval(family, params, wo, wi), expected_f, rtol=3e-4, atol=1e-8)
    np.testing.assert_allclose(host.pdf(family, params, wo, wi), expected_pdf, rtol=3e-4, atol=1e-8)


# --- delta lobes ---------------------------------------------------------------------------------------------------


def test_smooth_conductor_is_a_mirror(host):
    rng = np.random.default_rng(3)
    wo = random_directions(rng, 1000)
    params = {**GOLD, "specular": (1.0, 0.8, 0.9), "alpha": 0.0}
    s = host.sample("conductor", params, wo)
    assert s.delta.all() and (s.eta == 1).all()
    np.testing.assert_allclose(s.wi, wo * [-1, -1, 1], atol=1e-7)
    expected = np.stack([numpy_fresnel(wo[:, 2], complex(e, k)) for e, k in zip(GOLD["eta"], GOLD["k"], strict=True)],
                        axis=1) * [1.0, 0.8, 0.9]
    np.testing.assert_allclose(s.weight, expected, atol=3e-6)
    assert (host.eval("conductor", params, wo, s.wi) == 0).all() and (host.pdf("conductor", params, wo, s.wi) == 0).all()
    below = host.sample("conductor", params, wo * [1, 1, -1])
    assert (below.weight == 0).all()


@pytest.mark.parametrize("eta, c", [(1.5, 0.7), (1.5, -0.5), (1.5, -0.3), (1 / 1.5, 0.5), (1 / 1.5, -0.95)])
def test_smooth_dielectric_picks_lobes_by_fresnel(host, eta, c):
    n = 100_000
    wo = H.local_direction(c, 0.4)
    s = host.sample("dielectric", {"eta": eta, "alpha": 0.0}, wo, n, seed=9)
    r, cos_t, eta_it, eta_ti = (float(v) for v in host.fresnel_dielectric([c], eta)[0])
    reflected = s.wi[:, 2] * c > 0
    assert s.delta.all()
    assert abs(reflected.mean() - r) <= 5 * math.sqrt(r * (1 - r) / n) + 1e-9, (reflected.mean(), r)
    np.testing.assert_allclose(s.wi[reflected], np.broadcast_to(wo * [-1, -1, 1], (reflected.sum(), 3)), atol=1e-7)
    np.testing.assert_allclose(s.weight[reflected], 1.0)
    np.testing.assert_allclose(s.pdf[reflected], r, rtol=1e-6)
    assert (s.eta[reflected] == 1).all()
    t = ~reflected
    if r == 1.0:
        assert not t.any()  # total internal reflection
        return
    # Snell: the tangential part scales by eta_ti, the refracted direction is unit and on the other side.
    np.testing.assert_allclose(s.wi[t, :2], np.broadcast_to(-wo[:2] * eta_ti, (t.sum(), 2)), atol=1e-6)
    np.testing.assert_allclose(s.wi[t, 2], cos_t, atol=1e-7)
    assert cos_t * c < 0
    np.testing.assert_allclose(np.linalg.norm(s.wi[t], axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(s.weight[t], eta_ti**2, rtol=1e-6)  # radiance scaling
    np.testing.assert_allclose(s.pdf[t], 1 - r, rtol=1e-5)
    np.testing.assert_allclose(s.eta[t], eta_it, rtol=1e-6)


# --- plastic constants -----------------------------------------------------------------------------------------------


def direct_visible_average(mu: np.ndarray, eta: float, alpha: float, refract: bool, n: int = 192) -> np.ndarray:
    """E over the visible normals of wi (cos theta = mu) of (1 - F) G1(wt) (refract) or F G1(wr), integrated over
    the microfacet normals themselves: m at tan(theta_m) = alpha tan(psi), where D(m) dw_m becomes
    sin(psi) cos(psi) / (pi cos(theta_m)) dpsi dphi -- a different route from the table's, which integrates over
    the unit square that visible-normal sampling maps to the normals."""
    from optixasync.scene.bsdfs._plastic_tables import fresnel_dielectric, smith_g1

    x, w = np.polynomial.legendre.leggauss(n)
    psi, w_psi = 0.25 * np.pi * (x + 1), 0.25 * np.pi * w
    phi, w_phi = np.pi * (x + 1), np.pi * w
    psi, phi = np.meshgrid(psi, phi, indexing="ij")
    theta = np.arctan(alpha * np.tan(psi))
    m = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], axis=-1)
    d_dw = np.sin(psi) * np.cos(psi) / (np.pi * np.cos(theta)) * np.outer(w_psi, w_phi)
    out = []
    for u in np.atleast_1d(mu):
        wi = np.array([math.sqrt(1 - u * u), 0.0, u])
        c = m @ wi
        visible = smith_g1(np.broadcast_to(wi, m.shape), m, alpha) * np.maximum(c, 0) / u
        f, cos_t, _, eta_ti = fresnel_dielectric(c, eta)
        if refract:
            wt = m * (c * eta_ti + cos_t)[..., None] - wi * eta_ti[..., None]
            value = np.where(wt[..., 2] < 0, smith_g1(wt, m, alpha) * (1 - f), 0.0)
        else:
            wr = 2 * c[..., None] * m - wi
            value = np.where(wr[..., 2] > 0, smith_g1(wr, m, alpha) * f, 0.0)
        out.append(float(np.sum(visible * value * d_dw)))
    return np.array(out)


@pytest.mark.parametrize("eta, alpha", [(1.5, 0.05), (1.33, 0.5), (2.0, 0.01)])
def test_plastic_constants_against_direct_integrals(eta, alpha):
    c = plastic_constants(eta, alpha, (0.2, 0.4, 0.9))
    assert c.transmittance.shape == (PLASTIC_TABLE_SIZE,) and c.transmittance.dtype == np.float32
    mu = table_cosines(PLASTIC_TABLE_SIZE)
    index = np.array([1, 6, 20, 40, PLASTIC_TABLE_SIZE - 1])
    np.testing.assert_allclose(c.transmittance[index], direct_visible_average(mu[index], eta, alpha, True), rtol=1e-3)
    # The reference renderer's rule for the internal reflectance: 2 mean(R(mu) mu) over its 64 cosines.
    mu64 = table_cosines(64)
    rule = 2 * np.mean(direct_visible_average(mu64, 1 / eta, alpha, False, 96) * mu64)
    assert c.internal_reflectance == pytest.approx(rule, rel=2e-3)
    assert c.specular_weight == pytest.approx(1 / (1 + 0.5)) == specular_sampling_weight((0.2, 0.4, 0.9))
    assert plastic_constants(eta, alpha).specular_weight is None
    assert plastic_constants(eta, alpha).transmittance is c.transmittance  # cached per (eta, alpha)


def test_plastic_constants_are_the_reference_renderers():
    # Mitsuba 3.9.1 (llvm_ad_rgb): 2 mean(eval_reflectance(ggx, alpha, 1 / eta) mu), as roughplastic computes it.
    for eta, alpha, internal in ((1.5, 0.2, 0.4862986), (1.5, 0.05, 0.5761014), (1.33, 0.5, 0.1942939),
                                 (2.0, 0.01, 0.7781619)):
        assert plastic_constants(eta, alpha).internal_reflectance == pytest.approx(internal, rel=1e-5)
    assert plastic_constants(1.5, 0.0).transmittance is plastic_constants(1.5, 1e-4).transmittance  # alpha >= 1e-4
    with pytest.raises(ValueError):
        plastic_constants(1.0, 0.1)


def test_plastic_table_size_is_the_headers(host):
    assert host.plastic_table_size == PLASTIC_TABLE_SIZE
    header = (Path(kernels_dir()) / "pathtracer" / "bsdf_plastic.h").read_text()
    assert re.search(rf"PLASTIC_TABLE_SIZE\s*=\s*{PLASTIC_TABLE_SIZE}u;", header)


# --- safety -------------------------------------------------------------------------------------------------------

EDGE_PARAMS = [
    ("diffuse", {"albedo": 1.0}),
    ("conductor", {**GOLD, "alpha": 0.0}), ("conductor", {**GOLD, "alpha": 1e-7}), ("conductor", {**GOLD, "alpha": 1.0}),
    ("conductor", {"eta": 1.0, "k": 0.0, "alpha": 0.1}), ("conductor", {"eta": 0.0, "k": 0.0, "alpha": 0.0}),
    ("dielectric", {"eta": 1.5, "alpha": 0.0}), ("dielectric", {"eta": 1.5, "alpha": 1e-7}),
    ("dielectric", {"eta": 1 / 1.5, "alpha": 1.0}), ("dielectric", {"eta": 1.0, "alpha": 0.2}),
    ("dielectric", {"eta": 1.0, "alpha": 0.0}),
    ("plastic", {"diffuse": 1.0, "eta": 1.5, "alpha": 0.0}), ("plastic", {"diffuse": 0.0, "eta": 1.5, "alpha": 0.5}),
    ("metallic_roughness", {"base": 1.0, "metallic": 0.0, "alpha": 0.0}),
    ("metallic_roughness", {"base": 0.0, "metallic": 1.0, "alpha": 1.0}),
]
EDGE_DIRECTIONS = unit([[0, 0, 1], [1, 0, 0], [0, 1, 1e-7], [1, 0, -1e-7], [0, 0, -1], [0.6, 0, 0.8], [0.6, 0, -0.8],
                        [1e-7, 0, 1], [0.3, -0.4, 1e-4]])


@pytest.mark.parametrize("family, params", EDGE_PARAMS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(EDGE_PARAMS)])
def test_finite_at_grazing_angles_and_extreme_parameters(host, family, params):
    k = len(EDGE_DIRECTIONS)
    wo, wi = np.repeat(EDGE_DIRECTIONS, k, axis=0), np.tile(EDGE_DIRECTIONS, (k, 1))
    rng = np.random.default_rng(4)
    wo = np.concatenate([wo, random_directions(rng, 500, upper=False)])
    wi = np.concatenate([wi, random_directions(rng, 500, upper=False)])
    value, pdf = host.eval(family, params, wo, wi), host.pdf(family, params, wo, wi)
    assert np.isfinite(value).all() and (value >= 0).all()
    assert np.isfinite(pdf).all() and (pdf >= 0).all()
    s = host.sample(family, params, np.repeat(wo, 20, axis=0), seed=2)
    assert np.isfinite(s.wi).all() and np.isfinite(s.weight).all() and np.isfinite(s.pdf).all()
    assert (s.weight >= 0).all() and (s.pdf >= 0).all() and np.isfinite(s.eta).all()
    if family != "dielectric":  # one-sided: nothing from below, nothing to below
        below = np.repeat(wo[:, 2] <= 0, 20)
        assert (s.weight[below] == 0).all()
        assert (value[(wo[:, 2] <= 0) | (wi[:, 2] <= 0)] == 0).all()
        assert (pdf[(wo[:, 2] <= 0) | (wi[:, 2] <= 0)] == 0).all()
        assert (s.wi[np.any(s.weight > 0, axis=1), 2] > 0).all()


# --- NVRTC -----------------------------------------------------------------------------------------------------------

NVRTC_PROBE = r"""
#include "pathtracer/bsdf_conductor.h"
#include "pathtracer/bsdf_dielectric.h"
#include "pathtracer/bsdf_diffuse.h"
#include "pathtracer/bsdf_metallic_roughness.h"
#include "pathtracer/bsdf_plastic.h"

template <typename B>
__device__ void run(const B& b, float3 wo, float3 wi, unsigned long long seed, float* out) {
    const pt::BsdfValue v = b.eval(wo, wi);
    pt::Pcg32 rng{seed};
    const pt::BsdfSample s = b.sample(wo, rng);
    out[0] = v.color.x * v.scale + b.pdf(wo, wi) + s.weight.x + s.pdf + s.wi.z + s.eta + (s.delta ? 1.0f : 0.0f);
}

// Every family's eval, pdf and sample, built the way the dispatcher builds them (a plastic pointing at its table
// in global memory).
extern "C" __global__ void bsdf_families(const float* p, const float* table, const float3* dirs, unsigned int type,
                                         float* out) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float3 wo = dirs[2 * i], wi = dirs[2 * i + 1];
    float* o = out + i;
    switch (type) {
        case 0: run(pt::DiffuseBsdf{make_float3(p[0], p[1], p[2])}, wo, wi, i, o); break;
        case 1: run(pt::ConductorBsdf{make_float3(p[0], p[1], p[2]), make_float3(p[3], p[4], p[5]),
                                      make_float3(p[6], p[7], p[8]), p[9]}, wo, wi, i, o); break;
        case 2: run(pt::DielectricBsdf{p[0], p[1]}, wo, wi, i, o); break;
        case 3: run(pt::PlasticBsdf{make_float3(p[0], p[1], p[2]), p[3], p[4], p[5], p[6], table}, wo, wi, i, o); break;
        default: run(pt::MetallicRoughnessBsdf{make_float3(p[0], p[1], p[2]), p[3], p[4]}, wo, wi, i, o); break;
    }
}
"""


def test_headers_compile_with_nvrtc():
    ptx = compile_ptx(NVRTC_PROBE, "bsdf_families.cu", COMPILE_OPTIONS)
    assert re.search(r"\.entry\s+bsdf_families\s*\(", ptx)
    assert not re.search(r"\.f64\b", ptx), "double precision in a BSDF (a literal without its f suffix?)"
    assert ".local" not in ptx and "__local_depot" not in ptx, "local memory in a BSDF"
