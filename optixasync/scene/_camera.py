"""Cameras: where the camera is, where it looks, and how pixels map to rays (pinhole or orthographic).

Conventions
-----------
* Row 0 of every image is the top of the picture; x grows to the right.
* A pinhole (``projection="perspective"``) camera's field of view ``fov``
  (degrees) spans the *smaller* image axis, so a square image sees ``fov``
  both ways and a wide one sees more horizontally.
* A ray through the image point ``(sx, sy)`` in [-1, 1]^2 has direction
  ``normalize(W + sx * U + sy * V)``: ``sx = -1`` is the left edge,
  ``sy = +1`` the top edge. ``W`` is the unit viewing direction; ``U`` and
  ``V`` point right and up, scaled by the tangent of the half field of view
  along their axis. Pixel ``(x, y)`` covers ``sx`` in
  ``[2 x / w - 1, 2 (x + 1) / w - 1]`` and ``sy`` in ``[1 - 2 (y + 1) / h, 1 - 2 y / h]``.
* An orthographic camera (``projection="orthographic"``, glTF's) sends
  parallel rays along ``W``: the ray of ``(sx, sy)`` starts at
  ``eye + znear * W + sx * U + sy * V``, where ``U`` and ``V`` are the unit
  right and up axes scaled by ``xmag`` and ``ymag``, and runs
  ``zfar - znear``. As glTF's projection matrix does, the image's edges are
  at ``+-xmag`` and ``+-ymag`` whatever its size: an image of aspect
  ``xmag / ymag`` has square pixels.
* :meth:`Camera.from_matrix` takes a camera-to-world matrix in the OpenGL
  convention: the camera looks along its local -z, +y is up, +x is right.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._material import triple

__all__ = ["PROJECTIONS", "Camera", "CameraBasis", "DEFAULT_FOV"]

#: The Cornell box camera's field of view, in degrees.
DEFAULT_FOV = 39.3077
#: The camera models: a pinhole, or parallel rays (glTF's orthographic camera).
PROJECTIONS = ("perspective", "orthographic")
#: How far the rays of a camera without a far plane run (the kernel's longest ray).
UNBOUNDED_RAY = 1e16


class CameraBasis(tuple):  # type: ignore[type-arg]
    """``(eye, U, V, W)`` of :meth:`Camera.basis` (float64 arrays), with how the camera's rays leave them.

    Attributes
    ----------
    orthographic : bool
        False: rays leave ``eye`` along ``normalize(W + sx U + sy V)``; True: they leave ``eye + sx U + sy V``
        along ``W``.
    ray_length : float
        How far the camera's rays run (``zfar - znear`` of an orthographic camera; :data:`UNBOUNDED_RAY` without
        a far plane).
    """

    orthographic: bool
    ray_length: float

    def __new__(cls, eye: np.ndarray, u: np.ndarray, v: np.ndarray, w: np.ndarray, orthographic: bool = False,
                ray_length: float = UNBOUNDED_RAY) -> CameraBasis:
        basis = super().__new__(cls, (eye, u, v, w))
        basis.orthographic = bool(orthographic)
        basis.ray_length = float(min(ray_length, UNBOUNDED_RAY))
        return basis

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickling: the four arrays and the two attributes
        return (*self, self.orthographic, self.ray_length)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _image_size(width: int, height: int) -> tuple[int, int]:
    w, h = int(width), int(height)
    if w < 1 or h < 1:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    return w, h


@dataclass
class Camera:
    """A camera at ``eye`` looking at ``target``: a pinhole, or an orthographic camera (parallel rays).

    Attributes
    ----------
    eye, target : tuple of 3 floats
        Different points.
    up : tuple of 3 floats
        Any vector not parallel to the viewing direction; the image's up is
        its part orthogonal to that direction.
    fov : float
        A pinhole camera's field of view in degrees along the smaller image
        axis, in (0, 180).
    projection : str
        One of :data:`PROJECTIONS`: ``"perspective"`` (a pinhole) or ``"orthographic"``.
    xmag, ymag : float > 0
        An orthographic camera's half width and half height of view, in world
        units (glTF's): the image's edges (see the module's conventions).
    znear, zfar : float
        An orthographic camera's clipping distances along the viewing
        direction, ``0 <= znear < zfar`` (``zfar`` may be infinite): its rays
        start on the near plane and end on the far one. A pinhole camera has
        neither (leave them 0 and infinity).

    Raises
    ------
    ValueError
        On non-finite values, ``eye == target``, ``up`` parallel to the
        viewing direction, a field of view outside (0, 180), an unknown
        projection, or orthographic values out of range (or set on a pinhole).
    """

    eye: tuple[float, float, float]
    target: tuple[float, float, float]
    up: tuple[float, float, float] = (0.0, 1.0, 0.0)
    fov: float = DEFAULT_FOV
    projection: str = "perspective"
    xmag: float = 1.0
    ymag: float = 1.0
    znear: float = 0.0
    zfar: float = math.inf

    def __post_init__(self) -> None:
        self.eye = triple(self.eye, "camera eye")
        self.target = triple(self.target, "camera target")
        self.up = triple(self.up, "camera up")
        self.fov = float(self.fov)
        if not (math.isfinite(self.fov) and 0.0 < self.fov < 180.0):
            raise ValueError(f"camera fov must be in (0, 180) degrees, got {self.fov}")
        self._check_projection()
        forward = np.subtract(self.target, self.eye)
        if not np.linalg.norm(forward) > 0:
            raise ValueError(f"camera eye and target coincide at {self.eye}")
        up = np.asarray(self.up)
        if not np.linalg.norm(up) > 0:
            raise ValueError("camera up must not be the zero vector")
        sine = np.linalg.norm(np.cross(_unit(forward), _unit(up)))
        if not sine > 1e-6:
            raise ValueError(f"camera up {self.up} is parallel to the viewing direction {tuple(forward.tolist())}")

    def _check_projection(self) -> None:
        if self.projection not in PROJECTIONS:
            raise ValueError(f"camera projection must be one of {PROJECTIONS}, got {self.projection!r}")
        values = {}
        for name in ("xmag", "ymag", "znear", "zfar"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                raise ValueError(f"camera {name} must be a number, got {value!r}")
            values[name] = float(value)
        self.xmag, self.ymag, self.znear, self.zfar = (values[n] for n in ("xmag", "ymag", "znear", "zfar"))
        if self.projection == "perspective":
            if (self.xmag, self.ymag, self.znear, self.zfar) != (1.0, 1.0, 0.0, math.inf):
                raise ValueError("xmag, ymag, znear and zfar are an orthographic camera's: a perspective camera "
                                 "takes fov (and clips nothing)")
            return
        for name in ("xmag", "ymag"):
            if not (math.isfinite(values[name]) and values[name] > 0.0):
                raise ValueError(f"orthographic camera {name} must be a finite number > 0, got {values[name]}")
        if not (math.isfinite(self.znear) and 0.0 <= self.znear < self.zfar):
            raise ValueError(f"orthographic camera needs 0 <= znear < zfar (zfar may be infinite), got znear "
                             f"{self.znear} and zfar {self.zfar}")

    @property
    def orthographic(self) -> bool:
        """Whether the camera sends parallel rays (``projection == "orthographic"``)."""
        return self.projection == "orthographic"

    @classmethod
    def look_at(cls, eye: Any, target: Any, up: Any = (0.0, 1.0, 0.0), fov: float = DEFAULT_FOV) -> Camera:
        """A pinhole camera at ``eye`` looking at ``target``."""
        return cls(eye, target, up, fov)

    @classmethod
    def orthographic_at(cls, eye: Any, target: Any, up: Any = (0.0, 1.0, 0.0), *, xmag: float, ymag: float,
                        znear: float = 0.0, zfar: float = math.inf) -> Camera:
        """An orthographic camera at ``eye`` looking at ``target``, its view ``2 xmag`` by ``2 ymag`` wide."""
        return cls(eye, target, up, projection="orthographic", xmag=xmag, ymag=ymag, znear=znear, zfar=zfar)

    @classmethod
    def from_matrix(cls, camera_to_world: Any, fov: float = DEFAULT_FOV, **orthographic: float) -> Camera:
        """A camera from a 4x4 (or 3x4) camera-to-world matrix, row-major.

        The camera sits at the translation column and looks along its local
        -z axis with its local +y up (OpenGL convention); scale is ignored.
        ``orthographic`` (``xmag``, ``ymag``, ``znear``, ``zfar``) makes an
        orthographic camera instead of a pinhole of ``fov``.
        """
        m = np.asarray(camera_to_world, dtype=np.float64)
        if m.shape not in ((3, 4), (4, 4)) or not np.isfinite(m).all():
            raise ValueError(f"camera_to_world must be a finite 4x4 (or 3x4) matrix, got shape {m.shape}")
        eye = m[:3, 3]
        forward = -m[:3, 2]
        if not np.linalg.norm(forward) > 0:
            raise ValueError("camera_to_world has a zero z axis: no viewing direction")
        if orthographic:
            return cls(tuple(eye), tuple(eye + _unit(forward)), tuple(m[:3, 1]), projection="orthographic",
                       **orthographic)
        return cls(tuple(eye), tuple(eye + _unit(forward)), tuple(m[:3, 1]), fov)

    def tangents(self, width: int, height: int) -> tuple[float, float]:
        """``(tan_x, tan_y)``: tangents of the half field of view across and up the image (a pinhole's)."""
        w, h = _image_size(width, height)
        t = math.tan(math.radians(self.fov) / 2.0)
        return (t * w / h, t) if w >= h else (t, t * h / w)

    def _axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The unit right, up and viewing directions."""
        w_axis = _unit(np.subtract(self.target, self.eye))
        u_axis = _unit(np.cross(w_axis, self.up))
        return u_axis, np.cross(u_axis, w_axis), w_axis

    def basis(self, width: int, height: int) -> CameraBasis:
        """``(eye, U, V, W)`` (float64 arrays, a :class:`CameraBasis`): how image points become rays.

        A pinhole's ray has direction ``normalize(W + sx * U + sy * V)``; an
        orthographic camera's starts at ``eye + sx * U + sy * V`` (``eye``
        moved onto the near plane) along ``W``. ``W`` is the unit viewing
        direction, ``U`` points right and ``V`` up; ``sx = -1`` is the image's
        left edge, ``sy = +1`` its top row.
        """
        w, h = _image_size(width, height)
        u_axis, v_axis, w_axis = self._axes()
        if self.orthographic:
            eye = np.asarray(self.eye, np.float64) + self.znear * w_axis
            return CameraBasis(eye, u_axis * self.xmag, v_axis * self.ymag, w_axis, True, self.zfar - self.znear)
        tan_x, tan_y = self.tangents(w, h)
        return CameraBasis(np.asarray(self.eye, np.float64), u_axis * tan_x, v_axis * tan_y, w_axis)

    def _image_points(self, pixels: Any, width: int, height: int) -> tuple[np.ndarray, np.ndarray, CameraBasis]:
        w, h = _image_size(width, height)
        p = np.asarray(pixels, dtype=np.float64).reshape(-1, 2)
        return 2.0 * p[:, 0] / w - 1.0, 1.0 - 2.0 * p[:, 1] / h, self.basis(w, h)

    def ray_directions(self, pixels: Any, width: int, height: int) -> np.ndarray:
        """Unit directions (N, 3) of the rays through image positions ``pixels`` (N, 2) in pixel units.

        ``(x, y) = (0, 0)`` is the top-left corner of the image, ``(0.5, 0.5)``
        the centre of the top-left pixel.
        """
        sx, sy, (_, u, v, wv) = self._image_points(pixels, width, height)
        if self.orthographic:
            return np.broadcast_to(wv, (len(sx), 3)).copy()
        d = wv[None] + sx[:, None] * u[None] + sy[:, None] * v[None]
        return d / np.linalg.norm(d, axis=1, keepdims=True)

    def ray_origins(self, pixels: Any, width: int, height: int) -> np.ndarray:
        """Where the rays through image positions ``pixels`` (N, 2) start (N, 3): the eye, or the near plane's points."""
        sx, sy, (eye, u, v, _) = self._image_points(pixels, width, height)
        if not self.orthographic:
            return np.broadcast_to(eye, (len(sx), 3)).copy()
        return eye[None] + sx[:, None] * u[None] + sy[:, None] * v[None]

    def project(self, points: Any, width: int, height: int) -> np.ndarray:
        """Pixel positions (N, 2) float64 of world ``points`` (N, 3): x right, y down, pixel centres at +0.5.

        Points at or behind the eye's plane give NaN (an orthographic camera's: outside its near and far planes).
        """
        w, h = _image_size(width, height)
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        basis = self.basis(w, h)
        eye, u, v, wv = basis
        d = p - eye
        depth = d @ wv
        scale = np.ones_like(depth) if self.orthographic else depth
        with np.errstate(divide="ignore", invalid="ignore"):
            sx = (d @ u) / (scale * (u @ u))
            sy = (d @ v) / (scale * (v @ v))
        out = np.stack([(sx + 1.0) * 0.5 * w, (1.0 - sy) * 0.5 * h], axis=1)
        visible = (depth >= 0) & (depth <= basis.ray_length) if self.orthographic else depth > 0
        out[~visible] = np.nan
        return out
