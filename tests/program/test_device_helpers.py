"""The device helpers for primitives, callables and motion: NVRTC compiles each, and their math checks on the CPU.

``tests/program/kernels/primitives.cu`` uses every helper of ``optixasync_device.h`` once; its PTX must call the
OptiX intrinsic behind each (a helper that no longer reaches its intrinsic fails here). ``optixasync_math.h``
(curve bases, motion keys, SRT and affine transforms) has no intrinsic: it is compiled for the host with the C++
compiler and stand-in vector types, and its numbers are compared with independent numpy references.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from optixasync._config import kernels_dir
from optixasync.program import compile_ptx
from optixasync.program._module import _CALLABLE_RE, _ENTRY_RE

KERNELS = Path(__file__).resolve().parent / "kernels"

#: The intrinsic each helper reaches.
INTRINSICS = [
    "_optix_get_ray_time", "_optix_get_ray_flags", "_optix_get_ray_visibility_mask", "_optix_trace_typed_32",
    "_optix_set_payload_types", "_optix_get_primitive_type_from_hit_kind", "_optix_get_backface_from_hit_kind",
    *(f"_optix_report_intersection_{n}" for n in (0, 1, 8)), *(f"_optix_get_attribute_{n}" for n in (0, 1, 7)),
    "_optix_get_sphere_data", "_optix_get_curve_parameter", "_optix_get_ribbon_parameters",
    "_optix_get_linear_curve_vertex_data", "_optix_get_quadratic_bspline_vertex_data",
    "_optix_get_cubic_bspline_vertex_data", "_optix_get_catmullrom_vertex_data",
    "_optix_get_cubic_bezier_vertex_data", "_optix_get_ribbon_vertex_data", "_optix_get_ribbon_normal",
    "_optix_get_quadratic_bspline_rocaps_vertex_data_from_handle",
    "_optix_get_cubic_bspline_rocaps_vertex_data_from_handle",
    "_optix_get_catmullrom_rocaps_vertex_data_from_handle", "_optix_get_cubic_bezier_rocaps_vertex_data_from_handle",
    "_optix_call_direct_callable", "_optix_call_continuation_callable", "_optix_get_transform_list_size",
    "_optix_get_transform_list_handle", "_optix_get_transform_type_from_handle",
    "_optix_get_instance_transform_from_handle", "_optix_get_instance_inverse_transform_from_handle",
    "_optix_get_static_transform_from_handle", "_optix_get_matrix_motion_transform_from_handle",
    "_optix_get_srt_motion_transform_from_handle",
]


@pytest.fixture(scope="module")
def ptx() -> str:
    return compile_ptx((KERNELS / "primitives.cu").read_text(), "primitives.cu")


@pytest.mark.parametrize("intrinsic", INTRINSICS)
def test_every_helper_reaches_its_intrinsic(ptx, intrinsic):
    assert re.search(rf"\b{intrinsic}\b", ptx), f"{intrinsic} is not called in the PTX"


def test_programs_and_callables_are_entry_points(ptx):
    assert set(_ENTRY_RE.findall(ptx)) == {
        "__raygen__all", "__miss__all", "__intersection__box", "__anyhit__all", "__closesthit__sphere",
        "__closesthit__curve", "__closesthit__custom", "__closesthit__typed"}
    assert set(_CALLABLE_RE.findall(ptx)) == {"__direct_callable__tint", "__continuation_callable__shadow"}


def test_the_callable_regex_reads_what_nvrtc_writes():
    ptx = (".visible .func  (.param .align 4 .b8 func_retval0[12]) __direct_callable__tint(\n"
           ".visible .func __continuation_callable__none(\n.visible .func  (.param .b32 r) helper(\n")
    assert _CALLABLE_RE.findall(ptx) == ["__direct_callable__tint", "__continuation_callable__none"]


# --- optixasync_math.h on the host ----------------------------------------------------------------------------------

_HARNESS = r"""
#include <cmath>
#define __forceinline__ inline
#define __device__
#include <math.h>
struct float3 { float x, y, z; };
struct float4 { float x, y, z, w; };
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
#include "optixasync_math.h"

