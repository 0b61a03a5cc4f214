"""Views, worlds and outputs on a GPU: the CPU tests' promises measured on the device, and the interop with torch.

Run on an H200 (``python -m pytest -m gpu tests/render/test_views_gpu.py``); each test skips without a GPU, and
the torch ones without PyTorch. The analytic references are the host tests' (``test_outputs_host.py``), with
tolerances for fast math; bitwise promises are checked where both sides run the same compiled raygen.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from optixasync.cuda import spin_gpu
from optixasync.render import NO_ID, RenderOptions, RenderPipeline, Views, Worlds
from optixasync.scene import Camera, Environment, Material, Mesh, Scene, cornell_box, cube, rectangle

pytestmark = pytest.mark.gpu

W, H = 32, 24
FX, FY, CX, CY = 20.0, 20.0, 16.0, 12.0
G = ("depth", "distance", "position", "geometric_normal", "normal", "mesh_id", "primitive_id", "material_id",
     "uv", "coverage", "spp", "motion", "albedo")


def plane_scene() -> Scene:
    v = np.array([[-5, -5, 4], [5, -5, 4], [5, 5, 4], [-5, 5, 4]], np.float32)
    plane = Mesh(v, np.array([[0, 2, 1], [0, 3, 2]], np.int32), Material((0.6, 0.4, 0.2)), "plane",
                 uvs=(v[:, :2] + 5) / 10)
    scene = Scene([plane], Camera((0, 0, 0), (0, 0, 1)))
    scene.environment = Environment(radiance=(0.5, 0.5, 0.5))
    return scene


def poses(count: int) -> np.ndarray:
    m = np.tile(np.eye(4), (count, 1, 1))
    m[:, 0, 3] = 0.1 * np.arange(count)
    return m


def test_outputs_of_a_plane_match_the_closed_forms(ctx):
    views = Views.pinhole([FX, FY, CX, CY], poses(2))
    with RenderPipeline(ctx, plane_scene(), RenderOptions(width=W, height=H, jitter=False, max_depth=2),
                        views=views, outputs=("radiance", *G), readback=G) as p:
        for result in p.frames(1, 2):
            with result:
                u, v = np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)
                for b in range(2):
                    a, c = (u - CX) / FX, (v - CY) / FY
                    np.testing.assert_allclose(result["depth"][b, ..., 0], 4.0, rtol=1e-4)
                    np.testing.assert_allclose(result["distance"][b, ..., 0], 4 * np.sqrt(a * a + c * c + 1), rtol=1e-4)
                    np.testing.assert_allclose(result["position"][b, ..., 0], 4 * a + 0.1 * b, atol=1e-4)
                    np.testing.assert_allclose(result["geometric_normal"][b], np.broadcast_to([0, 0, -1], (H, W, 3)),
                                               atol=1e-5)
                assert (result["mesh_id"] == 0).all() and (result["coverage"] == 1).all()
                assert (result["spp"] == 2).all()


def test_a_batch_equals_its_views_alone_bit_for_bit(ctx):
    scene = cornell_box()
    options = RenderOptions(width=W, height=H, max_depth=4, seed=3)
    intrinsics = [[28, 28, 16, 12], [24, 26, 15, 13], [30, 30, 16, 12]]
    eyes = np.tile(np.eye(4), (3, 1, 1))
    eyes[:, :3, 3] = [[0, 1, 3.5], [0.2, 1.1, 3.5], [-0.2, 0.9, 3.6]]
    eyes[:, :3, :3] = np.diag([1.0, -1.0, -1.0])  # OpenCV axes looking along -z: x right, y down
    outputs = ("radiance", "depth", "mesh_id", "normal")
    with RenderPipeline(ctx, scene, options, views=Views.pinhole(intrinsics, eyes, seeds=[5, 9, 11]),
                        outputs=outputs) as batch:
        with batch.step(4) as out:
            together = out.to_host()
    for b in range(3):
        views = Views.pinhole(intrinsics[b], eyes[b:b + 1], seeds=[[5, 9, 11][b]])
        with RenderPipeline(ctx, scene, options, views=views, outputs=outputs) as alone:
            with alone.step(4) as out:
                single = out.to_host()
        for name in outputs:
            np.testing.assert_array_equal(together[name][b], single[name][0], err_msg=name)


def test_a_still_over_lanes_is_bitwise_one_thread_per_pixel(ctx):
    scene = cornell_box()
    views = Views.cameras([scene.camera])
    sums = []
    for lanes in (1, 0):  # one lane, and as many as the size asks for (one sample each)
        options = RenderOptions(width=64, height=64, spp=96, seed=1, sample_lanes=lanes)
        with RenderPipeline(ctx, scene, options, views=views, outputs=("radiance",)) as p:
            assert p.still_lanes(96) == (1 if lanes == 1 else 64)
            sums.append(p.render_sums(0, 96))
    np.testing.assert_array_equal(sums[0], sums[1])


def test_the_g_buffer_integrator_and_the_ray_counter(ctx):
    scene = cornell_box()
    options = RenderOptions(width=W, height=H, max_depth=4, seed=2)
    views = Views.cameras([scene.camera, Camera((0.3, 1.0, 3.0), (0.0, 1.0, 0.0))])
    g_outputs = ("depth", "mesh_id", "primitive_id", "normal", "albedo", "coverage", "rays")
    results = {}
    for integrator in ("path", "gbuffer"):
        with RenderPipeline(ctx, scene, options, integrator=integrator, views=views, outputs=g_outputs) as p:
            with p.step(3) as out:
                results[integrator] = out.to_host()
    for name in g_outputs[:-1]:  # the same hooks report the same first hits
        np.testing.assert_allclose(results["gbuffer"][name], results["path"][name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    rays = results["path"]["rays"]
    assert (rays[:, 0] == W * H * 3).all() and (rays[:, 1:] > 0).all()
    assert (results["gbuffer"]["rays"][:, 1:] == 0).all()


def tabletop() -> Scene:
    floor = rectangle(np.array([[2, 0, 0, 0], [0, 0, 2, 0], [0, -2, 0, 0]]), Material((0.5, 0.5, 0.5)), "floor")
    box = cube(np.diag([0.2, 0.2, 0.2, 1.0]), Material((0.8, 0.2, 0.1)), "box")
    scene = Scene([floor, box], Camera((0.0, 1.5, 2.5), (0.0, 0.0, 0.0), fov=45))
    scene.environment = Environment(radiance=(0.6, 0.7, 0.8))
    return scene


def test_worlds_from_a_torch_tensor_without_a_host_copy(ctx):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    worlds = 16
    with RenderPipeline(ctx, tabletop(), RenderOptions(width=W, height=H, max_depth=2, jitter=False),
                        worlds=Worlds(worlds, movable=["box"]), outputs=("radiance", "mesh_id")) as p:
        transforms = torch.eye(4, device="cuda").repeat(worlds, 1, 1, 1)
        transforms[:, 0, 0, 3] = torch.linspace(-1.0, 1.0, worlds, device="cuda")  # each world's box elsewhere
        with p.step(transforms=transforms) as out:
            ids = out.to_host(["mesh_id"])["mesh_id"][..., 0]
        columns = [np.nonzero(ids[w] == 1)[1].mean() for w in range(worlds)]
        assert all(a < b for a, b in zip(columns, columns[1:], strict=False))  # the box moves right, world by world
        transforms[:, 0, 0, 3] = 5.0  # out of every camera's view, in place: read again at the next step
        with p.step(transforms=transforms) as out:
            assert not (out.to_host(["mesh_id"])["mesh_id"] == 1).any()


def test_outputs_go_to_torch_and_cupy_without_copies_ordered_on_the_gpu(ctx):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import cupy

    with RenderPipeline(ctx, plane_scene(), RenderOptions(width=W, height=H, jitter=False),
                        views=Views.pinhole([FX, FY, CX, CY], poses(4)), outputs=("depth", "mesh_id")) as p:
        p.step()  # warm: compiled kernels, allocated buffers
        spin_gpu(200_000_000, p.stream)  # 200 ms of work ahead of the next frame on the pipeline's stream
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            start = time.perf_counter()
            out = p.step()
            depth = torch.from_dlpack(out["depth"])  # the side stream waits for the frame on the GPU
            returned = time.perf_counter() - start
            total = depth.sum()
        assert returned < 0.1, returned  # no host wait for the frame
        assert depth.data_ptr() == out["depth"].array.data.ptr  # no copy
        assert abs(total.item() - 4.0 * 4 * W * H) < 1e-2 * 4 * W * H  # read after the frame (ordered)
        ids = cupy.from_dlpack(out["mesh_id"])
        assert int(ids.data.ptr) == out["mesh_id"].array.data.ptr and int((ids == NO_ID).sum()) == 0
        out.release()


def test_a_step_does_not_wait_on_the_host(ctx):
    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=64, height=64, max_depth=2),
                        views=Views.cameras([cornell_box().camera] * 8), outputs=("radiance", "depth"),
                        frames_in_flight=3) as p:
        with p.step():
            pass
        spin_gpu(300_000_000, p.stream)
        start = time.perf_counter()
        leases = [p.step() for _ in range(2)]  # two slots free: neither waits for the 300 ms of work
        assert time.perf_counter() - start < 0.1
        for lease in leases:
            lease.release()


def test_a_batch_with_frame_graphs_on_runs_eagerly_with_the_same_outputs(ctx):
    """Graphs asked for: a batch's frames say why they run eagerly, and write what they write with graphs off."""
    from optixasync.render._graphs import BATCHED

    def frames(graphs: bool) -> tuple[list, dict]:
        with RenderPipeline(ctx, plane_scene(), RenderOptions(width=W, height=H, jitter=False, max_depth=2),
                            views=Views.pinhole([FX, FY, CX, CY], poses(2)), outputs=("radiance", "depth"),
                            graphs=graphs) as p:
            out = []
            for result in p.frames(3):
                with result:
                    out.append({name: np.array(result[name]) for name in ("radiance", "depth")})
            return out, p.scheduler.stats.graphs.as_dict()

    eager, _ = frames(False)
    asked, counts = frames(True)
    assert counts["replays"] == 0 and counts["eager_reasons"].get(BATCHED, 0) == 3, counts
    for a, b in zip(eager, asked, strict=True):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])


def test_an_orthographic_camera_as_a_batch_view_renders_its_single_camera_image(ctx):
    """Without a far plane, an orthographic camera is an orthographic view of a batch: the same rays to a rounding,
    the same random numbers (the launch's seed), so nearly the same image as the single-camera raygen's."""
    from optixasync.scene import Camera

    scene = cornell_box()
    scene.camera = Camera.orthographic_at((0, 1, 3.9), (0, 1, 0), xmag=1.1, ymag=1.1, znear=0.1)
    options = RenderOptions(width=48, height=48, spp=64, max_depth=4)
    with RenderPipeline(ctx, scene, options) as single:
        alone = single.render()
    with RenderPipeline(ctx, scene, options, views=Views.cameras([scene.camera], seeds=[options.seed]),
                        outputs=("radiance", "depth")) as batch:
        batched = batch.render()[0]
    assert abs(float(batched.mean()) - float(alone.mean())) < 0.01 * float(alone.mean())
    assert np.mean(np.abs(batched - alone) > 0.05) < 0.02  # nearly every pixel the same
