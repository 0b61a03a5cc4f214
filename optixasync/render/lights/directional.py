"""``"directional"``: :class:`~optixasync.scene.DirectionalLight` (``light_directional.h``).

Its power is its irradiance on a disc as large as the scene, ``pi r^2 E``, as the environment's is counted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._structs import struct_dtype
from ...scene import DirectionalLight
from ._base import PunctualLightType, luminance

__all__ = ["DIRECTIONAL_LIGHT_RECORD", "DirectionalLightType"]

#: ``DirectionalLightRecord`` of ``light_directional.h``.
DIRECTIONAL_LIGHT_RECORD = struct_dtype([("direction", "float3"), ("irradiance", "float3")])


class DirectionalLightType(PunctualLightType):
    name = "directional"
    header = "pathtracer/light_directional.h"
    struct = "DirectionalLight"
    kind = DirectionalLight
    record = DIRECTIONAL_LIGHT_RECORD

    def power(self, source: Any, scene_radius: float) -> float:
        return math.pi * scene_radius * scene_radius * luminance(source.irradiance)

    def pack(self, source: Any) -> np.ndarray:
        record = np.zeros((), DIRECTIONAL_LIGHT_RECORD)
        record["direction"], record["irradiance"] = source.direction, source.irradiance
        return record
