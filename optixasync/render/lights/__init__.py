"""Light types of the path tracer: a descriptor here and a header ``kernels/pathtracer/light_<name>.h`` each.

The built-in types, in their registration order (the kernel's type index): ``"environment"``, ``"triangles"``
(emissive meshes), ``"point"``, ``"spot"`` and ``"directional"``. Light selection is by power across all of
them (:func:`optixasync.render.selection_probabilities`).
"""

from __future__ import annotations

from ._base import (
    MAX_LIGHT_TYPES,
    LightType,
    PunctualLightType,
    light_type,
    light_types,
    luminance,
    register_light_type,
)
from .directional import DIRECTIONAL_LIGHT_RECORD, DirectionalLightType
from .environment import EnvironmentLight
from .point import POINT_LIGHT_RECORD, PointLightType
from .spot import SPOT_LIGHT_RECORD, SpotLightType
from .triangles import TriangleLights

__all__ = ["DIRECTIONAL_LIGHT_RECORD", "MAX_LIGHT_TYPES", "POINT_LIGHT_RECORD", "SPOT_LIGHT_RECORD",
           "DirectionalLightType", "EnvironmentLight", "LightType", "PointLightType", "PunctualLightType",
           "SpotLightType", "TriangleLights", "light_type", "light_types", "luminance", "register_light_type"]

for _light in (EnvironmentLight(), TriangleLights(), PointLightType(), SpotLightType(), DirectionalLightType()):
    register_light_type(_light)
