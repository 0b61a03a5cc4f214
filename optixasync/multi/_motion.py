"""Frame updates for sequences: how frame ``k`` of an animation differs from the scene.

An update is called as ``update(tracer, index, frame)`` on the worker that renders frame ``index``,
inside the frame (its stream orders the work); it returns the frame's camera, or None for the scene's.
It must depend on ``index`` alone, never on the frames a worker rendered before: frames go to
whichever worker is free. Updates travel to workers by pickling, so they are small objects.

Blocking calls
--------------
None: the cloth's kernel and refit are enqueued on the frame's stream.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..scene import Camera, ClothAnimation

__all__ = ["CameraSwing", "ClothMotion", "swing_camera"]


def swing_camera(camera: Camera, angle_degrees: float) -> Camera:
    """``camera`` with its eye turned by ``angle_degrees`` about the vertical axis through its target."""
    eye = np.asarray(camera.eye, dtype=np.float64)
    target = np.asarray(camera.target, dtype=np.float64)
    a = math.radians(angle_degrees)
    offset = eye - target
    turned = np.array([math.cos(a) * offset[0] + math.sin(a) * offset[2], offset[1],
                       -math.sin(a) * offset[0] + math.cos(a) * offset[2]])
    return dataclasses.replace(camera, eye=tuple(float(v) for v in target + turned))


@dataclasses.dataclass(frozen=True)
class ClothMotion:
    """Frame ``k`` shows ``cloth`` at time ``k * dt``: its vertices rewritten and the structure refitted.

    ``cloth`` is the :class:`~optixasync.scene.ClothAnimation` whose :meth:`~ClothAnimation.scene` the
    farm renders.
    """

    cloth: ClothAnimation
    dt: float = 1 / 30

    def __call__(self, tracer: Any, index: int, frame: Any) -> None:
        self.cloth.update(tracer, index * self.dt, frame)
        return None


@dataclasses.dataclass(frozen=True)
class CameraSwing:
    """Frame ``k`` of ``count`` turns the scene's camera by ``degrees * sin(2 pi k / count)`` about its target."""

    camera: Camera
    count: int
    degrees: float = 15.0

    def __call__(self, tracer: Any, index: int, frame: Any) -> Camera:
        return swing_camera(self.camera, self.degrees * math.sin(2 * math.pi * index / self.count))
