"""``OptixBuildInput`` structs of each primitive kind, filled from an input and its arrays on the device.

One function per kind; each writes the struct and returns the ctypes arrays
the struct points into (the caller keeps them alive while OptiX may read
them). A moving array's keys are a host array of device pointers, one per
motion key; a refit rewrites those pointers in place.

Blocking calls
--------------
None: host-side struct filling.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from .._optix import types as t
from ..cuda import device_pointer
from ._curves import CurveInput
from ._inputs import CustomInput, SphereInput, TriangleInput

__all__ = ["PACKERS", "Packed", "pointer_keys"]

Packed = tuple[list[Any], Any]  # (arrays to keep alive, the per-key pointer array of the moving field)


def pointer_keys(arrays: list[Any]) -> Any:
    """A host array of the device addresses of ``arrays`` (one per motion key)."""
    return (ctypes.c_uint64 * len(arrays))(*[device_pointer(a) for a in arrays])


def _flags(any_hit: bool, count: int) -> Any:
    flag = t.GeometryFlags.NONE if any_hit else t.GeometryFlags.DISABLE_ANYHIT
    return (ctypes.c_uint * count)(*([int(flag)] * count))


def _material_ids(struct: Any, device: dict[str, Any]) -> None:
    if "material_ids" in device:
        struct.sbtIndexOffsetBuffer = device_pointer(device["material_ids"])
        struct.sbtIndexOffsetSizeInBytes = 4
        struct.sbtIndexOffsetStrideInBytes = 4


def _as_pointers(keys: Any) -> Any:
    return ctypes.cast(keys, ctypes.POINTER(ctypes.c_uint64))


def pack_triangles(build: t.BuildInput, inp: TriangleInput, device: dict[str, Any]) -> Packed:
    build.type = t.BuildInputType.TRIANGLES
    tri = build.triangleArray
    vertices = pointer_keys(device["vertices"])
    flags = _flags(inp.any_hit, inp.num_sbt_records)
    tri.vertexBuffers = _as_pointers(vertices)
    tri.numVertices = inp.num_vertices
    tri.vertexFormat = t.VertexFormat.FLOAT3
    tri.vertexStrideInBytes = 12
    if "indices" in device:
        tri.indexBuffer = device_pointer(device["indices"])
        tri.numIndexTriplets = inp.num_triangles
        tri.indexFormat = t.IndicesFormat.UNSIGNED_INT3
        tri.indexStrideInBytes = 12
    tri.flags = ctypes.cast(flags, ctypes.POINTER(ctypes.c_uint))
    tri.numSbtRecords = inp.num_sbt_records
    _material_ids(tri, device)
    return [vertices, flags], vertices


def pack_spheres(build: t.BuildInput, inp: SphereInput, device: dict[str, Any]) -> Packed:
    build.type = t.BuildInputType.SPHERES
    spheres = build.sphereArray
    centers, radii = pointer_keys(device["centers"]), pointer_keys(device["radii"])
    flags = _flags(inp.any_hit, inp.num_sbt_records)
    spheres.vertexBuffers = _as_pointers(centers)
    spheres.vertexStrideInBytes = 12
    spheres.numVertices = inp.num_spheres
    spheres.radiusBuffers = _as_pointers(radii)
    spheres.radiusStrideInBytes = 0 if inp.single_radius else 4
    spheres.singleRadius = int(inp.single_radius)
    spheres.flags = ctypes.cast(flags, ctypes.POINTER(ctypes.c_uint))
    spheres.numSbtRecords = inp.num_sbt_records
    _material_ids(spheres, device)
    return [centers, radii, flags], centers


def pack_curves(build: t.BuildInput, inp: CurveInput, device: dict[str, Any]) -> Packed:
    build.type = t.BuildInputType.CURVES
    curves = build.curveArray
    vertices, widths = pointer_keys(device["vertices"]), pointer_keys(device["widths"])
    curves.curveType = int(inp.curve.type)
    curves.numPrimitives = inp.num_segments
    curves.vertexBuffers = _as_pointers(vertices)
    curves.numVertices = inp.num_vertices
    curves.vertexStrideInBytes = 12
    curves.widthBuffers = _as_pointers(widths)
    curves.widthStrideInBytes = 4
    curves.indexBuffer = device_pointer(device["indices"])
    curves.indexStrideInBytes = 4
    curves.flag = int(t.GeometryFlags.NONE if inp.any_hit else t.GeometryFlags.DISABLE_ANYHIT)
    curves.endcapFlags = int(t.CurveEndcapFlags.ON if inp.endcaps else t.CurveEndcapFlags.DEFAULT)
    return [vertices, widths], vertices


def pack_custom(build: t.BuildInput, inp: CustomInput, device: dict[str, Any]) -> Packed:
    build.type = t.BuildInputType.CUSTOM_PRIMITIVES
    custom = build.customPrimitiveArray
    aabbs = pointer_keys(device["aabbs"])
    flags = _flags(inp.any_hit, inp.num_sbt_records)
    custom.aabbBuffers = _as_pointers(aabbs)
    custom.numPrimitives = inp.num_boxes
    custom.strideInBytes = ctypes.sizeof(t.Aabb)
    custom.flags = ctypes.cast(flags, ctypes.POINTER(ctypes.c_uint))
    custom.numSbtRecords = inp.num_sbt_records
    _material_ids(custom, device)
    return [aabbs, flags], aabbs


#: Input class -> (its packer, its arrays: name -> (the attribute holding it, is a list of motion keys)).
PACKERS: dict[type, tuple[Callable[..., Packed], dict[str, tuple[str, bool]]]] = {
    TriangleInput: (pack_triangles, {"vertices": ("keys", True), "indices": ("indices", False),
                                     "material_ids": ("material_ids", False)}),
    SphereInput: (pack_spheres, {"centers": ("keys", True), "radii": ("radius_keys", True),
                                 "material_ids": ("material_ids", False)}),
    CurveInput: (pack_curves, {"vertices": ("keys", True), "widths": ("width_keys", True),
                               "indices": ("indices", False)}),
    CustomInput: (pack_custom, {"aabbs": ("keys", True), "material_ids": ("material_ids", False)}),
}
