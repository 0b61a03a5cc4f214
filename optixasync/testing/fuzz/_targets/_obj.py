"""The OBJ and MTL reader's target: a valid OBJ and its material library mutated as statements and as bytes.

Documented outcomes only: a scene, or ``OSError`` (files) / ``ValueError`` (content, ``LoadLimitError`` and
``AssetPathError`` among them).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np

from ....scene import load_obj
from .._harness import encode
from .._mutators import mutate_bytes, mutate_text
from .._target import FileTarget, register
from ._gltf import png

OBJ = """# a quad and a triangle in two materials
mtllib scene.mtl
o quad
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 0 0 1
vt 0 0
vt 1 0
vt 1 1
vt 0 1
vn 0 0 1
usemtl tiles
f 1/1/1 2/2/1 3/3/1 4/4/1
usemtl lamp
s 1
f -5/1 -3/2 -1/3
g rest
l 1 2
usemtl missing
f 1//1 2//1 5//1
"""
MTL = """newmtl tiles
Kd 0.8 0.7 0.6
map_Kd -s 2 2 -o 0.5 0 -clamp on tex.png
norm bump.png
d 0.8
Pr 0.5
Pm 0.1

newmtl lamp
Ke 4 4 4
map_Ke tex.png
Tr 0
"""
OBJ_TOKENS = ["v", "vt", "vn", "f", "usemtl", "mtllib", "o", "g", "s", "l", "p", "1", "-1", "0", "2/1/1", "3//1",
              "1/1", "-7", "99999999", "nan", "inf", "-0", "1e400", "0.5", "tiles", "lamp", "scene.mtl",
              "scene.mtl scene.mtl", "#", "\\", "1/2/3/4", "//", "/", "a/b/c", "\u0661", "1\u00b9", "\uff12",
              "+1", "1_0", "0x10", "\u0661.5"]
MTL_TOKENS = ["newmtl", "Kd", "Ke", "d", "Tr", "Pr", "Pm", "map_Kd", "map_Ke", "norm", "-s", "-o", "-clamp", "on",
              "-bm", "-mm", "-t", "tex.png", "bump.png", "spectral", "xyz", "1", "0", "-1", "2", "nan", "1e400",
              "tiles", "lamp", "bump.png tex.png", "\u0660.5", "\uff11", "1_000", "infinity"]


@register
class ObjTarget(FileTarget):
    """OBJ with its MTL: statements replaced, dropped, repeated or added, then maybe byte edits."""

    name = "obj"
    cases = 200
    allowed = (OSError, ValueError)
    load = staticmethod(load_obj)

    def prepare(self, folder: Path) -> None:
        (folder / "tex.png").write_bytes(png(np.full((4, 4, 3), 120)))
        (folder / "bump.png").write_bytes(png(np.full((2, 2, 3), [128, 128, 255])))

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        obj, mtl = OBJ, MTL
        data, library = obj.encode(), mtl.encode()
        if not valid:
            target = rng.random()
            if target < 0.45:
                obj = mutate_text(obj, rng, rng.randrange(1, 5), OBJ_TOKENS)
            elif target < 0.9:
                mtl = mutate_text(mtl, rng, rng.randrange(1, 5), MTL_TOKENS)
            data, library = obj.encode(), mtl.encode()
            if rng.random() < 0.2:
                data = mutate_bytes(data, rng, rng.randrange(1, 6))
            if rng.random() < 0.1:
                library = mutate_bytes(library, rng, rng.randrange(1, 6))
        return {"files": {"scene.obj": encode(data), "scene.mtl": encode(library)}, "open": "scene.obj",
                "valid": valid}

    def verify(self, case: dict[str, Any], outcome: str, value: Any) -> None:
        if case.get("valid"):
            assert [m.name for m in value.meshes] == ["scene:tiles", "scene:lamp", "scene:missing"], value.meshes
