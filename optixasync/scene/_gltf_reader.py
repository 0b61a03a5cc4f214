"""The glTF reader: one file's document, node graph, primitives, cameras, lights and animations into a GltfAsset.

Counts come first: the node placements (:func:`~optixasync.scene._gltf_nodes.count_placements`),
then the instances they make with ``EXT_mesh_gpu_instancing`` and every
primitive of their meshes, from the counts the JSON declares, each checked
against :class:`~optixasync.scene.LoadLimits` before anything is built.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..validation import SINGULAR_TOLERANCE
from ._gltf_animation import read_animations
from ._gltf_asset import GltfAsset, GltfInstance
from ._gltf_cameras import read_camera, read_light, scene_lights
from ._gltf_data import GltfDocument
from ._gltf_json import integer
from ._gltf_materials import GltfMaterials
from ._gltf_mesh import primitive_list, read_primitive
from ._gltf_nodes import Placements, node_locals, normalized_quaternions, place_nodes, scene_roots, trs_matrices
from ._material import Material

__all__ = ["GltfReader"]

_GPU_INSTANCING = "EXT_mesh_gpu_instancing"


def singular(matrices: np.ndarray) -> np.ndarray:
    """(M,) whether each 4x4's linear part is singular, by the rule :func:`~optixasync.validation.as_affine` uses."""
    linear = matrices[:, :3, :3]
    with np.errstate(all="ignore"):
        scale = np.maximum(np.abs(linear).max(axis=(1, 2)), 1e-300)
        return ~(np.abs(np.linalg.det(linear)) > SINGULAR_TOLERANCE * scale**3)


