"""The scene tables: a :class:`~optixasync.scene.Scene` as the kernel reads it, built once by one code path.

:class:`SceneTables` turns a checked scene into device records through a
:class:`~optixasync.render._placement.Placement` (device memory, or host memory
for the CPU build of the kernel), table by table:

* :class:`TriangleGeometry`: the meshes' vertex, index and per-vertex
  attribute arrays (geometry by primitive kind: triangles);
* :class:`~optixasync.render._primitives.ShapeTable`: the spheres' and
  curves' arrays and one ``ShapeRecord`` per shape (the other kinds);
* :class:`~optixasync.render._motion.MotionTable`: the motion keys of
  moving meshes (motion blur), when any moves;
* :class:`MaterialTable`: the textures, each family's precomputed table and one
  ``MaterialRecord`` per distinct material;
* :class:`LightTable`: the light sources of every registered light type (the
  environment, the emissive triangles' emitter table, punctual lights), their
  selection probabilities by power, one ``LightRecord`` each;
* the ``MeshRecord`` array, which points into all three, and the
  ``SceneRecord`` that the launch parameters take in one assignment.

Each table keeps what it placed and a readiness of its uploads. The
acceleration structure is not a table: the device scene builds it over the
geometry's arrays (:mod:`._device_scene`).

Blocking calls
--------------
None here: the placement lists its own (a device placement reads back the
vertices of emissive meshes given as device arrays, once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..scene import Material, Scene, bsdf_family
from ._emitters import EmitterTable, build_emitter_table, is_light_sampled
from ._layout import LIGHT_RECORD, MATERIAL_RECORD, SCENE_RECORD
from ._motion import MotionTable
from ._params import material_record, mesh_records, place_records
from ._primitives import ShapeTable
from .lights import light_type, light_types

if TYPE_CHECKING:
    from ._placement import Placement

__all__ = ["ENVIRONMENT_PROBABILITY_RANGE", "LightTable", "MaterialTable", "SceneTables", "TriangleGeometry",
           "needs_instances", "scene_radius", "selection_probabilities"]


def needs_instances(scene: Scene) -> bool:
    """Whether rays trace ``scene`` through an instance structure: it has instanced meshes, shapes (one GAS per
    primitive kind) or moving meshes (motion transforms, motion GAS); else one GAS holds every mesh."""
    return bool(scene.instanced) or bool(scene.shapes) or bool(scene.moving)


def _labels(scene: Scene) -> list[str]:
    return [f"mesh {k} ({m.name!r})" if m.name else f"mesh {k}" for k, m in enumerate(scene.meshes)]


class TriangleGeometry:
    """The triangle meshes' arrays where the kernel reads them (instances share the arrays they share).

    Attributes
    ----------
    vertices, indices : list
        Per mesh, the placed (V, 3) float32 and (F, 3) index arrays.
    attributes : list of (normals, uvs, tangents, colors)
        Per mesh, the placed attribute arrays (None for those it lacks).
    """

    def __init__(self, scene: Scene, placement: Placement) -> None:
        shared = bool(scene.instanced)  # instances share arrays; otherwise every mesh has its own copy
        labels = _labels(scene)
        self.vertices = [placement.mesh_array(m.vertices, f"{label} vertices", np.float32, shared)
                         for m, label in zip(scene.meshes, labels, strict=True)]
        self.indices = [placement.mesh_array(m.indices, f"{label} indices", (np.int32, np.uint32), shared)
                        for m, label in zip(scene.meshes, labels, strict=True)]
        self.attributes = [tuple(None if a is None else placement.mesh_array(a, f"{label} attribute", np.float32, shared)
                                 for a in (m.normals, m.uvs, m.tangents, m.colors))
                           for m, label in zip(scene.meshes, labels, strict=True)]
        self._placement = placement
        self.ready = placement.ready()

    def pointers(self) -> tuple[list[int], list[int], list[tuple[int, int, int, int]]]:
        """(vertex addresses, index addresses, attribute addresses (0 for none)) per mesh."""
        address = self._placement.address
        return ([address(v) for v in self.vertices], [address(i) for i in self.indices],
                [tuple(0 if a is None else address(a) for a in attrs) for attrs in self.attributes])  # type: ignore[misc]


class MaterialTable:
    """One ``MaterialRecord`` per distinct material, its textures, and each family's precomputed table.

    Attributes
    ----------
    materials : list of Material
        The distinct materials, in the order of first use (the meshes', then the shapes').
    pointers : list of int
        Per mesh, the address of its material's record.
    indices : list of int
        Per mesh, the index of its material in ``materials`` (the ``material_id`` output).
    texture_handle : callable
        A texture's handle (0 for None), as the records hold it.
    family_tables : dict of Material to int
        The address of each material's family table (:meth:`BsdfFamily.table`), for those that have one.
    """

    def __init__(self, scene: Scene, placement: Placement) -> None:
        index: dict[Material, int] = {}
        for mesh in scene.meshes:
            index.setdefault(mesh.material, len(index))
        for shape in scene.shapes:
            for material in shape.materials:
                index.setdefault(material, len(index))
        self.materials = list(index)
        self._index = index
        texture_handle = placement.textures([t for m in self.materials for t in m.textures.values()])
        tables = {}
        for material in self.materials:
            table = bsdf_family(material.bsdf).table(material)
            if table is not None:
                tables[material] = placement.upload(np.ascontiguousarray(table, np.float32), f"{material.bsdf} table")
        records = np.stack([material_record(m, texture_handle, tables.get(m, 0)) for m in self.materials])
        self.texture_handle = texture_handle  # what a rewrite of the records (:mod:`._table_updates`) needs
        self.family_tables = tables
        self._base = base = placement.upload(records, "material records")
        self.pointers = [base + MATERIAL_RECORD.itemsize * index[mesh.material] for mesh in scene.meshes]
        self.indices = [index[mesh.material] for mesh in scene.meshes]
        self.ready = placement.ready()

    @property
    def base(self) -> int:
        """The address of the records, one upload in :attr:`materials` order."""
        return self._base

    def pointer(self, material: Material) -> int:
        """The address of ``material``'s record (one of :attr:`materials`)."""
        return self._base + MATERIAL_RECORD.itemsize * self._index[material]


