"""The kinds of shapes a scene holds beside its meshes: :class:`~optixasync.scene.Spheres`,
:class:`~optixasync.scene.Curves` and :class:`~optixasync.scene.CustomPrimitives`. Host-side checks only."""

from __future__ import annotations

from typing import Any

from ._curves import Curves
from ._custom import CustomPrimitives
from ._spheres import Spheres
from .primitives import DiskPrimitive  # noqa: F401 (registers the built-in custom primitive types)

__all__ = ["SHAPE_TYPES", "check_shape", "is_shape"]

#: The shape classes a scene holds.
SHAPE_TYPES: tuple[type, ...] = (Spheres, Curves, CustomPrimitives)


def is_shape(value: Any) -> bool:
    """Whether ``value`` is one of the scene's shape kinds (spheres, curves, custom primitives)."""
    return isinstance(value, SHAPE_TYPES)


def check_shape(value: Any, where: str) -> Any:
    """``value`` if it is a shape (its materials checked again); TypeError naming ``where`` and the kinds otherwise."""
    if not is_shape(value):
        raise TypeError(f"{where} must be one of {', '.join(t.__name__ for t in SHAPE_TYPES)}, got "
                        f"{type(value).__name__}")
    value.check_materials()  # a shape's materials may have been replaced since it was made
    return value
