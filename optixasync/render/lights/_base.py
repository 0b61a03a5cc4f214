"""Light types: one Python descriptor and one device header each, registered by name.

A :class:`LightType` finds its light sources in a scene, gives each its
emitted power (light selection is by power, across every type), and places
each source's device data; its header (``kernels/pathtracer/light_<name>.h``
or any file the descriptor names) samples a source and weighs the sample
(``kernels/pathtracer/lights.h`` says what it provides). The renderer
generates the kernel's dispatch over the registered types in registration
order, which is also the type index a ``LightRecord`` carries: adding a
light type is these two files and one :func:`register_light_type` call.

Blocking calls
--------------
None here; the placement a descriptor is given lists its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ...scene import Scene
    from .._placement import Placement

__all__ = ["MAX_LIGHT_TYPES", "LightType", "PunctualLightType", "light_type", "light_types", "register_light_type"]

#: The most light types a program dispatches over.
MAX_LIGHT_TYPES = 32


class LightType:
    """One light type's descriptor; subclass it and register an instance with :func:`register_light_type`.

    Attributes
    ----------
    name : str
    header : str
        Its device header: relative to the package's kernels folder, or an absolute path.
    struct : str
        The C++ struct (in namespace ``pt``) with the static ``sample`` and ``scale`` of ``lights.h``.
    """

    name: str = ""
    header: str = ""
    struct: str = ""

    def sources(self, scene: Scene) -> Sequence[Any]:
        """The scene's light sources of this type (each gets one ``LightRecord``)."""
        return ()

    def power(self, source: Any, scene_radius: float) -> float:
        """The source's emitted power (a luminance; its unit cancels in the selection probabilities)."""
        raise NotImplementedError

    def data(self, source: Any, placement: Placement, probability: float) -> tuple[int, int]:
        """Place the source's device data; its (address, count of entries)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<light type {self.name!r} ({self.struct} in {self.header})>"


def luminance(rgb: Any) -> float:
    """Rec. 709 luminance of an RGB triple (the selection weight of a coloured light)."""
    r, g, b = (float(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


class PunctualLightType(LightType):
    """A light type whose sources are scene lights of one class, each packed into one record of :attr:`record`.

    Subclasses set ``kind`` (the scene light class), ``record`` (the record's dtype) and implement
    :meth:`pack` and :meth:`power`.
    """

    kind: type = object
    record: np.dtype = np.dtype([])

    def sources(self, scene: Scene) -> Sequence[Any]:
        return [light for light in scene.lights if type(light) is self.kind]

    def pack(self, source: Any) -> np.ndarray:
        """The host record (a scalar of :attr:`record`) of ``source``."""
        raise NotImplementedError

    def data(self, source: Any, placement: Placement, probability: float) -> tuple[int, int]:
        return placement.upload(np.atleast_1d(self.pack(source)), "light record"), 1


_types: dict[str, LightType] = {}


def register_light_type(light: LightType) -> LightType:
    """Add ``light`` to the types the renderer compiles (at the end: its index is the count so far).

    Registering the same descriptor again does nothing; another type of a registered name is refused.

    Raises
    ------
    TypeError, ValueError
        On a descriptor that is not a :class:`LightType`, lacks its name, header or struct, or takes a
        registered name; beyond :data:`MAX_LIGHT_TYPES`.
    """
    if not isinstance(light, LightType):
        raise TypeError(f"register_light_type takes a LightType, got {type(light).__name__}")
    for field in ("name", "header", "struct"):
        value = getattr(light, field)
        if not isinstance(value, str) or not value:
            raise ValueError(f"a light type needs a {field} (a non-empty str), got {value!r}")
    if not light.struct.isidentifier():
        raise ValueError(f"the light type's struct must be a C++ identifier, got {light.struct!r}")
    existing = _types.get(light.name)
    if existing is light:
        return light
    if existing is not None:
        raise ValueError(f"a light type named {light.name!r} is registered already ({existing!r})")
    if len(_types) >= MAX_LIGHT_TYPES:
        raise ValueError(f"at most {MAX_LIGHT_TYPES} light types can be registered")
    _types[light.name] = light
    return light


def light_types() -> tuple[LightType, ...]:
    """The registered light types, in registration order (the kernel's type index)."""
    return tuple(_types.values())


def light_type(name: str) -> LightType:
    """The registered light type ``name``; ``ValueError`` naming the registered ones otherwise."""
    found = _types.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"light type must be one of {tuple(_types)}, got {name!r}")
    return found
