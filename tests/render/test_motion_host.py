"""Motion blur drawn by the path tracer's kernel on the CPU: a moving instance's and a deforming mesh's blur is the
time average of where they are over the shutter.

The host build of the program a scene with moving meshes compiles (``OA_MOTION``) samples one time per camera
path (``kernels/pathtracer/motion.h``); the OptiX stand-in places moving meshes at the ray's time
(``motion_host.h``). The scenes: a black mesh in front of a uniform white environment at ``max_depth = 1``, whose
image is one minus the covered fraction of (jitter, time) samples; ``motion_reference.py`` integrates that
fraction over the pixel and the shutter.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from host_build import build_pathtracer_library, compiler, host_render

from optixasync.scene import Camera, Environment, Material, Mesh, MeshMotion, Scene, Spheres, rectangle

HERE = Path(__file__).resolve().parent
BLACK = Material((0.0, 0.0, 0.0))
CAMERA = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=40.0)
SIZE, SPP = 32, 128


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"render_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


M = _load("motion_reference")


@pytest.fixture(scope="module")
def motion_kernel(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("motion_host"), (0, 1, 15), shapes=True, motion=True)


def white(meshes, **scene) -> Scene:
    return Scene(meshes, CAMERA, environment=Environment(radiance=(1.0, 1.0, 1.0)), **scene)


def square(**fields) -> Mesh:
    base = rectangle(np.diag([0.3, 0.3, 1.0, 1.0]), BLACK)
    return Mesh(base.vertices, base.indices, BLACK, **fields)


def slide(x0: float, x1: float, times=(0.0, 1.0)) -> MeshMotion:
    return MeshMotion(transforms=[np.array([[1.0, 0, 0, x0], [0, 1, 0, 0], [0, 0, 1, 0]]),
                                  np.array([[1.0, 0, 0, x1], [0, 1, 0, 0], [0, 0, 1, 0]])], times=times)


def assert_coverage(image: np.ndarray, covered: np.ndarray, spp: int) -> None:
    """Each pixel is 1 - covered within its binomial noise; the image's total within 1%."""
    seen = 1.0 - image[..., 0]
    bound = 5.0 * np.sqrt(covered * (1.0 - covered) / spp) + 1.0 / spp
    assert (np.abs(seen - covered) <= bound).all(), np.abs(seen - covered).max()
    assert abs(seen.sum() - covered.sum()) < 0.01 * covered.sum()


@pytest.mark.parametrize("shutter", [(0.0, 1.0), (0.25, 0.75), (-0.5, 0.5)])
def test_a_moving_instance_blurs_into_its_time_average(motion_kernel, shutter):
    scene = white([square(motion=slide(-0.5, 0.5))], shutter=shutter)
    image = host_render(motion_kernel, scene, SPP, width=SIZE, height=SIZE, max_depth=1)
    covered = M.sliding_square_coverage(CAMERA, SIZE, SIZE, 0.3, -0.5, 0.5, shutter)
    assert_coverage(image, covered, SPP)
    assert ((covered > 0.05) & (covered < 0.95)).sum() > 100  # a blur, not a square


def test_a_deforming_mesh_blurs_into_its_time_average(motion_kernel):
    keys = [np.array([[-0.6, -0.4, 0.0], [0.2, -0.4, 0.0], [-0.6, 0.4, 0.0]], np.float32),
            np.array([[-0.2, -0.5, 0.0], [0.7, -0.2, 0.0], [0.1, 0.6, 0.0]], np.float32),
            np.array([[0.1, -0.3, 0.0], [0.6, 0.3, 0.0], [-0.3, 0.3, 0.0]], np.float32)]
    mesh = Mesh(keys[0].copy(), np.array([[0, 1, 2]], np.int32), BLACK, motion=MeshMotion(vertices=keys))
    image = host_render(motion_kernel, white([mesh], shutter=(0.0, 1.0)), SPP, width=SIZE, height=SIZE, max_depth=1)
    covered = M.triangle_coverage(CAMERA, SIZE, SIZE, [k.astype(np.float64) for k in keys], (0.0, 1.0))
    assert_coverage(image, covered, SPP)


def test_without_a_shutter_a_moving_mesh_is_drawn_at_time_zero(motion_kernel):
    moving = host_render(motion_kernel, white([square(motion=slide(-0.5, 0.5))]), 16, width=SIZE, height=SIZE,
                         max_depth=1)
    placed = host_render(motion_kernel, white([square(transform=np.array([[1.0, 0, 0, -0.5], [0, 1, 0, 0],
                                                                          [0, 0, 1, 0]]))]),
                         16, width=SIZE, height=SIZE, max_depth=1)
    np.testing.assert_array_equal(moving, placed)  # the same jitter, the pose of key 0


def test_keys_outside_the_shutter_are_clamped(motion_kernel):
    """A shutter after the last key sees the mesh where the last key leaves it: no blur."""
    scene = white([square(motion=slide(-0.5, 0.5, times=(0.0, 1.0)))], shutter=(2.0, 3.0))
    image = host_render(motion_kernel, scene, 64, width=SIZE, height=SIZE, max_depth=1)
    covered = M.sliding_square_coverage(CAMERA, SIZE, SIZE, 0.3, 0.5, 0.5, (2.0, 3.0))
    assert_coverage(image, covered, 64)


def test_static_meshes_and_shapes_in_a_moving_scene_stay_sharp(motion_kernel):
    still = square(transform=np.array([[1.0, 0, 0, 0.0], [0, 1, 0, 0.6], [0, 0, 1, 0]]))
    ball = Spheres(np.array([[0.0, -0.6, 0.0]]), 0.2, material=BLACK)
    scene = white([still, square(motion=slide(-0.5, 0.5))], shutter=(0.0, 1.0), shapes=[ball])
    image = host_render(motion_kernel, scene, 64, width=SIZE, height=SIZE, max_depth=1)
    top = 1.0 - image[: SIZE // 4, :, 0]
    p = M.plane_points(CAMERA, SIZE, SIZE)[: SIZE // 4]
    sharp = ((np.abs(p[..., 0]) < 0.3) & (np.abs(p[..., 1] - 0.6) < 0.3)).mean(axis=2)
    assert (np.abs(top - sharp) <= 5.0 * np.sqrt(sharp * (1 - sharp) / 64) + 1 / 64).all()


def test_the_plain_program_refuses_a_moving_scene(tmp_path):
    if compiler() is None:
        pytest.skip("no C++ compiler")
    plain = build_pathtracer_library(tmp_path, (0, 1))
    with pytest.raises(RuntimeError, match="motion=True"):
        host_render(plain, white([square(motion=slide(-0.5, 0.5))]), 1, width=4, height=4)
