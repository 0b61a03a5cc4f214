"""Environment lighting's device code on the CPU: ``kernels/pathtracer/environment.h`` built by the host compiler.

``environment_host.cpp`` wraps the header's three functions for ctypes; the records and tables come from the
library's own host code (:func:`environment_tables`, :func:`environment_record`). Checked here: the lookup
against an independent numpy transcription of the reference renderer's ``envmap`` lookup (and the direction
convention, texel by texel), the sampler's directions against the pdf (chi-square over cells), the pdf's
integral over the sphere, that a sample's radiance and pdf are those of its direction, and that the tables
mean what the sampler reads from them. The header is also compiled with NVRTC and its record's layout checked
against ``ENVIRONMENT_RECORD``. Skipped, with the reason, without a C++ compiler.
"""

from __future__ import annotations

import ctypes
import math
import re
from pathlib import Path

import numpy as np
import pytest
from host_build import aligned, build_host_library, compiler

# Private on purpose: where the package's kernels live, the path tracer's NVRTC options, and the environment's
# device tables and record, which have no public door yet.
from optixasync.program import compile_ptx
from optixasync.render._environment import ENVIRONMENT_RECORD, environment_record, environment_tables
from optixasync.render._path import COMPILE_OPTIONS
from optixasync.scene._environment import LUMINANCE_WEIGHTS, Environment

HERE = Path(__file__).resolve().parent
F32 = ctypes.POINTER(ctypes.c_float)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of environment.h")
    lib = build_host_library("environment_host.cpp", tmp_path_factory.mktemp("environment_host"), "-Wextra")
    for name in ("env_radiance", "env_pdf", "env_sample"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p]
    lib.env_record_size.restype = ctypes.c_uint
    return lib


