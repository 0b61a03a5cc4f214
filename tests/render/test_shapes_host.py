"""Spheres and curves drawn by the path tracer's kernel on the CPU, against closed forms.

The host build of the program a scene with shapes compiles (``OA_SHAPES``) runs the kernel's own closest-hit
programs and hit attributes (``kernels/pathtracer/hit_sphere.h``, ``hit_curve.h``) over the OptiX stand-in's sphere
and curve intersection (``shape_intersect.h``), with the scene tables the device uses. The references are in
``shape_reference.py``: coverage of emitters seen at depth 1, Lambert shading under a directional light at depth 2
(no noise but the pixel jitter), the mean normal, the height of a straight curve in every column.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from host_build import HostTracer, build_pathtracer_library, compiler, host_render

from optixasync.render import RenderOptions
from optixasync.scene import (
    Camera,
    Curves,
    DirectionalLight,
    Environment,
    Material,
    Scene,
    Spheres,
    cornell_box,
    rectangle,
)

HERE = Path(__file__).resolve().parent
ALL = 15
WHITE_LIGHT = Material((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"render_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


R = _load("shape_reference")


@pytest.fixture(scope="module")
def shapes_kernel(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("shapes_host"), (0, 1, ALL), shapes=True)


@pytest.fixture(scope="module")
def plain_kernel(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("plain_host"), (0, 1, ALL))


CAMERA = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=40.0)
CENTERS = np.array([[0.2, -0.1, 0.0]])
RADIUS = 0.6


def binomial_bound(p: np.ndarray, spp: int, sigmas: float = 5.0) -> np.ndarray:
    """How far an estimate of coverage ``p`` from ``spp`` jittered samples may stray (plus one sample)."""
    return sigmas * np.sqrt(p * (1 - p) / spp) + 1.0 / spp


def test_an_emissive_sphere_covers_its_projection(shapes_kernel):
    spp, size = 64, 32
    scene = Scene([], CAMERA, shapes=[Spheres(CENTERS, RADIUS, material=WHITE_LIGHT)])
    image = host_render(shapes_kernel, scene, spp, width=size, height=size, max_depth=1)
    coverage = R.sphere_coverage(CAMERA, size, size, CENTERS, RADIUS, sub=16)
    np.testing.assert_array_equal(image[..., 0], image[..., 2])
    assert (np.abs(image[..., 0] - coverage) <= binomial_bound(coverage, spp)).all()
    assert abs(image[..., 0].sum() - coverage.sum()) < 0.01 * coverage.sum()  # the disc's area, within 1%
    assert (image[coverage == 1.0] == 1.0).all() and (image[coverage == 0.0] == 0.0).all()


def test_a_diffuse_sphere_under_a_directional_light_is_lambert_shaded(shapes_kernel):
    spp, size, albedo, irradiance, direction = 64, 32, (0.6, 0.5, 0.4), (2.0, 2.0, 2.0), (-1.0, -1.0, -1.0)
    scene = Scene([], CAMERA, lights=[DirectionalLight(direction, irradiance)],
                  shapes=[Spheres(CENTERS, RADIUS, material=Material(albedo))])
    tracer = HostTracer(shapes_kernel, scene, RenderOptions(width=size, height=size, spp=spp, max_depth=2))
    image = tracer.render(spp, variant=ALL)
    expected = R.lambert_directional(CAMERA, size, size, CENTERS, RADIUS, albedo, direction, irradiance, sub=16)
    inside = R.sphere_coverage(CAMERA, size, size, CENTERS, RADIUS, sub=16) == 1.0
    peak = max(albedo) / math.pi * irradiance[0]
    assert inside.sum() > 200
    assert np.abs(image - expected)[inside].max() < 0.02 * peak  # what jitter within a pixel leaves
    assert abs(image.sum() - expected.sum()) < 0.005 * expected.sum()
    normals = tracer.outputs["normal"][..., :3]
    assert np.abs(normals - R.mean_normals(CAMERA, size, size, CENTERS, RADIUS, sub=16))[inside].max() < 0.05
    facing = np.einsum("hwk,hwk->hw", normals, -tracer.scene.camera.ray_directions(
        np.stack(np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5), -1).reshape(-1, 2), size,
        size).reshape(size, size, 3))
    assert (facing[inside] > 0).all()


@pytest.mark.parametrize("kind, points", [
    ("linear", np.array([[-3.0, 0.0, 0.0], [3.0, 0.0, 0.0]])),
    ("cubic_bspline", np.stack([np.linspace(-3.0, 3.0, 8), np.zeros(8), np.zeros(8)], axis=1)),
    ("quadratic_bspline", np.stack([np.linspace(-3.0, 3.0, 6), np.zeros(6), np.zeros(6)], axis=1)),
    ("bezier", np.stack([np.linspace(-3.0, 3.0, 7), np.zeros(7), np.zeros(7)], axis=1)),
])
def test_a_straight_curve_is_as_wide_on_screen_as_its_cylinder(shapes_kernel, kind, points):
    spp, width, height, radius = 64, 24, 48, 0.1
    camera = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=30.0)
    scene = Scene([], camera, shapes=[Curves(points, radius, kind=kind, material=WHITE_LIGHT)])
    image = host_render(shapes_kernel, scene, spp, width=width, height=height, max_depth=1)
    band = image[..., 0].sum(axis=0)  # covered pixels per column
    expected = R.cylinder_band(camera, width, height, radius)
    assert abs(band.mean() - expected) < 0.02 * expected, (band.mean(), expected)
    assert np.abs(band - expected).max() < 0.1 * expected
    rows = np.nonzero(image[..., 0].max(axis=1) > 0)[0]
    assert rows.min() >= height // 2 - math.ceil(expected) and rows.max() <= height // 2 + math.ceil(expected)


def test_a_curve_is_shaded_by_its_normal(shapes_kernel):
    """Seen head-on under a light from the camera, a horizontal tube's brightness across it is cos of its normal."""
    spp, width, height, radius = 32, 48, 48, 0.4
    camera = Camera((0.0, 0.0, 6.0), (0.0, 0.0, 0.0), fov=12.0)
    points = np.array([[-3.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    scene = Scene([], camera, lights=[DirectionalLight((0.0, 0.0, -1.0), (math.pi, math.pi, math.pi))],
                  shapes=[Curves(points, radius, kind="linear", material=Material((1.0, 1.0, 1.0)))])
    tracer = HostTracer(shapes_kernel, scene, RenderOptions(width=width, height=height, spp=spp, max_depth=2))
    image = tracer.render(spp, variant=ALL)[:, 20:28, 0]  # columns near the middle (the tube runs along x)
    # Rays of each row (at 16 heights within it) meet the tube's circle in the yz plane; the shading is n . z.
    _, _, v, _ = camera.basis(width, height)
    sy = (1.0 - 2.0 * (np.arange(height)[:, None] + (np.arange(16) + 0.5) / 16) / height) * np.linalg.norm(v)
    dz = -1.0 / np.sqrt(1 + sy * sy)  # the z of the unit direction in the yz plane
    b = 6.0 * dz
    disc = b * b - (36.0 - radius * radius)
    t = -b - np.sqrt(np.maximum(disc, 0.0))
    expected = np.where(disc > 0, (6.0 + t * dz) / radius, 0.0).mean(axis=1)
    core = (disc > 0).all(axis=1)
    assert core.sum() >= 8
    np.testing.assert_allclose(image.mean(axis=1)[core], expected[core], atol=0.01)
    normal = tracer.outputs["normal"][:, 20:28, :3].mean(axis=1)
    np.testing.assert_allclose(normal[core, 2], expected[core], atol=0.01)  # the normal AOV: n facing the camera
    assert np.abs(normal[core, 0]).max() < 1e-3  # no component along the tube


def test_point_colours_and_material_ids_pick_each_spheres_reflectance(shapes_kernel):
    size = 32
    centers = np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]])
    colors = np.array([[1.0, 0.5, 0.25], [0.25, 1.0, 1.0]])
    materials = [Material((0.8, 0.8, 0.8)), Material((0.4, 0.4, 0.4))]
    light = DirectionalLight((0.0, 0.0, -1.0), (1.0, 1.0, 1.0))
    scene = Scene([], CAMERA, lights=[light], shapes=[Spheres(centers, 0.3, colors, materials, [0, 1])])
    image = host_render(shapes_kernel, scene, 16, width=size, height=size, max_depth=2)
    for center, color, albedo in zip(centers, colors, (0.8, 0.4), strict=True):
        x, y = CAMERA.project([center], size, size)[0]
        pixel = image[int(y), int(x)]
        expected = albedo * color / math.pi  # the normal faces the light at the centre
        np.testing.assert_allclose(pixel, expected, rtol=0.03)


