"""The Dask backend on real GPU workers: two worker processes (one per GPU with dask-cuda and two GPUs;
sharing GPU 0 otherwise), a path-traced sequence surviving a killed worker, and by-sample equality."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import optixasync
from optixasync.multi import DaskGPUs, Farm
from optixasync.render import ClothMotion, RenderOptions, RenderPipeline
from optixasync.scene import ClothAnimation, cornell_box
from optixasync.testing import FaultAt, FaultyUpdate

pytestmark = pytest.mark.gpu
distributed = pytest.importorskip("distributed", reason="the Dask backend needs the cluster extra (distributed)")


def _cluster():
    import cupy

    if cupy.cuda.runtime.getDeviceCount() >= 2:
        try:
            from dask_cuda import LocalCUDACluster

            return LocalCUDACluster(CUDA_VISIBLE_DEVICES="0,1", dashboard_address=None, silence_logs=40)
        except ImportError:
            pass
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                    silence_logs=40)


@pytest.fixture(scope="module")
def client():
    with _cluster() as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        yield client


def test_by_sample_through_dask_equals_one_gpu(client):
    options = RenderOptions(width=128, height=128, spp=256, seed=5)
    with optixasync.Context() as ctx, RenderPipeline(ctx, cornell_box(), options) as pipeline:
        single = pipeline.render()
    with Farm(cornell_box(), options, backend=DaskGPUs(client)) as farm:
        split = farm.render()
        assert len(farm.last_parts) == 2
    difference = float(np.max(np.abs(split - single) / np.maximum(np.abs(single), 1e-6)))
    print(f"by-sample through Dask vs one GPU: max relative difference {difference:.3g}")
    assert difference <= 1e-5


def test_a_killed_gpu_worker_loses_no_frame(client, tmp_path):
    client.wait_for_workers(2)
    cloth = ClothAnimation(48)
    marker = tmp_path / "marker"
    marker.mkdir()
    update = FaultyUpdate(FaultAt(9, "kill", marker=str(marker)), ClothMotion(cloth, 1 / 24))
    with Farm(cloth.scene(), {"width": 96, "height": 96, "spp": 4}, backend=DaskGPUs(client)) as farm:
        outputs = list(farm.frames(24, update=update, out=tmp_path / "frames" / "out.png"))
    assert Path(marker, "fault-9").exists()  # the worker rendering frame 9 was killed
    assert [o.index for o in outputs] == list(range(24))
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == [f"out_{k:04d}.png" for k in range(24)]
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it
