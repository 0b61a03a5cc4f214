"""Punctual lights: point, spot and directional (distant) lights, as plain host data.

Emissive meshes (a material with an emission) and the environment are the
scene's other light sources. Each kind is rendered by a light type of the
renderer (``optixasync.render.lights.light_types()``: a descriptor and a device
header each); a scene light of one's own is a data class like these with a
light type registered for it.

Units are the renderer's radiometric ones: a point or spot light's
``intensity`` is radiant intensity (radiance times area per steradian), so
that a surface at distance d facing it receives ``intensity / d**2``; a
directional light's ``irradiance`` is what a surface facing it receives.
glTF's ``KHR_lights_punctual`` gives candela and lux; the glTF reader
converts them.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._material import triple

__all__ = ["DirectionalLight", "PointLight", "SpotLight"]


def _non_negative(value: Any, what: str) -> tuple[float, float, float]:
    rgb = triple(value, what)
    if not all(c >= 0.0 for c in rgb):
        raise ValueError(f"{what} must be >= 0 per channel, got {rgb}")
    return rgb


def _unit(value: Any, what: str) -> tuple[float, float, float]:
    v = np.asarray(triple(value, what), np.float64)
    length = float(np.linalg.norm(v))
    if not length > 0.0:
        raise ValueError(f"{what} must be a non-zero vector, got {tuple(v)}")
    return tuple(float(c) for c in v / length)  # type: ignore[return-value]


def _label(kind: str, name: str) -> str:
    return f"{kind} {name!r}" if name else kind


@dataclass(frozen=True)
class PointLight:
    """Light from one point, the same in every direction.

    Attributes
    ----------
    position : 3 floats
    intensity : 3 floats >= 0
        Radiant intensity per RGB channel.
    name : str
    """

    position: tuple[float, float, float]
    intensity: tuple[float, float, float] = (1.0, 1.0, 1.0)
    name: str = ""

    def __post_init__(self) -> None:
        label = _label("point light", self.name)
        object.__setattr__(self, "position", triple(self.position, f"{label} position"))
        object.__setattr__(self, "intensity", _non_negative(self.intensity, f"{label} intensity"))


@dataclass(frozen=True)
class SpotLight:
    """A point light limited to a cone: full inside ``inner_angle``, none beyond ``outer_angle``.

    Between the two the intensity is that of glTF's ``KHR_lights_punctual``: the square of a linear ramp in
    the cosine of the angle from the axis.

    Attributes
    ----------
    position : 3 floats
    direction : 3 floats
        Where the light shines (normalised).
    intensity : 3 floats >= 0
        Radiant intensity on the axis.
    inner_angle, outer_angle : float
        Half angles of the cones in radians, 0 <= inner < outer <= pi / 2 (glTF's defaults: 0 and pi / 4).
    name : str
    """

    position: tuple[float, float, float]
    direction: tuple[float, float, float] = (0.0, 0.0, -1.0)
    intensity: tuple[float, float, float] = (1.0, 1.0, 1.0)
    inner_angle: float = 0.0
    outer_angle: float = math.pi / 4
    name: str = ""

    def __post_init__(self) -> None:
        label = _label("spot light", self.name)
        object.__setattr__(self, "position", triple(self.position, f"{label} position"))
        object.__setattr__(self, "direction", _unit(self.direction, f"{label} direction"))
        object.__setattr__(self, "intensity", _non_negative(self.intensity, f"{label} intensity"))
        for field_name in ("inner_angle", "outer_angle"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"{label}: {field_name} must be a finite number of radians, got {value!r}")
            object.__setattr__(self, field_name, float(value))
        if not 0.0 <= self.inner_angle < self.outer_angle <= math.pi / 2:
            raise ValueError(f"{label}: the cones need 0 <= inner_angle < outer_angle <= pi / 2, got "
                             f"{self.inner_angle} and {self.outer_angle}")


@dataclass(frozen=True)
class DirectionalLight:
    """Light from infinitely far away in one direction (the sun): the same irradiance everywhere.

    Attributes
    ----------
    direction : 3 floats
        The way the light travels (normalised): (0, -1, 0) shines straight down.
    irradiance : 3 floats >= 0
        On a surface facing the light, per RGB channel.
    name : str
    """

    direction: tuple[float, float, float] = (0.0, -1.0, 0.0)
    irradiance: tuple[float, float, float] = (1.0, 1.0, 1.0)
    name: str = ""

    def __post_init__(self) -> None:
        label = _label("directional light", self.name)
        object.__setattr__(self, "direction", _unit(self.direction, f"{label} direction"))
        object.__setattr__(self, "irradiance", _non_negative(self.irradiance, f"{label} irradiance"))
