"""Custom primitives through the render pipeline on a GPU: the path tracer's intersection program over the built-in
disks and a type added from the test folder (boxes), against the closed forms of the host build's tests. Run on
a GPU with::

    python -m pytest tests/render/test_custom_gpu.py -m gpu
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import Camera, CustomPrimitives, DirectionalLight, Material, Scene, _custom

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent
LAMP = Material((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
CAMERA = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=40.0)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


R = _load(HERE / "shape_reference.py", "custom_gpu_shape_reference")


@pytest.fixture(scope="module")
def box_type():
    before = dict(_custom._types)
    yield _load(HERE / "extension" / "custom_descriptors.py", "custom_gpu_descriptors").register()
    _custom._types.clear()
    _custom._types.update(before)


def render(ctx, scene, spp, size=64, max_depth=1):
    with RenderPipeline(ctx, scene, RenderOptions(width=size, height=size, spp=spp, max_depth=max_depth)) as pipeline:
        return pipeline.render()


def test_an_emissive_disk_covers_its_ellipse(ctx):
    center, normal, radius, spp = np.array([0.1, -0.1, 0.0]), np.array([0.3, 0.5, 1.0]), 0.6, 256
    image = render(ctx, Scene([], CAMERA, shapes=[CustomPrimitives("disk", [[*center, *normal, radius]],
                                                                   material=LAMP)]), spp)
    eye, d = R.pixel_lattice(CAMERA, 64, 64, 16)
    n = normal / np.linalg.norm(normal)
    t = ((center - eye) @ n) / (d @ n)
    p = eye + d * t[..., None] - center
    covered = (np.einsum("...k,...k", p, p) <= radius * radius).mean(axis=2)
    assert (np.abs(image[..., 0] - covered) <= 5 * np.sqrt(covered * (1 - covered) / spp) + 2 / spp).mean() > 0.999
    assert abs(image[..., 0].sum() - covered.sum()) < 0.005 * covered.sum()


def test_boxes_of_a_type_from_the_test_folder(ctx, box_type):
    boxes = CustomPrimitives("test_box", [[-0.8, -0.3, -0.3, -0.2, 0.3, 0.3], [0.1, -0.4, -1.0, 0.9, 0.4, -0.2]],
                             material=Material((0.5, 0.5, 0.5)))
    light = DirectionalLight((0.0, 0.0, -1.0), (math.pi, math.pi, math.pi))
    image = render(ctx, Scene([], CAMERA, lights=[light], shapes=[boxes]), 16, max_depth=2)
    for point in ([-0.5, 0.0, 0.3], [0.5, 0.0, -0.2]):
        x, y = CAMERA.project([point], 64, 64)[0]
        np.testing.assert_allclose(image[int(y), int(x)], 0.5, rtol=1e-4)
