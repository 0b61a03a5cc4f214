"""Batches of views and worlds on the CPU, through the host build: what the batch's raygens promise, bit for bit.

A batch of B views equals B batches of one view; a camera view equals the single-camera raygen; each world
applies its own transforms and sees only itself; the G-buffer integrator writes the path tracer's G-buffer; a
still's lanes are reproducible and differ from one lane by the float rounding alone (measured here).
"""

from __future__ import annotations

import numpy as np
import pytest
from host_build import IMAGE, HostTracer, compiler
from host_views import HostBatch, batch_library

from optixasync.render import RenderOptions, Views, Worlds
from optixasync.render._lanes import add_lanes_host, lane_count
from optixasync.scene import Camera, Environment, Material, Scene, cornell_box, cube, rectangle

G_OUTPUTS = ("depth", "distance", "position", "geometric_normal", "normal", "mesh_id", "primitive_id",
             "material_id", "uv", "motion", "coverage", "albedo", "spp")


@pytest.fixture(scope="module")
def lib():
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return batch_library()


def pinholes(count: int) -> np.ndarray:
    """``count`` OpenCV poses around the Cornell box, looking at its centre."""
    poses = []
    for k in range(count):
        eye = np.array([0.4 * np.sin(k), 1.0 + 0.1 * k, 3.5])
        forward = np.array([0.0, 1.0, 0.0]) - eye
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, [0, 1, 0])
        right /= np.linalg.norm(right)
        down = np.cross(forward, right)
        m = np.eye(4)
        m[:3, :3] = np.column_stack([right, down, forward])
        m[:3, 3] = eye
        poses.append(m)
    return np.array(poses)


def test_a_batch_of_views_equals_its_views_rendered_alone(lib):
    scene = cornell_box()
    options = RenderOptions(width=16, height=12, max_depth=4, seed=3)
    poses = pinholes(3)
    intrinsics = [[14, 14, 8, 6], [10, 12, 7.5, 6.5], [16, 16, 8, 6]]
    batch = HostBatch(scene, options, Views.pinhole(intrinsics, poses, seeds=[5, 9, 11]), G_OUTPUTS, lib=lib)
    batch.launch(0, 3)
    batch.launch(3, 2)
    for b in range(3):
        alone = HostBatch(scene, options, Views.pinhole(intrinsics[b], poses[b:b + 1], seeds=[[5, 9, 11][b]]),
                          G_OUTPUTS, lib=lib)
        alone.launch(0, 3)
        alone.launch(3, 2)
        np.testing.assert_array_equal(batch.accum[b], alone.accum[0])
        for name in (*G_OUTPUTS, "radiance", "image"):
            np.testing.assert_array_equal(batch.out[name][b], alone.out[name][0], err_msg=f"{name} of view {b}")
    assert (batch.out["radiance"][0] != batch.out["radiance"][2]).any()  # and they are different views


def test_a_camera_view_renders_as_the_single_camera_raygen(lib):
    """The batch raygen's VIEW_CAMERA kind is camera.h's rays: the same bits as the single-camera raygen's."""
    scene = cornell_box()
    options = RenderOptions(width=16, height=16, spp=6, seed=2)
    single = HostTracer(lib, scene, options)
    single.launch(0, 4, IMAGE | 2)
    single.launch(4, 2, IMAGE | 2)
    batch = HostBatch(scene, options, Views.cameras([scene.camera], seeds=[2]), ("image", "radiance"), colour=True,
                      lib=lib)
    batch.launch(0, 4)
    batch.launch(4, 2)
    np.testing.assert_array_equal(batch.accum[0], single.accum)
    np.testing.assert_array_equal(batch.out["image"][0], single.image)
    np.testing.assert_array_equal(batch.out["radiance"][0], single.outputs["radiance"])


