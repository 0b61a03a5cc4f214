"""The scene table of spheres and curves: one ``ShapeRecord`` per shape, grouped by the GAS that will hold it.

A scene's :attr:`~optixasync.scene.Scene.shapes` (:class:`~optixasync.scene.Spheres`,
:class:`~optixasync.scene.Curves`) become, through a placement (device
memory, or host memory for the CPU build of the kernel), the arrays the
kernel and the structures read (points, radii, segment indices, colours,
material ids) and a record each (``kernels/pathtracer/shapes.h``, mirrored
here as :data:`SHAPE_RECORD`). OptiX holds one primitive kind per GAS, so
the table lists the shapes kind by kind (:attr:`ShapeTable.groups`: all
spheres, then the curves of each kind), and the device scene builds one GAS
per group, each shape one build input of it, each GAS one instance whose id
is the table index of its first shape: the closest-hit programs report
``instance id + build input`` as the shape's index.

Blocking calls
--------------
None here: the placement lists its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._structs import struct_dtype
from ..scene import CURVE_DEGREES, Curves, CustomPrimitives, Material, Scene, Spheres
from ..scene._custom import custom_primitive_index
from ._layout import MESH_EMISSIVE, MESH_TWO_SIDED

if TYPE_CHECKING:
    from ._placement import Placement

__all__ = ["SHAPE_HIT", "SHAPE_KINDS", "SHAPE_MATERIAL", "SHAPE_ONE_RADIUS", "SHAPE_RECORD", "SHAPE_STRUCT_NAMES",
           "ShapeTable", "gas_kind", "shape_material_flags"]

#: ``ShapeMaterial``: one material of a shape, with the mesh flags its surfaces take.
SHAPE_MATERIAL: np.dtype = struct_dtype([("material", "ptr"), ("flags", "uint"), ("pad", "uint")])

#: ``ShapeRecord``: one per shape (a Spheres or Curves), in the order of :attr:`ShapeTable.shapes`.
SHAPE_RECORD: np.dtype = struct_dtype([
    ("points", "ptr"), ("radii", "ptr"), ("indices", "ptr"), ("colors", "ptr"), ("material_ids", "ptr"),
    ("materials", "ptr"), ("kind", "uint"), ("count", "uint"), ("flags", "uint"), ("num_materials", "uint"),
    ("boxes", "ptr"), ("custom_type", "uint"), ("stride", "uint"),
])

#: ``ShapeKind`` of shapes.h, by the GAS kind (``"sphere"`` or the curve kind).
SHAPE_KINDS: dict[str, int] = {"sphere": 0, "linear": 1, "quadratic_bspline": 2, "cubic_bspline": 3,
                               "catmull_rom": 4, "bezier": 5, "custom": 6}
assert set(SHAPE_KINDS) == {"sphere", "custom", *CURVE_DEGREES}

#: ``ShapeFlags``: the radii array holds one radius for every sphere.
SHAPE_ONE_RADIUS = 1 << 0
#: The bit a shape's closest-hit program sets in the payload's mesh register.
SHAPE_HIT = 0x80000000

#: CUDA struct name of each dtype (for the layout checks).
SHAPE_STRUCT_NAMES: dict[str, np.dtype] = {"ShapeRecord": SHAPE_RECORD, "ShapeMaterial": SHAPE_MATERIAL}


def gas_kind(shape: Spheres | Curves | CustomPrimitives) -> str:
    """The kind of GAS that holds ``shape``: ``"sphere"``, its curve kind, or ``"custom"``."""
    return shape.kind


def shape_material_flags(material: Material) -> int:
    """The mesh flags of a shape's surfaces in ``material``: two-sided (transmitting ones too), emissive."""
    flags = MESH_TWO_SIDED if material.two_sided or material.transmits else 0
    return flags | (MESH_EMISSIVE if material.is_emissive else 0)


def _grouped(shapes: list[Any]) -> list[tuple[str, list[Any]]]:
    """The shapes kind by kind (spheres, each curve kind, custom primitives: :data:`SHAPE_KINDS` order), in scene
    order."""
    return [(kind, members) for kind in SHAPE_KINDS
            if (members := [s for s in shapes if gas_kind(s) == kind])]


