"""Closed forms of a diffuse plane under punctual lights, shared by the host-build and the GPU tests.

A one-sided diffuse plane of albedo rho lit by one light reflects radiance ``rho E / pi``, with ``E`` the
irradiance the light gives the plane's point:

* a point light of intensity ``I`` at height ``h`` above a point at distance ``d``: ``E = I cos / d^2`` with
  ``cos = h / d``;
* a spot light pointing down: the same, times ``t^2``, where ``t`` is the glTF ramp in the cosine of the angle
  from its axis, ``clamp((cos_axis - cos_outer) / (cos_inner - cos_outer), 0, 1)``;
* a directional light of irradiance ``E0`` travelling along ``-n`` tilted by theta: ``E0 cos theta``, the same
  everywhere.

A flat plane sees nothing of itself, and delta lights are never met by a BSDF-sampled ray, so every path past
the first bounce escapes into the black: the pixels converge to the closed form whatever the max depth. The
expected value of a pixel is the closed form averaged over a grid of its footprint (the box filter).
"""

from __future__ import annotations

import math

import numpy as np

from optixasync.scene import Camera, DirectionalLight, Material, PointLight, Scene, SpotLight, rectangle

ALBEDO = np.array([0.8, 0.5, 0.2])
HALF = 2.0  # the plane is the square [-2, 2]^2 at y = 0, facing +y
CAMERA = Camera((0.0, 2.5, 2.5), (0.0, 0.0, 0.0), fov=60.0)
POINT = PointLight((0.3, 1.2, -0.2), intensity=(2.0, 2.0, 2.0), name="bulb")
SPOT = SpotLight((-0.4, 1.5, 0.3), direction=(0.0, -1.0, 0.0), intensity=(3.0, 3.0, 3.0),
                 inner_angle=math.radians(20.0), outer_angle=math.radians(35.0), name="spot")
SUN = DirectionalLight(direction=(0.5, -1.0, 0.25), irradiance=(0.6, 0.6, 0.6), name="sun")


def plane_scene(*lights, material: Material | None = None) -> Scene:
    """The plane (of ``material``, else the diffuse ``ALBEDO``) under ``lights``, seen by ``CAMERA``."""
    material = Material(reflectance=ALBEDO) if material is None else material
    plane = rectangle(np.array([[HALF, 0, 0, 0], [0, 0, HALF, 0], [0, -HALF, 0, 0]]), material, "plane")
    assert plane.face_normals()[0][1] > 0  # its front side faces up, towards the lights and the camera
    return Scene([plane], CAMERA, lights=list(lights))