class HostEnvironment:
    """An environment's record and tables in host memory, and the header's functions over them."""

    def __init__(self, lib, environment: Environment) -> None:
        self.lib, self.environment = lib, environment
        if environment.image is not None:
            self.tables = environment_tables(environment.image)
            self.texels = aligned(self.tables.texels)  # float4 loads: 16-byte aligned
            self.marginal = np.ascontiguousarray(self.tables.marginal_cdf)
            self.conditional = np.ascontiguousarray(self.tables.conditional_cdf)
            pointers = (self.texels.ctypes.data, self.marginal.ctypes.data, self.conditional.ctypes.data)
        else:
            self.tables, pointers = None, (0, 0, 0)
        self.record = aligned(environment_record(environment, *pointers)[None])

    def _call(self, name: str, values: np.ndarray, per_item: int, width: int) -> np.ndarray:
        values = np.ascontiguousarray(values, np.float32)
        n = values.size // per_item
        out = np.empty((n, width), np.float32)
        getattr(self.lib, name)(self.record.ctypes.data, values.ctypes.data, n, out.ctypes.data)
        return out

    def radiance(self, directions: np.ndarray) -> np.ndarray:
        return self._call("env_radiance", directions, 3, 3)

    def pdf(self, directions: np.ndarray) -> np.ndarray:
        return self._call("env_pdf", directions, 3, 1)[:, 0]

    def sample(self, uniforms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        out = self._call("env_sample", uniforms, 2, 7)
        return out[:, :3], out[:, 3:6], out[:, 6]


def uniforms(n: int, seed: int) -> np.ndarray:
    """Pairs of uniforms on the kernel's grid (multiples of 2^-24 in [0, 1))."""
    return (np.random.default_rng(seed).integers(0, 2**24, (n, 2)) / 2.0**24).astype(np.float32)


def random_directions(n: int, seed: int) -> np.ndarray:
    d = np.random.default_rng(seed).normal(size=(n, 3))
    return (d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32)


def spotty_image(height: int, width: int, seed: int) -> np.ndarray:
    """Lognormal radiance with a few very bright texels and a black patch: far from uniform."""
    rng = np.random.default_rng(seed)
    image = rng.lognormal(0.0, 1.0, (height, width, 3))
    image[rng.integers(0, height, 3), rng.integers(0, width, 3)] *= 200.0
    image[height // 2:height // 2 + 2, :width // 3] = 0.0
    return image.astype(np.float32)


def rotation(axis, degrees: float) -> np.ndarray:
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    a = math.radians(degrees)
    return np.eye(3) + math.sin(a) * k + (1 - math.cos(a)) * k @ k


# -- the reference renderer's envmap lookup, transcribed independently into numpy (float64) --------------------------


def mitsuba_envmap_lookup(image: np.ndarray, directions: np.ndarray, scale: float = 1.0,
                          to_world: np.ndarray | None = None) -> np.ndarray:
    """What Mitsuba 3's ``envmap`` (RGB variants) returns for rays travelling along ``directions``.

    As src/emitters/envmap.cpp does it: the bitmap padded to at least 2 x 3 (columns, rows) by repeating the
    last column and row, stored with a halo column on each side (the last real column left of column 0, the
    first right of the last), looked up by a clamped bilinear texture at
    pos = ((u W + 1) / (W + 2), (v (H - 1) + 0.5) / H) with u = atan2(x, -z) / 2 pi wrapped into [0, 1) and
    v = acos(y) / pi clipped to [0, 1], after taking the direction into the map's frame by to_world^-1.
    """
    img = np.asarray(image, np.float64)[..., :3]
    if img.shape[0] < 3:
        img = np.concatenate([img, np.repeat(img[-1:], 3 - img.shape[0], axis=0)])
    height, width = img.shape[:2]
    storage = np.concatenate([img[:, -1:], img, img[:, :1]], axis=1)  # (H, W + 2)
    d = np.asarray(directions, np.float64)
    if to_world is not None:
        d = d @ np.linalg.inv(to_world).T
    u = np.arctan2(d[:, 0], -d[:, 2]) / (2 * np.pi)
    u = u - np.floor(u)
    v = np.clip(np.arccos(np.clip(d[:, 1], -1, 1)) / np.pi, 0, 1)
    res = np.array([width + 2, height], np.float64)
    pos = np.stack([(u * width + 1) / (width + 2), (v * (height - 1) + 0.5) / height], axis=1)
    # drjit's Texture, linear filter, clamp wrap mode
    pos_f = pos * res - 0.5
    pos_i = np.floor(pos_f).astype(int)
    w1 = pos_f - pos_i
    w0 = 1 - w1
    x0, x1 = np.clip(pos_i[:, 0], 0, width + 1), np.clip(pos_i[:, 0] + 1, 0, width + 1)
    y0, y1 = np.clip(pos_i[:, 1], 0, height - 1), np.clip(pos_i[:, 1] + 1, 0, height - 1)
    f00, f10, f01, f11 = storage[y0, x0], storage[y0, x1], storage[y1, x0], storage[y1, x1]
    f0 = w0[:, :1] * f00 + w1[:, :1] * f10
    f1 = w0[:, :1] * f01 + w1[:, :1] * f11
    return (w0[:, 1:] * f0 + w1[:, 1:] * f1) * scale


# -- layout and compilation ------------------------------------------------------------------------------------------


def test_host_record_layout_matches_the_dtype(lib):
    offsets = (ctypes.c_uint * len(ENVIRONMENT_RECORD.names))()
    lib.env_record_offsets(offsets)
    assert lib.env_record_size() == ENVIRONMENT_RECORD.itemsize == 88
    assert list(offsets) == [ENVIRONMENT_RECORD.fields[name][1] for name in ENVIRONMENT_RECORD.names]


PROBE_SOURCE = """
#include "pathtracer/environment.h"
extern "C" __global__ void environment_probe(const EnvironmentRecord* env, const float4* in, float4* out) {
    const float4 a = in[threadIdx.x];
    const float3 d = make_float3(a.x, a.y, a.z);
    const pt::EnvironmentSample s = pt::environment_sample(*env, a.w, a.x);
    const float3 r = pt::environment_radiance(*env, d);
    out[threadIdx.x] = make_float4(s.direction.x + r.x, s.radiance.y + r.y, s.pdf, pt::environment_pdf(*env, d));
}
"""


def test_header_compiles_with_nvrtc_in_single_precision():
    ptx = compile_ptx(PROBE_SOURCE, "environment_probe.cu", COMPILE_OPTIONS)
    assert ".entry environment_probe" in ptx
    assert not re.search(r"\.f64\b", ptx), "double precision in environment.h"
    assert ".local" not in ptx and "__local_depot" not in ptx, "local memory in environment.h"


def test_nvrtc_record_layout_matches_the_dtype():
    """Every field's offset, the size and the alignment as NVRTC lays the record out (as the layout test of
    records.h probes them: a null-based member address is a constant NVRTC folds into an initializer)."""
    probes = [f"(const char*)&((EnvironmentRecord*)0)->{name}" for name in ENVIRONMENT_RECORD.names]
    source = PROBE_SOURCE + (
        f'static_assert(sizeof(EnvironmentRecord) == {ENVIRONMENT_RECORD.itemsize}, "size of EnvironmentRecord");\n'
        'static_assert(alignof(EnvironmentRecord) == 8, "alignment of EnvironmentRecord");\n'
        'extern "C" __device__ const char* oa_layout_probe[] = {' + ", ".join(probes) + "};\n")
    text = compile_ptx(source, "environment_layout.cu", COMPILE_OPTIONS)
    match = re.search(r"oa_layout_probe\[(\d+)\]\s*=\s*\{([^}]*)\}", text)
    assert match, "the layout probe is missing from the PTX"
    assert [int(v) for v in match.group(2).split(",")] == [ENVIRONMENT_RECORD.fields[n][1]
                                                            for n in ENVIRONMENT_RECORD.names]
    with pytest.raises(Exception, match="size of EnvironmentRecord"):
        compile_ptx(PROBE_SOURCE + 'static_assert(sizeof(EnvironmentRecord) == 84, "size of EnvironmentRecord");\n',
                    "environment_bad_layout.cu", COMPILE_OPTIONS)


# -- (c) the lookup ----------------------------------------------------------------------------------------------------


def coordinate_image(height: int, width: int) -> np.ndarray:
    """Texel (row, col) holds (col, row, 1): the bilinear lookup returns the texel coordinates it blended."""
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float32)
    return np.stack([cols, rows, np.ones_like(rows)], axis=-1)


def test_direction_convention_texel_by_texel(lib):
    """+Y up is row 0, -Y the last row; u = 0 at -Z (between the last and first columns), +X a quarter in."""
    height, width = 9, 16
    env = HostEnvironment(lib, Environment(image=coordinate_image(height, width)))
    s = math.sqrt(0.5)
    directions = np.array([[0, 1, 0], [0, -1, 0], [0, 0, -1], [1, 0, 0], [0, 0, 1], [-1, 0, 0],
                           [s, s, 0], [0, -s, s]], np.float32)
    got = env.radiance(directions)
    mid = (height - 1) / 2
    up_down_u = width / 2 - 0.5  # atan2(0, -0) = pi: u = 1/2 on the poles
    expected = [(up_down_u, 0), (up_down_u, height - 1),
                ((width - 1) / 2, mid),  # -Z: half column W-1 (x = W - 1), half column 0 (x = 0)
                (width / 4 - 0.5, mid), (width / 2 - 0.5, mid), (3 * width / 4 - 0.5, mid),
                (width / 4 - 0.5, (height - 1) / 4), (width / 2 - 0.5, 3 * (height - 1) / 4)]
    np.testing.assert_allclose(got[:, :2], expected, atol=2e-5)
    np.testing.assert_allclose(got[:, 2], 1.0, atol=1e-6)


def test_u_wraps_and_v_clamps(lib):
    width = 8
    image = np.zeros((5, width, 3), np.float32)
    image[:, 0] = 1.0  # only the first column is lit
    env = HostEnvironment(lib, Environment(image=image))
    # at the horizon, phi = 2 pi u: u = 0 (-Z) blends columns W-1 and 0 half and half, u = 1/(2W) is column 0
    phis = 2 * np.pi * np.array([0.0, 0.5 / width, 1.0 / width, 1.5 / width, 1 - 0.25 / width])
    directions = np.stack([np.sin(phis), np.zeros_like(phis), -np.cos(phis)], axis=1)
    np.testing.assert_allclose(env.radiance(directions)[:, 0], [0.5, 1.0, 0.5, 0.0, 0.25], atol=1e-5)
    # beyond the poles nothing wraps: straight up is row 0 exactly, whatever the (u) of the direction
    rows = Environment(image=coordinate_image(5, width))
    up = HostEnvironment(lib, rows).radiance(np.array([[1e-8, 1, 0], [0, 1, 1e-8], [0, -1, -1e-8]], np.float32))
    np.testing.assert_allclose(up[:, 1], [0, 0, 4], atol=1e-5)


def test_a_two_row_map_is_looked_up_with_its_last_row_repeated(lib):
    image = np.array([[[1, 1, 1], [1, 1, 1]], [[3, 3, 3], [3, 3, 3]]], np.float32)
    env = HostEnvironment(lib, Environment(image=image))
    assert env.record["height"] == 3
    horizon = np.array([[1, 0, 0], [0, 0.7071068, 0.7071068]], np.float32)
    np.testing.assert_allclose(env.radiance(horizon)[:, 0], [3.0, 2.0], atol=1e-5)  # v = 1/2 is padded row 1
    np.testing.assert_allclose(env.radiance(horizon), mitsuba_envmap_lookup(image, horizon), atol=1e-5)


@pytest.mark.parametrize("shape, scale, turn", [((16, 32), 1.0, None), ((7, 5), 2.5, None), ((2, 9), 1.0, None),
                                                ((12, 24), 0.5, ((1, 2, 3), 40.0)), ((3, 2), 1.0, ((0, 1, 0), 90.0))])
def test_lookup_matches_the_reference_envmap(lib, shape, scale, turn):
    image = spotty_image(*shape, seed=shape[0])
    to_world = rotation(*turn) if turn else None
    env = HostEnvironment(lib, Environment(image=image, scale=scale, to_world=to_world))
    directions = random_directions(20000, seed=3)
    got = env.radiance(directions)
    expected = mitsuba_envmap_lookup(image, directions, scale, to_world)
    # float32 u and v: an error of a few 1e-7 in texel units, times the steepest texel step
    steep = float(np.abs(np.diff(image, axis=1)).max() + np.abs(np.diff(image, axis=0)).max()) * scale
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=steep * max(shape) * 4e-6)