extern "C" {
void curve_point(int kind, const float* cp, float u, float* out) {
    float4 p[4];
    for (int k = 0; k < 4; ++k) p[k] = make_float4(cp[4 * k], cp[4 * k + 1], cp[4 * k + 2], cp[4 * k + 3]);
    float4 r;
    switch (kind) {
        case 1: r = oa::linear_curve_point(p, u); break;
        case 2: r = oa::quadratic_bspline_point(p, u); break;
        case 3: r = oa::cubic_bspline_point(p, u); break;
        case 4: r = oa::catmullrom_point(p, u); break;
        default: r = oa::cubic_bezier_point(p, u); break;
    }
    out[0] = r.x; out[1] = r.y; out[2] = r.z; out[3] = r.w;
}
void motion_key(float time, float begin, float end, unsigned keys, int* key, float* fraction) {
    oa::motion_key(time, begin, end, keys, *key, *fraction);
}
static void store(const oa::Affine& a, float* m) {
    const float4 rows[3] = {a.m0, a.m1, a.m2};
    for (int r = 0; r < 3; ++r) { m[4 * r] = rows[r].x; m[4 * r + 1] = rows[r].y; m[4 * r + 2] = rows[r].z; m[4 * r + 3] = rows[r].w; }
}
void srt(const float* first, const float* second, float fraction, float* m) { store(oa::mix_srt(first, second, fraction), m); }
void invert(const float* m, float* out) { store(oa::invert(oa::affine_from(m)), out); }
void compose(const float* a, const float* b, float* out) { store(oa::compose(oa::affine_from(a), oa::affine_from(b)), out); }
void normal(const float* inverse, const float* n, float* out) {
    float3 r = oa::transform_normal(oa::affine_from(inverse), make_float3(n[0], n[1], n[2]));
    out[0] = r.x; out[1] = r.y; out[2] = r.z;
}
}
"""


@pytest.fixture(scope="module")
def host_math(tmp_path_factory):
    compiler = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("no C++ compiler to build optixasync_math.h for the host")
    directory = tmp_path_factory.mktemp("host_math")
    (directory / "harness.cpp").write_text(_HARNESS)
    library = directory / "libhostmath.so"
    result = subprocess.run([compiler, "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{kernels_dir()}", "-o",
                             str(library), str(directory / "harness.cpp")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lib = ctypes.CDLL(str(library))
    floats = np.ctypeslib.ndpointer(np.float32, flags="C")
    lib.curve_point.argtypes = [ctypes.c_int, floats, ctypes.c_float, floats]
    lib.motion_key.argtypes = [ctypes.c_float, ctypes.c_float, ctypes.c_float, ctypes.c_uint,
                               ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_float)]
    lib.srt.argtypes = [floats, floats, ctypes.c_float, floats]
    lib.invert.argtypes = [floats, floats]
    lib.compose.argtypes = [floats, floats, floats]
    lib.normal.argtypes = [floats, floats, floats]
    return lib


def _point(lib, kind: int, cp: np.ndarray, u: float) -> np.ndarray:
    padded = np.zeros((4, 4), np.float32)
    padded[: len(cp)] = cp
    out = np.zeros(4, np.float32)
    lib.curve_point(kind, padded.ravel(), u, out)
    return out


#: Basis matrices M with point(u) = [1, u, u^2, u^3][:n] @ M @ cp (the textbook forms, written independently).
BASES = {
    1: np.array([[1, 0], [-1, 1]], float),
    2: 0.5 * np.array([[1, 1, 0], [-2, 2, 0], [1, -2, 1]], float),
    3: np.array([[1, 4, 1, 0], [-3, 0, 3, 0], [3, -6, 3, 0], [-1, 3, -3, 1]], float) / 6,
    4: 0.5 * np.array([[0, 2, 0, 0], [-1, 0, 1, 0], [2, -5, 4, -1], [-1, 3, -3, 1]], float),
    5: np.array([[1, 0, 0, 0], [-3, 3, 0, 0], [3, -6, 3, 0], [-1, 3, -3, 1]], float),
}


@pytest.mark.parametrize("kind", sorted(BASES))
def test_curve_bases_match_their_matrix_form(host_math, kind):
    rng = np.random.default_rng(kind)
    basis = BASES[kind]
    cp = rng.uniform(-2, 2, (basis.shape[0], 4)).astype(np.float32)
    for u in (0.0, 0.25, 0.5, 0.8, 1.0):
        powers = np.array([u**k for k in range(basis.shape[0])])
        assert np.allclose(_point(host_math, kind, cp, u), powers @ basis @ cp, atol=1e-5), u


def test_curve_end_points():
    """Sanity of the references: Bezier and linear interpolate their ends, Catmull-Rom its middle two points."""
    cp = np.arange(16, dtype=float).reshape(4, 4)
    assert np.allclose(np.array([1, 0, 0, 0]) @ BASES[5] @ cp, cp[0]) and np.allclose(np.ones(4) @ BASES[5] @ cp, cp[3])
    assert np.allclose(np.array([1, 0, 0, 0]) @ BASES[4] @ cp, cp[1]) and np.allclose(np.ones(4) @ BASES[4] @ cp, cp[2])
    for kind in (2, 3):
        assert np.allclose(BASES[kind].sum(axis=1), [1] + [0] * (BASES[kind].shape[0] - 1))  # partition of unity


@pytest.mark.parametrize(("time", "keys", "expected"), [
    (0.0, 2, (0, 0.0)), (0.5, 2, (0, 0.5)), (1.0, 2, (0, 1.0)), (-3.0, 2, (0, 0.0)), (7.0, 2, (0, 1.0)),
    (0.5, 3, (1, 0.0)), (0.75, 3, (1, 0.5)), (1.0, 5, (3, 1.0)), (0.1, 5, (0, 0.4)),
])
def test_motion_keys_are_spread_evenly_and_clamped(host_math, time, keys, expected):
    key, fraction = ctypes.c_int(), ctypes.c_float()
    host_math.motion_key(time, 0.0, 1.0, keys, ctypes.byref(key), ctypes.byref(fraction))
    assert (key.value, round(fraction.value, 5)) == expected


def test_motion_key_of_an_empty_time_range_is_the_first(host_math):
    key, fraction = ctypes.c_int(), ctypes.c_float()
    host_math.motion_key(0.5, 0.5, 0.5, 2, ctypes.byref(key), ctypes.byref(fraction))
    assert (key.value, fraction.value) == (0, 0.0)


def _quaternion_matrix(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q / np.linalg.norm(q)
    # Rodrigues: R = I + 2w[v]x + 2[v]x^2 for the unit quaternion (v, w)
    v = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + 2 * w * v + 2 * v @ v


def _srt(scale, shear, pivot, q, t) -> np.ndarray:
    (sx, sy, sz), (a, b, c), (px, py, pz) = scale, shear, pivot
    return np.array([sx, a, b, px, sy, c, py, sz, pz, *q, *t], np.float32)


def test_srt_matrix_is_rotation_after_scale_and_pivot(host_math):
    q = np.array([0.3, -0.2, 0.5, 0.8])
    key = _srt((2, 3, 0.5), (0.1, -0.2, 0.3), (1, -1, 2), q / np.linalg.norm(q), (5, 6, 7))
    out = np.zeros(12, np.float32)
    host_math.srt(key, key, 0.0, out)
    scale = np.array([[2, 0.1, -0.2], [0, 3, 0.3], [0, 0, 0.5]])
    rotation = _quaternion_matrix(q)
    expected = np.hstack([rotation @ scale, (rotation @ [1, -1, 2] + [5, 6, 7])[:, None]])
    assert np.allclose(out.reshape(3, 4), expected, atol=1e-5)


def test_srt_keys_mix_with_a_normalised_quaternion(host_math):
    half = np.sqrt(0.5)
    first = _srt((1, 1, 1), (0, 0, 0), (0, 0, 0), (0, 0, 0, 1), (0, 0, 0))
    second = _srt((1, 1, 1), (0, 0, 0), (0, 0, 0), (0, 0, half, half), (2, 0, 0))  # 90 degrees about z, moved
    out = np.zeros(12, np.float32)
    host_math.srt(first, second, 0.5, out)
    angle = np.pi / 4  # the mixed, renormalised quaternion is the half-way rotation
    expected = np.array([[np.cos(angle), -np.sin(angle), 0, 1], [np.sin(angle), np.cos(angle), 0, 0], [0, 0, 1, 0]])
    assert np.allclose(out.reshape(3, 4), expected, atol=1e-5)


def test_affine_inverse_composition_and_normals(host_math):
    rng = np.random.default_rng(5)
    a = np.hstack([rng.uniform(-1, 1, (3, 3)) + 2 * np.eye(3), rng.uniform(-3, 3, (3, 1))]).astype(np.float32)
    b = np.hstack([rng.uniform(-1, 1, (3, 3)) + 2 * np.eye(3), rng.uniform(-3, 3, (3, 1))]).astype(np.float32)
    full = lambda m: np.vstack([m.astype(float), [0, 0, 0, 1]])  # noqa: E731
    inverse = np.zeros(12, np.float32)
    host_math.invert(a.ravel(), inverse)
    assert np.allclose(full(inverse.reshape(3, 4)), np.linalg.inv(full(a)), atol=1e-4)
    product = np.zeros(12, np.float32)
    host_math.compose(a.ravel(), b.ravel(), product)
    assert np.allclose(full(product.reshape(3, 4)), full(a) @ full(b), atol=1e-4)
    n = np.array([0.2, -0.5, 0.9], np.float32)
    out = np.zeros(3, np.float32)
    host_math.normal(inverse, n, out)
    assert np.allclose(out, np.linalg.inv(a[:, :3].astype(float)).T @ n, atol=1e-4)


@pytest.mark.parametrize("name", ["model_gpu.cu", "payload_types.cu"])
def test_the_gpu_test_programs_compile(name):
    """The programs of test_programming_model_gpu.py compile on the CPU, so a GPU run fails only on the GPU's part."""
    source = (KERNELS / name).read_text()
    ptx = compile_ptx(source, name)
    declared = set(re.findall(r"OA_PROGRAM\s+(__\w+)\s*\(", source))
    assert declared and declared <= set(_ENTRY_RE.findall(ptx))
    assert set(re.findall(r"OA_CALLABLE\(\w+\)\s+(__\w+)\s*\(", source)) == set(_CALLABLE_RE.findall(ptx))