def footprints(width: int, height: int, sub: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """The points of the plane y = 0 seen through a ``sub x sub`` grid of every pixel (H, W, sub*sub, 3), and
    which of them lie on the plane (in front of the camera, within its edges)."""
    offsets = (np.arange(sub) + 0.5) / sub
    ys, xs = np.mgrid[0:height, 0:width]
    px = np.broadcast_to(xs[..., None, None] + offsets[None, None, None, :], (height, width, sub, sub))
    py = np.broadcast_to(ys[..., None, None] + offsets[None, None, :, None], (height, width, sub, sub))
    d = CAMERA.ray_directions(np.stack([px.reshape(-1), py.reshape(-1)], axis=1), width, height)
    eye = np.asarray(CAMERA.eye, np.float64)
    with np.errstate(divide="ignore"):
        t = -eye[1] / d[:, 1]
    points = (eye + t[:, None] * d).reshape(height, width, sub * sub, 3)
    on_plane = (t > 0).reshape(height, width, -1) & (np.abs(points[..., 0]) < HALF) & (np.abs(points[..., 2]) < HALF)
    return points, on_plane


def point_irradiance(position, intensity, points: np.ndarray) -> np.ndarray:
    """``I cos / d^2`` (..., 3) on the plane (normal +y) at ``points`` from a point of ``intensity`` at ``position``."""
    to_light = np.asarray(position) - points
    d = np.linalg.norm(to_light, axis=-1)
    cos = np.clip(to_light[..., 1] / d, 0.0, None)
    return (cos / d**2)[..., None] * np.asarray(intensity)


def irradiance(light, points: np.ndarray) -> np.ndarray:
    """The irradiance (..., 3) ``light`` gives the plane (normal +y) at ``points`` (..., 3)."""
    if isinstance(light, DirectionalLight):
        cos = max(0.0, -light.direction[1])
        return np.broadcast_to(np.asarray(light.irradiance) * cos, points.shape).copy()
    e = point_irradiance(light.position, light.intensity, points)
    if isinstance(light, SpotLight):
        to_light = np.asarray(light.position) - points
        cos_axis = -(to_light / np.linalg.norm(to_light, axis=-1, keepdims=True)) @ np.asarray(light.direction)
        cos_inner, cos_outer = math.cos(light.inner_angle), math.cos(light.outer_angle)
        ramp = np.clip((cos_axis - cos_outer) / (cos_inner - cos_outer), 0.0, 1.0)
        e = e * (ramp**2)[..., None]
    return e


def near(mask: np.ndarray) -> np.ndarray:
    """``mask`` (H, W) grown by one pixel (8-neighbourhood)."""
    h, w = mask.shape
    padded = np.pad(mask, 1)
    return np.stack([padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1)]).any(0)


def expected_radiance(width: int, height: int, *lights, albedo=ALBEDO, irradiance_of=None):
    """Per pixel: the closed form ``rho E / pi`` (summed over ``lights``) averaged over its footprint (H, W, 3),
    the standard deviation of that radiance over the footprint (H, W, 3), and which of the footprint's points
    lie on the plane (H, W, 256). ``irradiance_of(light, points)`` replaces :func:`irradiance` (other lights)."""
    points, on_plane = footprints(width, height)
    irradiance_of = irradiance if irradiance_of is None else irradiance_of
    radiance = np.asarray(albedo) / math.pi * sum(irradiance_of(light, points) for light in lights)
    radiance = np.where(on_plane[..., None], radiance, 0.0)  # beyond the plane: black
    return radiance.mean(axis=2), radiance.std(axis=2), on_plane


def check_one_light(image: np.ndarray, spp: int, expected: np.ndarray, spread: np.ndarray,
                    on_plane: np.ndarray) -> None:
    """Assert that a render of the plane under one light matches its closed form, pixel by pixel.

    Per pixel only where in the pixel the samples fall varies: the mean of ``spp`` uniform points has the
    standard error ``spread / sqrt(spp)``; six of them, and 0.2% for the 16x16 grid's own average. Pixels the
    light does not reach, and pixels past the plane, are exactly black.
    """
    h, w = on_plane.shape[:2]
    inside = on_plane.all(axis=-1)
    tolerance = 6 * spread / math.sqrt(spp) + 2e-3 * expected + 1e-6
    error = np.abs(image - expected)
    assert (error[inside] <= tolerance[inside]).all(), (error[inside] / np.maximum(tolerance[inside], 1e-12)).max()
    lit = inside & (expected[..., 0] > 0)
    assert lit.sum() > 0.2 * w * h
    stderr = np.sqrt((spread[lit] ** 2).sum(axis=0) / spp) / lit.sum()
    mean_got, mean_ref = image[lit].mean(axis=0), expected[lit].mean(axis=0)
    assert (np.abs(mean_got - mean_ref) < 6 * stderr + 1e-3 * mean_ref).all(), (mean_got, mean_ref, stderr)
    dark = inside & ~near(expected[..., 0] > 0)
    np.testing.assert_array_equal(image[dark], 0.0)  # outside a spot's cone (the others light the whole plane)
    off = ~near(on_plane.any(axis=-1))
    assert off.sum() > 0.05 * w * h
    np.testing.assert_array_equal(image[off], 0.0)  # past the plane: nothing emits, nothing reflects
