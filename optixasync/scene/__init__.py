"""Scenes for the path tracer: materials, triangle meshes, shapes, the camera, and the Cornell box.

Plain host-side data (numpy); :class:`optixasync.render.PathTracer` turns a
:class:`Scene` into an acceleration structure and device records.
"""

from __future__ import annotations

from ._camera import DEFAULT_FOV, Camera
from ._cloth import ClothAnimation, cloth_indices
from ._cornell import CORNELL_COLORS, CORNELL_LIGHT_RADIANCE, CORNELL_MAX_DEPTH, CORNELL_TRANSFORMS, cornell_box
from ._load import (
    MESH_SUFFIXES,
    check_mesh_path,
    cornell_room,
    fit_matrix,
    fit_to_box,
    load_into_cornell_box,
    load_mesh,
)
from ._material import Material
from ._mesh import Mesh, cube, rectangle, sphere
from ._scene import Scene

__all__ = [
    "MESH_SUFFIXES",
    "CORNELL_COLORS",
    "CORNELL_LIGHT_RADIANCE",
    "CORNELL_MAX_DEPTH",
    "CORNELL_TRANSFORMS",
    "Camera",
    "ClothAnimation",
    "DEFAULT_FOV",
    "Material",
    "Mesh",
    "Scene",
    "check_mesh_path",
    "cloth_indices",
    "cornell_box",
    "cornell_room",
    "cube",
    "fit_matrix",
    "fit_to_box",
    "load_into_cornell_box",
    "load_mesh",
    "rectangle",
    "sphere",
]
