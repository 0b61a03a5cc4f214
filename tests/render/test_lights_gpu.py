"""Punctual lights on a GPU, against their closed forms: a diffuse plane under a point, a spot and a sun.

A one-sided diffuse plane of albedo rho lit by one light reflects radiance ``rho E / pi``, with ``E`` the
irradiance the light gives the plane's point:

* a point light of intensity ``I`` at height ``h`` above a point at distance ``d``: ``E = I cos / d^2`` with
  ``cos = h / d``;
* a spot light pointing down: the same, times ``t^2``, where ``t`` is the glTF ramp in the cosine of the angle
  from its axis, ``clamp((cos_axis - cos_outer) / (cos_inner - cos_outer), 0, 1)``;
* a directional light of irradiance ``E0`` travelling along ``-n`` tilted by theta: ``E0 cos theta``, the same
  everywhere.

A flat plane sees nothing of itself, and delta lights are never met by a BSDF-sampled ray, so every path past
the first bounce escapes into the black: the pixels converge to the closed form whatever the max depth (the
default, 8, is used). The expected value of a pixel is the closed form averaged over a 16x16 grid of its
footprint (the box filter). With one light, a pixel's only noise is where in the pixel its samples fall; with
the three together, light selection by power adds noise, judged by standard errors estimated from two seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import Camera, DirectionalLight, Material, PointLight, Scene, SpotLight, rectangle

W = H = 48
ALBEDO = np.array([0.8, 0.5, 0.2])
HALF = 2.0  # the plane is the square [-2, 2]^2 at y = 0, facing +y
CAMERA = Camera((0.0, 2.5, 2.5), (0.0, 0.0, 0.0), fov=60.0)
POINT = PointLight((0.3, 1.2, -0.2), intensity=(2.0, 2.0, 2.0), name="bulb")
SPOT = SpotLight((-0.4, 1.5, 0.3), direction=(0.0, -1.0, 0.0), intensity=(3.0, 3.0, 3.0),
                 inner_angle=math.radians(20.0), outer_angle=math.radians(35.0), name="spot")
SUN = DirectionalLight(direction=(0.5, -1.0, 0.25), irradiance=(0.6, 0.6, 0.6), name="sun")


def plane_scene(*lights) -> Scene:
    plane = rectangle(np.array([[HALF, 0, 0, 0], [0, 0, HALF, 0], [0, -HALF, 0, 0]]), Material(reflectance=ALBEDO),
                      "plane")
    assert plane.face_normals()[0][1] > 0  # its front side faces up, towards the lights and the camera
    return Scene([plane], CAMERA, lights=list(lights))


def footprints(sub: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """The points of the plane y = 0 seen through a ``sub x sub`` grid of every pixel (H, W, sub*sub, 3), and
    which of them lie on the plane (in front of the camera, within its edges)."""
    offsets = (np.arange(sub) + 0.5) / sub
    ys, xs = np.mgrid[0:H, 0:W]
    px = np.broadcast_to(xs[..., None, None] + offsets[None, None, None, :], (H, W, sub, sub))
    py = np.broadcast_to(ys[..., None, None] + offsets[None, None, :, None], (H, W, sub, sub))
    d = CAMERA.ray_directions(np.stack([px.reshape(-1), py.reshape(-1)], axis=1), W, H)
    eye = np.asarray(CAMERA.eye, np.float64)
    with np.errstate(divide="ignore"):
        t = -eye[1] / d[:, 1]
    points = (eye + t[:, None] * d).reshape(H, W, sub * sub, 3)
    on_plane = (t > 0).reshape(H, W, -1) & (np.abs(points[..., 0]) < HALF) & (np.abs(points[..., 2]) < HALF)
    return points, on_plane


def irradiance(light, points: np.ndarray) -> np.ndarray:
    """The irradiance (..., 3) ``light`` gives the plane (normal +y) at ``points`` (..., 3)."""
    if isinstance(light, DirectionalLight):
        cos = max(0.0, -light.direction[1])
        return np.broadcast_to(np.asarray(light.irradiance) * cos, points.shape).copy()
    to_light = np.asarray(light.position) - points
    d = np.linalg.norm(to_light, axis=-1)
    cos = np.clip(to_light[..., 1] / d, 0.0, None)
    e = cos / d**2
    if isinstance(light, SpotLight):
        cos_axis = -(to_light / d[..., None]) @ np.asarray(light.direction)
        cos_inner, cos_outer = math.cos(light.inner_angle), math.cos(light.outer_angle)
        ramp = np.clip((cos_axis - cos_outer) / (cos_inner - cos_outer), 0.0, 1.0)
        e = e * ramp**2
    return e[..., None] * np.asarray(light.intensity)


def near(mask: np.ndarray) -> np.ndarray:
    """``mask`` grown by one pixel (8-neighbourhood)."""
    padded = np.pad(mask, 1)
    return np.stack([padded[1 + dy:1 + dy + H, 1 + dx:1 + dx + W] for dy in (-1, 0, 1) for dx in (-1, 0, 1)]).any(0)


def expected_radiance(*lights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pixel: the closed form ``rho E / pi`` (summed over ``lights``) averaged over its footprint (H, W, 3),
    the standard deviation of that radiance over the footprint (H, W, 3), and which of the footprint's points
    lie on the plane (H, W, 256)."""
    points, on_plane = footprints()
    radiance = ALBEDO / math.pi * sum(irradiance(light, points) for light in lights)
    radiance = np.where(on_plane[..., None], radiance, 0.0)  # beyond the plane: black
    return radiance.mean(axis=2), radiance.std(axis=2), on_plane


