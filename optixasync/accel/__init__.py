"""Acceleration structures: GAS over triangles, spheres, curves or custom primitives, instancing, motion blur,
deferred compaction and refit."""

from __future__ import annotations

# The warm-up registers itself, when imported, as a set-up step of every Context created with warm_up=True: OptiX
# loads the code of an operation on first use and that load waits for all queued GPU work, so without it the first
# refit of a render loop blocked the host for the GPU's whole queue. Nothing else imports the module.
from . import _warmup  # noqa: F401
from ._base import AccelOptions, AccelStructure, MotionOptions
from ._curves import CurveInput, curve_segments
from ._device_ias import DeviceInstanceAccel
from ._gas import GeometryAccel
from ._ias import INSTANCE_DTYPE, Instance, InstanceAccel
from ._inputs import CustomInput, SphereInput, TriangleInput
from ._raycast import HIT_RECORDS, RayCaster
from ._transforms import MatrixMotionTransform, MotionTransform, SRTMotionTransform, srt_key

__all__ = [
    "AccelOptions",
    "AccelStructure",
    "CurveInput",
    "CustomInput",
    "DeviceInstanceAccel",
    "GeometryAccel",
    "HIT_RECORDS",
    "INSTANCE_DTYPE",
    "Instance",
    "InstanceAccel",
    "MatrixMotionTransform",
    "MotionOptions",
    "MotionTransform",
    "RayCaster",
    "SRTMotionTransform",
    "SphereInput",
    "TriangleInput",
    "curve_segments",
    "srt_key",
]