#: Bounds of the environment's selection probability when other lights exist.
ENVIRONMENT_PROBABILITY_RANGE = (0.25, 0.75)


def selection_probabilities(kinds: list[str], powers: list[float]) -> list[float]:
    """The probability that next-event estimation picks each light source, from their powers.

    Proportional to power, except the environment's (``kinds`` names each source's light type): bounded to
    :data:`ENVIRONMENT_PROBABILITY_RANGE` when other sources exist, the others sharing the rest by power. The
    bound is there because the environment's power counts light through the whole bounding sphere, most of which
    never reaches what the camera sees: with a large ground plane it sent 99% of the light samples to the sky,
    and the area lights' light came out very noisy. A source of no power is never picked.
    """
    if "environment" in kinds:
        k = kinds.index("environment")
        others = float(sum(p for j, p in enumerate(powers) if j != k))
        env = float(powers[k])
        if others <= 0:
            p_env = 1.0 if env > 0 else 0.0
        else:
            low, high = ENVIRONMENT_PROBABILITY_RANGE
            p_env = float(np.clip(env / (env + others), low, high)) if env > 0 else 0.0
        rest = 1.0 - p_env
        return [p_env if j == k else (rest * (p / others) if others > 0 else 0.0) for j, p in enumerate(powers)]
    total = float(sum(powers))
    return [p / total if total > 0 else 0.0 for p in powers]


def scene_radius(scene: Scene) -> float:
    """Half the diagonal of the bounding box of the scene's host meshes and shapes (1 when none is on the host)."""
    corners = []
    for m in scene.meshes:
        if m.on_device:
            continue
        low, high = m.vertices.min(axis=0).astype(np.float64), m.vertices.max(axis=0).astype(np.float64)
        if m.transform is not None:  # the 8 corners of the object's box, placed
            box = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
            placed = box @ m.transform[:, :3].T + m.transform[:, 3]
            low, high = placed.min(axis=0), placed.max(axis=0)
        corners.append(np.stack([low, high]))
    corners += [box for box in (shape.bounds() for shape in scene.shapes) if box is not None]
    if not corners:
        return 1.0
    box = np.concatenate(corners)
    return max(float(np.linalg.norm(box.max(axis=0) - box.min(axis=0))) / 2.0, 1e-6)


