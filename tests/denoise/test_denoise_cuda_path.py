"""The 'cuda' code path without a GPU: OIDN's CPU device stands in for the CUDA device, a recorder for CuPy.

``oidnNewCUDADevice`` is replaced by a function that records its arguments and returns a CPU device, and
the arrays are host memory behind ``__cuda_array_interface__``: the denoiser takes every branch it takes on
a GPU (stream handles, event joins, ``oidnExecuteFilterAsync``), and the CPU device really denoises.
"""

from __future__ import annotations

import gc
import itertools
import sys
import types

import numpy as np
import pytest

from optixasync.denoise import Denoiser
from optixasync.denoise._oidn import DEVICE_TYPE_CPU, load_library

GUIDED = {"albedo": True, "normal": True, "clean_aux": True}


class DeviceArray:
    """Host memory presented as a device array (the CPU device reads it like the CUDA device reads VRAM)."""

    def __init__(self, array: np.ndarray) -> None:
        self.host = array
        self.__cuda_array_interface__ = {
            "shape": array.shape,
            "typestr": array.dtype.str,
            "data": (array.ctypes.data, not array.flags.writeable),
            "strides": None if array.flags.c_contiguous else array.strides,
            "version": 3,
            "stream": 1,
        }


class Recorder:
    """The CuPy stream and event calls the denoiser makes (through optixasync.cuda), in order."""

    def __init__(self) -> None:
        self.log: list[tuple] = []
        self._ids = itertools.count(0xE0)
        recorder = self

        class Event:
            def __init__(self, block: bool = False, disable_timing: bool = False) -> None:
                self.ptr = next(recorder._ids)
                recorder.log.append(("create", self.ptr, disable_timing))

            def record(self, stream) -> None:
                recorder.log.append(("record", self.ptr, stream.ptr))

            def __del__(self) -> None:
                recorder.log.append(("destroy", self.ptr))

        self.Event = Event

    def streamWaitEvent(self, stream: int, event: int, flags: int) -> None:
        self.log.append(("wait", stream, event))


class FakeStream:
    _ids = itertools.count(0x5000)

    def __init__(self, non_blocking: bool = False, ptr: int | None = None) -> None:
        assert non_blocking or ptr is not None, "the denoiser must create non-blocking streams only"
        self.ptr = next(self._ids) if ptr is None else ptr

    @classmethod
    def from_external(cls, owner) -> FakeStream:
        """A wrapper over another library's stream (CuPy 14's ``Stream.from_external``)."""
        return cls(ptr=owner.__cuda_stream__()[1])


class FakeDevice:
    def __init__(self, device_id: int) -> None:
        self.id = device_id

    def __enter__(self) -> FakeDevice:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.fixture()
def emulated(monkeypatch, oidn_cpu):
    """(runtime recorder, list of (device ids, stream handles) given to oidnNewCUDADevice)."""
    runtime = Recorder()
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(Device=FakeDevice, Stream=FakeStream,
                                      Event=runtime.Event, runtime=runtime)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    lib = load_library()
    created: list[tuple[int, int]] = []

    def new_cuda_device(ids, streams, count):
        assert count == 1
        created.append((ids[0], streams[0]))
        return lib.oidnNewDevice(DEVICE_TYPE_CPU)

    def synchronous_execute(filt):
        raise AssertionError("oidnExecuteFilter (the synchronous variant) used on a 'cuda' denoiser")

    monkeypatch.setattr(lib, "oidnIsCUDADeviceSupported", lambda device_id: True)
    monkeypatch.setattr(lib, "oidnNewCUDADevice", new_cuda_device)
    monkeypatch.setattr(lib, "oidnExecuteFilter", synchronous_execute)
    return runtime, created


def _device_arrays(scene, aux: bool = True) -> tuple[DeviceArray, ...]:
    arrays = [scene.noisy.copy(), np.zeros_like(scene.noisy)]
    if aux:
        arrays += [scene.albedo.copy(), scene.normal.copy()]
    return tuple(DeviceArray(a) for a in arrays)


def test_device_is_bound_to_the_given_stream(emulated) -> None:
    runtime, created = emulated
    stream = FakeStream(non_blocking=True)
    with Denoiser(32, 32, device="cuda", device_id=0, stream=stream) as den:
        assert created == [(0, stream.ptr)]
        assert den.stream is stream and den.stream_handle == stream.ptr
    with Denoiser(32, 32, stream=0x1234) as den:
        assert created[-1] == (0, 0x1234) and den.stream_handle == 0x1234
    with Denoiser(32, 32) as den:  # a non-blocking stream of its own
        assert isinstance(den.stream, FakeStream) and created[-1] == (0, den.stream.ptr)
    gc.collect()
    created_events = [entry[1] for entry in runtime.log if entry[0] == "create"]
    destroyed = [entry[1] for entry in runtime.log if entry[0] == "destroy"]
    assert sorted(created_events) == sorted(destroyed) and len(created_events) == 6  # two per denoiser, all freed


