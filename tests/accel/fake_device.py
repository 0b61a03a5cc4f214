"""A device context without a device for the accel layer's CPU tests: builds and transforms answered and recorded.

``FakeContext`` uploads nothing: each upload gives a fake device array with a distinct address whose host copy is
kept (``ctx.uploaded[address]``), so a test reads back what a build input points at. ``api.builds`` holds, per
``optixAccelBuild``, the build options and a copy of every build input as OptiX would read it.
"""

from __future__ import annotations

import ctypes
import itertools
from types import SimpleNamespace

import numpy as np

from optixasync._optix import types as t
from optixasync.cuda import Context


class FakeDeviceArray:
    """A device array known by its address (and, for uploads, its host contents); slicing gives a view."""

    def __init__(self, ptr: int, shape: tuple, dtype, host: np.ndarray | None = None) -> None:
        self.ptr, self.shape, self.dtype, self.host = ptr, tuple(shape), np.dtype(dtype), host
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        self.data = SimpleNamespace(ptr=ptr, device_id=0)

    def __getitem__(self, index: slice) -> FakeDeviceArray:
        start, stop, _ = index.indices(self.shape[0])
        return FakeDeviceArray(self.ptr + start * self.dtype.itemsize, (stop - start,), self.dtype)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3}


class FakeApi:
    def __init__(self, ctx: FakeContext) -> None:
        self.ctx = ctx
        self._handles = itertools.count(0x100)
        self.builds: list[dict] = []
        self.converted: list[tuple[int, int]] = []

    def optixAccelComputeMemoryUsage(self, ctx, options, structs, count, sizes):
        sizes._obj.outputSizeInBytes, sizes._obj.tempSizeInBytes, sizes._obj.tempUpdateSizeInBytes = 256, 128, 64
        return 0

    def optixAccelBuild(self, ctx, stream, options, structs, count, temp, temp_size, output, output_size, handle,
                        emit, emit_count):
        opts = options._obj
        self.builds.append({"operation": opts.operation, "flags": opts.buildFlags,
                            "motion": (opts.motionOptions.numKeys, opts.motionOptions.flags,
                                       opts.motionOptions.timeBegin, opts.motionOptions.timeEnd),
                            "inputs": [t.BuildInput.from_buffer_copy(structs[k]) for k in range(count)]})
        handle._obj.value = next(self._handles)
        return 0

    def optixConvertPointerToTraversableHandle(self, ctx, pointer, kind, handle):
        self.converted.append((pointer, kind))
        handle._obj.value = 0x7000 + len(self.converted)
        return 0

    def error_name(self, status):
        return "OPTIX_ERROR_INVALID_VALUE"

    def error_string(self, status):
        return "refused"


class FakeEvent:
    def __init__(self) -> None:
        self.ptr = id(self)
        self.done = False

    def record(self, stream) -> None:
        pass


class FakeContext(Context):
    """A device context without a device: the real ownership checks, stand-ins for the driver and memory."""

    def __init__(self, device_id: int = 0, abi: int = 87) -> None:  # no super().__init__(): it would load the driver
        self.handle = 0xC0DE
        self.device_id = device_id
        self.abi = abi
        self.api = FakeApi(self)
        self.stream = SimpleNamespace(ptr=0x5000)
        self.tracked: list = []
        self.uploaded: dict[int, np.ndarray] = {}
        self._addresses = itertools.count(0x10000, 0x1000)
        self.memory = SimpleNamespace(alloc=lambda nbytes, stream: SimpleNamespace(ptr=next(self._addresses),
                                                                                   nbytes=nbytes),
                                      empty=lambda shape, dtype, stream: self._empty(shape, dtype))
        self.pinned = SimpleNamespace(download=lambda array, stream: np.zeros(array.shape, array.dtype))
        self.deferred = SimpleNamespace(after=lambda stream, *objects: FakeEvent())

    def _empty(self, shape, dtype) -> FakeDeviceArray:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return FakeDeviceArray(next(self._addresses) + 0x28, shape, dtype)  # deliberately not 64-byte aligned

    def upload(self, array, stream=None) -> FakeDeviceArray:
        array = np.ascontiguousarray(array)
        device = FakeDeviceArray(next(self._addresses), array.shape, array.dtype, array.copy())
        self.uploaded[device.ptr] = device.host
        return device

    def upload_into(self, target, array, stream=None) -> None:
        assert np.asarray(array).nbytes == target.nbytes
        self.uploaded[target.ptr] = np.array(array)

    def track(self, resource):
        self.require_open()
        self.tracked.append(resource)
        return resource


def keys_at(pointer_array, count: int) -> list[int]:
    """The device addresses of a host array of ``count`` device pointers (a build input's per-key buffers)."""
    return [pointer_array[k] for k in range(count)]


def install(monkeypatch) -> None:
    """Stand-ins for the timing events and stream waits of the cuda layer (no GPU)."""
    monkeypatch.setattr("optixasync.cuda._events.timing_event", FakeEvent)
    monkeypatch.setattr("optixasync.cuda._ready.wait_event", lambda stream, event: None)
    monkeypatch.setattr("optixasync.cuda._ready.event_done", lambda event: event.done)
    monkeypatch.setattr("optixasync.cuda._streams.stream_handle", lambda stream: 0x5000)
    monkeypatch.setattr("optixasync.accel._base.stream_handle", lambda stream: 0x5000)


def as_pointer(value) -> int:
    return ctypes.cast(value, ctypes.c_void_p).value or 0
