"""The streaming training source on the CPU, over the stand-ins of the GPU: its poses, table updates and leases.

The renders are the stand-in integrator's; what is tested is the source's: the poses drawn per batch (the device
formula run in numpy against an independent float64 look-at), each batch one step with those poses, the tables
rewritten per batch, the leases given back, and the same batches for the same seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fake_gpu import FakeContext, FakeDeviceScene, FakeScheduler, install

from optixasync.render import OrbitCameras, RenderOptions, RenderPipeline, TrainingBatches, Views
from optixasync.render._training import hash_uniform
from optixasync.scene import Camera, Environment, Material, Scene, cube, rectangle

VIEWS = 6


@pytest.fixture
def gpu(monkeypatch):
    install(monkeypatch)


def scene() -> Scene:
    floor = rectangle(np.array([[2, 0, 0, 0], [0, 0, 2, 0], [0, -2, 0, 0]]), Material((0.5, 0.5, 0.5)), "floor")
    box = cube(np.diag([0.3, 0.3, 0.3, 1.0]), Material((0.8, 0.2, 0.1)), "box")
    return Scene([floor, box], Camera((0, 1, 3), (0, 0, 0)), Environment(radiance=(0.5, 0.6, 0.7)))


def pipeline() -> RenderPipeline:
    k = [[8.0, 0, 4], [0, 8.0, 3], [0, 0, 1]]
    views = Views.pinhole([k] * VIEWS, np.tile(np.eye(4), (VIEWS, 1, 1)), seeds=range(VIEWS))
    return RenderPipeline(FakeContext(), scene(), RenderOptions(width=8, height=6, spp=1), views=views,
                          outputs=("image", "depth"))


def look_at(eye: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """An OpenCV camera-to-world pose at ``eye`` looking at ``centre``, +y up (float64, independent of the source)."""
    forward = (centre - eye) / np.linalg.norm(centre - eye)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    return np.column_stack([right, np.cross(forward, right), forward, eye])


def test_the_poses_look_at_the_centre_from_the_drawn_distance_and_elevation():
    cameras = OrbitCameras(centre=(0.1, 0.2, -0.3), distance=(2.0, 3.0), elevation=(10.0, 50.0))
    poses = cameras.poses(np, 500, seed=7, batch=3)
    centre = np.array(cameras.centre)
    u = [hash_uniform(np, 7, 3, 500, c).astype(np.float64) for c in range(3)]
    for b in range(0, 500, 37):
        distance = 2.0 + u[0][b]
        elevation = math.radians(10.0 + 40.0 * u[1][b])
        azimuth = 2 * math.pi * u[2][b]
        eye = centre + distance * np.array([math.cos(elevation) * math.sin(azimuth), math.sin(elevation),
                                            math.cos(elevation) * math.cos(azimuth)])
        np.testing.assert_allclose(poses[b], look_at(eye, centre), atol=2e-6)
    rotations = poses[:, :, :3].astype(np.float64)
    np.testing.assert_allclose(np.einsum("bji,bjk->bik", rotations, rotations), np.broadcast_to(np.eye(3), (500, 3, 3)),
                               atol=1e-5)
    distances = np.linalg.norm(poses[:, :, 3] - centre, axis=1)
    assert distances.min() >= 2.0 - 1e-5 and distances.max() <= 3.0 + 1e-5 and distances.std() > 0.2


def test_the_hash_is_uniform_and_depends_on_every_key():
    u = hash_uniform(np, 1, 2, 100_000, 0)
    assert u.dtype == np.float32 and 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    assert np.histogram(u, 10, (0, 1))[0].min() > 9_500
    for other in (hash_uniform(np, 2, 2, 100_000, 0), hash_uniform(np, 1, 3, 100_000, 0),
                  hash_uniform(np, 1, 2, 100_000, 1)):
        assert abs(np.corrcoef(u, other)[0, 1]) < 0.02


def test_each_batch_is_a_step_with_its_poses_and_tables(gpu):
    p = pipeline()
    cameras = OrbitCameras(distance=(2.0, 2.5))
    source = TrainingBatches(p, 3, cameras=cameras, color_jitter=0.2, light_scale=(0.5, 1.5), seed=11,
                             framework=None)
    seen = []
    for batch in source:
        assert sorted(batch) == ["depth", "image"] and batch["image"].array.shape == (VIEWS, 6, 8, 4)
        np.testing.assert_array_equal(p._batch.views.poses, cameras.poses(np, VIEWS, 11, batch.index)
                                      .astype(np.float64))
        seen.append((batch.index, batch.light_scale, p._leases.held()))
    assert [s[0] for s in seen] == [0, 1, 2] and all(held == 1 for *_rest, held in seen)  # one batch held at a time
    assert p._leases.held() == 0  # the last one given back when the loop ended
    assert all(0.5 <= s[1] <= 1.5 for s in seen) and len({s[1] for s in seen}) == 3
    updates = FakeDeviceScene.instances[0].table_updates
    assert len(updates) == 3 and [u.light_scale for u, _stream in updates] == [s[1] for s in seen]
    assert all(len(u.materials) == 2 for u, _stream in updates)
    assert len(FakeScheduler.instances[0].frames) == 3


def test_the_same_seed_gives_the_same_batches(gpu):
    def run(seed):
        p = pipeline()
        out = []
        for batch in TrainingBatches(p, 2, cameras=OrbitCameras(), color_jitter=0.3, light_scale=(0.5, 1.5),
                                     seed=seed, framework=None):
            out.append((np.array(p._batch.views.poses), batch.light_scale,
                        [m.reflectance for m in FakeDeviceScene.instances[-1].updates.materials]))
        return out

    a, b, c = run(4), run(4), run(5)
    for (pa, sa, ma), (pb, sb, mb) in zip(a, b, strict=True):
        np.testing.assert_array_equal(pa, pb)
        assert sa == sb and ma == mb
    assert not np.array_equal(a[0][0], c[0][0]) and a[0][1] != c[0][1]
    assert not np.array_equal(a[0][0], a[1][0])  # batches differ


def test_held_batches_stay_leased_until_released(gpu):
    p = pipeline()
    batches = list(TrainingBatches(p, 3, cameras=OrbitCameras(), framework=None, hold=True))
    assert p._leases.held() == 3
    for batch in batches:
        batch.release()
    assert p._leases.held() == 0


@pytest.mark.parametrize("kwargs, match", [
    ({"framework": "tensorflow"}, "framework must be one of"),
    ({"light_scale": (0, 1)}, "light_scale must be"),
    ({"color_jitter": 2}, "color_jitter must be"),
    ({"cameras": "orbit"}, "cameras must be an OrbitCameras"),
    ({"count": -1}, "count"),
])
def test_bad_arguments_are_refused_before_any_gpu_work(gpu, kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        TrainingBatches(pipeline(), **kwargs)


def test_a_pipeline_without_views_is_refused(gpu):
    p = RenderPipeline(FakeContext(), scene(), RenderOptions(width=8, height=6, spp=1))
    with pytest.raises(ValueError, match="views=Views.pinhole"):
        TrainingBatches(p)


@pytest.mark.parametrize("kwargs, match", [
    ({"distance": (0, 1)}, "distance must be"),
    ({"elevation": (10, 95)}, "below 89"),
    ({"centre": (0, float("nan"), 0)}, "centre must be"),
])
def test_bad_orbits_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OrbitCameras(**kwargs)
