"""The Cornell box of the reference renderer, shape for shape.

Each shape is the unit rectangle (``[-1, 1]^2`` in z = 0, front side +z) or
the cube ``[-1, 1]^3`` placed by a row-major 4x4 transform; the numbers are
those of the reference scene. The light is a rectangle just under the
ceiling emitting downwards; the camera sits at z = 3.9 looking along -z, so
the red wall (x = -1) is on the left of the image.
"""

from __future__ import annotations

import numpy as np

from ._camera import DEFAULT_FOV, Camera
from ._material import Material
from ._mesh import Mesh, cube, rectangle
from ._scene import Scene

__all__ = ["cornell_box", "CORNELL_TRANSFORMS", "CORNELL_COLORS", "CORNELL_LIGHT_RADIANCE", "CORNELL_MAX_DEPTH"]


def _affine(rows: list[list[float]]) -> np.ndarray:
    return np.array(rows + [[0.0, 0.0, 0.0, 1.0]], np.float64)


#: Placement of each shape (4x4, row-major, last row 0 0 0 1).
CORNELL_TRANSFORMS: dict[str, np.ndarray] = {
    "floor": _affine([[1, 0, 0, 0], [0, 0, 1, -1], [0, -1, 0, 0]]),
    "ceiling": _affine([[1, 0, 0, 0], [0, 0, -1, 1], [0, 1, 0, 0]]),
    "back": _affine([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -1]]),
    "green_wall": _affine([[0, 0, -1, 1], [0, 1, 0, 0], [1, 0, 0, 0]]),
    "red_wall": _affine([[0, 0, 1, -1], [0, 1, 0, 0], [-1, 0, 0, 0]]),
    "small_box": _affine([[0.286891, 0, -0.0877115, 0.335], [0, 0.3, 0, -0.7], [0.0877115, 0, 0.286891, 0.38]]),
    "large_box": _affine([[0.28491, 0, 0.0939491, -0.33], [0, 0.61, 0, -0.4], [-0.0939491, 0, 0.28491, -0.28]]),
    "light": _affine([[0.23, 0, 0, 0], [0, 0, -0.19, 0.99], [0, 0.19, 0, 0.01]]),
}

#: Diffuse reflectances (RGB).
CORNELL_COLORS: dict[str, tuple[float, float, float]] = {
    "white": (0.885809, 0.698859, 0.666422),
    "red": (0.570068, 0.0430135, 0.0443706),
    "green": (0.105421, 0.37798, 0.076425),
}

#: Radiance of the light (RGB), emitted on its front side, downwards.
CORNELL_LIGHT_RADIANCE = (18.387, 13.9873, 6.75357)

#: The reference renderer's path length for this scene.
CORNELL_MAX_DEPTH = 8

_CAMERA = dict(eye=(0.0, 0.0, 3.9), target=(0.0, 0.0, 0.0), up=(0.0, 1.0, 0.0), fov=DEFAULT_FOV)


def cornell_box() -> Scene:
    """The reference Cornell box: five walls, two boxes, an area light and the camera.

    Mesh order: floor, ceiling, back, green_wall, red_wall, small_box,
    large_box, light (``Scene.find(name)`` gives an index by name).
    """
    white = Material(reflectance=CORNELL_COLORS["white"])
    red = Material(reflectance=CORNELL_COLORS["red"])
    green = Material(reflectance=CORNELL_COLORS["green"])
    light = Material(reflectance=CORNELL_COLORS["white"], emission=CORNELL_LIGHT_RADIANCE)
    t = CORNELL_TRANSFORMS
    meshes: list[Mesh] = [
        rectangle(t["floor"], white, "floor"),
        rectangle(t["ceiling"], white, "ceiling"),
        rectangle(t["back"], white, "back"),
        rectangle(t["green_wall"], green, "green_wall"),
        rectangle(t["red_wall"], red, "red_wall"),
        cube(t["small_box"], white, "small_box"),
        cube(t["large_box"], white, "large_box"),
        rectangle(t["light"], light, "light"),
    ]
    return Scene(meshes, Camera(**_CAMERA))
