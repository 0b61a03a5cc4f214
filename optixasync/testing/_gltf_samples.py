"""Small glTF sample models written from Python: one feature of the renderer's glTF side each.

:func:`write_gltf_samples` writes them into a folder, in the layout of the Khronos sample models
(``Name/glTF/Name.gltf``), for the conformance script (``benchmarks/gltf_conformance.py``) and its test, where
the Khronos repository is not at hand. Each model is lit and has a camera, so that it renders as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ._gltf_files import GltfBuilder

__all__ = ["GLTF_SAMPLES", "write_gltf_samples"]

_SQUARE = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
_FACES = np.array([0, 1, 2, 0, 2, 3], np.uint32)
_BACK = np.array([0, 2, 1, 0, 3, 2], np.uint32)
_UV = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)


def _material(g: GltfBuilder, base=(0.8, 0.8, 0.8, 1.0), emissive=(0.0, 0.0, 0.0), **extra) -> int:
    return g.add("materials", {"pbrMetallicRoughness": {"baseColorFactor": list(base), "metallicFactor": 0.0,
                                                        "roughnessFactor": 0.8},
                               "emissiveFactor": list(emissive), **extra})


def _camera(g: GltfBuilder, z: float = 3.0, yfov: float = 45.0, y: float = 0.0) -> int:
    camera = g.add("cameras", {"type": "perspective", "perspective": {"yfov": math.radians(yfov), "znear": 0.01}})
    return g.node(camera=camera, translation=[0.0, y, z])


def _sun(g: GltfBuilder, lux: float = 683.0 * 6.0) -> int:
    g.doc.setdefault("extensionsUsed", []).append("KHR_lights_punctual")
    lights = g.doc.setdefault("extensions", {}).setdefault("KHR_lights_punctual", {"lights": []})["lights"]
    lights.append({"type": "directional", "intensity": lux})
    half = math.radians(-30.0)  # a turn of -60 degrees about x: its -z points down and away from the camera
    return g.node(rotation=[math.sin(half), 0.0, 0.0, math.cos(half)],
                  extensions={"KHR_lights_punctual": {"light": len(lights) - 1}})


def single_sided_marker(g: GltfBuilder) -> list[int]:
    """A glowing marker behind a single-sided plane that shows the camera its back: the marker shows through."""
    glow = g.mesh(_SQUARE * 0.5, _FACES, _material(g, (0, 0, 0, 1), (1.0, 0.6, 0.2)), "marker")
    plane = g.mesh(_SQUARE, _BACK, _material(g, doubleSided=False), "plane")
    return [g.node(mesh=glow), g.node(mesh=plane, translation=[0.0, 0.0, 1.0]), _camera(g)]


def vertex_colors(g: GltfBuilder) -> list[int]:
    """A triangle whose COLOR_0 (red, green, blue corners) multiplies a white base colour, under a sun."""
    corners = np.array([[-1, -1, 0], [1, -1, 0], [0, 1, 0]], np.float32)
    rgb = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    mesh = g.mesh(corners, np.array([0, 1, 2], np.uint32), _material(g, (1, 1, 1, 1), doubleSided=True),
                  "triangle", COLOR_0=rgb)
    return [g.node(mesh=mesh), _camera(g), _sun(g)]


def orthographic(g: GltfBuilder) -> list[int]:
    """Three glowing squares at different depths seen by an orthographic camera: one before its near plane."""
    roots = []
    for k, (x, z, colour) in enumerate(((-0.6, 0.0, (1, 0.2, 0.2)), (0.6, -2.0, (0.2, 1, 0.2)),
                                        (0.0, 4.5, (0.2, 0.2, 1)))):
        mesh = g.mesh(_SQUARE * 0.4, _FACES, _material(g, (0, 0, 0, 1), colour), f"square{k}")
        roots.append(g.node(mesh=mesh, translation=[x, 0.0, z]))
    camera = g.add("cameras", {"type": "orthographic",
                               "orthographic": {"xmag": 1.5, "ymag": 1.5, "znear": 1.0, "zfar": 20.0}})
    return [*roots, g.node(camera=camera, translation=[0.0, 0.0, 5.0])]


def spot_light(g: GltfBuilder) -> list[int]:
    """A spot light's cone (candela, inner and outer angle) on a floor."""
    floor = g.mesh(_SQUARE * 2.0, _FACES, _material(g), "floor")
    g.doc.setdefault("extensionsUsed", []).append("KHR_lights_punctual")
    g.doc.setdefault("extensions", {})["KHR_lights_punctual"] = {"lights": [
        {"type": "spot", "intensity": 683.0 * 10.0, "color": [1.0, 0.9, 0.7],
         "spot": {"innerConeAngle": math.radians(15.0), "outerConeAngle": math.radians(30.0)}}]}
    lamp = g.node(translation=[0.0, 0.0, 1.5], extensions={"KHR_lights_punctual": {"light": 0}})
    return [g.node(mesh=floor), lamp, _camera(g, z=4.0, yfov=60.0)]