class ShapeTable:
    """The shapes of a scene where the kernel reads them, and their records.

    Parameters
    ----------
    scene : Scene
    placement : Placement
    material_pointer : callable
        The address of a material's ``MaterialRecord`` (the scene's material table holds every shape's materials).

    Attributes
    ----------
    shapes : list of Spheres or Curves
        In table order (kind by kind).
    groups : list of (str, int, int)
        Per GAS: its kind, the table index of its first shape and how many it holds.
    points, radii, indices, boxes : list
        Per shape, the placed arrays the GAS reads (``indices`` None but for curves, ``boxes`` None but for custom
        primitives, ``radii`` None for them; ``radii`` of single-radius spheres is the number itself, which a
        sphere input takes as it is). A custom shape's ``points`` are its data rows.
    pointer : int
        The address of the records (0 without shapes).
    """

    def __init__(self, scene: Scene, placement: Placement, material_pointer: Callable[[Material], int]) -> None:
        self.groups: list[tuple[str, int, int]] = []
        self.shapes: list[Any] = []
        for kind, members in _grouped(list(scene.shapes)):
            self.groups.append((kind, len(self.shapes), len(members)))
            self.shapes += members
        self.points: list[Any] = []
        self.radii: list[Any] = []
        self.indices: list[Any] = []
        self.boxes: list[Any] = []
        records = np.zeros(len(self.shapes), SHAPE_RECORD)
        for k, shape in enumerate(self.shapes):
            self._place(shape, records[k], placement, material_pointer, f"shape {k} ({shape.label})")
        self.pointer = placement.upload(records, "shape records") if len(records) else 0
        self.ready = placement.ready()

    def __len__(self) -> int:
        return len(self.shapes)

    def _place(self, shape: Any, record: Any, placement: Placement, material_pointer: Callable[[Material], int],
               label: str) -> None:
        """Place one shape's arrays and fill its record."""
        address = placement.address
        if isinstance(shape, CustomPrimitives):
            points, radii, indices, boxes = self._place_custom(shape, record, placement, label)
        else:
            points, radii, indices, boxes = self._place_round(shape, record, placement, label)
        if shape.colors is not None:
            record["colors"] = address(placement.mesh_array(shape.colors, f"{label} colors", np.float32, False))
        if shape.material_ids is not None:
            ids = placement.mesh_array(shape.material_ids, f"{label} material ids", np.uint32, False)
            record["material_ids"] = address(ids)
        materials = np.zeros(len(shape.materials), SHAPE_MATERIAL)
        for j, material in enumerate(shape.materials):
            materials[j]["material"] = material_pointer(material)
            materials[j]["flags"] = shape_material_flags(material)
        record["materials"] = placement.upload(materials, f"{label} materials")
        record["kind"], record["count"] = SHAPE_KINDS[gas_kind(shape)], shape.num_primitives
        record["num_materials"] = len(shape.materials)
        self.points.append(points)
        self.radii.append(radii)
        self.indices.append(indices)
        self.boxes.append(boxes)

    @staticmethod
    def _place_round(shape: Spheres | Curves, record: Any, placement: Placement, label: str) -> tuple[Any, ...]:
        """Spheres' and curves' points, radii and (curves) segment indices."""
        address = placement.address
        points = placement.mesh_array(shape.centers if isinstance(shape, Spheres) else shape.points,
                                      f"{label} points", np.float32, False)
        radii = shape.radii
        if np.isscalar(radii) and isinstance(shape, Curves):  # a curve input takes a radius per control point
            radii = np.full(shape.num_points, radii, np.float32)
        single = np.isscalar(radii)
        placed_radii = placement.mesh_array(np.array([radii], np.float32) if single else radii, f"{label} radii",
                                            np.float32, False)
        record["points"], record["radii"] = address(points), address(placed_radii)
        record["flags"] = SHAPE_ONE_RADIUS if single else 0
        indices = None
        if isinstance(shape, Curves):
            indices = placement.mesh_array(shape.segments, f"{label} segments", (np.int32, np.uint32), False)
            record["indices"] = address(indices)
        return points, (radii if single else placed_radii), indices, None

    @staticmethod
    def _place_custom(shape: CustomPrimitives, record: Any, placement: Placement, label: str) -> tuple[Any, ...]:
        """Custom primitives' data rows and boxes, and their type."""
        points = placement.mesh_array(shape.data, f"{label} data", np.float32, False)
        boxes = placement.mesh_array(shape.boxes, f"{label} boxes", np.float32, False)
        record["points"], record["boxes"] = placement.address(points), placement.address(boxes)
        record["custom_type"], record["stride"] = custom_primitive_index(shape.primitive), shape.type.floats
        return points, None, None, boxes
