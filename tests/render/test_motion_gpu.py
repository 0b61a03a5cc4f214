"""Motion blur through the render pipeline on a GPU: OptiX's motion transforms and motion GAS against the time
average of where the meshes are over the shutter (``motion_reference.py``, the references of the host build's
tests). Run on a GPU with::

    python -m pytest tests/render/test_motion_gpu.py -m gpu
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import Camera, Environment, Material, Mesh, MeshMotion, Scene, Spheres, rectangle

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent
BLACK = Material((0.0, 0.0, 0.0))
CAMERA = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=40.0)
SIZE, SPP = 64, 512


def _reference():
    spec = importlib.util.spec_from_file_location("render_motion_reference_gpu", HERE / "motion_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


M = _reference()


def render(ctx, scene: Scene, spp: int = SPP) -> np.ndarray:
    with RenderPipeline(ctx, scene, RenderOptions(width=SIZE, height=SIZE, spp=spp, max_depth=1)) as pipeline:
        return pipeline.render()


def white(meshes, **scene) -> Scene:
    return Scene(meshes, CAMERA, environment=Environment(radiance=(1.0, 1.0, 1.0)), **scene)


def square(**fields) -> Mesh:
    base = rectangle(np.diag([0.3, 0.3, 1.0, 1.0]), BLACK)
    return Mesh(base.vertices, base.indices, BLACK, **fields)


def slide(x0: float, x1: float) -> MeshMotion:
    return MeshMotion(transforms=[np.array([[1.0, 0, 0, x0], [0, 1, 0, 0], [0, 0, 1, 0]]),
                                  np.array([[1.0, 0, 0, x1], [0, 1, 0, 0], [0, 0, 1, 0]])])


def assert_coverage(image: np.ndarray, covered: np.ndarray, spp: int) -> None:
    seen = 1.0 - image[..., 0]
    bound = 5.0 * np.sqrt(covered * (1.0 - covered) / spp) + 2.0 / spp
    assert (np.abs(seen - covered) <= bound).mean() > 0.999
    # The sum's noise: 5 standard deviations of the mean of spp samples per pixel, summed over the pixels.
    assert abs(seen.sum() - covered.sum()) < 5.0 * np.sqrt((covered * (1.0 - covered)).sum() / spp) + 1e-3 * covered.sum()


@pytest.mark.parametrize("shutter", [(0.0, 1.0), (0.25, 0.75)])
def test_a_moving_instance_blurs_into_its_time_average(ctx, shutter):
    image = render(ctx, white([square(motion=slide(-0.5, 0.5))], shutter=shutter))
    assert_coverage(image, M.sliding_square_coverage(CAMERA, SIZE, SIZE, 0.3, -0.5, 0.5, shutter), SPP)


def test_a_moving_instance_equals_the_average_of_still_renders(ctx):
    """The issue's target: the blur equals the mean of renders at many times, within noise."""
    blurred = render(ctx, white([square(motion=slide(-0.5, 0.5))], shutter=(0.0, 1.0)), 1024)
    times = (np.arange(32) + 0.5) / 32
    stills = [render(ctx, white([square(transform=np.array([[1.0, 0, 0, -0.5 + t], [0, 1, 0, 0], [0, 0, 1, 0]]))]),
                     64) for t in times]
    mean = np.mean(stills, axis=0)
    assert np.abs(blurred - mean).mean() < 0.01 and abs(blurred.sum() - mean.sum()) < 0.005 * mean.sum()


def test_a_deforming_mesh_blurs_into_its_time_average(ctx):
    keys = [np.array([[-0.6, -0.4, 0.0], [0.2, -0.4, 0.0], [-0.6, 0.4, 0.0]], np.float32),
            np.array([[-0.2, -0.5, 0.0], [0.7, -0.2, 0.0], [0.1, 0.6, 0.0]], np.float32),
            np.array([[0.1, -0.3, 0.0], [0.6, 0.3, 0.0], [-0.3, 0.3, 0.0]], np.float32)]
    mesh = Mesh(keys[0].copy(), np.array([[0, 1, 2]], np.int32), BLACK, motion=MeshMotion(vertices=keys))
    image = render(ctx, white([mesh], shutter=(0.0, 1.0)))
    assert_coverage(image, M.triangle_coverage(CAMERA, SIZE, SIZE, [k.astype(np.float64) for k in keys],
                                               (0.0, 1.0)), SPP)


def test_shapes_and_static_meshes_in_a_moving_scene(ctx):
    still = square(transform=np.array([[1.0, 0, 0, 0.0], [0, 1, 0, 0.6], [0, 0, 1, 0]]))
    ball = Spheres(np.array([[0.0, -0.6, 0.0]]), 0.2, material=BLACK)
    image = render(ctx, white([still, square(motion=slide(-0.5, 0.5))], shutter=(0.0, 1.0), shapes=[ball]), 128)
    p = M.plane_points(CAMERA, SIZE, SIZE)[: SIZE // 4]
    sharp = ((np.abs(p[..., 0]) < 0.3) & (np.abs(p[..., 1] - 0.6) < 0.3)).mean(axis=2)
    top = 1.0 - image[: SIZE // 4, :, 0]
    assert (np.abs(top - sharp) <= 5.0 * np.sqrt(sharp * (1 - sharp) / 128) + 2 / 128).mean() > 0.999
