"""glTF primitives as object-space :class:`Mesh` objects: attributes, indices, strips and fans, tangents.

A primitive's ``POSITION``, ``NORMAL``, ``TEXCOORD_0``, ``TANGENT`` and
``COLOR_0`` become the mesh's arrays (glTF's UV convention is already ours); a
non-indexed primitive gets sequential indices; triangle strips and fans
become triangle lists; points and lines are skipped with a warning. Where a
normal map needs tangents the file does not give, :func:`generate_tangents`
makes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._frames import generate_tangents
from ._gltf_data import GltfDocument
from ._gltf_json import integer
from ._gltf_materials import GltfMaterials
from ._mesh import Mesh

__all__ = ["read_primitive"]

# Primitive modes.
_TRIANGLES, _TRIANGLE_STRIP, _TRIANGLE_FAN = 4, 5, 6
_SKIPPED_MODES = {0: "POINTS", 1: "LINES", 2: "LINE_LOOP", 3: "LINE_STRIP"}


def triangles(indices: np.ndarray, mode: int) -> np.ndarray:
    """Triangle list (F, 3) from a list, strip or fan of vertex indices (strip and fan degenerates dropped).

    Strip triangle ``i`` is ``(i, i + 1 + i % 2, i + 2 - i % 2)`` and fan
    triangle ``i`` is ``(i + 1, i + 2, 0)``, as glTF defines them: every
    triangle keeps the first one's winding.
    """
    if mode == _TRIANGLES:
        return indices.reshape(-1, 3)
    n = len(indices) - 2
    if n <= 0:
        return np.empty((0, 3), indices.dtype)
    i = np.arange(n)
    if mode == _TRIANGLE_STRIP:
        tri = np.stack([indices[i], indices[i + 1 + i % 2], indices[i + 2 - i % 2]], axis=1)
    else:
        tri = np.stack([indices[i + 1], indices[i + 2], np.full(n, indices[0])], axis=1)
    # Strips repeat an index to restart; those triangles have no area.
    keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
    return tri[keep]


def read_primitive(doc: GltfDocument, materials: GltfMaterials, mesh_index: int, p: int,
                   primitives: list[dict[str, Any]] | None = None) -> Mesh | None:
    """Primitive ``p`` of glTF mesh ``mesh_index`` as an object-space :class:`Mesh`, or None when skipped.

    ``primitives``: the mesh's list as :func:`primitive_list` checked it (a mesh's reader checks it once: checking
    it again per primitive took 10.6 s for 20,000 primitives).

    Raises
    ------
    ValueError
        Naming the file, the mesh and the primitive: a missing ``POSITION``,
        attributes of different lengths, indices out of range or not whole
        triangles, a textured material without ``TEXCOORD_0``.
    """
    gltf_mesh = doc.items("meshes")[mesh_index]
    if primitives is None:
        primitives = primitive_list(doc, gltf_mesh, mesh_index)
    base = gltf_mesh.get("name") if isinstance(gltf_mesh.get("name"), str) else None
    base = base[:200] if base else f"mesh{mesh_index}"
    name = base if len(primitives) == 1 else f"{base}[{p}]"
    prim = primitives[p]
    label = f"mesh {mesh_index} ({base!r}) primitive {p}"
    mode = prim.get("mode", _TRIANGLES)
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= _TRIANGLE_FAN:
        raise ValueError(f"{doc.file}: {label} has unknown mode {str(mode)[:16]}")
    if mode in _SKIPPED_MODES:
        doc.warn_once(f"mode:{mesh_index}:{p}", f"{label} is {_SKIPPED_MODES[mode]}, not triangles: skipped")
        return None
    attrs = _attributes(doc, prim, label)
    vertices = attrs["POSITION"]
    indices = _indices(doc, prim, len(vertices), label)
    if mode == _TRIANGLES and len(indices) % 3:
        raise ValueError(f"{doc.file}: {label}: {len(indices)} vertex indices do not make whole triangles")
    tri = triangles(indices, mode)
    if len(tri) == 0:
        doc.warn_once(f"empty:{mesh_index}:{p}", f"{label} has no triangles: skipped")
        return None
    material = materials.material(prim.get("material"))
    uvs = attrs.get("TEXCOORD_0")
    if material.textures and uvs is None:
        raise ValueError(f"{doc.file}: {label} has no TEXCOORD_0 but its "
                         f"{materials.material_label(prim.get('material'))} has textures "
                         f"({', '.join(material.textures)})")
    tangents = attrs.get("TANGENT")
    if tangents is not None:
        tangents = tangents.copy()
        tangents[:, 3] = np.where(tangents[:, 3] < 0.0, -1.0, 1.0)  # w is +-1 by the specification
    elif material.normal_texture is not None:
        tangents = generate_tangents(vertices, tri, uvs, attrs.get("NORMAL"))
    dtype = np.int32 if len(vertices) < 2**31 else np.uint32
    try:
        return Mesh(_f32(vertices), np.ascontiguousarray(tri, dtype=dtype), material, name,
                    normals=_f32(attrs.get("NORMAL")), uvs=_f32(uvs), tangents=_f32(tangents),
                    colors=_f32(attrs.get("COLOR_0")))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{doc.file}: {label}: {exc}") from None


def primitive_list(doc: GltfDocument, gltf_mesh: dict[str, Any], mesh_index: int) -> list[dict[str, Any]]:
    """The ``primitives`` of a glTF mesh: a non-empty array of objects; ValueError naming the mesh otherwise."""
    primitives = gltf_mesh.get("primitives")
    if not isinstance(primitives, list) or not primitives or not all(isinstance(q, dict) for q in primitives):
        raise ValueError(f"{doc.file}: mesh {mesh_index}: primitives must be a non-empty array of objects")
    return primitives


def _attributes(doc: GltfDocument, prim: dict[str, Any], label: str) -> dict[str, np.ndarray]:
    """The primitive's POSITION and, where present, NORMAL, TEXCOORD_0, TANGENT and COLOR_0, as float64 arrays."""
    attributes = prim.get("attributes")
    if not isinstance(attributes, dict) or attributes.get("POSITION") is None:
        raise ValueError(f"{doc.file}: {label} has no POSITION attribute")
    if prim.get("targets"):
        doc.warn_once("morph", f"morph targets (first on {label}) are not supported (ignored): the base "
                      "geometry is used")
    out = {"POSITION": doc.accessor(attributes["POSITION"], f"POSITION of {label}", ("VEC3",))}
    count = len(out["POSITION"])
    for semantic, types in (("NORMAL", ("VEC3",)), ("TEXCOORD_0", ("VEC2",)), ("TANGENT", ("VEC4",)),
                            ("COLOR_0", ("VEC3", "VEC4"))):
        if attributes.get(semantic) is None:
            continue
        if semantic == "COLOR_0":
            _check_color_accessor(doc, attributes[semantic], label)
        values = doc.accessor(attributes[semantic], f"{semantic} of {label}", types)
        if len(values) != count:
            raise ValueError(f"{doc.file}: {label}: {semantic} has {len(values)} elements but POSITION has {count}")
        out[semantic] = values
    return out


