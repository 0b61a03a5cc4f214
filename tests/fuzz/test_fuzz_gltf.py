"""Fuzzing the glTF reader: valid seed files (every feature it reads) mutated as JSON trees and as bytes.

Documented outcomes only: a scene, or ``OSError`` (files) / ``ValueError`` (content, ``LoadLimitError`` and
``AssetPathError`` among them); checked by the harness in ``conftest.py``.
"""

from __future__ import annotations

import io
import json
import math
import random
import warnings
from collections import Counter
from functools import partial

import numpy as np
from conftest import LIMITS, check_case
from fuzzing import HOSTILE_PATHS, mutate_bytes, mutate_json
from PIL import Image

from optixasync.scene import load_gltf
from optixasync.testing import GltfBuilder, glb_bytes

CASES = 160  # per seed: glTF and GLB, JSON edits and byte edits
ALLOWED = (OSError, ValueError)
TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)


def png(pixels) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.asarray(pixels, np.uint8)).save(out, format="PNG")
    return out.getvalue()


def seed_documents() -> list[GltfBuilder]:
    """Valid files using what the reader reads: textures, samplers, sparse data, cameras, lights, instancing,
    animations, a node hierarchy."""
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
    return [a, b]


def write_case(rng: random.Random, folder, seeds: list[GltfBuilder]):
    """One mutated file in ``folder``: a .gltf (buffer beside it) or a .glb; JSON edits, then maybe byte edits."""
    builder = rng.choice(seeds)
    doc = json.loads(json.dumps(builder.doc))
    blob = bytes(builder.blob)
    glb = rng.random() < 0.5
    doc["buffers"] = [{"byteLength": len(blob)}] if glb else [{"uri": "t.bin", "byteLength": len(blob)}]
    if rng.random() < 0.25:  # the paths the file names: out of the folder, odd, encoded
        holders = [b for b in doc["buffers"]] + list(doc.get("images", []))
        rng.choice(holders)["uri"] = rng.choice(HOSTILE_PATHS)
    doc = mutate_json(doc, rng, 1 if rng.random() < 0.5 else rng.randrange(2, 6))
    if glb:
        data = glb_bytes(doc, blob)
        path = folder / "case.glb"
    else:
        data = json.dumps(doc).encode()
        path = folder / "case.gltf"
    if rng.random() < 0.3:
        data = mutate_bytes(data, rng, rng.randrange(1, 8))
    path.write_bytes(data)
    return path


def test_fuzz_gltf(seed, case_folders):
    asset, _ = case_folders
    (asset / "t.bin").write_bytes(bytes(seed_documents()[0].blob))
    (asset / "tex.png").write_bytes(png(np.zeros((2, 2, 4))))
    (asset / "sub").mkdir()
    rng = random.Random(seed)
    seeds = seed_documents()
    outcomes: Counter = Counter()
    for case in range(CASES):
        for stale in asset.glob("case.*"):
            stale.unlink()
        if seeds[0].blob and case % 40 == 0:
            (asset / "t.bin").write_bytes(bytes(rng.choice(seeds).blob))
        path = write_case(rng, asset, seeds)
        outcomes[check_case(partial(load_gltf, path, limits=LIMITS), asset, ALLOWED, seed=seed, case=case,
                            what="glTF")] += 1
    assert sum(outcomes.values()) == CASES
    assert outcomes["ok"] >= 1 and len(outcomes) >= 2, outcomes  # some files load, others are refused


def test_the_seed_files_load(tmp_path):
    for k, builder in enumerate(seed_documents()):
        (tmp_path / "tex.png").write_bytes(png(np.zeros((2, 2, 4))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the lights, the orthographic camera, the animation, the points
            scene = load_gltf(builder.write_glb(tmp_path / f"seed{k}.glb"))
        assert scene.meshes and all(math.isfinite(v) for v in scene.camera.eye)
