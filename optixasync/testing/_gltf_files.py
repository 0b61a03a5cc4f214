"""glTF files written from Python for tests, fuzzing and benchmarks: :class:`GltfBuilder` and a few ready files.

:class:`GltfBuilder` holds a document and one binary buffer; accessors append
numpy arrays to the buffer, and :meth:`GltfBuilder.write_glb` /
:meth:`GltfBuilder.write_gltf` write a ``.glb`` or a ``.gltf`` (with a
``.bin`` beside it, or a ``data:`` URI). :func:`node_grid_glb` writes the
scaling benchmark's file: one triangle placed by many nodes.

Blocking calls
--------------
None: file writing on the host.
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["COMPONENT_TYPES", "GltfBuilder", "glb_bytes", "node_grid_glb"]

#: numpy dtype -> glTF accessor componentType.
COMPONENT_TYPES = {np.dtype(np.int8): 5120, np.dtype(np.uint8): 5121, np.dtype(np.int16): 5122,
                   np.dtype(np.uint16): 5123, np.dtype(np.uint32): 5125, np.dtype(np.float32): 5126}
_TYPES = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}
_TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)


class GltfBuilder:
    """A glTF document under construction: one binary buffer, accessors appended to it."""

    def __init__(self) -> None:
        self.doc: dict[str, Any] = {"asset": {"version": "2.0"}}
        self.blob = bytearray()

    def add(self, key: str, item: Any) -> int:
        """Append ``item`` to the document's array ``key``; its index."""
        self.doc.setdefault(key, []).append(item)
        return len(self.doc[key]) - 1

    def view(self, data: bytes, stride: int | None = None) -> int:
        """A buffer view of ``data`` (appended to the buffer, 4-byte aligned); its index."""
        self.blob += b"\0" * (-len(self.blob) % 4)
        view = {"buffer": 0, "byteOffset": len(self.blob), "byteLength": len(data)}
        if stride:
            view["byteStride"] = stride
        self.blob += data
        return self.add("bufferViews", view)

    def accessor(self, array: Any, *, normalized: bool = False, view: int | None = None, **extra: Any) -> int:
        """An accessor of ``array`` (1-D: SCALAR; (N, W): VECW), in a new view unless ``view`` is given (-1: none)."""
        array = np.ascontiguousarray(array)
        width = 1 if array.ndim == 1 else array.shape[1]
        accessor = {"componentType": COMPONENT_TYPES[array.dtype], "count": len(array), "type": _TYPES[width],
                    **extra}
        if view is None:
            accessor["bufferView"] = self.view(array.tobytes())
        elif view >= 0:
            accessor["bufferView"] = view
        if normalized:
            accessor["normalized"] = True
        return self.add("accessors", accessor)

    def mesh(self, vertices: Any, indices: Any = None, material: int | None = None, name: str | None = None,
             **attributes: Any) -> int:
        """A mesh of one triangle primitive (float32 attributes, uint32 indices unless unsigned already)."""
        prim: dict[str, Any] = {"attributes": {"POSITION": self.accessor(np.asarray(vertices, np.float32))}}
        for semantic, values in attributes.items():
            prim["attributes"][semantic] = self.accessor(np.asarray(values, np.float32))
        if indices is not None:
            indices = np.asarray(indices)
            prim["indices"] = self.accessor(indices.astype(np.uint32) if indices.dtype.kind == "i" else indices)
        if material is not None:
            prim["material"] = material
        mesh: dict[str, Any] = {"primitives": [prim]}
        if name:
            mesh["name"] = name
        return self.add("meshes", mesh)

    def node(self, **node: Any) -> int:
        return self.add("nodes", node)

    def scene(self, *roots: int) -> None:
        """Make the scene's roots ``roots`` (the default scene)."""
        self.doc["scenes"] = [{"nodes": list(roots)}]
        self.doc["scene"] = 0

    def image(self, path: Path, pixels: Any) -> int:
        """Save ``pixels`` (uint8) as an image file at ``path`` and add an image naming it."""
        from PIL import Image

        Image.fromarray(np.asarray(pixels, np.uint8)).save(path)
        return self.add("images", {"uri": path.name})

    def write_gltf(self, path: Path, *, data_uri: bool = False) -> Path:
        """Write ``path`` (.gltf) with the buffer beside it (``{stem}.bin``) or inside (a base64 data URI)."""
        path = Path(path)
        doc = json.loads(json.dumps(self.doc))
        blob = bytes(self.blob)
        if data_uri:
            uri = "data:application/octet-stream;base64," + base64.b64encode(blob).decode()
        else:
            uri = path.stem + ".bin"
            (path.parent / uri).write_bytes(blob)
        doc["buffers"] = [{"uri": uri, "byteLength": len(blob)}]
        path.write_text(json.dumps(doc))
        return path

    def write_glb(self, path: Path) -> Path:
        """Write ``path`` (.glb): the JSON chunk and the buffer as the binary chunk."""
        path = Path(path)
        doc = json.loads(json.dumps(self.doc))
        blob = bytes(self.blob) + b"\0" * (-len(self.blob) % 4)
        doc["buffers"] = [{"byteLength": len(blob)}]
        path.write_bytes(glb_bytes(doc, blob))
        return path


def glb_bytes(doc: dict[str, Any], blob: bytes | None) -> bytes:
    """A GLB container of the JSON ``doc`` and the binary chunk ``blob`` (None: no binary chunk)."""
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text
    if blob is not None:
        blob = blob + b"\0" * (-len(blob) % 4)
        body += struct.pack("<II", len(blob), 0x004E4942) + blob
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body


def node_grid_glb(path: Path, nodes: int) -> Path:
    """A .glb of one triangle placed by ``nodes`` nodes, each a root with its own translation (a 100-wide grid)."""
    doc = {
        "asset": {"version": "2.0"},
        "buffers": [{"byteLength": 36}],
        "bufferViews": [{"buffer": 0, "byteLength": 36}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0],
                       "max": [1, 1, 0]}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
        "nodes": [{"mesh": 0, "translation": [float(k % 100), float(k // 100), 0.0]} for k in range(nodes)],
        "scenes": [{"nodes": list(range(nodes))}],
        "scene": 0,
    }
    path = Path(path)
    path.write_bytes(glb_bytes(doc, _TRIANGLE.tobytes()))
    return path
