"""Spheres and curves through the render pipeline on a GPU: OptiX's built-in intersection against closed forms.

The same references as the host build's tests (``shape_reference.py``): an emissive sphere's coverage at depth 1,
a diffuse sphere's Lambert shading under a directional light at depth 2, a straight curve's height on screen, a
sphere's shadow on a mesh, per-point colours and material ids, a white furnace; and, where Mitsuba 3 is installed,
spheres against its analytic ``sphere`` shape, per pixel. Run on a GPU with::

    python -m pytest tests/render/test_shapes_gpu.py -m gpu
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import Camera, Curves, DirectionalLight, Environment, Material, Scene, Spheres, rectangle

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent
WHITE_LIGHT = Material((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
CAMERA = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=40.0)
CENTERS = np.array([[0.2, -0.1, 0.0]])
RADIUS = 0.6


def _reference():
    spec = importlib.util.spec_from_file_location("render_shape_reference_gpu", HERE / "shape_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


R = _reference()


def render(ctx, scene: Scene, spp: int, **options) -> np.ndarray:
    with RenderPipeline(ctx, scene, RenderOptions(spp=spp, **options)) as pipeline:
        image = pipeline.render()
        assert pipeline.last_nonfinite == 0
    return image


def neighbourhood(values: np.ndarray) -> np.ndarray:
    """Each pixel's 3x3 neighbourhood as 9 shifted copies (edge pixels repeat the border)."""
    padded = np.pad(values, 1, mode="edge")
    h, w = values.shape
    return np.stack([padded[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)])


def test_an_emissive_sphere_covers_its_projection(ctx):
    spp, size = 256, 64
    scene = Scene([], CAMERA, shapes=[Spheres(CENTERS, RADIUS, material=WHITE_LIGHT)])
    image = render(ctx, scene, spp, width=size, height=size, max_depth=1)
    coverage = R.sphere_coverage(CAMERA, size, size, CENTERS, RADIUS, sub=16)
    bound = 5.0 * np.sqrt(coverage * (1 - coverage) / spp) + 2.0 / spp
    assert (np.abs(image[..., 0] - coverage) <= bound).mean() > 0.999
    assert abs(image[..., 0].sum() - coverage.sum()) < 0.005 * coverage.sum()
    # Exact where no sample of this pixel or its neighbours can reach the edge: the 16x16 lattice of the coverage
    # cannot see a sliver of the sphere that a pixel's random samples may hit.
    near = neighbourhood(coverage)
    inside, outside = near.min(axis=0) == 1.0, near.max(axis=0) == 0.0
    assert (image[inside] == 1.0).all() and (image[outside] == 0.0).all()


def test_a_diffuse_sphere_under_a_directional_light_is_lambert_shaded(ctx):
    spp, size, albedo, irradiance, direction = 256, 64, (0.6, 0.5, 0.4), (2.0, 2.0, 2.0), (-1.0, -1.0, -1.0)
    scene = Scene([], CAMERA, lights=[DirectionalLight(direction, irradiance)],
                  shapes=[Spheres(CENTERS, RADIUS, material=Material(albedo))])
    image = render(ctx, scene, spp, width=size, height=size, max_depth=2)
    expected = R.lambert_directional(CAMERA, size, size, CENTERS, RADIUS, albedo, direction, irradiance, sub=16)
    inside = R.sphere_coverage(CAMERA, size, size, CENTERS, RADIUS, sub=16) == 1.0
    peak = max(albedo) / math.pi * irradiance[0]
    assert np.abs(image - expected)[inside].max() < 0.02 * peak
    assert abs(image.sum() - expected.sum()) < 0.005 * expected.sum()


@pytest.mark.parametrize("kind, count", [("linear", 2), ("quadratic_bspline", 6), ("cubic_bspline", 8),
                                         ("catmull_rom", 8), ("bezier", 7)])
def test_a_straight_curve_is_as_wide_on_screen_as_its_cylinder(ctx, kind, count):
    spp, width, height, radius = 256, 48, 96, 0.1
    camera = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=30.0)
    points = np.stack([np.linspace(-3.0, 3.0, count), np.zeros(count), np.zeros(count)], axis=1)
    scene = Scene([], camera, shapes=[Curves(points, radius, kind=kind, material=WHITE_LIGHT)])
    image = render(ctx, scene, spp, width=width, height=height, max_depth=1)
    band = image[..., 0].sum(axis=0)
    expected = R.cylinder_band(camera, width, height, radius)
    assert abs(band.mean() - expected) < 0.02 * expected, (kind, band.mean(), expected)