def render(ctx, scene: Scene, spp: int, seed: int = 0) -> np.ndarray:
    with RenderPipeline(ctx, scene, RenderOptions(width=W, height=H, spp=spp, seed=seed)) as pipeline:
        image = pipeline.render()
        assert pipeline.last_nonfinite == 0
    return image.astype(np.float64)


def test_the_closed_forms_see_what_the_test_needs():
    """CPU: the plane fills most of the view; the spot's cone falls on it, with a dark ring past its ramp."""
    points, on_plane = footprints(4)
    inside = on_plane.all(axis=-1)
    assert inside.sum() > 0.5 * W * H and (~on_plane.any(axis=-1)).sum() > 0.05 * W * H
    spot = irradiance(SPOT, points)[inside][..., 0]
    assert (spot == 0).mean() > 0.2 and (spot > 0).mean() > 0.1
    # inside the inner cone the ramp is 1: a point light's I h / d^3
    h = SPOT.position[1]
    r = np.hypot(points[..., 0] - SPOT.position[0], points[..., 2] - SPOT.position[2])[inside]
    core = r < 0.9 * h * math.tan(SPOT.inner_angle)
    assert core.sum() > 20
    np.testing.assert_allclose(spot[core], 3.0 * h / (h**2 + r[core] ** 2) ** 1.5)
    assert (irradiance(POINT, points)[inside] > 0).all()
    np.testing.assert_allclose(irradiance(SUN, points)[inside], 0.6 / np.linalg.norm([0.5, -1.0, 0.25]))


@pytest.mark.parametrize("light", [POINT, SPOT, SUN], ids=lambda light: light.name)
@pytest.mark.gpu
def test_a_diffuse_plane_under_one_light_converges_to_rho_e_over_pi(ctx, light):
    spp = 256
    image = render(ctx, plane_scene(light), spp, seed=3)
    expected, spread, on_plane = expected_radiance(light)
    inside = on_plane.all(axis=-1)
    # a grey light on a coloured plane: the channels are the albedo's multiples of one computation
    np.testing.assert_allclose(image[..., 0] / ALBEDO[0], image[..., 2] / ALBEDO[2], rtol=1e-5)
    # Per pixel, only where in the pixel the samples fall varies: the mean of spp uniform points has the
    # standard error spread / sqrt(spp). Six of them, and 0.2% for the 16x16 grid's own average.
    tolerance = 6 * spread / math.sqrt(spp) + 2e-3 * expected + 1e-6
    error = np.abs(image - expected)
    assert (error[inside] <= tolerance[inside]).all(), (error[inside] / np.maximum(tolerance[inside], 1e-12)).max()
    lit = inside & (expected[..., 0] > 0)
    assert lit.sum() > 0.2 * W * H
    stderr = np.sqrt((spread[lit] ** 2).sum(axis=0) / spp) / lit.sum()
    mean_got, mean_ref = image[lit].mean(axis=0), expected[lit].mean(axis=0)
    assert (np.abs(mean_got - mean_ref) < 6 * stderr + 1e-3 * mean_ref).all(), (mean_got, mean_ref, stderr)
    dark = inside & ~near(expected[..., 0] > 0)
    np.testing.assert_array_equal(image[dark], 0.0)  # outside a spot's cone (the others light the whole plane)
    off = ~near(on_plane.any(axis=-1))
    assert off.sum() > 0.05 * W * H
    np.testing.assert_array_equal(image[off], 0.0)  # past the plane: nothing emits, nothing reflects


@pytest.mark.gpu
def test_three_kinds_of_light_together_add_up(ctx):
    """Light selection by power across the types: the sum of the three closed forms, within its noise."""
    lights = (POINT, SPOT, SUN)
    a = render(ctx, plane_scene(*lights), 1024, seed=5)
    b = render(ctx, plane_scene(*lights), 1024, seed=6)
    expected, _, on_plane = expected_radiance(*lights)
    inside = on_plane.all(axis=-1)
    got, variance = (a + b) / 2, (a - b) ** 2 / 2  # the mean of two renders; one render's per-pixel variance
    assert not np.array_equal(a, b)  # two seeds, two noises: the estimate below can see one
    pixels = np.argwhere(inside)
    # four column bands and all the pixels: each group's mean against the closed form's, with its standard error
    bands = np.array_split(np.argsort(pixels[:, 1], kind="stable"), 4) + [np.arange(len(pixels))]
    for band in bands:
        y, x = pixels[band, 0], pixels[band, 1]
        mean_got, mean_ref = got[y, x].mean(axis=0), expected[y, x].mean(axis=0)
        stderr = np.sqrt(variance[y, x].sum(axis=0) / 2) / len(band)
        assert (stderr < 0.01 * mean_ref).all(), (stderr, mean_ref)  # precise enough to see a 3% error
        assert (np.abs(mean_got - mean_ref) < 5 * stderr + 0.003 * mean_ref).all(), (mean_got, mean_ref, stderr)
