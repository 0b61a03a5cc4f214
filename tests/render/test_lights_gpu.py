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
from punctual import (
    ALBEDO,
    POINT,
    SPOT,
    SUN,
    check_one_light,
    expected_radiance,
    footprints,
    irradiance,
    plane_scene,
)

from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import Scene

W = H = 48


def render(ctx, scene: Scene, spp: int, seed: int = 0) -> np.ndarray:
    with RenderPipeline(ctx, scene, RenderOptions(width=W, height=H, spp=spp, seed=seed)) as pipeline:
        image = pipeline.render()
        assert pipeline.last_nonfinite == 0
    return image.astype(np.float64)


def test_the_closed_forms_see_what_the_test_needs():
    """CPU: the plane fills most of the view; the spot's cone falls on it, with a dark ring past its ramp."""
    points, on_plane = footprints(W, H, 4)
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
    expected, spread, on_plane = expected_radiance(W, H, light)
    # a grey light on a coloured plane: the channels are the albedo's multiples of one computation
    np.testing.assert_allclose(image[..., 0] / ALBEDO[0], image[..., 2] / ALBEDO[2], rtol=1e-5)
    check_one_light(image, spp, expected, spread, on_plane)


@pytest.mark.gpu
def test_three_kinds_of_light_together_add_up(ctx):
    """Light selection by power across the types: the sum of the three closed forms, within its noise."""
    lights = (POINT, SPOT, SUN)
    a = render(ctx, plane_scene(*lights), 1024, seed=5)
    b = render(ctx, plane_scene(*lights), 1024, seed=6)
    expected, _, on_plane = expected_radiance(W, H, *lights)
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
