"""A BSDF family and a light type from this folder only, added through the public registries.

:func:`register` adds them (a test restores the registries after); nothing under ``optixasync/`` or
``kernels/`` knows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optixasync import struct_dtype
from optixasync.render.lights import PunctualLightType, register_light_type
from optixasync.scene import BsdfFamily, register_bsdf

HERE = Path(__file__).resolve().parent


class UniformLambertFamily(BsdfFamily):
    name = "uniform_lambert"
    header = str(HERE / "bsdf_uniform_lambert.h")
    struct = "UniformLambertBsdf"
    parameters = {"gain": (1.0, 0.0, 1.0)}

    def pack(self, material):
        return [dict(material.parameters)["gain"]]

    def mitsuba(self, material, reflectance):
        return None  # no twin: the tests compare it with closed forms


@dataclass(frozen=True)
class PowerPointLight:
    """A point light given by its power per RGB channel (I = power / 4 pi)."""

    position: tuple[float, float, float]
    power: tuple[float, float, float]
    name: str = ""


POWER_POINT_RECORD = struct_dtype([("position", "float3"), ("power", "float3")])


class PowerPointLightType(PunctualLightType):
    name = "power_point"
    header = str(HERE / "light_power_point.h")
    struct = "PowerPointLight"
    kind = PowerPointLight
    record = POWER_POINT_RECORD

    def power(self, source, scene_radius):
        r, g, b = source.power
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    def pack(self, source):
        record = np.zeros((), POWER_POINT_RECORD)
        record["position"], record["power"] = source.position, source.power
        return record


def register() -> tuple[UniformLambertFamily, PowerPointLightType]:
    """Register both (the caller restores the registries)."""
    return register_bsdf(UniformLambertFamily()), register_light_type(PowerPointLightType())
