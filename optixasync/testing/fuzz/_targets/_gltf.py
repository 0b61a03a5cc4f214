"""The glTF reader's target: valid seed files (every feature it reads) mutated as JSON trees and as bytes.

Documented outcomes only: a scene, or ``OSError`` (files) / ``ValueError`` (content, ``LoadLimitError`` and
``AssetPathError`` among them).
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from ....scene import load_gltf
from ..._gltf_files import GltfBuilder, glb_bytes
from .._harness import encode
from .._mutators import HOSTILE_PATHS, mutate_bytes, mutate_json
from .._target import FileTarget, register

TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)


def png(pixels: Any) -> bytes:
    """A PNG of ``pixels`` (uint8)."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.asarray(pixels, np.uint8)).save(out, format="PNG")
    return out.getvalue()


def _featured() -> GltfBuilder:
    a = GltfBuilder()
    image = a.add("images", {"bufferView": a.view(png(np.full((4, 4, 3), 200))), "mimeType": "image/png"})
    a.add("samplers", {"wrapS": 33071, "magFilter": 9728})
    a.add("textures", {"source": image, "sampler": 0})
    material = a.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0, "extensions": {
        "KHR_texture_transform": {"offset": [0.1, 0.2], "scale": [2, 2]}}}, "metallicFactor": 0.3},
        "normalTexture": {"index": 0}, "emissiveFactor": [1, 1, 1], "alphaMode": "MASK", "doubleSided": True})
    mesh = a.mesh(TRIANGLE, [0, 1, 2], material, TEXCOORD_0=TRIANGLE[:, :2], NORMAL=[[0, 0, 1]] * 3,
                  COLOR_0=[[1, 0, 0, 1]] * 3)
    child = a.node(mesh=mesh, translation=[1, 0, 0], rotation=[0, 0, 0.7071, 0.7071], scale=[1, 2, 1])
    a.add("cameras", {"type": "perspective", "perspective": {"yfov": 0.8, "znear": 0.1, "aspectRatio": 1.5}})
    a.add("cameras", {"type": "orthographic", "orthographic": {"xmag": 1, "ymag": 1, "znear": 0, "zfar": 10}})
    a.doc["extensionsUsed"] = ["KHR_texture_transform", "KHR_lights_punctual"]
    a.doc["extensions"] = {"KHR_lights_punctual": {"lights": [{"type": "spot", "spot": {"outerConeAngle": 0.5}},
                                                              {"type": "point", "range": 4}]}}
    lamp = a.node(extensions={"KHR_lights_punctual": {"light": 0}}, translation=[0, 3, 0])
    a.scene(a.node(children=[child, lamp], matrix=[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 2, 1]),
            a.node(camera=0, translation=[0, 0, 5]), a.node(camera=1))
    times = a.accessor(np.array([0.0, 1.0, 2.0], np.float32))
    moves = a.accessor(np.array([[0, 0, 0], [1, 1, 1], [0, 2, 0]], np.float32))
    turns = a.accessor(np.array([[0, 0, 0, 1], [0, 0.7071, 0, 0.7071], [0, 1, 0, 0]], np.float32))
    a.add("animations", {"samplers": [{"input": times, "output": moves}, {"input": times, "output": turns,
                                                                          "interpolation": "STEP"}],
                         "channels": [{"sampler": 0, "target": {"node": child, "path": "translation"}},
                                      {"sampler": 1, "target": {"node": child, "path": "rotation"}}]})
    return a


def _instanced() -> GltfBuilder:
    b = GltfBuilder()
    base = b.accessor(np.zeros((4, 3), np.float32))
    b.doc["accessors"][base]["sparse"] = {
        "count": 2, "indices": {"bufferView": b.view(np.array([1, 3], np.uint16).tobytes()), "componentType": 5123},
        "values": {"bufferView": b.view(np.array([[1, 0, 0], [0, 1, 0]], np.float32).tobytes())}}
    fan = b.add("meshes", {"primitives": [{"attributes": {"POSITION": base}, "mode": 6},
                                          {"attributes": {"POSITION": base}, "mode": 0}]})
    b.doc["extensionsUsed"] = ["EXT_mesh_gpu_instancing"]
    offsets = b.accessor(np.array([[0, 0, 0], [3, 0, 0], [0, 3, 0]], np.float32))
    shared = b.node(mesh=fan, extensions={"EXT_mesh_gpu_instancing": {"attributes": {"TRANSLATION": offsets}}})
    b.scene(b.node(children=[shared]), b.node(children=[shared], scale=[2, 2, 2]))
    b.add("images", {"uri": "tex.png"})
    b.add("textures", {"source": 0})
    b.add("materials", {"pbrMetallicRoughness": {"metallicRoughnessTexture": {"index": 0}}})
    return b


def seed_documents() -> list[GltfBuilder]:
    """Valid files using what the reader reads: textures, samplers, sparse data, cameras, lights, instancing,
    animations, a node hierarchy."""
    return [_featured(), _instanced()]


@register
class GltfTarget(FileTarget):
    """glTF and GLB files: a seed file, its buffer beside it, JSON edits, then maybe byte edits."""

    name = "gltf"
    cases = 160
    allowed = (OSError, ValueError)
    load = staticmethod(load_gltf)

    def __init__(self) -> None:
        super().__init__()
        self._seeds: list[GltfBuilder] | None = None

    def prepare(self, folder: Path) -> None:
        (folder / "tex.png").write_bytes(png(np.zeros((2, 2, 4))))
        (folder / "sub").mkdir(exist_ok=True)

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        if self._seeds is None:
            self._seeds = seed_documents()
        builder = rng.choice(self._seeds)
        doc = json.loads(json.dumps(builder.doc))
        blob = bytes(builder.blob)
        glb = rng.random() < 0.5
        doc["buffers"] = [{"byteLength": len(blob)}] if glb else [{"uri": "t.bin", "byteLength": len(blob)}]
        if not valid:
            if rng.random() < 0.25:  # the paths the file names: out of the folder, odd, encoded
                holders = list(doc["buffers"]) + list(doc.get("images", []))
                rng.choice(holders)["uri"] = rng.choice(HOSTILE_PATHS)
            doc = mutate_json(doc, rng, 1 if rng.random() < 0.5 else rng.randrange(2, 6))
        data = glb_bytes(doc, blob) if glb else json.dumps(doc).encode()
        if not valid and rng.random() < 0.3:
            data = mutate_bytes(data, rng, rng.randrange(1, 8))
        name = "case.glb" if glb else "case.gltf"
        bin_blob = blob if valid or rng.random() < 0.8 else bytes(rng.choice(self._seeds).blob)
        return {"files": {name: encode(data), "t.bin": encode(bin_blob)}, "open": name, "valid": valid}

    def verify(self, case: dict[str, Any], outcome: str, value: Any) -> None:
        if outcome == "ok":
            assert value.meshes or not case.get("valid"), "a valid file gave a scene without meshes"
