"""The path tracer's BSDF families on the CPU: ``kernels/pathtracer/bsdf_*.h`` compiled by the host C++ compiler.

``bsdf_host.cpp`` builds the device headers unchanged (after ``cuda_host_shims.h``) and exposes eval, pdf and
sample of every family on arrays of local-frame directions. This module compiles it once per process
(:func:`load`), packs parameters (:func:`pack_params`), and computes what other tests compare against:

* :func:`directional_albedo` -- the "white furnace" integral ``int f(wo, wi) |cos wi| dwi`` of a family for one
  direction, by quadrature of the compiled ``eval()`` over the sphere (plus the delta lobes, exactly). GPU
  furnace tests compare their images with it.
* :func:`sphere_quadrature` -- the quadrature it uses: Gauss-Legendre nodes in the cells of a (theta, phi) grid
  whose rows meet at the horizon, so that the jump of a lobe there falls on cell edges.

Parameters are dicts: ``diffuse`` {albedo}; ``conductor`` {eta, k, specular=1, alpha}; ``dielectric``
{eta, alpha}; ``plastic`` {diffuse, eta, alpha} (the rest from ``plastic_constants``); ``metallic_roughness``
{base, metallic, alpha or roughness}. Colours may be one number (grey) or three.
"""

from __future__ import annotations

import ctypes
import functools
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
from host_build import build_host_library, compiler

HERE = Path(__file__).resolve().parent
FAMILIES = {"diffuse": 0, "conductor": 1, "dielectric": 2, "plastic": 3, "metallic_roughness": 4}

__all__ = ["FAMILIES", "BsdfHost", "HarnessUnavailable", "Samples", "compiler", "directional_albedo", "is_delta",
           "load", "local_direction", "pack_params", "sphere_quadrature"]


class HarnessUnavailable(RuntimeError):
    """No C++ compiler to build the harness with."""


class Samples(NamedTuple):
    wi: np.ndarray      # (n, 3)
    weight: np.ndarray  # (n, 3) f |cos| / pdf
    pdf: np.ndarray     # (n,)
    delta: np.ndarray   # (n,) bool
    eta: np.ndarray     # (n,) relative IOR crossed (1: reflection)


@functools.lru_cache(maxsize=1)
def load() -> BsdfHost:
    """The compiled harness (built on first use, in a temporary folder, once per process)."""
    if compiler() is None:
        raise HarnessUnavailable("no C++ compiler (c++, g++ or clang++) to build the BSDF harness")
    return BsdfHost(build_host_library("bsdf_host.cpp", Path(tempfile.mkdtemp(prefix="bsdf_host_")), "-Wextra",
                                       "-Werror"))


def _rgb(value) -> list[float]:
    a = np.broadcast_to(np.asarray(value, np.float64), (3,))
    return [float(v) for v in a]


def pack_params(family: str, params: dict) -> np.ndarray:
    """The float32 parameter block of ``family`` that bsdf_host.cpp reads (its layout is listed there)."""
    p = params
    if family == "diffuse":
        block = _rgb(p["albedo"])
    elif family == "conductor":
        block = _rgb(p["eta"]) + _rgb(p["k"]) + _rgb(p.get("specular", 1.0)) + [p["alpha"]]
    elif family == "dielectric":
        block = [p["eta"], p["alpha"]]
    elif family == "plastic":
        from optixasync.scene.bsdfs._plastic_tables import plastic_constants  # host precomputation (no public door yet)

        c = plastic_constants(p["eta"], p["alpha"], p["diffuse"])
        block = (_rgb(p["diffuse"]) + [p["eta"], p["alpha"], c.internal_reflectance, c.specular_weight]
                 + list(c.transmittance))
    elif family == "metallic_roughness":
        alpha = p["alpha"] if "alpha" in p else p["roughness"] ** 2
        block = _rgb(p["base"]) + [p["metallic"], alpha]
    else:
        raise ValueError(f"unknown BSDF family {family!r}; one of {sorted(FAMILIES)}")
    return np.ascontiguousarray(block, np.float32)


def is_delta(family: str, params: dict) -> bool:
    """Whether every lobe of the family with these parameters is a delta (smooth conductor or dielectric)."""
    return family in ("conductor", "dielectric") and params["alpha"] == 0.0


def local_direction(cos_theta: float, phi: float = 0.0) -> np.ndarray:
    """The unit direction at polar cosine ``cos_theta`` (either sign) and azimuth ``phi``."""
    s = np.sqrt(max(0.0, 1.0 - cos_theta * cos_theta))
    return np.array([s * np.cos(phi), s * np.sin(phi), cos_theta])


def _f32(a, shape) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(a, np.float32), shape))


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


