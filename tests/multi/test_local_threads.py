"""The in-process backend (one thread per device) with CPU work: dealing, order, state kept, failures."""

from __future__ import annotations

import functools
import threading
import time

import numpy as np
import pytest

from optixasync.errors import WorkerError
from optixasync.multi import FunctionFactory, LocalGPUs, SampleRange, run_in_order, split_samples
from optixasync.testing import CpuFrame, FaultAt, cpu_frame, cpu_sample_sums, cpu_setup, frame_image


@pytest.fixture
def backend():
    with LocalGPUs._unchecked([0, 1, 2]) as workers:  # three CPU workers standing for three GPUs
        yield workers


def test_frames_arrive_in_order_exactly_once_from_every_worker(backend):
    factory = FunctionFactory(cpu_frame, setup=cpu_setup)
    delays = np.random.default_rng(1).uniform(0.0, 0.004, 60)
    results = list(run_in_order(backend, factory, [CpuFrame(k, float(delays[k])) for k in range(60)]))
    assert [r["index"] for r in results] == list(range(60))
    for r in results:
        np.testing.assert_array_equal(r["image"], frame_image(r["index"]))
    assert {r["device"] for r in results} == {0, 1, 2}  # dealt to every worker
    assert sum(backend.tasks_done) == 60
    # The state is made once per worker and kept for the next job.
    tokens = {r["token"] for r in results}
    assert len(tokens) == 3
    again = list(run_in_order(backend, factory, [CpuFrame(k) for k in range(9)]))
    assert {r["token"] for r in again} <= tokens


def test_a_faster_worker_takes_more_frames(backend):
    def slow_on_device_0(state, frame):
        time.sleep(0.02 if state.device == 0 else 0.002)
        return state.device

    devices = list(run_in_order(backend, FunctionFactory(slow_on_device_0, setup=cpu_setup), range(60)))
    assert devices.count(0) < devices.count(1) and devices.count(0) < devices.count(2)


def test_sample_ranges_sum_to_the_single_range(backend):
    factory = FunctionFactory(cpu_sample_sums, setup=cpu_setup)
    ranges = split_samples(1024, 3)
    total = sum(part.astype(np.float64) for part in run_in_order(backend, factory, ranges))
    whole = cpu_sample_sums(None, SampleRange(0, 1024))
    assert np.max(np.abs(total - whole) / whole) <= 1e-5


def test_a_failing_worker_fails_the_job_naming_its_device_and_the_others_stop(backend):
    started = threading.Event()

    def fail_on_device_1(state, frame):
        started.set()
        if state.device == 1 and frame.index >= 5:
            raise MemoryError("out of memory on the device")
        time.sleep(0.002)
        return frame.index

    factory = FunctionFactory(fail_on_device_1, setup=cpu_setup)
    with pytest.raises(WorkerError, match=r"GPU 1 .*MemoryError: out of memory on the device") as info:
        list(run_in_order(backend, factory, [CpuFrame(k) for k in range(500)]))
    assert sum(backend.tasks_done) < 500  # the others did not render the remaining frames (counted, not timed)
    assert info.value.device == "GPU 1"
    assert isinstance(info.value.__cause__, MemoryError)
    # The backend stays usable: the next job runs on all three workers.
    assert list(run_in_order(backend, FunctionFactory(cpu_frame, setup=cpu_setup), [CpuFrame(k) for k in range(6)]))


def test_leaving_the_iterator_early_stops_the_job(backend):
    factory = FunctionFactory(functools.partial(_slow_identity, 0.002))
    frames = run_in_order(backend, factory, list(range(1000)))
    assert [next(frames) for _ in range(5)] == list(range(5))
    frames.close()
    assert sum(backend.tasks_done) < 100  # stopped: counted, not timed


def test_a_setup_that_raises_names_the_device(backend):
    def broken(device):
        raise RuntimeError(f"no context on {device}")

    with pytest.raises(WorkerError, match="no context on"):
        list(run_in_order(backend, FunctionFactory(cpu_frame, setup=broken), [CpuFrame(0)]))


def test_release_closes_each_workers_state_in_its_thread(backend):
    closed = []
    factory = FunctionFactory(cpu_frame, setup=cpu_setup,
                              teardown=lambda state: closed.append((state.device, threading.current_thread().name)))
    list(run_in_order(backend, factory, [CpuFrame(k, 0.003) for k in range(12)]))
    backend.release(factory)
    assert sorted(d for d, _ in closed) == [0, 1, 2]
    assert all(name.startswith(f"optixasync-gpu{d}") for d, name in closed)


def test_a_closed_backend_refuses_work():
    workers = LocalGPUs._unchecked([0])
    workers.close()
    workers.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        list(run_in_order(workers, FunctionFactory(cpu_frame), [CpuFrame(0)]))


def test_fault_kinds_are_checked():
    with pytest.raises(ValueError, match="kind"):
        FaultAt(3, "explode")


def _slow_identity(delay, state, item):
    time.sleep(delay)
    return item
