"""Host constants of the rough plastic BSDF (``kernels/pathtracer/bsdf_plastic.h``).

The rough plastic model (that of the reference renderer's ``roughplastic``) is a Lambertian base under a GGX
rough dielectric coating. Light reaches the base through the coating and leaves through it again, so the diffuse
lobe is scaled by the coating's external transmittance on the way in and on the way out, and by
``1 / (1 - internal_reflectance)`` for the light the coating sends back down, again and again. Those quantities
depend only on (eta, alpha) and are integrals of the microfacet model; the kernel cannot afford them per shading
point, so they are computed here once per material and handed to the kernel in :class:`PlasticConstants`.

How (the reference renderer's own procedure, reproduced so that images agree with it):

* ``transmittance[i]``: the fraction of light arriving from outside at cos theta = mu_i that the coating
  transmits (single scattering, no radiance scaling), mu_i = max(1e-6, i / (PLASTIC_TABLE_SIZE - 1)). Integrated
  over the visible normals of the incident direction with a tensor Gauss-Legendre rule on the unit square of
  visible-normal sampling (32 x 32 nodes when light enters the denser side, 128 x 128 otherwise). The kernel
  interpolates it linearly in cos theta.
* ``internal_reflectance``: the coating's reflectance seen from inside (relative IOR 1 / eta), averaged over a
  cosine-weighted (diffuse) hemisphere of directions: 2 * mean(R(mu) * mu) over 64 equally spaced mu in
  [1e-6, 1], the reference renderer's (crude) rule, kept so that its constant is reproduced.
* ``specular_weight``: the probability weight of sampling the coating rather than the base,
  1 / (1 + mean(diffuse)) (specular reflectance 1; :func:`specular_sampling_weight`).

The kernel's ``PlasticBsdf`` takes ``diffuse``, ``eta``, ``alpha``, ``internal_reflectance`` and
``specular_weight`` as they are, and points at the ``transmittance`` table in device memory.

Blocking calls
--------------
None. Pure numpy, about half a second of CPU per new (eta, alpha), cached afterwards.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["MIN_ALPHA", "PLASTIC_TABLE_SIZE", "PlasticConstants", "plastic_constants", "specular_sampling_weight"]

#: Entries of the external transmittance table, at cos theta = i / (size - 1). The same number is
#: ``PLASTIC_TABLE_SIZE`` in ``kernels/pathtracer/bsdf_plastic.h``: change both together. 64 is the reference
#: renderer's resolution: with the same nodes and the same linear interpolation its table is reproduced exactly
#: (to the rounding of the quadrature, ~1e-6). Fewer entries interpolate the same function worse near grazing
#: angles, where a smooth coating's transmittance falls steeply: at alpha = 0.05, 16 entries are up to 7% off the
#: reference and 48 entries 0.8%; at alpha = 0.01, 48 entries still 11%.
PLASTIC_TABLE_SIZE = 64

#: Roughness below which alpha is clamped, as the reference renderer's microfacet distribution does (the kernel
#: clamps it the same way).
MIN_ALPHA = 1e-4

# The reference renderer averages the internal reflectance over this many cosines, whatever its table size.
_INTERNAL_REFLECTANCE_NODES = 64


@dataclass(frozen=True)
class PlasticConstants:
    """What ``PlasticBsdf`` needs besides (diffuse, eta, alpha).

    Attributes
    ----------
    internal_reflectance : float
        Diffuse reflectance of the coating from inside.
    specular_weight : float or None
        Sampling weight of the coating lobe (before the Fresnel-dependent selection of the kernel); None when
        no diffuse reflectance was given.
    transmittance : numpy.ndarray
        ``PLASTIC_TABLE_SIZE`` float32, read-only: external transmittance at cos theta = i / (size - 1).
    """

    internal_reflectance: float
    specular_weight: float | None
    transmittance: np.ndarray


def plastic_constants(eta: float, alpha: float,
                      diffuse: tuple[float, float, float] | float | None = None) -> PlasticConstants:
    """The constants of a rough plastic with relative IOR ``eta`` (interior / exterior), GGX ``alpha`` and
    ``diffuse`` reflectance (RGB, or one value for grey).

    The integrals depend on (eta, alpha) only and are cached per pair; ``diffuse`` only sets the sampling weight
    (None leaves it None: :func:`specular_sampling_weight` gives it for a diffuse colour later).
    """
    eta = float(eta)
    if not eta > 0.0 or eta == 1.0:
        raise ValueError(f"a plastic needs a positive relative IOR different from 1, not {eta}")
    if not alpha >= 0.0:
        raise ValueError(f"alpha must be >= 0, not {alpha}")
    table, internal = _integrals(eta, max(float(alpha), MIN_ALPHA))
    weight = None if diffuse is None else specular_sampling_weight(diffuse)
    return PlasticConstants(internal_reflectance=internal, specular_weight=weight, transmittance=table)


def specular_sampling_weight(diffuse: tuple[float, float, float] | float) -> float:
    """The weight of the coating lobe in sampling: 1 / (1 + mean(diffuse)), the reference renderer's ratio of
    the mean specular reflectance (1) to the sum of the mean reflectances."""
    return 1.0 / (float(np.mean(np.asarray(diffuse, np.float64))) + 1.0)


@functools.lru_cache(maxsize=256)
def _integrals(eta: float, alpha: float) -> tuple[np.ndarray, float]:
    table = coating_transmittance(table_cosines(PLASTIC_TABLE_SIZE), eta, alpha).astype(np.float32)
    table.flags.writeable = False  # shared by every caller through the cache
    mu = table_cosines(_INTERNAL_REFLECTANCE_NODES)
    internal = float(np.mean(coating_reflectance(mu, 1.0 / eta, alpha) * mu) * 2.0)
    return table, internal


def table_cosines(size: int) -> np.ndarray:
    """The cosines the tables are computed at: ``size`` equally spaced in [0, 1], the first moved to 1e-6."""
    return np.maximum(1e-6, np.linspace(0.0, 1.0, size))


def coating_transmittance(mu: np.ndarray, eta: float, alpha: float) -> np.ndarray:
    """Fraction of light from cos theta = ``mu`` (on the side of relative IOR ``eta``) that the GGX interface
    transmits: E over visible normals m of (1 - F(wi.m)) G1(wt, m), wt the refracted direction."""
    wi, m = _visible_normal_nodes(mu, alpha, 32 if eta > 1.0 else 128)
    cos_im = np.sum(wi * m, axis=-1)
    f, cos_t, _, eta_ti = fresnel_dielectric(cos_im, eta)
    wt = m * (cos_im * eta_ti + cos_t)[..., None] - wi * eta_ti[..., None]
    value = smith_g1(wt, m, alpha) * (1.0 - f)
    value = np.where(wt[..., 2] * wi[..., 2] >= 0.0, 0.0, value)
    return _quadrature_mean(value, 32 if eta > 1.0 else 128)


def coating_reflectance(mu: np.ndarray, eta: float, alpha: float) -> np.ndarray:
    """Fraction of light from cos theta = ``mu`` that the GGX interface of relative IOR ``eta`` reflects:
    E over visible normals m of F(wi.m) G1(wr, m), wr the mirrored direction."""
    wi, m = _visible_normal_nodes(mu, alpha, 32 if eta > 1.0 else 128)
    cos_im = np.sum(wi * m, axis=-1)
    wr = 2.0 * cos_im[..., None] * m - wi
    value = smith_g1(wr, m, alpha) * fresnel_dielectric(cos_im, eta)[0]
    value = np.where((wr[..., 2] <= 0.0) | (wi[..., 2] <= 0.0), 0.0, value)
    return _quadrature_mean(value, 32 if eta > 1.0 else 128)


def fresnel_dielectric(cos_i: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unpolarised Fresnel reflectance of a dielectric interface, and the refraction it implies.

    ``cos_i`` >= 0 is the side the normal points to (relative IOR ``eta`` = inside / outside). Returns
    (F, cos_t, eta_it, eta_ti): cos_t the signed cosine of the refracted direction (0 under total internal
    reflection, F = 1 there), eta_it the relative IOR in the direction of travel and eta_ti its inverse.
    """
    cos_i = np.asarray(cos_i, np.float64)
    outside = cos_i >= 0.0
    eta_it = np.where(outside, eta, 1.0 / eta)
    eta_ti = 1.0 / eta_it
    cos_t2 = 1.0 - (1.0 - cos_i * cos_i) * eta_ti * eta_ti
    ci = np.abs(cos_i)
    ct = np.sqrt(np.maximum(cos_t2, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        a_s = (ci - eta_it * ct) / (ci + eta_it * ct)
        a_p = (ct - eta_it * ci) / (ct + eta_it * ci)
    f = 0.5 * (a_s * a_s + a_p * a_p)
    f = np.where(ci == 0.0, 1.0, f)
    if eta == 1.0:
        f = np.zeros_like(f)
    return f, np.where(outside, -ct, ct), eta_it, eta_ti


def smith_g1(v: np.ndarray, m: np.ndarray, alpha: float) -> np.ndarray:
    """Smith's GGX masking of direction ``v`` for microfacet normal ``m`` (0 when v sees the facet's back)."""
    z2 = v[..., 2] ** 2
    xy = alpha * alpha * (v[..., 0] ** 2 + v[..., 1] ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = 2.0 * np.sqrt(z2) / (np.sqrt(z2) + np.sqrt(z2 + xy))
    g = np.where(xy == 0.0, 1.0, np.nan_to_num(g))
    return np.where(np.sum(v * m, axis=-1) * v[..., 2] <= 0.0, 0.0, g)


def _gauss_legendre_square(res: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nodes, weights = np.polynomial.legendre.leggauss(res)
    u1, u2 = np.meshgrid(0.5 * nodes + 0.5, 0.5 * nodes + 0.5, indexing="ij")
    w = np.outer(weights, weights) * 0.25  # the weights of [-1, 1]^2 sum to 4: a mean over the unit square
    return u1.ravel(), u2.ravel(), w.ravel()


def _quadrature_mean(value: np.ndarray, res: int) -> np.ndarray:
    return value @ _gauss_legendre_square(res)[2]


def _visible_normal_nodes(mu: np.ndarray, alpha: float, res: int) -> tuple[np.ndarray, np.ndarray]:
    """Directions wi at cos theta = mu (in the xz plane) and, per quadrature node, the visible normal sampled for
    it: arrays (len(mu), res * res, 3)."""
    mu = np.asarray(mu, np.float64)
    wi = np.stack([np.sqrt(1.0 - mu * mu), np.zeros_like(mu), mu], axis=-1)[:, None, :]
    u1, u2, _ = _gauss_legendre_square(res)
    # Heitz 2018, "Sampling the GGX Distribution of Visible Normals", with a concentric map of the square to
    # the disk (the reference renderer's choice: the rule's nodes then land where its own do). wi lies in the
    # xz plane, so the stretched direction does too and the frame around it needs no rotation.
    vh = wi * np.array([alpha, alpha, 1.0])
    vh = vh / np.linalg.norm(vh, axis=-1, keepdims=True)
    sin_v, cos_v = vh[..., 0], vh[..., 2]
    a, b = 2.0 * u1 - 1.0, 2.0 * u2 - 1.0
    steep = np.abs(a) < np.abs(b)
    r = np.where(steep, b, a)
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = np.where(r == 0.0, 0.0, 0.25 * np.pi * np.where(steep, a, b) / r)
    phi = np.where(steep, 0.5 * np.pi - phi, phi)
    t1, t2 = r * np.cos(phi), r * np.sin(phi)
    s = 0.5 * (1.0 + cos_v)
    t2 = (1.0 - s) * np.sqrt(np.maximum(0.0, 1.0 - t1 * t1)) + s * t2
    tz = np.sqrt(np.maximum(0.0, 1.0 - t1 * t1 - t2 * t2))
    # In the frame T1 = (0, 1, 0), T2 = vh x T1, vh: the hemisphere point as a normal of the stretched surface.
    nh = np.stack([-t2 * cos_v + tz * sin_v, np.broadcast_to(t1, t2.shape), t2 * sin_v + tz * cos_v], axis=-1)
    m = nh * np.array([alpha, alpha, 1.0])
    m[..., 2] = np.maximum(m[..., 2], 0.0)
    m = m / np.linalg.norm(m, axis=-1, keepdims=True)
    return np.broadcast_to(wi, m.shape), m
