"""``"triangles"``: the emissive triangles of every light-sampled mesh as one source (``light_triangles.h``).

Its data is the emitter table (:mod:`optixasync.render._emitters`): an alias table over the triangles by
power, in world space, each entry's pdf times the source's selection probability (so that the MIS weight of
emission found by a BSDF-sampled ray reads it directly). Its power is the table's, ``pi * sum(area * L)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._base import LightType

__all__ = ["TriangleLights"]


class TriangleLights(LightType):
    name = "triangles"
    header = "pathtracer/light_triangles.h"
    struct = "TriangleLights"

    def sources(self, scene: Any) -> Sequence[Any]:
        return ()  # the scene tables give it the emitter table (it needs the meshes' host vertices)

    def power(self, source: Any, scene_radius: float) -> float:
        return float(source.power)

    def data(self, source: Any, placement: Any, probability: float) -> tuple[int, int]:
        return placement.upload(source.selected(probability), "emitter table"), len(source)