def animated_slide(g: GltfBuilder) -> list[int]:
    """A square sliding across two keyframes (LINEAR) in front of a glowing wall, under a sun (a still shows its
    rest pose)."""
    wall = g.mesh(_SQUARE * 1.5, _FACES, _material(g, (0, 0, 0, 1), (0.9, 0.9, 0.9)), "wall")
    square = g.node(mesh=g.mesh(_SQUARE * 0.4, _FACES, _material(g, (0.8, 0.1, 0.1, 1)), "square"),
                    translation=[0.0, 0.0, 0.5])
    times = g.accessor(np.array([0.0, 1.0], np.float32))
    values = g.accessor(np.array([[-0.8, 0.0, 0.5], [0.8, 0.0, 0.5]], np.float32))
    g.add("animations", {"name": "slide", "samplers": [{"input": times, "output": values}],
                         "channels": [{"sampler": 0, "target": {"node": square, "path": "translation"}}]})
    return [g.node(mesh=wall), square, _camera(g), _sun(g)]


def textured_instances(g: GltfBuilder, path: Path) -> list[int]:
    """A checker-textured quad placed by nine nodes (one primitive, instanced), under a sun."""
    checker = (np.indices((8, 8)).sum(axis=0) % 2 * 200 + 40).astype(np.uint8)
    image = g.image(path.parent / "checker.png", np.stack([checker, checker // 2 + 60, 255 - checker], axis=-1))
    g.add("textures", {"source": image})
    material = g.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicFactor": 0.0}})
    mesh = g.mesh(_SQUARE * 0.3, _FACES, material, "tile", TEXCOORD_0=_UV)
    tiles = [g.node(mesh=mesh, translation=[0.7 * (k % 3 - 1), 0.7 * (k // 3 - 1), 0.0]) for k in range(9)]
    return [*tiles, _camera(g), _sun(g)]


#: The sample models by name: a function of a builder (and the file's path) giving the scene's root nodes.
GLTF_SAMPLES: dict[str, Callable[..., list[int]]] = {
    "SingleSidedMarker": single_sided_marker,
    "VertexColorTriangle": vertex_colors,
    "OrthographicCamera": orthographic,
    "SpotLightCone": spot_light,
    "AnimatedSlide": animated_slide,
    "TexturedInstances": textured_instances,
}


def write_gltf_samples(folder: str | Path) -> list[Path]:
    """Write every model of :data:`GLTF_SAMPLES` as ``folder/Name/glTF/Name.gltf`` (with its buffer); the paths."""
    out = []
    for name, build in GLTF_SAMPLES.items():
        path = Path(folder) / name / "glTF" / f"{name}.gltf"
        path.parent.mkdir(parents=True, exist_ok=True)
        g = GltfBuilder()
        roots = build(g, path) if build is textured_instances else build(g)
        g.scene(*roots)
        out.append(g.write_gltf(path))
    return out