def test_constant_environment_radiance_and_pdf(lib):
    env = HostEnvironment(lib, Environment(radiance=(1.0, 2.0, 0.5), scale=3.0))
    directions = random_directions(100, seed=1)
    np.testing.assert_array_equal(env.radiance(directions), np.tile([3.0, 6.0, 1.5], (100, 1)).astype(np.float32))
    np.testing.assert_array_equal(env.pdf(directions), np.float32(0.25 / math.pi))


# -- (a) and (b): sampling against the pdf -----------------------------------------------------------------------------


def chi_square_limit(dof: int, z: float = 4.265) -> float:
    """Wilson-Hilferty approximation of the chi-square quantile of probability Phi(z) (z = 4.265: 1 - 1e-5)."""
    c = 2.0 / (9.0 * dof)
    return dof * (1.0 - c + z * math.sqrt(c)) ** 3


def local_uv(env: HostEnvironment, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) of world directions in the map's frame (float64), v from atan2 so that it is precise at the poles."""
    to_world = env.environment.to_world if env.environment.to_world is not None else np.eye(3)
    local = np.asarray(d, np.float64) @ to_world  # to_world.T @ d, row by row
    u = np.arctan2(local[:, 0], -local[:, 2]) / (2 * np.pi) % 1.0
    v = np.arctan2(np.hypot(local[:, 0], local[:, 2]), local[:, 1]) / np.pi
    return u, v


