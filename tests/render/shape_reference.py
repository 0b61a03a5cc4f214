"""numpy references for spheres and curves: what the path tracer must converge to, in closed form.

Float64 and vectorised, shared by the host-build tests and the GPU tests of the shapes. Each reference is a pixel
average over a ``sub x sub`` lattice of the pixel (the kernel's box filter: a uniform point in the pixel per
sample), so a render with enough samples converges to it:

* :func:`sphere_hits` casts rays against spheres (the first root in front, as OptiX reports);
* :func:`sphere_coverage` is each pixel's covered fraction (an emitter seen at ``max_depth = 1`` gives
  ``emission * coverage``);
* :func:`lambert_directional` is a Lambertian sphere under a directional light, ``albedo / pi * E * max(0, n . l)``
  (what ``max_depth = 2`` without other light converges to), and :func:`mean_normals` the mean normal AOV;
* :func:`cylinder_band` is the height, in pixels, that a straight round curve (a cylinder along x) covers in
  every column.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["cylinder_band", "lambert_directional", "mean_normals", "pixel_lattice", "sphere_coverage", "sphere_hits"]


def pixel_lattice(camera, width: int, height: int, sub: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """The camera's eye and unit ray directions (H, W, sub*sub, 3) through a lattice of every pixel."""
    offsets = (np.arange(sub) + 0.5) / sub
    ox, oy = np.meshgrid(offsets, offsets)
    xs, ys = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    positions = np.stack([xs[..., None] + ox.ravel(), ys[..., None] + oy.ravel()], axis=-1)
    directions = camera.ray_directions(positions.reshape(-1, 2), width, height)
    return np.asarray(camera.eye, np.float64), directions.reshape(height, width, sub * sub, 3)


def sphere_hits(eye: np.ndarray, directions: np.ndarray, centers, radii) -> tuple[np.ndarray, np.ndarray]:
    """``(t, sphere)`` of the first hit of every ray from ``eye`` (inf and -1 where it misses them all)."""
    d = directions.reshape(-1, 3)
    best = np.full(len(d), np.inf)
    which = np.full(len(d), -1)
    for k, (c, r) in enumerate(zip(np.asarray(centers, np.float64), np.broadcast_to(radii, (len(centers),)),
                                   strict=True)):
        oc = eye - c
        b = d @ oc
        disc = b * b - (oc @ oc - float(r) ** 2)
        with np.errstate(invalid="ignore"):
            q = np.sqrt(disc)
        t = np.where(disc >= 0, -b - q, np.inf)
        t = np.where(t > 0, t, np.where(disc >= 0, -b + q, np.inf))
        t = np.where(t > 0, t, np.inf)
        closer = t < best
        best[closer], which[closer] = t[closer], k
    return best.reshape(directions.shape[:-1]), which.reshape(directions.shape[:-1])


def sphere_coverage(camera, width: int, height: int, centers, radii, sub: int = 8) -> np.ndarray:
    """(H, W) fraction of each pixel that sees a sphere."""
    eye, directions = pixel_lattice(camera, width, height, sub)
    t, _ = sphere_hits(eye, directions, centers, radii)
    return np.isfinite(t).mean(axis=2)


def _normals(camera, width, height, centers, radii, sub):
    eye, directions = pixel_lattice(camera, width, height, sub)
    t, k = sphere_hits(eye, directions, centers, radii)
    hit = np.isfinite(t)
    points = eye + directions * np.where(hit, t, 0.0)[..., None]
    normals = points - np.asarray(centers, np.float64)[np.maximum(k, 0)]
    normals /= np.maximum(np.linalg.norm(normals, axis=-1, keepdims=True), 1e-300)
    return np.where(hit[..., None], normals, 0.0), hit


def lambert_directional(camera, width: int, height: int, centers, radii, albedo, direction, irradiance,
                        sub: int = 8) -> np.ndarray:
    """(H, W, 3) pixel means of Lambertian spheres lit by one directional light (travelling along ``direction``).

    Shadows between spheres are left out: use spheres that do not shade each other.
    """
    normals, _ = _normals(camera, width, height, centers, radii, sub)
    towards = -np.asarray(direction, np.float64) / np.linalg.norm(direction)
    cosine = np.maximum(normals @ towards, 0.0).mean(axis=2)
    return cosine[..., None] * (np.asarray(albedo, np.float64) / math.pi * np.asarray(irradiance, np.float64))


def mean_normals(camera, width: int, height: int, centers, radii, sub: int = 8) -> np.ndarray:
    """(H, W, 3) mean of the first hit's normal over each pixel (zero where a ray misses), as the normal AOV."""
    normals, _ = _normals(camera, width, height, centers, radii, sub)
    return normals.mean(axis=2)


def cylinder_band(camera, width: int, height: int, radius: float) -> float:
    """Pixels of image height that a cylinder along the x axis through the origin covers, per column.

    For a camera on the z axis looking at the origin with up +y: the rays whose projection on the yz plane passes
    within ``radius`` of the axis, ``|sy| tan_y < radius / sqrt(D^2 - radius^2)`` at eye distance ``D``.
    """
    _, _, v, _ = camera.basis(width, height)
    distance = float(np.linalg.norm(camera.eye))
    half = radius / math.sqrt(distance * distance - radius * radius) / float(np.linalg.norm(v))
    return half * height  # sy spans 2 over the image's height: a band of 2 * half in sy is half * height pixels