def test_a_sphere_shadows_a_mesh(ctx):
    size = 64
    floor = rectangle(np.array([[2.0, 0, 0, 0], [0, 0, 2.0, -0.5], [0, -2.0, 0, 0]]), Material((0.5, 0.5, 0.5)))
    camera = Camera((0.0, 2.5, 2.5), (0.0, -0.5, 0.0), fov=45.0)
    light = DirectionalLight((0.0, -1.0, 0.0), (3.0, 3.0, 3.0))
    ball = Spheres(np.array([[0.0, 0.0, 0.0]]), 0.3, material=Material((0.5, 0.5, 0.5)))
    image = render(ctx, Scene([floor], camera, lights=[light], shapes=[ball]), 64, width=size, height=size,
                   max_depth=2)
    eye, directions = R.pixel_lattice(camera, size, size, sub=8)
    points = eye + directions * ((-0.5 - eye[1]) / directions[..., 1])[..., None]
    shadowed = (np.hypot(points[..., 0], points[..., 2]) < 0.3).mean(axis=2)
    sees_ball = R.sphere_coverage(camera, size, size, [[0.0, 0.0, 0.0]], 0.3, sub=8)
    on_floor = ((np.abs(points[..., 0]) < 2.0) & (np.abs(points[..., 2]) < 2.0)).all(axis=2)  # the floor is 4 x 4
    lit = (shadowed == 0) & (sees_ball == 0) & on_floor
    dark = (shadowed == 1) & (sees_ball == 0) & on_floor
    assert dark.sum() > 20 and (image[dark] == 0).all()
    np.testing.assert_allclose(image[lit], 0.5 / math.pi * 3.0, rtol=1e-4)  # the floor faces the light


def test_point_colours_and_material_ids(ctx):
    size = 64
    centers = np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]])
    colors = np.array([[1.0, 0.5, 0.25], [0.25, 1.0, 1.0]])
    scene = Scene([], CAMERA, lights=[DirectionalLight((0.0, 0.0, -1.0), (1.0, 1.0, 1.0))],
                  shapes=[Spheres(centers, 0.3, colors, [Material((0.8,) * 3), Material((0.4,) * 3)], [0, 1])])
    image = render(ctx, scene, 16, width=size, height=size, max_depth=2)
    for center, color, albedo in zip(centers, colors, (0.8, 0.4), strict=True):
        x, y = CAMERA.project([center], size, size)[0]
        np.testing.assert_allclose(image[int(y), int(x)], albedo * color / math.pi, rtol=0.02)


def test_a_white_sphere_under_a_uniform_environment_disappears(ctx):
    scene = Scene([], CAMERA, shapes=[Spheres(CENTERS, RADIUS, material=Material((1.0, 1.0, 1.0)))],
                  environment=Environment(radiance=(0.7, 0.7, 0.7)))
    image = render(ctx, scene, 256, width=32, height=32, max_depth=40, rr_depth=40)
    assert abs(image[..., 0].mean() - 0.7) < 0.005 * 0.7


def test_spheres_match_mitsuba_per_pixel(ctx):
    mi = pytest.importorskip("mitsuba", reason="Mitsuba 3 is not installed: pip install mitsuba")
    from optixasync.testing import mitsuba_scene_dict

    mi.set_variant("cuda_ad_rgb" if "cuda_ad_rgb" in mi.variants() else "scalar_rgb")
    floor = rectangle(np.array([[2.0, 0, 0, 0], [0, 0, 2.0, -0.6], [0, -2.0, 0, 0]]), Material((0.5, 0.5, 0.5)))
    lamp = rectangle(np.array([[0.4, 0, 0, 0], [0, 0, -0.4, 1.5], [0, 0.4, 0, 0]]), Material((0, 0, 0), (8, 8, 8)))
    balls = Spheres(np.array([[-0.4, -0.2, 0.0], [0.4, -0.3, 0.2]]), np.array([0.4, 0.3], np.float32),
                    material=[Material((0.7, 0.3, 0.2)), Material((0.9, 0.9, 0.9), bsdf="conductor", alpha=0.2)],
                    material_ids=[0, 1])
    scene = Scene([floor, lamp], Camera((0.0, 0.4, 3.0), (0.0, -0.2, 0.0), fov=40.0), shapes=[balls])
    size, spp = 64, 1024
    ours = render(ctx, scene, spp, width=size, height=size, max_depth=6)
    theirs = np.array(mi.render(mi.load_dict(mitsuba_scene_dict(scene, width=size, height=size, spp=spp,
                                                                max_depth=6)), spp=spp))[..., :3]
    blocks = lambda a: a.reshape(size // 8, 8, size // 8, 8, 3).mean(axis=(1, 3))  # noqa: E731
    assert np.abs(blocks(ours) - blocks(theirs)).max() < 0.03 * max(blocks(theirs).max(), 1e-3)