def uv_bins(u: np.ndarray, v: np.ndarray, n_v: int, n_u: int, u_shift: float) -> np.ndarray:
    """Bin of (u, v) in a grid of n_v x n_u bins whose u edges are at (k + u_shift) / n_u."""
    i = np.minimum((v * n_v).astype(int), n_v - 1)
    j = np.floor(u * n_u - u_shift).astype(int) % n_u
    return i * n_u + j


def integrate_pdf(env: HostEnvironment, n_v: int, n_u: int, u_shift: float = 0.0, sub: int = 4) -> np.ndarray:
    """The pdf integrated over each (u, v) bin of the map's frame (midpoint rule on sub x sub points per bin).

    dw = 2 pi^2 sin(theta) du dv; over a bin inside one cell, pdf sin(theta) is constant and the rule is exact.
    """
    v = (np.arange(n_v * sub) + 0.5) / (n_v * sub)
    u = (np.arange(n_u * sub) + 0.5 + u_shift * sub) / (n_u * sub)
    vv, uu = np.meshgrid(v, u, indexing="ij")
    theta, phi = np.pi * vv, 2 * np.pi * uu
    local = np.stack([np.sin(phi) * np.sin(theta), np.cos(theta), -np.cos(phi) * np.sin(theta)], axis=-1)
    to_world = env.environment.to_world if env.environment.to_world is not None else np.eye(3)
    density = env.pdf(local.reshape(-1, 3) @ to_world.T).astype(np.float64).reshape(vv.shape)
    weight = 2 * np.pi**2 * np.sin(theta) / (n_v * sub * n_u * sub)
    return (density * weight).reshape(n_v, sub, n_u, sub).sum(axis=(1, 3))