def table_scene() -> Scene:
    """A floor, a back wall and a small box (the movable one), under a sky."""
    floor = rectangle(np.array([[2, 0, 0, 0], [0, 0, 2, 0], [0, -2, 0, 0]]), Material((0.5, 0.5, 0.5)), "floor")
    wall = rectangle(np.array([[2, 0, 0, 0], [0, 2, 0, 1.0], [0, 0, 1, -2.0]]), Material((0.4, 0.5, 0.6)), "wall")
    box = cube(np.diag([0.25, 0.25, 0.25, 1.0]) + np.array([[0, 0, 0, 0], [0, 0, 0, 0.25], [0, 0, 0, 0], [0, 0, 0, 0]]),
               Material((0.8, 0.2, 0.1)), "box")
    scene = Scene([floor, wall, box], Camera((0.0, 1.0, 3.0), (0.0, 0.3, 0.0), fov=45))
    scene.environment = Environment(radiance=(0.6, 0.7, 0.8))
    return scene


def shifted(dx: float, dz: float = 0.0) -> np.ndarray:
    m = np.eye(4, dtype=np.float32)[:3]
    m[0, 3], m[2, 3] = dx, dz
    return m


def test_each_world_applies_its_own_transforms_and_sees_only_itself(lib):
    scene = table_scene()
    options = RenderOptions(width=24, height=16, max_depth=3, jitter=False, seed=1)
    moves = np.stack([shifted(-0.8), shifted(0.0), shifted(0.7, -0.5), shifted(40.0)])[:, None]  # world 3: far out
    views = Views.cameras([scene.camera] * 4, seeds=[1] * 4)
    worlds = HostBatch(scene, options, views, ("mesh_id", "depth", "position"), worlds=Worlds(4, movable=["box"]),
                       lib=lib)
    worlds.move(moves)
    worlds.launch(0, 2)
    ids = worlds.out["mesh_id"][..., 0]
    assert [(ids[w] == 2).sum() > 0 for w in range(4)] == [True, True, True, False]  # world 3's box left its cell
    assert (ids[0] == 2).sum() != (ids[2] == 2).sum() or (ids[0] != ids[2]).any()
    for w in range(4):  # each world is the scene with its box moved there, rendered alone
        placed = Scene([*scene.meshes[:2], scene.meshes[2].transformed(np.vstack([moves[w, 0], [0, 0, 0, 1]]))],
                       scene.camera)
        placed.environment = scene.environment
        alone = HostBatch(placed, options, Views.cameras([scene.camera], seeds=[1]), ("mesh_id", "depth"), lib=lib)
        alone.launch(0, 2)
        same = ids[w] == alone.out["mesh_id"][0, ..., 0]
        assert same.mean() > 0.98, (w, same.mean())  # edges may round to the neighbour's triangle
        np.testing.assert_allclose(worlds.out["depth"][w][same], alone.out["depth"][0][same], rtol=1e-4, atol=1e-5)
    # positions are in each world's own coordinates
    box = ids[2] == 2
    assert np.abs(worlds.out["position"][2][box][:, 0].mean() - 0.7) < 0.3


def test_the_g_buffer_integrator_writes_the_path_tracers_g_buffer(lib):
    scene = cornell_box()
    options = RenderOptions(width=16, height=12, max_depth=4, seed=7)
    views = Views.pinhole([14, 14, 8, 6], pinholes(2), seeds=[1, 2])
    path = HostBatch(scene, options, views, G_OUTPUTS, lib=lib)
    gbuffer = HostBatch(scene, options, views, G_OUTPUTS, gbuffer=True, lib=lib)
    for batch in (path, gbuffer):
        batch.launch(0, 3)
    for name in G_OUTPUTS:
        np.testing.assert_array_equal(gbuffer.out[name], path.out[name], err_msg=name)
    assert (gbuffer.accum[..., :3] == 0).all()  # no shading
    assert (gbuffer.out["rays"][:, 1:] == 0).all() and (gbuffer.out["rays"][:, 0] == 16 * 12 * 3).all()


