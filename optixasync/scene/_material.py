"""Materials: Lambertian reflection and one-sided area emission, as RGB triples."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Material", "triple"]


def triple(value: Any, name: str) -> tuple[float, float, float]:
    """``value`` as a tuple of three finite floats; ValueError/TypeError naming ``name`` otherwise."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be 3 numbers, got {value!r}")
    try:
        items = [float(v) for v in value]
    except TypeError as exc:
        raise TypeError(f"{name} must be 3 numbers, got {value!r}") from exc
    except ValueError as exc:
        raise ValueError(f"{name} must be 3 numbers, got {value!r}") from exc
    if len(items) != 3:
        raise ValueError(f"{name} must have 3 components, got {len(items)}: {value!r}")
    if not all(math.isfinite(v) for v in items):
        raise ValueError(f"{name} must be finite, got {tuple(items)}")
    return items[0], items[1], items[2]


@dataclass(frozen=True)
class Material:
    """The surface of a mesh: diffuse reflectance and area emission.

    Attributes
    ----------
    reflectance : tuple of 3 floats
        Lambertian albedo per RGB channel, each in [0, 1].
    emission : tuple of 3 floats
        Emitted radiance per RGB channel (>= 0), leaving the front side only:
        the side of the winding normal ``cross(v1 - v0, v2 - v0)``.
    two_sided : bool
        False: the surface reflects on its front side only and is black seen
        from the back (the reference renderer's ``diffuse``). True: both sides
        reflect, each about its own side's normal. Emission stays one-sided.

    Raises
    ------
    ValueError
        On a non-finite component, a reflectance outside [0, 1], a negative
        emission or a wrong number of components.
    """

    reflectance: tuple[float, float, float] = (0.8, 0.8, 0.8)
    emission: tuple[float, float, float] = (0.0, 0.0, 0.0)
    two_sided: bool = False

    def __post_init__(self) -> None:
        reflectance = triple(self.reflectance, "reflectance")
        emission = triple(self.emission, "emission")
        if not all(0.0 <= v <= 1.0 for v in reflectance):
            raise ValueError(f"reflectance must lie in [0, 1] per channel, got {reflectance}")
        if not all(v >= 0.0 for v in emission):
            raise ValueError(f"emission must be >= 0 per channel, got {emission}")
        if not isinstance(self.two_sided, bool):
            raise TypeError(f"two_sided must be a bool, got {type(self.two_sided).__name__}")
        # Frozen: normalise through object.__setattr__ so equal materials compare and hash equal.
        object.__setattr__(self, "reflectance", reflectance)
        object.__setattr__(self, "emission", emission)

    @property
    def is_emissive(self) -> bool:
        """Whether any channel of the emission is positive."""
        return max(self.emission) > 0.0