def chi_square(observed: np.ndarray, expected: np.ndarray) -> tuple[float, int]:
    """The statistic and its degrees of freedom, bins expecting fewer than 5 pooled into one."""
    keep = expected >= 5.0
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] < 5.0:
        observed, expected = observed[:-1], expected[:-1]
    return float(((observed - expected) ** 2 / expected).sum()), len(expected) - 1


@pytest.mark.parametrize("kind", ["map", "rotated map", "two-row map", "constant"])
def test_samples_follow_the_pdf_chi_square(lib, kind):
    """Sampled directions, binned by half cells of the map (so the in-cell placement counts too), against
    environment_pdf integrated over the same bins."""
    if kind == "constant":
        environment = Environment(radiance=(0.3, 0.2, 0.1))
        n_v, n_u, u_shift = 16, 32, 0.0
    else:
        image = spotty_image(2, 6, seed=5) if kind == "two-row map" else spotty_image(10, 20, seed=2)
        environment = Environment(image=image, to_world=rotation((1, 1, 0), 70.0) if kind == "rotated map" else None)
        # cells span column centres: their u edges are at (j + 1/2) / W, half cells' at (k + 1) / 2W
        n_v, n_u, u_shift = 2 * (max(image.shape[0], 3) - 1), 2 * image.shape[1], 1.0
    env = HostEnvironment(lib, environment)
    expected = integrate_pdf(env, n_v, n_u, u_shift, sub=8 if kind == "constant" else 2).ravel()
    assert abs(expected.sum() - 1.0) < 1e-4
    n = 400_000
    directions, _, pdf = env.sample(uniforms(n, seed=11))
    assert (pdf > 0).all() and np.isfinite(pdf).all()
    counts = np.bincount(uv_bins(*local_uv(env, directions), n_v, n_u, u_shift), minlength=expected.size)
    statistic, dof = chi_square(counts, expected / expected.sum() * n)
    assert statistic < chi_square_limit(dof), (statistic, dof)


