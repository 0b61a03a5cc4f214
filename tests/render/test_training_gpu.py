"""The dataset writer and the training source on a GPU: what the CPU tests promise, on the device.

Run with ``python -m pytest -m gpu tests/render/test_training_gpu.py``; each test skips without a GPU, the torch
one without PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.render import (
    DatasetOptions,
    OrbitCameras,
    RenderOptions,
    RenderPipeline,
    TrainingBatches,
    Views,
    write_dataset,
)
from optixasync.render._dataset import varied_scene
from optixasync.render._training import hash_uniform
from optixasync.scene import material_scene

pytestmark = pytest.mark.gpu

K = [[40.0, 0, 32], [0, 40.0, 24], [0, 0, 1]]


def views(count: int = 4) -> Views:
    return Views.pinhole([K] * count, np.tile(np.eye(4), (count, 1, 1)), seeds=range(count))


def test_the_device_hash_and_poses_equal_the_host_formula(ctx):
    import cupy

    cameras = OrbitCameras(centre=(0, 0.3, 0), distance=(2, 3))
    for channel in range(3):
        np.testing.assert_array_equal(hash_uniform(cupy, 9, 4, 1000, channel).get(), hash_uniform(np, 9, 4, 1000,
                                                                                                    channel))
    np.testing.assert_allclose(cameras.poses(cupy, 1000, 9, 4).get(), cameras.poses(np, 1000, 9, 4), atol=2e-6)


def test_table_updates_render_what_the_varied_scene_renders(ctx):
    """A variation applied to one pipeline's tables gives the image of a pipeline built on the varied scene."""
    scene = material_scene()
    options = DatasetOptions(count=4, width=64, height=48, spp=4, views_per_variation=4, seed=2)
    from optixasync.render._dataset import variation_of

    materials, scale = variation_of(scene, options, 3)
    render = RenderOptions(width=64, height=48, spp=4, max_depth=3)
    with RenderPipeline(ctx, scene, render, views=views(), outputs=("radiance",)) as p:
        p.update_tables(materials, scale)
        updated = p.render()
    with RenderPipeline(ctx, varied_scene(scene, options, 3), render, views=views(), outputs=("radiance",)) as p:
        rebuilt = p.render()
    np.testing.assert_allclose(updated, rebuilt, rtol=1e-5, atol=1e-6)
    assert np.abs(updated - rebuilt).max() <= 1e-4 * max(1.0, float(np.abs(rebuilt).max()))


def test_a_resumed_dataset_has_the_bytes_of_a_whole_run(ctx, tmp_path):
    scene = material_scene()
    options = DatasetOptions(count=24, width=64, height=64, spp=2, views_per_variation=8, seed=5,
                             outputs=("image", "depth", "normal", "mesh_id"), formats=("png", "npy"))

    def stop(done, count):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_dataset(ctx, scene, tmp_path / "part", options, progress=stop)
    (tmp_path / "part" / "000003.depth.npy").unlink(missing_ok=True)
    write_dataset(ctx, scene, tmp_path / "part", options)
    write_dataset(ctx, scene, tmp_path / "whole", options, frames_in_flight=1, workers=1)
    whole = sorted(p.name for p in (tmp_path / "whole").iterdir())
    assert sorted(p.name for p in (tmp_path / "part").iterdir()) == whole
    differ = [n for n in whole if (tmp_path / "part" / n).read_bytes() != (tmp_path / "whole" / n).read_bytes()]
    assert differ == []


def test_batches_reach_torch_without_copies(ctx):
    torch = pytest.importorskip("torch")
    with RenderPipeline(ctx, material_scene(), RenderOptions(width=64, height=48, spp=1, max_depth=2),
                        views=views(8), outputs=("image", "depth")) as p:
        sums = []
        for batch in TrainingBatches(p, 4, cameras=OrbitCameras(distance=(2.5, 3.5)), color_jitter=0.2,
                                     light_scale=(0.5, 1.5), framework="torch"):
            image, depth = batch["image"], batch["depth"]
            assert isinstance(image, torch.Tensor) and image.is_cuda and image.shape == (8, 48, 64, 4)
            assert depth.dtype == torch.float32 and (depth > 0).any()
            sums.append(float(image[..., :3].float().mean()))
        assert len(set(sums)) == 4 and all(s > 0 for s in sums)


def test_the_same_seed_gives_the_same_batches_on_the_device(ctx):
    def run():
        with RenderPipeline(ctx, material_scene(), RenderOptions(width=32, height=32, spp=2, max_depth=2),
                            views=views(4), outputs=("radiance",)) as p:
            return [batch["radiance"].get() for batch in TrainingBatches(p, 2, cameras=OrbitCameras(), seed=3,
                                                                         light_scale=(0.5, 1.5),
                                                                         framework="cupy")]

    for a, b in zip(run(), run(), strict=True):
        np.testing.assert_array_equal(a, b)
