"""A pinhole camera: where it is, where it looks, and how pixels map to rays.

Conventions
-----------
* Row 0 of every image is the top of the picture; x grows to the right.
* The field of view ``fov`` (degrees) spans the *smaller* image axis, so a
  square image sees ``fov`` both ways and a wide one sees more horizontally.
* A ray through the image point ``(sx, sy)`` in [-1, 1]^2 has direction
  ``normalize(W + sx * U + sy * V)``: ``sx = -1`` is the left edge,
  ``sy = +1`` the top edge. ``W`` is the unit viewing direction; ``U`` and
  ``V`` point right and up, scaled by the tangent of the half field of view
  along their axis. Pixel ``(x, y)`` covers ``sx`` in
  ``[2 x / w - 1, 2 (x + 1) / w - 1]`` and ``sy`` in ``[1 - 2 (y + 1) / h, 1 - 2 y / h]``.
* :meth:`Camera.from_matrix` takes a camera-to-world matrix in the OpenGL
  convention: the camera looks along its local -z, +y is up, +x is right.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._material import triple

__all__ = ["Camera", "DEFAULT_FOV"]

#: The Cornell box camera's field of view, in degrees.
DEFAULT_FOV = 39.3077


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _image_size(width: int, height: int) -> tuple[int, int]:
    w, h = int(width), int(height)
    if w < 1 or h < 1:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    return w, h


@dataclass
class Camera:
    """A pinhole camera at ``eye`` looking at ``target``.

    Attributes
    ----------
    eye, target : tuple of 3 floats
        Different points.
    up : tuple of 3 floats
        Any vector not parallel to the viewing direction; the image's up is
        its part orthogonal to that direction.
    fov : float
        Field of view in degrees along the smaller image axis, in (0, 180).

    Raises
    ------
    ValueError
        On non-finite values, ``eye == target``, ``up`` parallel to the
        viewing direction, or a field of view outside (0, 180).
    """

    eye: tuple[float, float, float]
    target: tuple[float, float, float]
    up: tuple[float, float, float] = (0.0, 1.0, 0.0)
    fov: float = DEFAULT_FOV

    def __post_init__(self) -> None:
        self.eye = triple(self.eye, "camera eye")
        self.target = triple(self.target, "camera target")
        self.up = triple(self.up, "camera up")
        self.fov = float(self.fov)
        if not (math.isfinite(self.fov) and 0.0 < self.fov < 180.0):
            raise ValueError(f"camera fov must be in (0, 180) degrees, got {self.fov}")
        forward = np.subtract(self.target, self.eye)
        if not np.linalg.norm(forward) > 0:
            raise ValueError(f"camera eye and target coincide at {self.eye}")
        up = np.asarray(self.up)
        if not np.linalg.norm(up) > 0:
            raise ValueError("camera up must not be the zero vector")
        sine = np.linalg.norm(np.cross(_unit(forward), _unit(up)))
        if not sine > 1e-6:
            raise ValueError(f"camera up {self.up} is parallel to the viewing direction {tuple(forward.tolist())}")

    @classmethod
    def look_at(cls, eye: Any, target: Any, up: Any = (0.0, 1.0, 0.0), fov: float = DEFAULT_FOV) -> Camera:
        """A camera at ``eye`` looking at ``target``."""
        return cls(eye, target, up, fov)

    @classmethod
    def from_matrix(cls, camera_to_world: Any, fov: float = DEFAULT_FOV) -> Camera:
        """A camera from a 4x4 (or 3x4) camera-to-world matrix, row-major.

        The camera sits at the translation column and looks along its local
        -z axis with its local +y up (OpenGL convention); scale is ignored.
        """
        m = np.asarray(camera_to_world, dtype=np.float64)
        if m.shape not in ((3, 4), (4, 4)) or not np.isfinite(m).all():
            raise ValueError(f"camera_to_world must be a finite 4x4 (or 3x4) matrix, got shape {m.shape}")
        eye = m[:3, 3]
        forward = -m[:3, 2]
        if not np.linalg.norm(forward) > 0:
            raise ValueError("camera_to_world has a zero z axis: no viewing direction")
        return cls(tuple(eye), tuple(eye + _unit(forward)), tuple(m[:3, 1]), fov)

    def tangents(self, width: int, height: int) -> tuple[float, float]:
        """``(tan_x, tan_y)``: tangents of the half field of view across and up the image."""
        w, h = _image_size(width, height)
        t = math.tan(math.radians(self.fov) / 2.0)
        return (t * w / h, t) if w >= h else (t, t * h / w)

    def basis(self, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(eye, U, V, W)`` (float64 arrays): a ray's direction is ``normalize(W + sx * U + sy * V)``.

        ``W`` is the unit viewing direction, ``U`` points right and ``V`` up;
        ``sx = -1`` is the image's left edge, ``sy = +1`` its top row.
        """
        tan_x, tan_y = self.tangents(width, height)
        w_axis = _unit(np.subtract(self.target, self.eye))
        u_axis = _unit(np.cross(w_axis, self.up))
        v_axis = np.cross(u_axis, w_axis)
        return np.asarray(self.eye, np.float64), u_axis * tan_x, v_axis * tan_y, w_axis

    def ray_directions(self, pixels: Any, width: int, height: int) -> np.ndarray:
        """Unit directions (N, 3) of the rays through image positions ``pixels`` (N, 2) in pixel units.

        ``(x, y) = (0, 0)`` is the top-left corner of the image, ``(0.5, 0.5)``
        the centre of the top-left pixel.
        """
        w, h = _image_size(width, height)
        p = np.asarray(pixels, dtype=np.float64).reshape(-1, 2)
        _, u, v, wv = self.basis(w, h)
        sx = 2.0 * p[:, 0] / w - 1.0
        sy = 1.0 - 2.0 * p[:, 1] / h
        d = wv[None] + sx[:, None] * u[None] + sy[:, None] * v[None]
        return d / np.linalg.norm(d, axis=1, keepdims=True)

    def project(self, points: Any, width: int, height: int) -> np.ndarray:
        """Pixel positions (N, 2) float64 of world ``points`` (N, 3): x right, y down, pixel centres at +0.5.

        Points at or behind the eye's plane give NaN.
        """
        w, h = _image_size(width, height)
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        eye, u, v, wv = self.basis(w, h)
        d = p - eye
        depth = d @ wv
        with np.errstate(divide="ignore", invalid="ignore"):
            sx = (d @ u) / (depth * (u @ u))
            sy = (d @ v) / (depth * (v @ v))
        out = np.stack([(sx + 1.0) * 0.5 * w, (1.0 - sy) * 0.5 * h], axis=1)
        out[~(depth > 0)] = np.nan
        return out