def test_async_execution_and_correct_result(emulated, scene_factory) -> None:
    runtime, _ = emulated
    lib = load_library()
    scene = scene_factory(128, 128, seed=30)
    color, output, albedo, normal = _device_arrays(scene)
    with Denoiser(128, 128, GUIDED, stream=FakeStream(non_blocking=True)) as den:
        before = lib.calls["oidnExecuteFilterAsync"]
        assert den.denoise(color, output, albedo, normal) is output
        assert lib.calls["oidnExecuteFilterAsync"] == before + 1
        den.synchronize()  # the CPU device runs asynchronous executions on its own threads
    assert not [entry for entry in runtime.log if entry[0] in ("record", "wait")], "no join without stream="
    noisy, denoised = scene.rmse(scene.noisy, scene.truth), scene.rmse(output.host, scene.truth)
    assert denoised * 3 <= noisy


def test_stream_join_both_ways(emulated, scene_factory) -> None:
    runtime, _ = emulated
    scene = scene_factory(64, 64, seed=31)
    own, producer = FakeStream(non_blocking=True), FakeStream(non_blocking=True)
    with Denoiser(64, 64, GUIDED, stream=own) as den:
        arrays = _device_arrays(scene)
        start = len(runtime.log)
        den.denoise(*arrays, stream=producer)
        ready, done = (entry[1] for entry in runtime.log[:start] if entry[0] == "create")
        assert runtime.log[start:] == [
            ("record", ready, producer.ptr),  # what the producer enqueued so far...
            ("wait", own.ptr, ready),  # ...comes before the denoise
            ("record", done, own.ptr),  # the denoise...
            ("wait", producer.ptr, done),  # ...comes before what the producer enqueues next
        ]
        start = len(runtime.log)
        den.denoise(*arrays, stream=own)  # its own stream: nothing to join
        den.denoise(*arrays, stream=own.ptr)
        assert runtime.log[start:] == []
        den.synchronize()


def test_prefilters_run_before_the_main_filter(emulated, scene_factory) -> None:
    lib = load_library()
    scene = scene_factory(96, 96, seed=32, aux_sigma=0.1)
    color, output, albedo, normal = _device_arrays(scene)
    with Denoiser(96, 96, {"albedo": True, "normal": True, "prefilter_aux": True}, stream=0x77) as den:
        before = lib.calls["oidnExecuteFilterAsync"]
        den.denoise(color, output, albedo, normal)
        den.denoise(color, output, albedo, normal)
        assert lib.calls["oidnExecuteFilterAsync"] == before + 6
        assert den.stats.commits == 3
        den.synchronize()
    np.testing.assert_array_equal(albedo.host, scene.albedo)
    assert scene.rmse(output.host, scene.truth) * 2 <= scene.rmse(scene.noisy, scene.truth)


def test_host_arrays_refused(emulated, scene_factory) -> None:
    lib = load_library()
    scene = scene_factory(32, 32)
    with Denoiser(32, 32, stream=0x99) as den:
        calls = lib.total_calls()
        with pytest.raises(TypeError, match="color is a numpy array"):
            den.denoise(scene.noisy, DeviceArray(np.zeros_like(scene.noisy)))
        with pytest.raises(TypeError, match="output is a numpy array"):
            den.denoise(DeviceArray(scene.noisy), np.zeros_like(scene.noisy))
        with pytest.raises(ValueError, match="stream: the legacy default stream"):
            den.denoise(*_device_arrays(scene, aux=False), stream=0)
        assert lib.total_calls() == calls


@pytest.mark.parametrize("bad, error", [(-5, ValueError), (0, ValueError), ("s", TypeError)])
def test_a_bad_stream_is_refused_by_name(bad, error):
    from optixasync.denoise._streams import stream_handle

    with pytest.raises(error, match=r"^stream: "):
        stream_handle(bad)


def test_an_oidn_build_without_the_cuda_device_raises_the_typed_error(emulated, monkeypatch) -> None:
    from optixasync.denoise import DenoiseError, DeviceUnsupportedError

    monkeypatch.setattr(load_library(), "oidnIsCUDADeviceSupported", lambda device_id: False)
    with pytest.raises(DeviceUnsupportedError, match="does not support CUDA device 0") as refused:
        Denoiser(32, 32, device="cuda", device_id=0, stream=FakeStream(non_blocking=True))
    assert isinstance(refused.value, DenoiseError)  # callers catching the base class still do
