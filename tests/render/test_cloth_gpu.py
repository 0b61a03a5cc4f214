"""The animated cloth: its grid and formula on the CPU; on a GPU, the kernel against numpy and refits in frames.

The first tests need no GPU (the grid, the numpy formula, the kernel compiled
with NVRTC, the frame update's checks); the ``gpu`` ones check that the
kernel writes what the formula says, and that frames moving the cloth through
its frame update (:class:`~optixasync.render.ClothMotion`) run
``frames_in_flight`` deep, in order, with the acceleration structure
following the vertices.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from optixasync.render import ClothMotion

# The cloth kernel and its writer have no public door: on a GPU they run inside ClothMotion; here the source is
# compiled with NVRTC to check it on the CPU, and the writer's checks run without a GPU.
from optixasync.render._updates import CLOTH_SOURCE, write_cloth
from optixasync.scene import ClothAnimation, Scene, cornell_room
from optixasync.scene.demo import CLOTH_WAVES, cloth_indices

# -- CPU -------------------------------------------------------------------------------------------------------------


def test_indices_of_a_2x2_grid():
    # vertices 0 1 2 / 3 4 5 / 6 7 8, row 0 at the top
    expected = [[0, 4, 1], [1, 5, 2], [3, 7, 4], [4, 8, 5], [0, 3, 4], [1, 4, 5], [3, 6, 7], [4, 7, 8]]
    np.testing.assert_array_equal(cloth_indices(2), expected)
    assert cloth_indices(2).dtype == np.int32


def test_default_cloth_has_a_million_triangles():
    cloth = ClothAnimation()
    assert cloth.num_triangles == 2 * 708**2 == 1_002_528
    assert cloth.num_vertices == 709**2
    assert cloth.indices().shape == (1_002_528, 3)


def test_grid_is_a_closed_sheet_facing_the_camera():
    cells = 7
    cloth = ClothAnimation(cells, amplitude=0.0, pleat=0.0, sway=0.0)
    v = cloth.positions(0.0).astype(np.float64)
    f = cloth.indices()
    assert f.min() == 0 and f.max() == (cells + 1) ** 2 - 1
    normals = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    assert (normals[:, 2] > 0).all() and np.allclose(normals[:, :2], 0)  # flat at rest, front faces towards +z
    area = 0.5 * np.linalg.norm(normals, axis=1).sum()
    assert area == pytest.approx(cloth.width * cloth.height)  # covers the rectangle exactly once
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert counts.max() == 2 and (counts == 1).sum() == 4 * cells  # a manifold sheet with a 4*cells border


def test_positions_stay_in_the_room_and_the_rod_holds_the_top():
    cloth = ClothAnimation(40)
    top_row = slice(0, 41)
    rest = cloth.positions(0.0)
    for t in np.linspace(0.0, 50.0, 23):
        v = cloth.positions(float(t))
        assert v.dtype == np.float32 and v.shape == (41 * 41, 3)
        assert np.isfinite(v).all()
        assert (np.abs(v) < 0.98 + 1e-7).all()
        np.testing.assert_array_equal(v[top_row], rest[top_row])  # the rod does not move
        np.testing.assert_allclose(v[top_row, 1], cloth.top, atol=1e-6)
    hem = slice(40 * 41, 41 * 41)
    assert np.abs(cloth.positions(1.0)[hem, 2] - cloth.positions(0.0)[hem, 2]).max() > 0.02  # the hem moves


def test_cloth_parameters_are_checked():
    for kwargs, message in [({"cells": 0}, "positive integer"), ({"cells": 2.5}, "positive integer"),
                            ({"cells": 46340}, "at most 46339"),
                            ({"width": 2.0}, "leaves the room"), ({"amplitude": 0.6}, "leaves the room"),
                            ({"top": 0.99}, "outside the room"), ({"height": -1.0}, "positive"),
                            ({"depth": float("nan")}, "finite"), ({"sway": -0.1}, ">= 0")]:
        with pytest.raises(ValueError, match=message):
            ClothAnimation(**kwargs)


def test_kernel_compiles_with_nvrtc_and_uses_the_formulas_constants():
    from optixasync.program import compile_ptx

    ptx = compile_ptx(CLOTH_SOURCE, "cloth.cu")
    assert re.search(r"\.entry\s+cloth_positions\s*\(", ptx)
    assert "$" not in CLOTH_SOURCE  # every constant was substituted
    for constant in ("7.0f", "2.1f", "2.5f", "11.0f", "1.3f", "4.0f", "8.0f", "0.9f"):
        assert constant in CLOTH_SOURCE
    assert sorted(f"{value!r}f" for value in CLOTH_WAVES.values()) == sorted(
        ("7.0f", "2.1f", "2.5f", "11.0f", "1.3f", "4.0f", "8.0f", "0.9f"))  # the numpy formula's constants


def test_scene_is_the_room_plus_the_dynamic_cloth():
    cloth = ClothAnimation(16)
    scene = cloth.scene()
    room = cornell_room()
    assert isinstance(scene, Scene)
    assert len(scene.meshes) == len(room.meshes) + 1
    mesh = scene.meshes[cloth.mesh_index]
    assert mesh.dynamic and mesh.name == "cloth" and mesh.material.two_sided
    np.testing.assert_array_equal(mesh.vertices, cloth.positions(0.0))
    np.testing.assert_array_equal(mesh.indices, cloth.indices())


def test_the_motion_needs_the_scene_and_the_writer_needs_a_device_array():
    cloth = ClothAnimation(4)
    with pytest.raises(RuntimeError, match="scene"):
        ClothMotion(cloth).move(object(), 0.0, object())
    with pytest.raises(RuntimeError, match="scene"):
        ClothMotion(cloth, 0.1)(object(), 3, object())  # as a frame update: frame 3 at t = 0.3
    assert ClothMotion(cloth).dt == 1 / 30
    pytest.importorskip("cupy")
    with pytest.raises(TypeError, match="cupy.ndarray"):
        write_cloth(cloth, np.zeros((25, 3), np.float32), 0.0, object())


# -- GPU -------------------------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_kernel_matches_numpy(ctx):
    from optixasync.cuda import create_stream

    cloth = ClothAnimation(50)
    stream = create_stream()
    out = ctx.memory.empty((cloth.num_vertices, 3), np.float32, stream)
    for t in (0.0, 0.37, 5.0, 31.4):
        write_cloth(cloth, out, t, stream)
        host = out.get(stream=stream)
        stream.synchronize()
        assert np.isfinite(host).all()
        assert (np.abs(host) <= 0.98).all()
        np.testing.assert_allclose(host, cloth.positions(t), atol=3e-5, err_msg=f"t = {t}")


@pytest.mark.gpu
def test_write_rejects_bad_output_and_the_default_stream(ctx):
    import cupy

    from optixasync.cuda import create_stream

    cloth = ClothAnimation(8)
    stream = create_stream()
    with pytest.raises(ValueError, match=r"\(81, 3\)"):
        write_cloth(cloth, ctx.memory.empty((80, 3), np.float32, stream), 0.0, stream)
    with pytest.raises(ValueError, match="legacy default stream"):
        write_cloth(cloth, ctx.memory.empty((81, 3), np.float32, stream), 0.0, cupy.cuda.Stream.null)
    with pytest.raises(ValueError, match="finite"):
        write_cloth(cloth, ctx.memory.empty((81, 3), np.float32, stream), float("nan"), stream)


@pytest.mark.gpu
def test_refit_in_frames_in_flight(ctx):
    from optixasync.accel import RayCaster
    from optixasync.cuda import create_stream, spin_gpu
    from optixasync.render import RenderOptions, RenderPipeline
    from optixasync.scheduler import FrameScheduler

    cloth = ClothAnimation(48)
    scene = cloth.scene()
    stream = create_stream()
    n, frames, dt = 2, 6, 0.4
    motion = ClothMotion(cloth, dt)
    options = RenderOptions(width=32, height=32, spp=1, max_depth=2)
    with RenderPipeline(ctx, scene, options, stream=stream) as pipeline:
        assert pipeline.stream is stream
        sched = FrameScheduler(ctx, n, params_dtype=pipeline.params_dtype, stream=stream)
        for k in range(frames):
            with sched.frame() as f:
                motion(pipeline, k, f)  # the frame as the stream: the cloth's work is timed with it
                spin_gpu(30_000_000, f)  # 30 ms: the host records the next frame while this one runs
                pipeline.reset()
                pipeline.record(f, 1)
        results = sched.drain()
        assert [r.index for r in results] == list(range(frames))
        for result in results:
            image = result["image"]
            assert image.shape == (32, 32, 4) and image.dtype == np.uint8
        assert [s.in_flight for s in sched.stats.frames[1:]] == [n] * (frames - 1)

        # The device vertices and the refitted structure are those of the last frame's time.
        t_last = (frames - 1) * dt
        expected = cloth.positions(t_last)
        device = pipeline.vertices(cloth.mesh_index).get(stream=stream)
        stream.synchronize()
        np.testing.assert_allclose(device, expected, atol=3e-5)
        triangles = expected[cloth.indices()[::97]].astype(np.float64)
        centroids = triangles.mean(axis=1)
        origins = centroids * (1.0, 1.0, 0.0) + (0.0, 0.0, 3.0)  # in front of the cloth, looking at -z
        directions = np.tile((0.0, 0.0, -1.0), (len(origins), 1))
        hits = RayCaster(ctx).cast(pipeline.device_scene.accel, origins, directions, stream=stream)
        assert hits["hit"].all()
        np.testing.assert_allclose(hits["t"], 3.0 - centroids[:, 2], atol=1e-4)
        sched.close()
