"""An orbit camera for interactive viewing: yaw and pitch about a target, pan, dolly and key moves.

The camera is plain Python (no NumPy, no :mod:`optixasync.scene`): its
:meth:`OrbitCamera.pose` returns a :class:`CameraPose` of tuples that
``optixasync.scene.Camera(eye, target, up=..., fov=...)`` accepts as is
(see :func:`optixasync.viewer.to_scene_camera`).

Units of the interactive moves
------------------------------
``orbit`` and ``pan`` take deltas in fractions of the view's height (a drag
across the whole height is 1.0), so they do not depend on the size of the
browser window: a drag of 1.0 orbits by 180 degrees, or pans the target by the
height of the view at the target's distance. ``zoom`` takes wheel steps: each
step multiplies the distance to the target by 1.1 (negative steps move closer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["CameraPose", "OrbitCamera", "KEYS"]

Vec3 = tuple[float, float, float]

#: Keys understood by :meth:`OrbitCamera.key` (names as in the browser's ``KeyboardEvent.key``, lower case).
KEYS = ("w", "a", "s", "d", "q", "e", "arrowleft", "arrowright", "arrowup", "arrowdown", "+", "-", "r")

#: Pitch stays this far (degrees) from straight up or down, where yaw is undefined.
_PITCH_LIMIT = 89.0
_MIN_DISTANCE, _MAX_DISTANCE = 1e-3, 1e6
_MIN_FOV, _MAX_FOV = 5.0, 120.0
_KEY_ORBIT = math.radians(5.0)
_KEY_STEP = 0.05


def _add(a: Vec3, b: Vec3, s: float = 1.0) -> Vec3:
    return (a[0] + s * b[0], a[1] + s * b[1], a[2] + s * b[2])


def _dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Vec3, b: Vec3) -> Vec3:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _unit(a: Vec3) -> Vec3:
    n = math.sqrt(_dot(a, a))
    if not n > 0 or not math.isfinite(n):
        raise ValueError(f"vector {a} has no direction")
    return (a[0] / n, a[1] / n, a[2] / n)


def _vec3(value: object, name: str) -> Vec3:
    try:
        items = tuple(float(v) for v in value)  # type: ignore[attr-defined]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}") from exc
    if len(items) != 3 or not all(math.isfinite(v) for v in items):
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}")
    return items  # type: ignore[return-value]


def _clamp(value: float, low: float, high: float) -> float:
    return low if value < low else high if value > high else value


@dataclass(frozen=True)
class CameraPose:
    """Where a pinhole camera is and where it looks, as plain tuples.

    Attributes
    ----------
    eye, target, up : tuple of 3 floats
        Position, look-at point and world up (the convention of ``optixasync.scene.Camera``).
    fov : float
        Field of view in degrees along the smaller image axis.
    """

    eye: Vec3
    target: Vec3
    up: Vec3
    fov: float

    def as_dict(self) -> dict[str, object]:
        """The pose as JSON-ready lists."""
        return {"eye": list(self.eye), "target": list(self.target), "up": list(self.up), "fov": self.fov}


class OrbitCamera:
    """A camera orbiting ``target`` at ``distance``, with yaw about ``up`` and pitch above the horizon.

    Not thread-safe by itself: :class:`~optixasync.viewer.ViewerState` owns one and
    changes it under its lock.

    Parameters
    ----------
    eye, target : sequence of 3 floats
        The starting position and look-at point (different points).
    up : sequence of 3 floats
        World up: yaw turns about it and the image's up follows it.
    fov : float
        Field of view in degrees along the smaller image axis, clamped to [5, 120].

    Raises
    ------
    ValueError
        On non-finite values, ``eye == target`` or a zero ``up``.
    """

    def __init__(self, eye: object = (0.0, 1.0, 5.0), target: object = (0.0, 0.0, 0.0),
                 up: object = (0.0, 1.0, 0.0), fov: float = 45.0) -> None:
        self._home = (_vec3(eye, "eye"), _vec3(target, "target"), _vec3(up, "up"), float(fov))
        self.reset()

    @classmethod
    def from_pose(cls, pose: CameraPose) -> OrbitCamera:
        """An orbit camera starting at ``pose``."""
        return cls(pose.eye, pose.target, pose.up, pose.fov)

    def reset(self) -> None:
        """Go back to the pose the camera was created with."""
        eye, target, up, fov = self._home
        self.look_at(eye, target, up, fov)

    def look_at(self, eye: object, target: object, up: object | None = None, fov: float | None = None) -> None:
        """Place the camera at ``eye`` looking at ``target`` (``up`` and ``fov`` unchanged when None).

        Raises
        ------
        ValueError
            On non-finite values, ``eye == target`` or a zero ``up``; the camera is unchanged then.
        """
        eye_v, target_v = _vec3(eye, "eye"), _vec3(target, "target")
        up_v = _unit(_vec3(up, "up")) if up is not None else self._up
        if fov is not None and not math.isfinite(float(fov)):
            raise ValueError(f"fov must be finite, got {fov!r}")
        offset = _add(eye_v, target_v, -1.0)
        distance = math.sqrt(_dot(offset, offset))
        if not distance > 0:
            raise ValueError(f"eye and target coincide at {eye_v}")
        direction = _unit(offset)
        sine = _clamp(_dot(direction, up_v), -1.0, 1.0)
        horizontal = _add(direction, up_v, -sine)
        if _dot(horizontal, horizontal) < 1e-12:  # looking straight along up: any front axis will do
            horizontal = _cross(up_v, (1.0, 0.0, 0.0))
            if _dot(horizontal, horizontal) < 1e-12:
                horizontal = _cross(up_v, (0.0, 0.0, 1.0))
        self._up = up_v
        self._front = _unit(horizontal)
        self._side = _cross(up_v, self._front)
        self.target = target_v
        self.distance = _clamp(distance, _MIN_DISTANCE, _MAX_DISTANCE)
        self.yaw = 0.0
        self.pitch = _clamp(math.asin(sine), -math.radians(_PITCH_LIMIT), math.radians(_PITCH_LIMIT))
        if fov is not None:
            self.fov = _clamp(float(fov), _MIN_FOV, _MAX_FOV)
        elif not hasattr(self, "fov"):
            self.fov = 45.0

    # -- derived quantities ---------------------------------------------------------------------------------

    def _direction(self) -> Vec3:
        """Unit vector from the target to the eye."""
        cp = math.cos(self.pitch)
        horizontal = _add(_add((0.0, 0.0, 0.0), self._front, cp * math.cos(self.yaw)), self._side, cp * math.sin(self.yaw))
        return _unit(_add(horizontal, self._up, math.sin(self.pitch)))

    @property
    def eye(self) -> Vec3:
        """The camera's position."""
        return _add(self.target, self._direction(), self.distance)

    def axes(self) -> tuple[Vec3, Vec3, Vec3]:
        """``(forward, right, up)``: unit axes of the view (``up`` is the image's up, orthogonal to forward)."""
        forward = _add((0.0, 0.0, 0.0), self._direction(), -1.0)
        right = _unit(_cross(forward, self._up))
        return forward, right, _cross(right, forward)

    def pose(self) -> CameraPose:
        """The current pose as tuples (``up`` is the world up)."""
        return CameraPose(self.eye, self.target, self._up, self.fov)

    # -- interactive moves ----------------------------------------------------------------------------------

    def orbit(self, dx: float, dy: float) -> None:
        """Turn about the target: ``dx`` right and ``dy`` down, in fractions of the view height (1.0 = 180 deg)."""
        limit = math.radians(_PITCH_LIMIT)
        self.yaw = math.remainder(self.yaw - math.pi * dx, 2.0 * math.pi)
        self.pitch = _clamp(self.pitch + math.pi * dy, -limit, limit)

    def pan(self, dx: float, dy: float) -> None:
        """Slide eye and target together: the picture follows a drag of ``(dx, dy)`` view heights."""
        _, right, up = self.axes()
        height = 2.0 * self.distance * math.tan(math.radians(self.fov) / 2.0)
        self.target = _add(_add(self.target, right, -dx * height), up, dy * height)

    def zoom(self, steps: float) -> None:
        """Dolly towards (``steps < 0``) or away from the target: the distance is multiplied by ``1.1 ** steps``."""
        self.distance = _clamp(self.distance * 1.1 ** _clamp(steps, -100.0, 100.0), _MIN_DISTANCE, _MAX_DISTANCE)

    def set_fov(self, fov: float) -> None:
        """Change the field of view (degrees, clamped to [5, 120])."""
        self.fov = _clamp(float(fov), _MIN_FOV, _MAX_FOV)

    def key(self, name: str) -> bool:
        """Apply one key press from :data:`KEYS`; False (nothing changed) for any other key.

        W/S move eye and target forward/back, A/D left/right, Q/E down/up (a step is 5% of the distance);
        the arrows orbit by 5 degrees; ``+``/``-`` zoom; R resets the camera.
        """
        forward, right, up = self.axes()
        step = _KEY_STEP * self.distance
        moves = {"w": (forward, step), "s": (forward, -step), "d": (right, step), "a": (right, -step),
                 "e": (up, step), "q": (up, -step)}
        if name in moves:
            axis, amount = moves[name]
            self.target = _add(self.target, axis, amount)
        elif name in ("arrowleft", "arrowright", "arrowup", "arrowdown"):
            dx = {"arrowleft": -1.0, "arrowright": 1.0}.get(name, 0.0)
            dy = {"arrowup": -1.0, "arrowdown": 1.0}.get(name, 0.0)
            self.orbit(dx * _KEY_ORBIT / math.pi, dy * _KEY_ORBIT / math.pi)
        elif name in ("+", "-"):
            self.zoom(-1.0 if name == "+" else 1.0)
        elif name == "r":
            self.reset()
        else:
            return False
        return True
