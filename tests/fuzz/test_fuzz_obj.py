"""Fuzzing the OBJ and MTL reader: a valid OBJ and its material library mutated as statements and as bytes.

Documented outcomes only: a scene, or ``OSError`` (files) / ``ValueError`` (content, ``LoadLimitError`` and
``AssetPathError`` among them).
"""

from __future__ import annotations

import io
import random
from collections import Counter

import numpy as np
from conftest import LIMITS, check_case
from fuzzing import mutate_bytes, mutate_text
from PIL import Image

from optixasync.scene import load_obj

CASES = 200  # per seed
ALLOWED = (OSError, ValueError)
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
              "scene.mtl scene.mtl", "#", "\\", "1/2/3/4", "//", "/", "a/b/c"]
MTL_TOKENS = ["newmtl", "Kd", "Ke", "d", "Tr", "Pr", "Pm", "map_Kd", "map_Ke", "norm", "-s", "-o", "-clamp", "on",
              "-bm", "-mm", "-t", "tex.png", "bump.png", "spectral", "xyz", "1", "0", "-1", "2", "nan", "1e400",
              "tiles", "lamp", "bump.png tex.png"]


def png(pixels) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.asarray(pixels, np.uint8)).save(out, format="PNG")
    return out.getvalue()


def test_fuzz_obj_and_mtl(seed, case_folders):
    asset, _ = case_folders
    (asset / "tex.png").write_bytes(png(np.full((4, 4, 3), 120)))
    (asset / "bump.png").write_bytes(png(np.full((2, 2, 3), [128, 128, 255])))
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    for case in range(CASES):
        obj, mtl = OBJ, MTL
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
        (asset / "scene.obj").write_bytes(data)
        (asset / "scene.mtl").write_bytes(library)
        outcomes[check_case(lambda: load_obj(asset / "scene.obj", limits=LIMITS), asset, ALLOWED, seed=seed,
                            case=case, what="OBJ")] += 1
    assert sum(outcomes.values()) == CASES
    assert outcomes["ok"] >= 1 and len(outcomes) >= 2, outcomes


def test_the_seed_files_load(tmp_path):
    (tmp_path / "tex.png").write_bytes(png(np.full((4, 4, 3), 120)))
    (tmp_path / "bump.png").write_bytes(png(np.full((2, 2, 3), [128, 128, 255])))
    (tmp_path / "scene.obj").write_text(OBJ)
    (tmp_path / "scene.mtl").write_text(MTL)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # material 'missing', the line statement
        scene = load_obj(tmp_path / "scene.obj")
    assert [m.name for m in scene.meshes] == ["scene:tiles", "scene:lamp", "scene:missing"]