def test_a_sphere_casts_its_shadow_and_leaves_the_rest_of_a_mesh_scene_bit_identical(shapes_kernel):
    size, spp = 32, 16
    floor = rectangle(np.array([[2.0, 0, 0, 0], [0, 0, 2.0, -0.5], [0, -2.0, 0, 0]]), Material((0.5, 0.5, 0.5)))
    camera = Camera((0.0, 2.5, 2.5), (0.0, -0.5, 0.0), fov=45.0)
    light = DirectionalLight((0.0, -1.0, 0.0), (3.0, 3.0, 3.0))
    alone = Scene([floor], camera, lights=[light])
    ball = Spheres(np.array([[0.0, 0.0, 0.0]]), 0.3, material=Material((0.5, 0.5, 0.5)))
    both = Scene([floor], camera, lights=[light], shapes=[ball])
    options = dict(width=size, height=size, max_depth=2)
    before = host_render(shapes_kernel, alone, spp, **options)
    after = host_render(shapes_kernel, both, spp, **options)
    # Floor points under the ball (|x, z| < 0.3 on y = -0.5: the light falls straight down) are in its shadow.
    eye, directions = R.pixel_lattice(camera, size, size, sub=8)
    t = (-0.5 - eye[1]) / directions[..., 1]
    points = eye + directions * t[..., None]
    shadowed = (np.hypot(points[..., 0], points[..., 2]) < 0.3).mean(axis=2)
    sees_ball = R.sphere_coverage(camera, size, size, [[0.0, 0.0, 0.0]], 0.3, sub=8)
    clear = (shadowed == 0) & (sees_ball == 0)
    np.testing.assert_array_equal(after[clear], before[clear])  # the same samples, bit for bit
    dark = (shadowed == 1) & (sees_ball == 0)
    assert dark.sum() > 4 and (after[dark] == 0).all()


