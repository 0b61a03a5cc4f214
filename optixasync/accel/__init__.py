"""Acceleration structures: triangle GAS, instancing, deferred compaction and refit."""

from __future__ import annotations

from ._base import AccelOptions, AccelStructure
from ._gas import GeometryAccel
from ._ias import INSTANCE_DTYPE, Instance, InstanceAccel
from ._inputs import TriangleInput
from ._raycast import HIT_RECORDS, RayCaster

__all__ = [
    "AccelOptions",
    "AccelStructure",
    "GeometryAccel",
    "HIT_RECORDS",
    "INSTANCE_DTYPE",
    "Instance",
    "InstanceAccel",
    "RayCaster",
    "TriangleInput",
]