def _check_color_accessor(doc: GltfDocument, accessor: Any, label: str) -> None:
    """COLOR_0 must be float, or unsigned bytes or shorts normalized (the specification's three kinds)."""
    acc = doc.items("accessors")[doc.idx(accessor, "accessors", f"COLOR_0 of {label}: accessor")]
    kind = acc.get("componentType")
    if kind != 5126 and not (kind in (5121, 5123) and acc.get("normalized") is True):
        raise ValueError(f"{doc.file}: {label}: COLOR_0 must be float, or normalized unsigned bytes or shorts "
                         f"(componentType {str(kind)[:16]}, normalized {acc.get('normalized')!r})")


def _indices(doc: GltfDocument, prim: dict[str, Any], count: int, label: str) -> np.ndarray:
    """The primitive's vertex indices (int64), checked against ``count`` vertices; sequential when it has none."""
    if prim.get("indices") is None:
        return np.arange(count, dtype=np.int64)
    integer(prim["indices"], f"{doc.file}: {label}: indices")
    indices = doc.accessor(prim["indices"], f"indices of {label}", ("SCALAR",), as_float=False)[:, 0]
    if indices.dtype.kind != "u":
        raise ValueError(f"{doc.file}: {label}: indices must be unsigned bytes, shorts or ints, got {indices.dtype}")
    indices = indices.astype(np.int64)
    if indices.size and int(indices.max()) >= count:
        raise ValueError(f"{doc.file}: {label}: index {int(indices.max())} is out of range: POSITION has {count} "
                         "vertices")
    return indices


def _f32(array: np.ndarray | None) -> np.ndarray | None:
    return None if array is None else np.ascontiguousarray(array, dtype=np.float32)