class LightTable:
    """The scene's light sources, one ``LightRecord`` each, in type order, with their selection probabilities.

    Attributes
    ----------
    emitters : EmitterTable
        The emissive triangles (the source of type ``"triangles"`` when it has entries).
    sources : list of (LightType, source, probability)
        The sources picked with a probability > 0, in the records' order.
    addresses : list of int
        Per source, the address of its data (its record, the emitter table, the environment's record).
    environment_probability : float
    pointer, emitters_pointer, environment_pointer : int
        Addresses of the records, of the emitter table and of the environment's record (0 without).
    """

    def __init__(self, scene: Scene, placement: Placement, geometry: TriangleGeometry,
                 emitters: EmitterTable | None = None) -> None:
        self.emitters = emitters if emitters is not None else _emitter_table(scene, placement, geometry)
        found = []
        for kind in light_types():
            sources = list(kind.sources(scene))
            if kind.name == "triangles" and len(self.emitters):
                sources = [self.emitters]
            found += [(kind, source) for source in sources]
        radius = scene_radius(scene)
        probabilities = selection_probabilities([k.name for k, _ in found], [k.power(s, radius) for k, s in found])
        self.sources = [(k, s, p) for (k, s), p in zip(found, probabilities, strict=True) if p > 0]
        records = np.zeros(len(self.sources), LIGHT_RECORD)
        cdf = 0.0
        self.environment_probability = 0.0
        self.emitters_pointer = self.environment_pointer = 0
        self.addresses: list[int] = []
        for j, (kind, source, probability) in enumerate(self.sources):
            address, count = kind.data(source, placement, probability)
            self.addresses.append(address)
            cdf = 1.0 if j == len(self.sources) - 1 else cdf + probability
            records[j]["type"] = light_types().index(kind)
            records[j]["cdf"], records[j]["probability"] = cdf, probability
            records[j]["count"], records[j]["data"] = count, address
            if kind is light_type("environment"):
                self.environment_probability, self.environment_pointer = probability, address
            elif kind is light_type("triangles"):
                self.emitters_pointer = address
        self.pointer = placement.upload(records, "light records") if len(records) else 0
        self.ready = placement.ready()


def _emitter_table(scene: Scene, placement: Placement, geometry: TriangleGeometry) -> EmitterTable:
    """The emitter table from the meshes' host values (device arrays of emissive meshes read back once)."""
    if not any(m.on_device and is_light_sampled(m) for m in scene.meshes):
        return build_emitter_table(scene.meshes)

    def host(placed: list[Any], originals: list[Any]) -> list[Any]:
        return [placement.host_copy(placed[k], originals[k]) if is_light_sampled(scene.meshes[k]) else None
                for k in range(len(scene.meshes))]

    return build_emitter_table(scene.meshes, host(geometry.vertices, [m.vertices for m in scene.meshes]),
                               host(geometry.indices, [m.indices for m in scene.meshes]))


class SceneTables:
    """Every table of a checked scene, and the ``SceneRecord`` pointing at them.

    Parameters
    ----------
    scene : Scene
        Checked (:func:`optixasync.render.check_scene`); read here: later changes are not seen.
    placement : Placement
    emitters : EmitterTable, optional
        The scene's emitter table, when the caller built it already (before any GPU work).

    Attributes
    ----------
    geometry : TriangleGeometry
    shapes : ShapeTable
    motions : MotionTable
    materials : MaterialTable
    lights : LightTable
    record : numpy structured scalar of SCENE_RECORD
        The launch parameters' ``scene`` field, but for ``handle`` (the device scene's structure).
    mesh_records : numpy array of MESH_RECORD
        The host copy of the mesh records (as last placed).
    """

    def __init__(self, scene: Scene, placement: Placement, emitters: EmitterTable | None = None) -> None:
        self.scene = scene
        self.geometry = TriangleGeometry(scene, placement)
        self.materials = MaterialTable(scene, placement)
        self.shapes = ShapeTable(scene, placement, self.materials.pointer)
        self.motions = MotionTable(scene, placement)
        self.lights = LightTable(scene, placement, self.geometry, emitters)
        vertices, indices, attributes = self.geometry.pointers()
        self.mesh_records = mesh_records(scene, vertices, indices, self.lights.emitters.offsets,
                                         self.materials.pointers, attributes)
        self._placement = placement
        self.record = np.zeros((), SCENE_RECORD)
        # A scene of shapes only has no mesh records.
        self.record["meshes"] = (placement.upload(self.mesh_records, "mesh records") if len(self.mesh_records)
                                 else 0)
        self.record["lights"], self.record["num_lights"] = self.lights.pointer, len(self.lights.sources)
        self.record["emitters"] = self.lights.emitters_pointer
        self.record["environment"] = self.lights.environment_pointer
        self.record["environment_probability"] = self.lights.environment_probability
        # Shapes and moving meshes need an instance structure, and then every mesh is an instance.
        self.record["instanced"] = int(needs_instances(scene))
        self.record["shapes"], self.record["num_shapes"] = self.shapes.pointer, len(self.shapes)
        self.record["motions"] = self.motions.pointer
        self.record["shutter_open"], self.record["shutter_close"] = scene.shutter or (0.0, 0.0)
        self.ready = placement.ready()

    def place(self, transforms: np.ndarray, stream: Any) -> None:
        """Rewrite the mesh records of the instanced meshes for new object-to-world ``transforms`` (M, 3, 4).

        On ``stream``, in place: launches ordered after it read the new placements (the placement's
        ``rewrite``; the caller checked ``transforms``).
        """
        records = place_records(self.mesh_records, transforms)
        self._placement.rewrite(int(self.record["meshes"]), records, stream)
        self.mesh_records = records