def test_the_chi_square_test_can_fail(lib):
    """The same test against a slightly different pdf (one cell's probability moved to its neighbour) fails."""
    env = HostEnvironment(lib, Environment(image=spotty_image(10, 20, seed=2)))
    expected = integrate_pdf(env, 18, 40, 1.0, sub=2)
    k = np.unravel_index(np.argmax(expected), expected.shape)
    wrong = expected.copy()
    wrong[k] *= 0.97
    wrong[k[0], (k[1] + 2) % 40] += expected[k] * 0.03
    n = 400_000
    directions, _, _ = env.sample(uniforms(n, seed=11))
    counts = np.bincount(uv_bins(*local_uv(env, directions), 18, 40, 1.0), minlength=wrong.size)
    statistic, dof = chi_square(counts, wrong.ravel() / wrong.sum() * n)
    assert statistic > chi_square_limit(dof), (statistic, dof)


@pytest.mark.parametrize("shape, turn", [((10, 20), None), ((33, 64), None), ((2, 3), None), ((256, 512), None),
                                         ((9, 14), ((1, -2, 0.5), 33.0))])
def test_pdf_integrates_to_one_over_the_sphere(lib, shape, turn):
    environment = Environment(image=spotty_image(*shape, seed=7), to_world=rotation(*turn) if turn else None)
    env = HostEnvironment(lib, environment)
    rows, width = max(shape[0], 3) - 1, shape[1]
    # a refinement of the cells (3 x 3 points per cell), where the midpoint rule is exact up to rounding
    total = integrate_pdf(env, rows, width, 0.5, sub=3).sum()
    assert abs(total - 1.0) < 1e-5, total


def test_black_map_samples_the_sphere_uniformly(lib):
    env = HostEnvironment(lib, Environment(image=np.zeros((6, 12, 3), np.float32)))
    directions, radiance, pdf = env.sample(uniforms(50_000, seed=4))
    assert (radiance == 0).all() and (pdf > 0).all()
    # the fallback tables: each cell's probability is its solid angle, up to the in-cell (u, v) density
    np.testing.assert_allclose(directions.mean(axis=0), 0.0, atol=0.01)
    assert abs(integrate_pdf(env, 5, 12, 0.5, sub=2).sum() - 1.0) < 1e-5


# -- (d) a sample's radiance and pdf are its direction's -------------------------------------------------------------


