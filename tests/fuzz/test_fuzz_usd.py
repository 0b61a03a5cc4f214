"""Fuzzing the USD reader: a valid USDA layer (with a referenced layer and a texture) mutated as text.

Documented outcomes only: a scene, or ``OSError`` (files) / ``ValueError`` (content: ``LoadLimitError``,
``AssetPathError`` and USD's parse errors among them), within the harness's time and memory bounds and without
opening a file outside the case's folder. USDA text only: USD's binary crate reader is Pixar's C++, outside what
this suite can bound.
"""

from __future__ import annotations

import io
import random
import warnings
from collections import Counter

import numpy as np
import pytest
from conftest import LIMITS, check_case
from fuzzing import mutate_text
from PIL import Image

pytest.importorskip("pxr", reason="the usd extra (usd-core) is not installed")

from optixasync.scene import load_usd  # noqa: E402

CASES = 200  # per seed
ALLOWED = (OSError, ValueError)
LAYER = """#usda 1.0
(
    defaultPrim = "World"
    startTimeCode = 0
    endTimeCode = 10
)
def Xform "World"
{
    double3 xformOp:translate.timeSamples = { 0: (0, 0, 0), 10: (1, 0, 0) }
    uniform token[] xformOpOrder = ["xformOp:translate"]
    def Mesh "Quad" (
        prepend apiSchemas = ["MaterialBindingAPI"]
    )
    {
        point3f[] points = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)]
        int[] faceVertexCounts = [4]
        int[] faceVertexIndices = [0, 1, 2, 3]
        texCoord2f[] primvars:st = [(0, 0), (1, 0), (1, 1), (0, 1)] (
            interpolation = "vertex"
        )
        rel material:binding = </World/Looks/Tiles>
    }
    def "Part" (
        references = @./part.usda@
        instanceable = true
    )
    {
    }
    def PointInstancer "Field"
    {
        rel prototypes = </World/Field/Protos/Ball>
        int[] protoIndices = [0, 0, 0]
        point3f[] positions = [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
        def Scope "Protos"
        {
            def Sphere "Ball"
            {
                double radius = 0.25
            }
        }
    }
    def Scope "Looks"
    {
        def Material "Tiles"
        {
            token outputs:surface.connect = </World/Looks/Tiles/Surface.outputs:surface>
            def Shader "Surface"
            {
                uniform token info:id = "UsdPreviewSurface"
                color3f inputs:diffuseColor.connect = </World/Looks/Tiles/Tex.outputs:rgb>
                float inputs:roughness = 0.4
                token outputs:surface
            }
            def Shader "Tex"
            {
                uniform token info:id = "UsdUVTexture"
                asset inputs:file = @./tex.png@
                float3 outputs:rgb
            }
        }
    }
    def DistantLight "Sun"
    {
        float inputs:intensity = 3
    }
    def Camera "Cam"
    {
        double3 xformOp:translate = (0, 0, 5)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
}
"""
PART = """#usda 1.0
(
    defaultPrim = "Part"
)
def Xform "Part"
{
    def Cube "Box"
    {
        double size = 0.5
    }
}
"""
TOKENS = ["def", "over", "class", "Mesh", "Xform", "Sphere", "PointInstancer", "references", "payload", "subLayers",
          "=", "@./part.usda@", "@./scene.usda@", "@../private/secret.bin@", "@/etc/passwd@", "@./tex.png@",
          "</World>", "</World/Part>", "[0, 1, 2]", "[99999999]", "[-1]", "(nan, 0, 0)", "(inf, 1, 2)", "1e400",
          "int[]", "point3f[]", "faceVertexCounts", "faceVertexIndices", "protoIndices", "instanceable", "true",
          "{", "}", "(", ")", '"', "timeSamples", "interpolation", '"faceVarying"', '"uniform"', "radius", "-1"]


def png(pixels) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.asarray(pixels, np.uint8)).save(out, format="PNG")
    return out.getvalue()


def write_seed(folder):
    (folder / "tex.png").write_bytes(png(np.full((4, 4, 3), 120)))
    (folder / "part.usda").write_text(PART)
    (folder / "scene.usda").write_text(LAYER)


def test_fuzz_usda(seed, case_folders):
    asset, _ = case_folders
    write_seed(asset)
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    for case in range(CASES):
        scene, part = LAYER, PART
        if rng.random() < 0.8:
            scene = mutate_text(scene, rng, rng.randrange(1, 5), TOKENS)
        else:
            part = mutate_text(part, rng, rng.randrange(1, 4), TOKENS)
        # a new name per case: USD keeps layers it has read by their path
        path = asset / f"scene{case}.usda"
        path.write_text(scene.replace("./part.usda", f"./part{case}.usda"))
        (asset / f"part{case}.usda").write_text(part)
        outcomes[check_case(lambda p=path: load_usd(p, limits=LIMITS), asset, ALLOWED, seed=seed, case=case,
                            what="USDA")] += 1
    assert sum(outcomes.values()) == CASES
    assert outcomes["ok"] >= 1 and len(outcomes) >= 2, outcomes


def test_the_seed_layer_loads(tmp_path):
    write_seed(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene = load_usd(tmp_path / "scene.usda")
    assert [m.name for m in scene.meshes][0] == "/World/Quad"
    assert scene.meshes[0].material.reflectance_texture is not None
    assert sum(s.num_spheres for s in scene.shapes) == 3  # the instancer's three balls
    assert sum(m.num_triangles == 12 for m in scene.meshes) == 1 and len(scene.lights) == 1
