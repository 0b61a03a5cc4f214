"""``"spot"``: :class:`~optixasync.scene.SpotLight` (``light_spot.h``).

Its power is that of its intensity over the solid angle of the cone halfway between the inner and the outer one,
``2 pi (1 - cos((inner + outer) / 2))``: an estimate for light selection (an exact value would not change the
image, only its noise).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._structs import struct_dtype
from ...scene import SpotLight
from ._base import PunctualLightType, luminance

__all__ = ["SPOT_LIGHT_RECORD", "SpotLightType"]

#: ``SpotLightRecord`` of ``light_spot.h``.
SPOT_LIGHT_RECORD = struct_dtype([("position", "float3"), ("intensity", "float3"), ("direction", "float3"),
                                  ("cos_outer", "float"), ("ramp_scale", "float")])


class SpotLightType(PunctualLightType):
    name = "spot"
    header = "pathtracer/light_spot.h"
    struct = "SpotLight"
    kind = SpotLight
    record = SPOT_LIGHT_RECORD

    def power(self, source: Any, scene_radius: float) -> float:
        half = 0.5 * (source.inner_angle + source.outer_angle)
        return 2.0 * math.pi * (1.0 - math.cos(half)) * luminance(source.intensity)

    def pack(self, source: Any) -> np.ndarray:
        record = np.zeros((), SPOT_LIGHT_RECORD)
        cos_inner, cos_outer = math.cos(source.inner_angle), math.cos(source.outer_angle)
        record["position"], record["intensity"] = source.position, source.intensity
        record["direction"], record["cos_outer"] = source.direction, cos_outer
        record["ramp_scale"] = 1.0 / max(1e-3, cos_inner - cos_outer)  # KHR_lights_punctual's lightAngleScale
        return record