class BsdfHost:
    """The compiled families. Directions are (n, 3) arrays (a single (3,) direction broadcasts)."""

    def __init__(self, lib: ctypes.CDLL, threads: int = 0) -> None:
        self.lib, self.threads = lib, threads
        vp, lg, i, f = ctypes.c_void_p, ctypes.c_long, ctypes.c_int, ctypes.c_float
        for name in ("bsdf_host_eval", "bsdf_host_pdf"):
            getattr(lib, name).argtypes = [i, vp, lg, vp, vp, vp, i]
            getattr(lib, name).restype = i
        lib.bsdf_host_sample.argtypes = [i, vp, lg, vp, ctypes.c_ulonglong, vp, i]
        lib.bsdf_host_sample.restype = i
        lib.bsdf_host_plastic_table_size.restype = ctypes.c_uint
        lib.bsdf_host_fresnel_dielectric.argtypes = [lg, vp, f, vp]
        lib.bsdf_host_fresnel_conductor.argtypes = [lg, vp, f, f, vp]
        lib.bsdf_host_fresnel_schlick.argtypes = [lg, vp, f, vp]
        lib.bsdf_host_ggx.argtypes = [lg, f, vp, vp, vp]
        lib.bsdf_host_ggx_sample.argtypes = [lg, f, vp, vp, vp]

    @property
    def plastic_table_size(self) -> int:
        return int(self.lib.bsdf_host_plastic_table_size())

    @staticmethod
    def _pair(wo, wi) -> tuple[np.ndarray, np.ndarray, int]:
        n = max(np.asarray(wo).reshape(-1, 3).shape[0], np.asarray(wi).reshape(-1, 3).shape[0])
        return _f32(np.asarray(wo).reshape(-1, 3), (n, 3)), _f32(np.asarray(wi).reshape(-1, 3), (n, 3)), n

    def eval_parts(self, family: str, params: dict, wo, wi) -> tuple[np.ndarray, np.ndarray]:
        """``eval()``: the colour (n, 3) and the scale (n,)."""
        wo, wi, n = self._pair(wo, wi)
        out = np.empty((n, 4), np.float32)
        block = pack_params(family, params)
        rc = self.lib.bsdf_host_eval(FAMILIES[family], _ptr(block), n, _ptr(wo), _ptr(wi), _ptr(out), self.threads)
        assert rc == 0
        return out[:, :3], out[:, 3]

    def eval(self, family: str, params: dict, wo, wi) -> np.ndarray:
        """f(wo, wi) |wi.z| per channel, (n, 3) float64."""
        color, scale = self.eval_parts(family, params, wo, wi)
        return color.astype(np.float64) * scale[:, None]

    def pdf(self, family: str, params: dict, wo, wi) -> np.ndarray:
        wo, wi, n = self._pair(wo, wi)
        out = np.empty(n, np.float32)
        block = pack_params(family, params)
        rc = self.lib.bsdf_host_pdf(FAMILIES[family], _ptr(block), n, _ptr(wo), _ptr(wi), _ptr(out), self.threads)
        assert rc == 0
        return out.astype(np.float64)

    def sample(self, family: str, params: dict, wo, n: int | None = None, seed: int = 0) -> Samples:
        """``n`` samples for ``wo`` (one direction, repeated) or one per row of ``wo``."""
        wo = np.asarray(wo, np.float32).reshape(-1, 3)
        n = wo.shape[0] if n is None else n
        wo = _f32(wo, (n, 3))
        out = np.empty((n, 9), np.float32)
        block = pack_params(family, params)
        rc = self.lib.bsdf_host_sample(FAMILIES[family], _ptr(block), n, _ptr(wo), seed, _ptr(out), self.threads)
        assert rc == 0
        return Samples(out[:, 0:3], out[:, 3:6], out[:, 6], out[:, 7] != 0.0, out[:, 8])

    def fresnel_dielectric(self, cos_i, eta: float) -> np.ndarray:
        """(n, 4): reflectance, cos_t, eta_it, eta_ti."""
        c = np.ascontiguousarray(np.asarray(cos_i, np.float32).ravel())
        out = np.empty((c.size, 4), np.float32)
        self.lib.bsdf_host_fresnel_dielectric(c.size, _ptr(c), eta, _ptr(out))
        return out

    def fresnel_conductor(self, cos_i, eta: float, k: float) -> np.ndarray:
        c = np.ascontiguousarray(np.asarray(cos_i, np.float32).ravel())
        out = np.empty(c.size, np.float32)
        self.lib.bsdf_host_fresnel_conductor(c.size, _ptr(c), eta, k, _ptr(out))
        return out

    def fresnel_schlick(self, cos_i, f0: float) -> np.ndarray:
        c = np.ascontiguousarray(np.asarray(cos_i, np.float32).ravel())
        out = np.empty(c.size, np.float32)
        self.lib.bsdf_host_fresnel_schlick(c.size, _ptr(c), f0, _ptr(out))
        return out

    def ggx(self, alpha: float, v, m) -> np.ndarray:
        """(n, 3): D(m), G1(v, m), pdf_visible(v, m)."""
        v, m, n = self._pair(v, m)
        out = np.empty((n, 3), np.float32)
        self.lib.bsdf_host_ggx(n, alpha, _ptr(v), _ptr(m), _ptr(out))
        return out

    def ggx_sample(self, alpha: float, wo, u) -> np.ndarray:
        u = np.ascontiguousarray(np.asarray(u, np.float32).reshape(-1, 2))
        wo = _f32(np.asarray(wo).reshape(-1, 3), (u.shape[0], 3))
        out = np.empty((u.shape[0], 3), np.float32)
        self.lib.bsdf_host_ggx_sample(u.shape[0], alpha, _ptr(wo), _ptr(u), _ptr(out))
        return out


