"""Spheres: point clouds with a radius, a colour and a material per point, drawn by the path tracer.

Host-side data. The path tracer builds one sphere GAS for all of a scene's
:class:`Spheres` (OptiX intersects them with its built-in sphere module) and
shades them with the same materials and BSDFs as meshes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ._material import Material
from ._shapes import (
    shape_bounds,
    shape_colors,
    shape_label,
    shape_material_ids,
    shape_materials,
    shape_points,
    shape_radii,
)

__all__ = ["Spheres"]


@dataclass(eq=False)
class Spheres:
    """Spheres given by their centres and radii: a point cloud, particles, balls.

    The surface's normal points outwards, and its outside is the front: emission leaves it, and a one-sided
    material is black seen from inside. Texture coordinates are the spherical angles of the normal about +z
    (u = longitude / 2 pi from -x, v = colatitude / pi from +z). Emissive spheres are not light-sampled: their
    light reaches other surfaces through BSDF-sampled rays only (fine for large soft emitters, noisy for small
    bright ones, which meshes serve better).

    Attributes
    ----------
    centers : array (N, 3)
        Host arrays of any float dtype are stored as float32 (and checked finite); a device array
        (``__cuda_array_interface__``, DLPack) must be C-contiguous float32 and is used in place.
    radii : float or array (N,)
        One radius for every sphere, or one each (float32, finite, >= 0).
    colors : array (N, 3) or None
        Linear RGB per sphere (>= 0), multiplying the material's reflectance (and its colour texture).
    material : Material or sequence of Material
        Several materials need ``material_ids``.
    material_ids : array (N,) of ints or None
        The index of each sphere's material in ``material``.
    name : str

    Raises
    ------
    ShapeError
        A NaN, infinite or negative radius, a non-finite centre, arrays of the wrong shape, material ids past
        the materials, a cut-out or normal-mapped material (checked before any GPU work).
    TypeError
        A material that is not a :class:`Material`.
    """

    centers: Any
    radii: Any
    colors: Any = None
    material: Any = field(default_factory=Material)
    material_ids: Any = None
    name: str = ""

    kind: ClassVar[str] = "sphere"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"spheres name must be a str, got {type(self.name).__name__}")
        label = self.label
        self.centers = shape_points(self.centers, label, "centers")
        self.num_spheres = int(self.centers.shape[0])
        self.radii = shape_radii(self.radii, self.num_spheres, label)
        self.colors = shape_colors(self.colors, self.num_spheres, label)
        self.check_materials()

    @property
    def label(self) -> str:
        return shape_label("spheres", self.name)

    def check_materials(self) -> None:
        """Check the materials and material ids (again: ``material`` may have been replaced since)."""
        self.materials = shape_materials(self.material, self.label)
        self.material_ids = shape_material_ids(self.material_ids, self.num_spheres, len(self.materials), self.label,
                                               "sphere")

    @property
    def num_primitives(self) -> int:
        return self.num_spheres

    @property
    def on_device(self) -> bool:
        """Whether the centres or radii are device arrays (used in place)."""
        return not isinstance(self.centers, np.ndarray) or not (np.isscalar(self.radii) or
                                                                 isinstance(self.radii, np.ndarray))

    @property
    def is_emissive(self) -> bool:
        return any(m.is_emissive for m in self.materials)

    def bounds(self) -> np.ndarray | None:
        """The (2, 3) box around the spheres (None when they live on the device)."""
        return shape_bounds(self.centers, self.radii)

    def __repr__(self) -> str:
        radius = f"radius {self.radii:g}" if np.isscalar(self.radii) else "radius per sphere"
        return f"<optixasync.scene.Spheres {self.label}: {self.num_spheres:,} spheres, {radius}>"
