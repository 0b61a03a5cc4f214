"""Our spheres as Mitsuba 3 ``sphere`` shapes: the analytic twin of the path tracer's point clouds.

Each sphere of a :class:`~optixasync.scene.Spheres` becomes one ``sphere``
shape (centre, radius) with its material's BSDF (``mitsuba_bsdf``), its
point colour multiplied into a diffuse or plastic reflectance (the factor
the kernel applies), and an ``area`` emitter when the material emits (on
the outside, the front of ours). Curves and textured spheres have no exact
twin here, nor have custom primitives: ValueError. Meant for a few hundred spheres (one shape each).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ..scene import Curves, Material, Spheres

__all__ = ["mitsuba_shapes"]


def _tinted(material: Material, color: np.ndarray | None) -> Material:
    if color is None:
        return material
    if material.bsdf not in ("diffuse", "plastic", "conductor"):
        raise ValueError(f"a point colour on a {material.bsdf!r} material has no exact Mitsuba twin here")
    reflectance = np.clip(np.asarray(material.reflectance) * color, 0.0, 1.0)
    return dataclasses.replace(material, reflectance=tuple(float(c) for c in reflectance))


BsdfOf = Callable[..., dict[str, Any]]


def mitsuba_spheres(spheres: Spheres, mi: Any, prefix: str, bsdf_of: BsdfOf) -> dict[str, Any]:
    """The ``sphere`` shapes of ``spheres``, by name (``prefix`` and the sphere's index); ``bsdf_of`` is
    :func:`~optixasync.testing._mitsuba.mitsuba_bsdf`."""
    if spheres.on_device:
        raise TypeError(f"{spheres.label} holds device arrays; the Mitsuba conversion reads host arrays")
    out = {}
    for k, center in enumerate(np.asarray(spheres.centers, np.float64)):
        material = spheres.materials[0 if spheres.material_ids is None else int(spheres.material_ids[k])]
        if material.textures:
            raise ValueError(f"{spheres.label}: textures on spheres have no exact Mitsuba twin (its sphere UVs "
                             "differ)")
        material = _tinted(material, None if spheres.colors is None else spheres.colors[k])
        radius = float(spheres.radii if np.isscalar(spheres.radii) else spheres.radii[k])
        shape: dict[str, Any] = {"type": "sphere", "center": center.tolist(), "radius": radius,
                                 "bsdf": bsdf_of(material, mi, mesh_name=spheres.name)}
        if material.is_emissive:
            shape["emitter"] = {"type": "area", "radiance": {"type": "rgb", "value": [float(c) for c in material.emission]}}
        out[f"{prefix}_{k:06d}"] = shape
    return out


def mitsuba_shapes(shapes: list[Any], mi: Any, bsdf_of: BsdfOf) -> dict[str, Any]:
    """Every shape of a scene as Mitsuba shapes; ValueError for curves (no exact twin)."""
    out: dict[str, Any] = {}
    for j, shape in enumerate(shapes):
        if isinstance(shape, Curves):
            raise ValueError(f"{shape.label}: curves have no exact Mitsuba twin here (its curve shapes load from "
                             "files, with another radius convention)")
        if not isinstance(shape, Spheres):
            raise ValueError(f"{shape.label}: custom primitives have no Mitsuba twin (their intersection is device "
                             "code of their own)")
        out.update(mitsuba_spheres(shape, mi, f"spheres_{j:03d}", bsdf_of))
    return out
