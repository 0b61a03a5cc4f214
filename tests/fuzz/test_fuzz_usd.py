"""The USD fuzz target's seed layer: the valid input its cases are mutated from loads as documented."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("pxr", reason="the usd extra (usd-core) is not installed")

from optixasync.scene import load_usd  # noqa: E402
from optixasync.testing.fuzz._targets._gltf import png  # noqa: E402
from optixasync.testing.fuzz._targets._usd import LAYER, PART  # noqa: E402


def write_seed(folder):
    import numpy as np

    (folder / "tex.png").write_bytes(png(np.full((4, 4, 3), 120)))
    (folder / "part.usda").write_text(PART)
    (folder / "scene.usda").write_text(LAYER)


def test_the_seed_layer_loads(tmp_path):
    write_seed(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene = load_usd(tmp_path / "scene.usda")
    assert [m.name for m in scene.meshes][0] == "/World/Quad"
    assert scene.meshes[0].material.reflectance_texture is not None
    assert sum(s.num_spheres for s in scene.shapes) == 3  # the instancer's three balls
    assert sum(m.num_triangles == 12 for m in scene.meshes) == 1 and len(scene.lights) == 1