def test_a_still_over_lanes_has_the_bits_of_one_thread_per_pixel(lib):
    """One sample per lane, each launch's lanes added in lane order: the sums of one thread adding its samples."""
    scene = cornell_box()
    options = RenderOptions(width=12, height=10, max_depth=5, seed=4)
    spp = 40
    lanes = lane_count(12, 10, 1, 16)
    assert lanes == 16
    one = HostBatch(scene, options, Views.cameras([scene.camera], seeds=[4]), lib=lib)
    one.launch(0, spp)
    spread = HostBatch(scene, options, Views.cameras([scene.camera], seeds=[4]), lib=lib)
    sums = np.zeros_like(one.accum)
    for start in range(0, spp, lanes):  # what the still does (_still._lane_launches): 16, 16, then 8 lanes
        n = min(lanes, spp - start)
        spread.launch(start, n, lanes=n, accumulate=False)
        add_lanes_host(spread.accum[:n], n, sums, accumulate=start > 0)
    np.testing.assert_array_equal(sums, one.accum)
    # a single launch whose lanes hold several samples each regroups the additions: not the same bits
    grouped = HostBatch(scene, options, Views.cameras([scene.camera], seeds=[4]), lib=lib)
    grouped.launch(0, spp, lanes=8, accumulate=False)
    regrouped = add_lanes_host(grouped.accum, 8)
    assert np.abs(regrouped - one.accum).max() <= 1e-5 * one.accum[..., :3].mean()


def test_an_orthographic_camera_with_a_far_plane_sees_nothing_beyond_it_in_a_batch(lib):
    """An orthographic Camera's far plane as a batch's view: its camera rays run zfar - znear, as the single
    camera's do. A glowing square within the range is seen; a brighter one past the far plane is not, in the
    colour and in the G-buffer sample (depth 0 and no mesh id there), and the image is the single camera's to a
    rounding (the views' rays are the same rays, computed in another order)."""
    near = rectangle(np.diag([0.5, 0.5, 1.0, 1.0]), Material((0, 0, 0), emission=(1.0, 1.0, 1.0)), "seen")
    far = rectangle(np.array([[0.6, 0, 0, 1.2], [0, 0.6, 0, 0], [0, 0, 1, -8.0], [0, 0, 0, 1]]),
                    Material((0, 0, 0), emission=(5.0, 5.0, 5.0)), "beyond")
    camera = Camera.orthographic_at((0.3, 0.0, 2.0), (0.3, 0.0, 0.0), xmag=2.0, ymag=1.0, znear=0.5, zfar=6.0)
    scene = Scene([near, far], camera)
    options = RenderOptions(width=40, height=20, spp=4, max_depth=1, seed=4)
    batch = HostBatch(scene, options, Views.cameras([camera], seeds=[4]), ("radiance", "depth", "mesh_id"), lib=lib)
    batch.launch(0, 4)
    radiance = batch.out["radiance"][0][..., 0]
    ids = batch.out["mesh_id"][0][..., 0]
    assert (ids == 0).sum() > 50 and not (ids == 1).any()  # the near square seen, the far one never
    assert radiance.max() <= 1.0 + 1e-6 and (radiance == 1.0).sum() > 50
    np.testing.assert_array_equal(batch.out["depth"][0][..., 0][ids == 0xFFFFFFFF], 0.0)
    single = HostTracer(lib, scene, options)
    single.launch(0, 4, IMAGE | 2)
    np.testing.assert_allclose(radiance, single.outputs["radiance"][..., 0], atol=1e-5)
    unbounded = Camera.orthographic_at((0.3, 0.0, 2.0), (0.3, 0.0, 0.0), xmag=2.0, ymag=1.0, znear=0.5)
    seen = HostBatch(Scene([near, far], unbounded), options, Views.cameras([unbounded], seeds=[4]), ("mesh_id",),
                     lib=lib)
    seen.launch(0, 4)
    assert (seen.out["mesh_id"][0][..., 0] == 1).sum() > 20  # without the far plane the bright square shows