@pytest.mark.parametrize("turn", [None, ((0.3, 1, -0.5), 123.0)])
def test_sample_radiance_and_pdf_are_those_of_its_direction(lib, turn):
    environment = Environment(image=spotty_image(24, 48, seed=9), scale=1.7,
                              to_world=rotation(*turn) if turn else None)
    env = HostEnvironment(lib, environment)
    directions, radiance, pdf = env.sample(uniforms(50_000, seed=21))
    np.testing.assert_allclose(np.linalg.norm(directions, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(radiance, env.radiance(directions))
    again = env.pdf(directions)
    close = np.isclose(again, pdf, rtol=1e-4)
    assert close.mean() > 0.999, close.mean()  # rounding puts a rare sample on a cell's border
    # where the sampled texels are lit, the estimate L / pdf stays bounded
    lit = radiance.max(axis=1) > 0
    assert (pdf[lit] > 0).all()


# -- (e) the tables are what the sampler reads ---------------------------------------------------------------------


def reference_cell_probabilities(image: np.ndarray) -> np.ndarray:
    """The luminance of the bilinear lookup integrated over each cell's solid angle (by quadrature), normalised.

    Along u the lookup is linear between the cell's two column centres, so it integrates to the mean of the
    two texels of each row; along theta the rows blend linearly, integrated against sin(theta) numerically.
    """
    img = np.asarray(image, np.float64)
    if img.shape[0] < 3:
        img = np.concatenate([img, np.repeat(img[-1:], 3 - img.shape[0], axis=0)])
    lum = img @ np.asarray(LUMINANCE_WEIGHTS)
    rows = img.shape[0] - 1
    t = np.linspace(0.0, 1.0, 4001)
    weights = np.empty((rows, 2))
    for i in range(rows):
        sin = np.sin(np.pi * (i + t) / rows) * (np.pi / rows)
        weights[i] = np.trapezoid((1 - t) * sin, t), np.trapezoid(t * sin, t)
    upper = (lum[:-1] + np.roll(lum[:-1], -1, axis=1)) / 2
    lower = (lum[1:] + np.roll(lum[1:], -1, axis=1)) / 2
    cells = upper * weights[:, :1] + lower * weights[:, 1:]
    return cells / cells.sum()


@pytest.mark.parametrize("shape", [(6, 10), (2, 4), (40, 80)])
def test_tables_hold_luminance_times_solid_angle(shape):
    image = spotty_image(*shape, seed=1)
    tables = environment_tables(image)
    rows, width = max(shape[0], 3) - 1, shape[1]
    assert tables.texels.shape == (rows + 1, width, 4) and tables.texels.dtype == np.float32
    assert tables.marginal_cdf.shape == (rows + 1,) and tables.conditional_cdf.shape == (rows, width + 1)
    assert tables.marginal_cdf[0] == 0 and tables.marginal_cdf[-1] == 1
    assert (tables.conditional_cdf[:, 0] == 0).all() and (tables.conditional_cdf[:, -1] == 1).all()
    assert (np.diff(tables.marginal_cdf) >= 0).all() and (np.diff(tables.conditional_cdf, axis=1) >= 0).all()
    p = np.diff(tables.marginal_cdf.astype(np.float64))[:, None] * np.diff(tables.conditional_cdf, axis=1)
    np.testing.assert_allclose(p, reference_cell_probabilities(image), rtol=5e-5, atol=1e-7)


def test_a_black_band_gets_a_uniform_conditional_and_no_probability():
    image = np.ones((5, 6, 3), np.float32)
    image[:2] = 0.0  # band 0 sees only black texels
    tables = environment_tables(image)
    assert tables.marginal_cdf[1] == 0.0
    np.testing.assert_allclose(tables.conditional_cdf[0], np.arange(7) / 6, atol=1e-7)


def test_the_sampler_picks_the_cell_the_tables_say(lib):
    """Uniforms in the middle of a cell's CDF intervals land in that cell, with that cell's density."""
    image = spotty_image(7, 12, seed=13)
    env = HostEnvironment(lib, Environment(image=image))
    m, c = env.tables.marginal_cdf, env.tables.conditional_cdf
    rows, width = c.shape[0], c.shape[1] - 1
    cells = [(i, j) for i in range(rows) for j in range(width) if m[i + 1] > m[i] and c[i, j + 1] > c[i, j]]
    assert len(cells) > rows * width // 2
    u = np.array([[(m[i] + m[i + 1]) / 2, (c[i, j] + c[i, j + 1]) / 2] for i, j in cells], np.float32)
    directions, _, pdf = env.sample(u)
    d = directions.astype(np.float64)
    sin_theta = np.hypot(d[:, 0], d[:, 2])
    band = (np.arctan2(sin_theta, d[:, 1]) / np.pi * rows).astype(int)
    x = (np.arctan2(d[:, 0], -d[:, 2]) / (2 * np.pi) % 1.0) * width - 0.5  # texel-centre coordinate
    column = np.floor(x).astype(int) % width
    np.testing.assert_array_equal(band, [i for i, _ in cells])
    np.testing.assert_array_equal(column, [j for _, j in cells])
    p = np.array([(float(m[i + 1]) - m[i]) * (float(c[i, j + 1]) - c[i, j]) for i, j in cells])
    np.testing.assert_allclose(pdf, p * width * rows / (2 * np.pi**2 * sin_theta), rtol=1e-4)
