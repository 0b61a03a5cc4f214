"""The path tracer kernel run on the CPU: ``kernels/pathtracer.cu`` compiled by the host C++ compiler.

``pathtracer_host.cpp`` supplies the CUDA intrinsics and an OptiX stand-in (brute-force triangle
intersection calling the kernel's own hit and miss programs), so the kernel's path logic, its sampling and
MIS weights, its depth convention and its accumulation run here exactly as written, with launch
parameters, mesh records and the emitter table built by the library's own host code. The same closed-form
and reference checks as the GPU tests, on smaller images. Skipped, with the reason, without a C++ compiler.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from host_build import IMAGE, HostTracer, build_pathtracer_library, compiler, host_render

from optixasync.render import RenderOptions
from optixasync.scene import Camera, Material, Mesh, Scene, cornell_box, rectangle, sphere

HERE = Path(__file__).resolve().parent
#: The output variants of the host build: none (a still's launch), the image, and every output.
PLAIN, ALL = 0, 15


def load_reference():
    spec = importlib.util.spec_from_file_location("render_reference", HERE / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("pathtracer_host"), (PLAIN, IMAGE, ALL))


def furnace(albedo=0.5, le=1.0, extra=()) -> Scene:
    room = sphere((0, 0, 0), 1.0, Material((albedo,) * 3, (le,) * 3), subdivisions=1, inward=True)
    return Scene([room, *extra], Camera((0.1, -0.05, 0.2), (0.3, 0.2, -1.0), fov=70.0))


def test_furnace_depth_1_is_exactly_the_emission(host_kernel):
    image = host_render(host_kernel, furnace(le=1.5), 4, width=16, height=16, max_depth=1)
    np.testing.assert_array_equal(image, 1.5)


@pytest.mark.parametrize("max_depth, rr_depth", [(2, 5), (3, 5), (40, 5), (40, 1)])
def test_furnace_converges_to_the_geometric_series(host_kernel, max_depth, rr_depth):
    a = 0.5
    expected = (1 - a**max_depth) / (1 - a)
    image = host_render(host_kernel, furnace(a), 256, width=24, height=24, max_depth=max_depth, rr_depth=rr_depth,
                        seed=max_depth + rr_depth)
    np.testing.assert_array_equal(image[..., 0], image[..., 1])
    pixels = image[..., 0].astype(np.float64).ravel()
    stderr = pixels.std(ddof=1) / math.sqrt(pixels.size)
    assert stderr < 0.0025 * expected  # the 1% test below is at least 4 standard errors wide
    assert abs(pixels.mean() - expected) < 0.01 * expected, (pixels.mean(), expected, stderr)


def test_one_sided_back_is_black_two_sided_reflector_is_invisible(host_kernel):
    camera = Camera((0.0, 0.0, 0.5), (0.0, 0.0, -1.0), fov=60.0)
    plate = np.array([[0.2, 0, 0, 0], [0, 0.2, 0, 0], [0, 0, -1, -0.3], [0, 0, 0, 1]], np.float64)  # a mirror
    p = camera.project([[-0.2, -0.2, -0.3], [0.2, 0.2, -0.3]], 24, 24)
    xs = np.arange(24)
    cols = (xs >= p[:, 0].min()) & (xs + 1 <= p[:, 0].max())
    rows = (xs >= p[:, 1].min()) & (xs + 1 <= p[:, 1].max())
    inside = rows[:, None] & cols[None]
    assert inside.sum() > 30
    for two_sided in (False, True):
        scene = furnace(0.5, 1.0, (rectangle(plate, Material((1, 1, 1), two_sided=two_sided)),))
        scene.camera = camera
        image = host_render(host_kernel, scene, 64, width=24, height=24, max_depth=40, seed=9)
        if two_sided:
            assert abs(image[..., 0].mean() - 2.0) < 0.02
            assert abs(image[inside][:, 0].mean() - 2.0) < 0.04
        else:
            np.testing.assert_array_equal(image[inside], 0.0)


def test_same_seed_and_any_launch_split_give_the_same_bits(host_kernel):
    options = RenderOptions(width=16, height=16, spp=8, seed=4)
    whole = HostTracer(host_kernel, cornell_box(), options).render(8)
    split = HostTracer(host_kernel, cornell_box(), options).render(8, per_launch=3)
    np.testing.assert_array_equal(whole, split)
    other = HostTracer(host_kernel, cornell_box(), RenderOptions(width=16, height=16, spp=8, seed=5)).render(8)
    lit = whole.sum(axis=2) > 0
    assert (whole != other)[lit].mean() > 0.95


def test_tonemapped_image_matches_the_host_curve(host_kernel):
    from optixasync.io import tonemap_srgb

    tracer = HostTracer(host_kernel, cornell_box(), RenderOptions(width=16, height=16, spp=4))
    mean = tracer.render(4)
    assert (tracer.image[..., 3] == 255).all()
    assert np.abs(tracer.image[..., :3].astype(int) - tonemap_srgb(mean).astype(int)).max() <= 1


def test_max_depth_1_shows_only_the_light(host_kernel):
    scene = cornell_box()
    image = host_render(host_kernel, scene, 2, width=64, height=64, max_depth=1)
    emission = np.asarray(scene.meshes[7].material.emission, np.float32)
    lit = (image > 0).any(axis=2)
    assert 5 < lit.sum() < 64 * 64 * 0.02
    full = np.isclose(image, emission, rtol=1e-6).all(axis=2)
    assert full.sum() >= 10
    assert (image[lit] <= emission * 1.000001).all()
    light_px = scene.camera.project(scene.meshes[7].vertices, 64, 64)
    ys, xs = np.nonzero(lit)
    assert xs.min() >= light_px[:, 0].min() - 1 and xs.max() <= light_px[:, 0].max() + 1
    assert ys.min() >= light_px[:, 1].min() - 1 and ys.max() <= light_px[:, 1].max() + 1


def test_max_depth_2_matches_numpy_direct_lighting(host_kernel):
    ref = load_reference()
    scene = cornell_box()
    w = h = 40
    got = host_render(host_kernel, scene, 256, width=w, height=h, max_depth=2, seed=1).astype(np.float64)
    again = host_render(host_kernel, scene, 256, width=w, height=h, max_depth=2, seed=2).astype(np.float64)
    tris = ref.scene_triangles(scene)
    pixels = np.argwhere(ref.covered_pixels(scene.camera, tris, w, h, scene.find("floor")))[:, ::-1]
    assert len(pixels) >= 20
    origins, directions = ref.pixel_rays(scene.camera, w, h, pixels, sub=8)
    t, _ = ref.cast(tris, origins.reshape(-1, 3), directions.reshape(-1, 3))
    points = origins.reshape(-1, 3) + t[:, None] * directions.reshape(-1, 3)
    expected = ref.direct_lighting(scene, points, np.tile([0.0, 1.0, 0.0], (len(points), 1)),
                                   scene.meshes[0].material.reflectance, n=8, occluders=tris)
    expected = expected.reshape(len(pixels), -1, 3).mean(axis=1)
    a = got[pixels[:, 1], pixels[:, 0]]
    b = again[pixels[:, 1], pixels[:, 0]]
    mean = ((a + b) / 2).mean(axis=0)
    stderr = np.sqrt(((a - b) ** 2 / 2).sum(axis=0) / 2) / len(pixels)
    target = expected.mean(axis=0)
    assert (stderr < 0.03 * target).all(), (stderr, target)
    assert (np.abs(mean - target) < 5 * stderr + 0.005 * target).all(), (mean, target, stderr)


def instanced_scene(flatten: bool) -> Scene:
    """Two spheres and a mirrored, rotated emissive quad as instances of shared arrays (or flattened copies)."""
    ball = sphere((0, 0, 0), 0.5, Material((0.7, 0.4, 0.2)), subdivisions=1, smooth=True)
    lamp = rectangle(None, Material((0, 0, 0), (4, 4, 4)))
    placements = [
        (ball, np.array([[1, 0, 0, -0.6], [0, 1, 0, 0], [0, 0, 1, -1.0]])),
        (ball, np.array([[0, 0, 0.8, 0.7], [0, 0.8, 0, 0.1], [-0.8, 0, 0, -1.2]])),  # turned and smaller
        # a mirror (x -> -x) turned to face down: the front side must stay the placed front side
        (lamp, np.array([[0.5, 0, 0, 0], [0, 0, -1, 1.2], [0, -0.5, 0, -1.0]])),
    ]
    meshes = []
    for base, matrix in placements:
        mesh = Mesh(base.vertices, base.indices, base.material, normals=base.normals, uvs=base.uvs, transform=matrix)
        meshes.append(mesh.flattened() if flatten else mesh)
    floor = rectangle(np.array([[3, 0, 0, 0], [0, 0, 3, -0.5], [0, -3, 0, -1.0]]), Material((0.5, 0.5, 0.5)))
    return Scene([*meshes, floor], Camera((0, 0.4, 2.0), (0, 0, -1.0), fov=60.0))


def test_instances_render_as_their_flattened_copies(host_kernel):
    instanced, flat = instanced_scene(False), instanced_scene(True)
    assert instanced.meshes[0].vertices is instanced.meshes[1].vertices and instanced.meshes[2].mirrored
    # The lamp's front (emitting) side faces down after the mirror, as the flattened copy's does.
    np.testing.assert_allclose(instanced.meshes[2].face_normals()[0], flat.meshes[2].face_normals()[0], atol=1e-6)
    assert flat.meshes[2].face_normals()[0][1] < -0.99
    options = dict(width=32, height=32, max_depth=4)
    a = host_render(host_kernel, instanced, 64, **options)
    b = host_render(host_kernel, flat, 64, **options)
    assert b.mean() > 0.05  # lit by the lamp: its front faces the scene
    # Same random numbers, same geometry up to the rounding of the placement: nearly every pixel agrees.
    close = np.isclose(a, b, rtol=1e-3, atol=1e-4).all(axis=-1)
    assert close.mean() > 0.97, close.mean()
    assert abs(a.mean() - b.mean()) < 0.01 * b.mean()


def test_alpha_blend_converges_to_the_coverage(host_kernel):
    """A veil of opacity 0.5 in front of a light: the light shows through by half, per pixel, as samples add up."""
    light = rectangle(np.diag([2.0, 2.0, 1.0, 1.0]) @ np.eye(4), Material((0, 0, 0), (1, 1, 1)))
    veil = rectangle(np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0.5]]),
                     Material((0, 0, 0), opacity=0.5, alpha_mode="blend", two_sided=True))
    camera = Camera((0, 0, 3), (0, 0, 0), fov=2 * math.degrees(math.atan(0.5 / 2.5)))
    image = host_render(host_kernel, Scene([light, veil], camera), 256, width=8, height=8, max_depth=1)[..., 0]
    # every pixel sees the veil (its triangles alike): the mean is 0.5, and no pixel is stuck at 0 or 1
    assert abs(image.mean() - 0.5) < 0.02
    assert 0.35 < image.min() and image.max() < 0.65


def test_cut_out_emitters_are_left_to_bsdf_sampling(host_kernel):
    """A lamp that is all hole lights nothing; one that is half there lights half as much as a solid one."""
    floor = rectangle(np.array([[2, 0, 0, 0], [0, 0, 2, 0], [0, -2, 0, 0]]), Material((0.8, 0.8, 0.8)))
    light = np.array([[0.3, 0, 0, 0], [0, 0, -0.3, 1.0], [0, 0.3, 0, 0]])  # facing down, 1 above the floor
    camera = Camera((0, 2.0, 2.5), (0, 0, 0), fov=40.0)

    def floor_brightness(**cut) -> float:
        lamp = rectangle(light, Material((0, 0, 0), (20, 20, 20), **cut))
        return float(host_render(host_kernel, Scene([floor, lamp], camera), 64, width=16, height=16,
                                 max_depth=2).mean())

    solid = floor_brightness()
    assert floor_brightness(alpha_mode="mask", opacity=0.0) < 0.01 * solid
    assert abs(floor_brightness(alpha_mode="blend", opacity=0.5) / solid - 0.5) < 0.1