class GltfReader:
    """Reads one :class:`GltfDocument` into a :class:`GltfAsset` (with ``material``: every primitive's material)."""

    def __init__(self, doc: GltfDocument, material: Material | None = None) -> None:
        self.doc = doc
        self.file = doc.file
        self.materials = GltfMaterials(doc, material)
        self.nodes = doc.items("nodes")
        self.lights = scene_lights(doc)
        self.gpu: dict[int, np.ndarray | None] = {}
        self.primitives: dict[int, int] = {}  # mesh index -> its number of primitives

    def read(self) -> GltfAsset:
        doc = self.doc
        doc.check_extensions()
        locals_ = node_locals(doc)
        names = [(name[:200] if len(name) > 200 else name) if type(name) is str and name else f"node{k}"
                 for k, name in enumerate([node.get("name") for node in self.nodes])]
        placements = place_nodes(doc, locals_, scene_roots(doc, locals_.children))
        asset = GltfAsset(doc.path, node_names=names, json=doc.json, placements=placements,
                          node_matrices=locals_.matrix)
        placed_nodes = np.unique(placements.node).tolist()
        mesh_of = self.check_instances(placements, placed_nodes)
        if any("camera" in self.nodes[k] or "extensions" in self.nodes[k] for k in placed_nodes):
            self.place_cameras_and_lights(asset, placements, names)
        self.place_meshes(asset, placements, mesh_of)
        if doc.items("animations"):
            asset.animations = read_animations(doc, locals_)
        asset.materials = dict(self.materials.materials)
        return asset

    def place_cameras_and_lights(self, asset: GltfAsset, placements: Placements, names: list[str]) -> None:
        """Append a camera or light record per placement of a node with one, in placement order."""
        doc = self.doc
        for p, k in enumerate(placements.node.tolist()):
            node = self.nodes[k]
            if node.get("camera") is not None:
                index = doc.idx(node["camera"], "cameras", f"node {k} ({names[k]!r}): camera")
                camera = read_camera(doc, index, k, placements.world[p], names[k])
                asset.cameras.append(dataclasses.replace(camera, placement=p))
            light = doc.extension(node, "KHR_lights_punctual", f"node {k}") if "extensions" in node else None
            if light is not None:
                index = _light_index(doc, light, self.lights, k)
                asset.lights.append(read_light(doc, self.lights, index, k, placements.world[p], names[k]))

    def check_instances(self, placements: Placements, placed_nodes: list[int]) -> dict[int, int]:
        """Each placed mesh node's mesh index; the instances they make checked against ``max_instances``.

        Counted from the JSON (placements times ``EXT_mesh_gpu_instancing`` counts times primitives),
        before any accessor is read.
        """
        doc = self.doc
        meshes = doc.items("meshes")
        nodes = self.nodes
        mesh_of = {k: mesh for k in placed_nodes if (mesh := nodes[k].get("mesh")) is not None}
        per_node = np.zeros(len(nodes), np.int64)
        for k, mesh in mesh_of.items():
            if type(mesh) is not int or not 0 <= mesh < len(meshes):
                doc.idx(mesh, "meshes", f"node {k}: mesh")
            if mesh not in self.primitives:
                self.primitives[mesh] = len(primitive_list(doc, meshes[mesh], mesh))
            node = nodes[k]
            gpu = self.declared_instances(node, k) if "extensions" in node else 1
            per_node[k] = min(self.primitives[mesh] * gpu, doc.limits.max_instances + 1)
            if "skin" in node and node["skin"] is not None:
                doc.warn_once("skin", f"node {k} is skinned: skins are not supported (ignored), meshes are placed "
                              "by their nodes unskinned")
        total = int(per_node[placements.node].sum())
        doc.budget.check(total, "max_instances", "the primitive instances the nodes place")
        return mesh_of

    def declared_instances(self, node: dict[str, Any], k: int) -> int:
        """How many instances ``EXT_mesh_gpu_instancing`` of node ``k`` declares (1 without it)."""
        extension = self.doc.extension(node, _GPU_INSTANCING, f"node {k}")
        if extension is None:
            return 1
        attributes = extension.get("attributes")
        if not isinstance(attributes, dict) or not attributes:
            raise ValueError(f"{self.file}: node {k} {_GPU_INSTANCING} has no TRANSLATION, ROTATION or SCALE "
                             "attribute")
        counts = set()
        for name, accessor in attributes.items():
            acc = self.doc.items("accessors")[self.doc.idx(accessor, "accessors", f"node {k} {_GPU_INSTANCING} "
                                                                                  f"{str(name)[:32]}")]
            counts.add(integer(acc.get("count"), f"{self.file}: node {k} {_GPU_INSTANCING} {str(name)[:32]} count"))
        return max(counts)

    def place_meshes(self, asset: GltfAsset, placements: Placements, mesh_of: dict[int, int]) -> None:
        """Append the instances of every mesh placement (primitives read on first use), skipping singular ones."""
        doc = self.doc
        nodes = placements.node.tolist()
        rows = [p for p, k in enumerate(nodes) if k in mesh_of]
        if not rows:
            return
        hidden = singular(placements.world[rows]).tolist()
        skipped = sum(hidden)
        keys: dict[int, list[tuple[int, int]]] = {}  # mesh -> keys of its triangle primitives, read on first use
        instances = asset.instances
        world = placements.world
        for p, hide in zip(rows, hidden, strict=True):
            k = nodes[p]
            mesh_index = mesh_of[k]
            gpu = self.gpu_matrices(k) if "extensions" in self.nodes[k] else None
            if gpu is None and hide:
                continue
            if gpu is not None:
                matrices = world[p] @ gpu
                keep = np.flatnonzero(~singular(matrices))
                skipped += len(gpu) - len(keep)
                if not len(keep):
                    continue
            if mesh_index not in keys:  # on the first visible use, as the file's order says
                keys[mesh_index] = self.read_mesh(asset, mesh_index)
            if gpu is None:
                matrix = world[p]
                for key in keys[mesh_index]:
                    instances.append(GltfInstance(key, matrix, k, p))
                continue
            for key in keys[mesh_index]:
                instances.extend(GltfInstance(key, matrices[g], k, p, gpu[g]) for g in keep.tolist())
        if skipped:  # a zero scale is a common way to hide a node
            doc.warn_once("singular", f"{skipped} mesh placement(s) have a singular world transform (a zero scale): "
                          "they are invisible and skipped")

    def read_mesh(self, asset: GltfAsset, mesh_index: int) -> list[tuple[int, int]]:
        """Read every primitive of a glTF mesh into ``asset.meshes``; the keys of those that are triangles."""
        keys = []
        checked = primitive_list(self.doc, self.doc.items("meshes")[mesh_index], mesh_index)  # once per mesh
        for primitive in range(self.primitives[mesh_index]):
            mesh = read_primitive(self.doc, self.materials, mesh_index, primitive, checked)
            if mesh is not None:
                asset.meshes[(mesh_index, primitive)] = mesh
                keys.append((mesh_index, primitive))
        return keys

    def gpu_matrices(self, k: int) -> np.ndarray | None:
        """The (G, 4, 4) ``EXT_mesh_gpu_instancing`` matrices of node ``k`` (read once), or None without it."""
        if k in self.gpu:
            return self.gpu[k]
        extension = self.doc.extension(self.nodes[k], _GPU_INSTANCING, f"node {k}")
        out = None if extension is None else self.read_gpu_instances(extension, f"node {k} {_GPU_INSTANCING}")
        self.gpu[k] = out
        return out

    def read_gpu_instances(self, extension: dict[str, Any], what: str) -> np.ndarray:
        attributes = extension["attributes"]
        columns = {}
        for name, types in (("TRANSLATION", ("VEC3",)), ("ROTATION", ("VEC4",)), ("SCALE", ("VEC3",))):
            if name in attributes:
                columns[name] = self.doc.accessor(attributes[name], f"{what} {name}", types)
        if not columns:
            raise ValueError(f"{self.file}: {what} has no TRANSLATION, ROTATION or SCALE attribute")
        counts = {len(v) for v in columns.values()}
        if len(counts) != 1:
            raise ValueError(f"{self.file}: {what}: its attributes have different counts {sorted(counts)}")
        count = counts.pop()
        t = columns.get("TRANSLATION", np.zeros((count, 3)))
        q = columns.get("ROTATION", np.tile([0.0, 0.0, 0.0, 1.0], (count, 1)))
        s = columns.get("SCALE", np.ones((count, 3)))
        return trs_matrices(t, normalized_quaternions(q, self.file, f"{what} instance"), s)


def _light_index(doc: GltfDocument, light: dict[str, Any], lights: list[dict[str, Any]], k: int) -> int:
    index = light.get("light")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(lights):
        raise ValueError(f"{doc.file}: node {k}: KHR_lights_punctual light {str(index)[:16]} is out of range: the "
                         f"file has {len(lights)} lights")
    return index