def test_the_shapes_program_renders_mesh_scenes_bit_identically(shapes_kernel, plain_kernel):
    """The program built for shapes (OA_SHAPES) shades triangles exactly as the program built without."""
    options = RenderOptions(width=16, height=16, spp=4, max_depth=6)
    a = HostTracer(shapes_kernel, cornell_box(), options)
    b = HostTracer(plain_kernel, cornell_box(), options)
    a.launch(0, 4, ALL)
    b.launch(0, 4, ALL)
    np.testing.assert_array_equal(a.accum, b.accum)
    for name in ("albedo", "normal"):
        np.testing.assert_array_equal(a.outputs[name], b.outputs[name])


def test_the_plain_program_refuses_a_scene_with_shapes(plain_kernel):
    scene = Scene([], CAMERA, shapes=[Spheres(CENTERS, RADIUS, material=WHITE_LIGHT)])
    with pytest.raises(RuntimeError, match="shapes=True"):
        host_render(plain_kernel, scene, 1, width=4, height=4)


def test_a_white_furnace_of_a_sphere_under_a_uniform_environment(shapes_kernel):
    """A sphere of albedo 1 under a uniform environment is invisible: every pixel sees the environment's radiance."""
    scene = Scene([], CAMERA, shapes=[Spheres(CENTERS, RADIUS, material=Material((1.0, 1.0, 1.0)))])
    scene.environment = Environment(radiance=(0.7, 0.7, 0.7))
    image = host_render(shapes_kernel, scene, 64, width=16, height=16, max_depth=40, rr_depth=40, seed=5)
    assert abs(image[..., 0].mean() - 0.7) < 0.01 * 0.7
    inside = R.sphere_coverage(CAMERA, 16, 16, CENTERS, RADIUS, sub=8) == 1.0
    assert abs(image[inside][:, 0].mean() - 0.7) < 0.02 * 0.7
