"""The USD reader's target: a valid USDA layer (a referenced layer, a texture, an instancer) mutated as text.

Documented outcomes only: a scene, or ``OSError`` (files) / ``ValueError`` (content: ``LoadLimitError``,
``AssetPathError`` and USD's parse errors among them). USDA text only: USD's binary crate reader is Pixar's C++,
outside what this suite can bound. Needs the ``usd`` extra (``pxr``); its gating test skips without it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np

from .._harness import encode
from .._mutators import mutate_text
from .._target import FileTarget, register
from ._gltf import png

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


def _load_usd(path: Path, **kwargs: Any) -> Any:
    from ....scene import load_usd  # pxr is imported by the reader, lazily

    return load_usd(path, **kwargs)


@register
class UsdTarget(FileTarget):
    """USDA layers: the scene or the layer it references, tokens replaced, dropped, repeated or added."""

    name = "usd"
    cases = 120
    allowed = (OSError, ValueError)
    load = staticmethod(_load_usd)

    def prepare(self, folder: Path) -> None:
        (folder / "tex.png").write_bytes(png(np.full((4, 4, 3), 120)))

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        scene, part = LAYER, PART
        if not valid:
            if rng.random() < 0.8:
                scene = mutate_text(scene, rng, rng.randrange(1, 5), TOKENS)
            else:
                part = mutate_text(part, rng, rng.randrange(1, 4), TOKENS)
        # Names of the case's own (drawn from the seed): USD keeps the layers it has read by their path.
        tag = rng.randrange(1 << 40)
        scene = scene.replace("./part.usda", f"./part{tag}.usda").replace("./scene.usda", f"./scene{tag}.usda")
        return {"files": {f"scene{tag}.usda": encode(scene.encode()), f"part{tag}.usda": encode(part.encode())},
                "open": f"scene{tag}.usda", "valid": valid}

    def verify(self, case: dict[str, Any], outcome: str, value: Any) -> None:
        if case.get("valid"):
            assert [m.name for m in value.meshes][0] == "/World/Quad", value.meshes
            assert sum(s.num_spheres for s in value.shapes) == 3  # the instancer's three balls
