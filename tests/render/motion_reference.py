"""numpy references for motion blur: what a moving or deforming emitter-occluder converges to over the shutter.

The test scenes put a black square or triangle in front of a uniform white environment and render at
``max_depth = 1``: a pixel's value is one minus the fraction of (jitter, time) samples whose camera ray meets the
mesh. The references integrate that fraction over a lattice of each pixel and ``times`` instants of the shutter
(or, for a translating square, exactly in time): the time average the motion blur must equal.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plane_points", "sliding_square_coverage", "triangle_coverage"]


def plane_points(camera, width: int, height: int, sub: int = 8) -> np.ndarray:
    """(H, W, sub*sub, 2) x, y where the camera rays through a lattice of each pixel meet the plane z = 0."""
    offsets = (np.arange(sub) + 0.5) / sub
    ox, oy = np.meshgrid(offsets, offsets)
    xs, ys = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    positions = np.stack([xs[..., None] + ox.ravel(), ys[..., None] + oy.ravel()], axis=-1)
    d = camera.ray_directions(positions.reshape(-1, 2), width, height)
    eye = np.asarray(camera.eye, np.float64)
    t = -eye[2] / d[:, 2]
    return (eye[:2] + d[:, :2] * t[:, None]).reshape(height, width, sub * sub, 2)


def sliding_square_coverage(camera, width: int, height: int, half: float, start: float, end: float,
                            shutter: tuple[float, float], times: tuple[float, float] = (0.0, 1.0),
                            sub: int = 8) -> np.ndarray:
    """(H, W) covered fraction of a square of half-size ``half`` on z = 0 whose centre slides along x.

    The centre is at ``start`` at ``times[0]`` and ``end`` at ``times[1]`` (clamped outside), seen while the
    shutter is open; the time each point is covered is exact (piecewise linear motion).
    """
    p = plane_points(camera, width, height, sub)
    x, y = p[..., 0], p[..., 1]
    grid = np.linspace(shutter[0], shutter[1], 2049)  # the centre's path, finely (exact between the clamps)
    fraction = np.clip((grid - times[0]) / (times[1] - times[0]), 0.0, 1.0)
    centres = start + (end - start) * fraction
    inside = (np.abs(x[..., None] - centres) < half).astype(np.float64)  # a bool sum would be an OR
    covered = np.trapezoid(inside, grid, axis=-1) / (shutter[1] - shutter[0]) if shutter[1] > shutter[0] else \
        inside[..., 0]
    return (covered * (np.abs(y) < half)).mean(axis=2)


def triangle_coverage(camera, width: int, height: int, keys: list[np.ndarray], shutter: tuple[float, float],
                      times: tuple[float, float] = (0.0, 1.0), steps: int = 256, sub: int = 8) -> np.ndarray:
    """(H, W) covered fraction of a triangle on z = 0 whose corners move linearly between ``keys`` (3, 3)."""
    p = plane_points(camera, width, height, sub)
    total = np.zeros(p.shape[:2])
    for s in (np.arange(steps) + 0.5) / steps:
        time = shutter[0] + (shutter[1] - shutter[0]) * s
        local = np.clip((time - times[0]) / (times[1] - times[0]), 0.0, 1.0) * (len(keys) - 1)
        k = min(int(local), len(keys) - 2)
        corners = keys[k] + (keys[k + 1] - keys[k]) * (local - k)
        a, b, c = (corners[j, :2] for j in range(3))

        def side(u, v, q):
            return (v[0] - u[0]) * (q[..., 1] - u[1]) - (v[1] - u[1]) * (q[..., 0] - u[0])

        d1, d2, d3 = side(a, b, p), side(b, c, p), side(c, a, p)
        inside = ((d1 >= 0) & (d2 >= 0) & (d3 >= 0)) | ((d1 <= 0) & (d2 <= 0) & (d3 <= 0))
        total += inside.mean(axis=2)
    return total / steps
