"""What the primitive sets beside meshes share: spheres and curves carry materials, ids and colours the same way.

A scene's :attr:`~optixasync.scene.Scene.shapes` are sets of primitives
other than triangles (:class:`~optixasync.scene.Spheres`,
:class:`~optixasync.scene.Curves`). Each has one material or several (a
material id per primitive picks one), and may give a linear colour per
point that multiplies its material's reflectance. The checks here are the
ones every kind applies, with messages naming the shape; they raise
:class:`~optixasync.errors.ShapeError` (a ``ValueError``) or ``TypeError``.

Host-side numpy only. (:mod:`._shape_kinds` knows the kinds themselves.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..validation import describe_array, is_device_array
from ._material import Material

__all__ = ["shape_bounds", "shape_colors", "shape_label", "shape_material_ids", "shape_materials", "shape_points",
           "shape_radii"]


def shape_label(kind: str, name: str) -> str:
    """How messages name a shape: ``spheres 'cloud'``, or the kind alone."""
    return f"{kind} {name!r}" if name else kind


def shape_materials(material: Any, label: str) -> tuple[Material, ...]:
    """One Material, or a non-empty sequence of them, as a tuple; checked for what shapes can draw.

    Raises
    ------
    TypeError
        Something that is not a Material.
    ShapeError
        No material, a cut-out material (alpha mask and blend are for meshes), one that culls back faces (for
        meshes too) or a normal map (shapes have no tangent frame to map it in).
    """
    materials = (material,) if isinstance(material, Material) else tuple(material) if isinstance(
        material, Sequence) and not isinstance(material, str) else None
    if materials is None or not all(isinstance(m, Material) for m in materials):
        raise TypeError(f"{label}: material must be a Material or a sequence of them, got {material!r}")
    if not materials:
        raise ShapeError(f"{label}: an empty sequence of materials; give at least one")
    for k, m in enumerate(materials):
        which = f"{label} material {k}" + (f" ({m.name!r})" if m.name else "")
        if m.alpha_mode != "opaque":
            raise ShapeError(f"{which}: alpha_mode {m.alpha_mode!r} cuts out meshes only; spheres and curves are "
                             "opaque (give the material alpha_mode='opaque')")
        if m.normal_texture is not None:
            raise ShapeError(f"{which}: a normal map needs a mesh's tangent frame; spheres and curves take none "
                             "(drop normal_texture)")
        if m.cull_back:
            raise ShapeError(f"{which}: cull_back culls mesh triangles only (their any-hit program); spheres and "
                             "curves show their backs (give the material cull_back=False)")
    return materials


def shape_points(points: Any, label: str, what: str) -> Any:
    """(N, 3) float32 points: host arrays converted (and checked finite), device arrays checked as they are."""
    if not is_device_array(points):
        array = np.asarray(points)
        if array.dtype.kind not in "fiu":
            raise TypeError(f"{label}: {what} must be numbers, got dtype {array.dtype}")
        points = np.ascontiguousarray(array, np.float32)
    shape, dtype, contiguous, on_device = describe_array(points, f"{label} {what}")
    if dtype != np.float32 or len(shape) != 2 or shape[1] != 3 or not contiguous:
        raise ShapeError(f"{label}: {what} must be a C-contiguous (N, 3) float32 array, got {dtype} {shape}")
    if shape[0] == 0:
        raise ShapeError(f"{label}: {what} is empty")
    if not on_device and not np.isfinite(points).all():
        bad = int(np.argwhere(~np.isfinite(points).all(axis=1))[0, 0])
        raise ShapeError(f"{label}: {what} contains NaN or Inf (first at point {bad}: {points[bad].tolist()})")
    return points


def shape_radii(radii: Any, count: int, label: str, what: str = "radii") -> Any:
    """One radius (a float) or one per point ((count,) float32); finite and >= 0 on the host.

    A radius of 0 draws nothing there (a strand may taper to 0 at its tip).

    Raises
    ------
    ShapeError
        A NaN, infinite or negative radius (naming the first), or an array of the wrong shape.
    """
    if np.isscalar(radii) and not isinstance(radii, (str, bytes, bool)):
        radius = float(radii)  # type: ignore[arg-type]
        if not (np.isfinite(radius) and radius >= 0):
            raise ShapeError(f"{label}: {what} must be finite and >= 0, got {radius}")
        return radius
    if not is_device_array(radii):
        radii = np.ascontiguousarray(np.asarray(radii, np.float64).astype(np.float32))
    shape, dtype, contiguous, on_device = describe_array(radii, f"{label} {what}")
    if dtype != np.float32 or shape != (count,) or not contiguous:
        raise ShapeError(f"{label}: {what} must be one number, or a C-contiguous float32 array of shape ({count},) "
                         f"(one per point), got {dtype} {shape}")
    if not on_device:
        bad = ~(np.isfinite(radii) & (radii >= 0))
        if bad.any():
            first = int(np.argmax(bad))
            raise ShapeError(f"{label}: {what} must be finite and >= 0: entry {first} is {float(radii[first])}")
    return radii


def shape_colors(colors: Any, count: int, label: str) -> np.ndarray | None:
    """Per-point linear RGB colours ((count, 3) floats >= 0, host) as float32, or None."""
    if colors is None:
        return None
    if is_device_array(colors):
        raise TypeError(f"{label}: colors must be a host (numpy) array")
    array = np.asarray(colors, np.float64)
    if array.shape != (count, 3):
        raise ShapeError(f"{label}: colors must have shape ({count}, 3), one linear RGB per point, got {array.shape}")
    if not (np.isfinite(array) & (array >= 0)).all():
        bad = int(np.argwhere(~(np.isfinite(array) & (array >= 0)).all(axis=1))[0, 0])
        raise ShapeError(f"{label}: colors must be finite and >= 0 (linear multipliers of the reflectance), got "
                         f"{array[bad].tolist()} at point {bad}")
    return np.ascontiguousarray(array, np.float32)


def shape_material_ids(ids: Any, count: int, num_materials: int, label: str, what: str) -> np.ndarray | None:
    """Per-primitive material indices ((count,) integers < ``num_materials``, host) as uint32, or None."""
    if ids is None:
        if num_materials > 1:
            raise ShapeError(f"{label}: {num_materials} materials but no material_ids to pick one per {what}")
        return None
    if is_device_array(ids):
        raise TypeError(f"{label}: material_ids must be a host (numpy) array")
    array = np.asarray(ids)
    if array.dtype.kind not in "iu" or array.shape != (count,):
        raise ShapeError(f"{label}: material_ids must be integers of shape ({count},), one per {what}, got "
                         f"{array.dtype} {array.shape}")
    if count and (array.min() < 0 or array.max() >= num_materials):
        raise ShapeError(f"{label}: material_ids span [{int(array.min())}, {int(array.max())}] but there are "
                         f"{num_materials} material(s)")
    return np.ascontiguousarray(array, np.uint32)


def shape_bounds(points: Any, radii: Any) -> np.ndarray | None:
    """The (2, 3) float64 box of host ``points`` grown by their radii (None for device arrays)."""
    if is_device_array(points) or is_device_array(radii):
        return None
    grow = float(radii) if np.isscalar(radii) else float(np.max(radii))
    low = points.min(axis=0).astype(np.float64) - grow
    high = points.max(axis=0).astype(np.float64) + grow
    return np.stack([low, high])
