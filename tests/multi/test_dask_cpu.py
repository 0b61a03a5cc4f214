"""The Dask backend on a real ``distributed.LocalCluster`` of CPU worker processes, with CPU frame functions.

Real Dask, not a mock of it: two worker processes under nannies, so a worker killed with SIGKILL is a
real lost process whose tasks the scheduler runs again.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest

from optixasync.errors import MissingExtraError, WorkerError
from optixasync.multi import DaskGPUs, FunctionFactory, SampleRange, run_in_order, split_samples
from optixasync.testing import (
    CountedPayload,
    CpuFrame,
    FaultAt,
    cpu_frame,
    cpu_sample_sums,
    cpu_setup,
    frame_image,
)

distributed = pytest.importorskip("distributed", reason="the Dask backend needs the cluster extra (distributed)")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as local, distributed.Client(local) as client:
        client.wait_for_workers(2)
        yield client


@pytest.fixture
def backend(cluster):
    cluster.wait_for_workers(2)  # a test that killed a worker leaves its nanny restarting it
    return DaskGPUs(cluster)


def test_frames_in_order_exactly_once_from_both_workers(backend):
    factory = FunctionFactory(cpu_frame, setup=cpu_setup)
    try:
        results = list(run_in_order(backend, factory, [CpuFrame(k, 0.01) for k in range(40)], batch=2))
        assert [r["index"] for r in results] == list(range(40))
        for r in results:
            np.testing.assert_array_equal(r["image"], frame_image(r["index"]))
        pids = {r["pid"] for r in results}
        assert len(pids) == 2 and os.getpid() not in pids  # both worker processes, never this one
        # worker-local state: one per worker, kept for the next job
        assert len({r["token"] for r in results}) == 2
        again = list(run_in_order(backend, factory, [CpuFrame(k) for k in range(8)]))
        assert {r["token"] for r in again} <= {r["token"] for r in results}
    finally:
        backend.release(factory)


def test_the_job_data_travels_once_per_worker_not_per_task(backend, tmp_path):
    payload = CountedPayload(str(tmp_path), nbytes=4 << 20)
    factory = FunctionFactory(cpu_frame, setup=functools.partial(cpu_setup, payload=payload))
    try:
        results = list(run_in_order(backend, factory, [CpuFrame(k, 0.005) for k in range(24)]))
        assert len(results) == 24
        assert len({r["pid"] for r in results}) == 2
        # 24 tasks on 2 workers: unpickled once per worker. Sometimes a worker fetches it once more (3 unpicklings
        # in 8 of about 100 runs; most likely Dask's active memory manager dropping an idle copy), never per task.
        first = CountedPayload.count(str(tmp_path))
        assert 2 <= first <= 4
        list(run_in_order(backend, factory, [CpuFrame(k) for k in range(10)]))  # a second job reuses the state
        assert CountedPayload.count(str(tmp_path)) <= first + 2
    finally:
        backend.release(factory)


def test_sample_ranges_summed_in_range_order(backend):
    factory = FunctionFactory(cpu_sample_sums, setup=cpu_setup)
    try:
        total = sum(p.astype(np.float64) for p in run_in_order(backend, factory, split_samples(2048, 4)))
    finally:
        backend.release(factory)
    whole = cpu_sample_sums(None, SampleRange(0, 2048))
    assert np.max(np.abs(total - whole) / whole) <= 1e-5


def test_a_killed_worker_loses_no_frame(backend, tmp_path):
    """SIGKILL of a worker process mid-job: its frames run again elsewhere, every frame arrives once, in order."""
    fault = FaultAt(11, "kill", marker=str(tmp_path))
    factory = FunctionFactory(cpu_frame, setup=cpu_setup)
    try:
        results = list(run_in_order(backend, factory,
                                    [CpuFrame(k, 0.01, fault) for k in range(30)], batch=3))
    finally:
        backend.release(factory)
    killed = int(Path(tmp_path, "fault-11").read_text())
    assert [r["index"] for r in results] == list(range(30))
    with pytest.raises(ProcessLookupError):
        os.kill(killed, 0)  # the process really is gone


def test_a_raising_worker_fails_the_job_naming_worker_and_device(backend):
    factory = FunctionFactory(cpu_frame, setup=cpu_setup)
    try:
        with pytest.raises(WorkerError, match=r"GPU 0.*Dask worker tcp://.*RuntimeError: fault injected at frame 4"):
            list(run_in_order(backend, factory, [CpuFrame(k, 0.005, FaultAt(4, "raise")) for k in range(40)]))
        # the cluster is still fine for the next job
        assert len(list(run_in_order(backend, factory, [CpuFrame(k) for k in range(4)]))) == 4
    finally:
        backend.release(factory)


def test_bad_cluster_argument():
    with pytest.raises(TypeError, match="scheduler address"):
        DaskGPUs(42)


def test_missing_distributed_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_distributed(name, *args, **kwargs):
        if name == "distributed":
            raise ImportError("no distributed")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    with pytest.raises(MissingExtraError, match=r"optixasync\[cluster\]"):
        DaskGPUs("tcp://127.0.0.1:1")
