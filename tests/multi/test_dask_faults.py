"""Dask faults after delivery: a delivered frame is never rendered again, and a lost scheduler fails the job
naming the scheduler and listing what had finished.

Real Dask processes: a ``LocalCluster`` of two nanny-managed workers (a killed worker is a real lost
process), and, for the scheduler, a ``dask scheduler`` and a ``dask worker`` started as subprocesses so
that the scheduler itself can be killed. The time bounds are safety limits against a hang.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optixasync.errors import SchedulerLostError, WorkerError
from optixasync.multi import DaskGPUs, FunctionFactory, run_in_order
from optixasync.testing import CpuFrame, FaultAt, cpu_frame, cpu_setup, render_records, time_limit

distributed = pytest.importorskip("distributed", reason="the Dask backend needs the cluster extra (distributed)")

REPO_ROOT = Path(__file__).resolve().parents[2]
START_S = 60.0  # a scheduler and a worker process start in about two seconds


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as local, distributed.Client(local) as client:
        client.wait_for_workers(2)
        yield client


def test_a_delivered_frame_is_never_rendered_again(cluster, tmp_path):
    """A worker killed mid-job held results already delivered; Dask must not run them again."""
    cluster.wait_for_workers(2)
    backend = DaskGPUs(cluster)
    renders = tmp_path / "renders"
    renders.mkdir()
    fault = FaultAt(30, "kill", marker=str(tmp_path))
    factory = FunctionFactory(cpu_frame, setup=cpu_setup)
    delivered: dict[int, float] = {}
    try:
        with time_limit(120):
            for result in run_in_order(backend, factory, [CpuFrame(k, 0.04, fault, str(renders)) for k in range(60)]):
                delivered[result["index"]] = time.time()
    finally:
        backend.release(factory)
    assert sorted(delivered) == list(range(60))
    killed = int(Path(tmp_path, "fault-30").read_text())
    records = render_records(renders)
    assert any(pid == killed for _, pid, _ in records)  # the dead worker had rendered (and delivered) frames
    late = [(index, pid) for index, pid, at in records if at > delivered[index]]
    assert not late, f"frames rendered again after they were delivered: {late}"


def _wait_for(path: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.stat().st_size):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {seconds} s")
        time.sleep(0.05)


@pytest.fixture
def own_scheduler(tmp_path):
    """(a scheduler process, its address, a client) with one worker process; both killed at the end."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", ""))
                                                      if p))
    file = tmp_path / "scheduler.json"
    common = ["--no-dashboard"]
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", "0", "--scheduler-file", str(file), *common], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        _wait_for(file, START_S)
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                   str(file), "--nthreads", "1", "--no-nanny", "--death-timeout", "5", *common],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = distributed.Client(scheduler_file=str(file), timeout=START_S)
        client.wait_for_workers(1, timeout=START_S)
        yield scheduler, json.loads(file.read_text())["address"], client
    finally:
        for process in (worker, scheduler):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(10)


def test_a_lost_scheduler_fails_the_job_naming_it_and_what_had_finished(own_scheduler):
    scheduler, address, client = own_scheduler
    backend = DaskGPUs(client)
    factory = FunctionFactory(cpu_frame, setup=cpu_setup)
    job = run_in_order(backend, factory, [CpuFrame(k, 0.05) for k in range(200)])
    first = [next(job)["index"] for _ in range(5)]
    assert first == [0, 1, 2, 3, 4]
    os.kill(scheduler.pid, signal.SIGKILL)
    with time_limit(60), pytest.raises(SchedulerLostError) as info:
        list(job)
    error = info.value
    assert isinstance(error, WorkerError)  # code catching worker failures catches this too
    assert error.scheduler == address and f"lost the Dask scheduler {address}" in str(error)
    assert set(first) <= set(error.finished) and len(error.finished) < 200
    assert "finished before: 0-" in str(error)
    assert "a Dask worker" not in str(error)
    client.close(timeout=2)
