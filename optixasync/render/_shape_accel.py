"""Shapes on the device: one GAS per primitive kind, their instances, built-in modules and hit groups.

OptiX forbids mixing primitive kinds in one GAS, so the device scene builds
one per group of the shape table (:class:`~optixasync.render._primitives.ShapeTable`):
all spheres in one, the curves of each kind in one, each shape a build input.
Each GAS is one instance of the scene's instance structure (identity
transform: the arrays are in world space), whose id is the table index of
its first shape and whose SBT offset is that shape's hit record. The path
integrator puts there a hit group of OptiX's built-in intersection module
for the kind and the path tracer's shape closest-hit program
(``kernels/pathtracer.cu``), asked for with the pipeline options and the
build flags of these structures (:data:`SHAPE_ACCEL_OPTIONS`); for custom
primitives, the path tracer's own ``__intersection__custom`` program over
their boxes.

Blocking calls
--------------
None beyond the structures' builds (asynchronous, on the set-up stream) and
``optixBuiltinISModuleGet``, which may compile on the CPU the first time a
kind is asked for: set-up time.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix._primitives import primitive_kind
from .._optix._types import PrimitiveTypeFlags
from ..accel import AccelOptions, CurveInput, CustomInput, GeometryAccel, Instance, SphereInput
from ..program import BuiltinModule, PipelineOptions, ProgramGroup
from ..scene import Scene
from ..scene._shape_kinds import check_shape

if TYPE_CHECKING:
    from ..cuda import Context
    from ..program import Module
    from ._primitives import ShapeTable

__all__ = ["SHAPE_ACCEL_OPTIONS", "ShapeHitGroups", "check_scene_shapes", "hit_kinds", "shape_inputs",
           "shape_instances", "shape_pipeline_options"]

#: Build options of the shapes' GAS (the built-in modules are asked for with their build flags). The kernel reads
#: its own copy of the spheres and control points, so the structures need no random vertex access.
SHAPE_ACCEL_OPTIONS = AccelOptions()

#: The closest-hit program of each primitive of shapes.
_CLOSEST_HIT = {"sphere": "__closesthit__sphere", "custom": "__closesthit__custom"}
_CURVE_CLOSEST_HIT = "__closesthit__curve"


def check_scene_shapes(scene: Scene) -> None:
    """Refuse, before any GPU work, what the path tracer cannot draw of a scene's shapes.

    Raises
    ------
    TypeError
        A shape that is not a Spheres or Curves (or a material that is not a Material).
    ShapeError
        A shape's material it cannot draw (cut-outs, normal maps), material ids past its materials.
    ValueError
        Shapes with dynamic meshes: shapes need an instance structure, refits one GAS for the whole scene.
    """
    for k, shape in enumerate(scene.shapes):
        check_shape(shape, f"scene shape {k}")
    if scene.shapes and scene.dynamic:
        raise ValueError("the scene has dynamic meshes and shapes (spheres, curves): refits need one GAS for the "
                         "whole scene, shapes an instance structure (one GAS per primitive kind); give the dynamic "
                         "meshes a scene of their own, or make no mesh dynamic")


def hit_kinds(instanced: bool, num_meshes: int, table: ShapeTable) -> tuple[str, ...]:
    """The primitive kind of each hit record of a scene's SBT.

    One GAS traced directly: a triangle record per mesh (its build input). An instance structure: one triangle
    record for every mesh (instance id = mesh index, SBT offset 0), then one per shape in table order (shape ``k``
    at record ``1 + k``, the SBT offset of its kind's instance plus its build input).
    """
    if not instanced:
        return ("triangle",) * num_meshes
    return ("triangle",) + tuple(kind for kind, _, count in table.groups for _ in range(count))


def shape_inputs(table: ShapeTable, first: int, count: int) -> list[SphereInput | CurveInput | CustomInput]:
    """The build inputs of shapes ``first .. first + count - 1`` of ``table`` (one kind), one per shape."""
    inputs: list[SphereInput | CurveInput | CustomInput] = []
    for k in range(first, first + count):
        shape = table.shapes[k]
        if shape.kind == "sphere":
            inputs.append(SphereInput(table.points[k], table.radii[k]))
        elif shape.kind == "custom":
            inputs.append(CustomInput(table.boxes[k]))
        else:
            inputs.append(CurveInput(table.points[k], table.radii[k], table.indices[k], kind=shape.kind))
    return inputs


def shape_instances(ctx: Context, table: ShapeTable, sbt_base: int, stream: Any) -> tuple[list[GeometryAccel],
                                                                                           list[Instance]]:
    """One GAS per group of ``table`` and an instance of each; shape ``k``'s hit record is ``sbt_base + k``."""
    structures: list[GeometryAccel] = []
    instances = []
    try:
        for _kind, first, count in table.groups:
            gas = GeometryAccel(ctx, shape_inputs(table, first, count), SHAPE_ACCEL_OPTIONS, stream=stream)
            structures.append(gas)
            instances.append(Instance(gas, np.eye(3, 4), instance_id=first, sbt_offset=sbt_base + first))
    except BaseException:
        for gas in structures:
            gas.close()
        raise
    return structures, instances


def shape_pipeline_options(base: PipelineOptions, kinds: list[str]) -> PipelineOptions:
    """``base`` with the primitive flags of triangles and of every kind in ``kinds`` (``"sphere"``, curve kinds)."""
    flags = int(PrimitiveTypeFlags.TRIANGLE)
    for kind in kinds:
        flags |= int(primitive_kind(kind).flag)
    return dataclasses.replace(base, primitive_type_flags=PrimitiveTypeFlags(flags))


class ShapeHitGroups:
    """The hit group of each shape kind: OptiX's built-in intersection module and the shape closest-hit program.

    Parameters
    ----------
    ctx : Context
    module : Module
        The path tracer's module, compiled for shapes (it holds ``__closesthit__sphere`` and
        ``__closesthit__curve``, and for custom primitives ``__closesthit__custom`` and ``__intersection__custom``).
    pipeline_options : PipelineOptions
        Those of the module and pipeline (:func:`shape_pipeline_options`).
    kinds : list of str
        The shape kinds of the scene (``"sphere"``, curve kinds, ``"custom"``).

    Attributes
    ----------
    groups : dict of str to ProgramGroup
    """

    def __init__(self, ctx: Context, module: Module, pipeline_options: PipelineOptions, kinds: list[str]) -> None:
        self.modules: dict[str, BuiltinModule] = {}
        self.groups: dict[str, ProgramGroup] = {}
        try:
            for kind in kinds:
                if kind == "custom":  # the path tracer's own intersection program, no built-in module
                    self.groups[kind] = ProgramGroup.hitgroup(ctx, module, closesthit=_CLOSEST_HIT[kind],
                                                              intersection="__intersection__custom")
                    continue
                builtin = BuiltinModule(ctx, kind, pipeline_options=pipeline_options,
                                        module_options=module.module_options,
                                        build_flags=SHAPE_ACCEL_OPTIONS.build_flags)
                self.modules[kind] = builtin
                self.groups[kind] = ProgramGroup.hitgroup(ctx, module,
                                                          closesthit=_CLOSEST_HIT.get(kind, _CURVE_CLOSEST_HIT),
                                                          intersection_module=builtin)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Destroy the hit groups and forget the modules (the caller waited for the launches that use them)."""
        for group in self.groups.values():
            group.close()
        for builtin in self.modules.values():
            builtin.close()
        self.groups, self.modules = {}, {}
