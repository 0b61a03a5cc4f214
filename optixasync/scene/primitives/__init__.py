"""The built-in custom primitive types, one descriptor module each, registered when :mod:`optixasync.scene` is
imported.

============  =========================================================================================================
``"disk"``    Oriented disks (surfels): centre, normal, radius (7 floats); front side along the normal.
============  =========================================================================================================

Each is a :class:`~optixasync.scene.CustomPrimitiveType` with its header in ``kernels/pathtracer/``.
"""

from __future__ import annotations

from .._custom import register_custom_primitive
from .disk import DiskPrimitive

__all__ = ["DiskPrimitive"]

register_custom_primitive(DiskPrimitive())
