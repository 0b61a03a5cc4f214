"""The built-in scenes' constants and procedural assets: the Cornell box's, the material scene's and the cloth's.

What :func:`~optixasync.scene.cornell_box`, :func:`~optixasync.scene.material_scene` and
:class:`~optixasync.scene.ClothAnimation` are made of, for building variations of them (the tutorials, the
benchmarks and the comparison with the reference renderer use them). Plain host data.
"""

from __future__ import annotations

from ._cloth import CLOTH_WAVES, cloth_indices
from ._cornell import CORNELL_COLORS, CORNELL_LIGHT_RADIANCE, CORNELL_MAX_DEPTH, CORNELL_TRANSFORMS
from ._materials_scene import (
    SUN_DIRECTION,
    bumps_normal_map,
    checker_texture,
    leaf_quad,
    leaf_texture,
    material_environment,
)

__all__ = [
    "CLOTH_WAVES",
    "CORNELL_COLORS",
    "CORNELL_LIGHT_RADIANCE",
    "CORNELL_MAX_DEPTH",
    "CORNELL_TRANSFORMS",
    "SUN_DIRECTION",
    "bumps_normal_map",
    "checker_texture",
    "cloth_indices",
    "leaf_quad",
    "leaf_texture",
    "material_environment",
]