@functools.lru_cache(maxsize=8)
def sphere_quadrature(n_theta: int, n_phi: int, order: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes of the sphere: (directions (N, 3), solid-angle weights (N,), cell (N,) = row * n_phi + column).

    A grid of n_theta rows of polar angle over [0, pi] (n_theta even, so that the horizon is a row edge) by
    n_phi columns of azimuth over [0, 2 pi), with an ``order`` x ``order`` Gauss-Legendre rule in each cell. The
    weights include the Jacobian sin(theta) and sum to 4 pi to float precision. Read-only arrays, cached.
    """
    if n_theta % 2:
        raise ValueError("n_theta must be even: the horizon has to fall on a row edge")
    x, w = np.polynomial.legendre.leggauss(order)
    x, w = 0.5 * (x + 1.0), 0.5 * w
    dt, dp = np.pi / n_theta, 2.0 * np.pi / n_phi
    theta = ((np.arange(n_theta)[:, None] + x[None, :]) * dt).ravel()        # (n_theta * order,)
    phi = ((np.arange(n_phi)[:, None] + x[None, :]) * dp).ravel()            # (n_phi * order,)
    wt = (np.broadcast_to(w, (n_theta, order)) * dt).ravel() * np.sin(theta)
    wp = (np.broadcast_to(w, (n_phi, order)) * dp).ravel()
    st, ct, sp, cp = np.sin(theta), np.cos(theta), np.sin(phi), np.cos(phi)
    dirs = np.stack([st[:, None] * cp[None, :], st[:, None] * sp[None, :], np.broadcast_to(ct[:, None], (ct.size,
                                                                                                  cp.size))], -1)
    weights = wt[:, None] * wp[None, :]
    rows = np.repeat(np.arange(n_theta), order)
    cols = np.repeat(np.arange(n_phi), order)
    cells = rows[:, None] * n_phi + cols[None, :]
    out = (np.ascontiguousarray(dirs.reshape(-1, 3), np.float32), weights.ravel(), cells.ravel())
    for a in out:
        a.flags.writeable = False
    return out


def directional_albedo(family: str, params: dict, cos_theta_o: float, *, radiance: bool = True,
                       n_theta: int = 256, n_phi: int = 512, order: int = 3) -> np.ndarray:
    """The directional albedo ``int f(wo, wi) |cos wi| dwi`` (RGB, float64) of a family for
    wo = (sin theta_o, 0, cos theta_o), by quadrature of the compiled ``eval()`` over the whole sphere
    (:func:`sphere_quadrature`), plus the delta lobes of a smooth conductor or dielectric in closed form.

    ``radiance``: the value the integrator's throughput sees, with transmitted radiance scaled by
    (n_wo / n_wi)^2 (for glass it exceeds 1 leaving the dense side). False gives the energy instead, with that
    scaling undone: it is at most 1 for a passive surface. The default grid resolves lobes down to alpha ~ 0.02;
    its error is below 1e-3 there and far below for wider lobes.
    """
    host = load()
    wo = local_direction(cos_theta_o)
    if is_delta(family, params):
        if family == "conductor":
            return host.sample(family, params, wo, 1).weight[0].astype(np.float64)
        r, _, eta_it, eta_ti = (float(v) for v in host.fresnel_dielectric([cos_theta_o], params["eta"])[0])
        return np.full(3, r + (1.0 - r) * (eta_ti * eta_ti if radiance else 1.0))
    dirs, weights, _ = sphere_quadrature(n_theta, n_phi, order)
    value = host.eval(family, params, wo, dirs)
    if not radiance and family == "dielectric":
        eta_it = params["eta"] if cos_theta_o > 0 else 1.0 / params["eta"]
        value[dirs[:, 2] * cos_theta_o < 0] *= eta_it * eta_it
    return weights @ value
