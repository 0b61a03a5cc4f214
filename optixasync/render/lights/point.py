"""``"point"``: :class:`~optixasync.scene.PointLight` (``light_point.h``); power ``4 pi`` times the intensity."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._structs import struct_dtype
from ...scene import PointLight
from ._base import PunctualLightType, luminance

__all__ = ["POINT_LIGHT_RECORD", "PointLightType"]

#: ``PointLightRecord`` of ``light_point.h``.
POINT_LIGHT_RECORD = struct_dtype([("position", "float3"), ("intensity", "float3")])


class PointLightType(PunctualLightType):
    name = "point"
    header = "pathtracer/light_point.h"
    struct = "PointLight"
    kind = PointLight
    record = POINT_LIGHT_RECORD

    def power(self, source: Any, scene_radius: float) -> float:
        return 4.0 * math.pi * luminance(source.intensity)

    def pack(self, source: Any) -> np.ndarray:
        record = np.zeros((), POINT_LIGHT_RECORD)
        record["position"], record["intensity"] = source.position, source.intensity
        return record
