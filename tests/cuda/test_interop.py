"""Foreign device arrays used in place (``optixasync.cuda.consume_device_array``), on the CPU.

The producers here are stand-ins without CuPy or a GPU: a ``__cuda_array_interface__`` dict over host memory
(enough for the shape, dtype and stride logic: nothing reads the data), and DLPack producers that record what
they were asked. The event record, the stream wait and the pointer query are replaced by stand-ins that record
what the driver would be asked to do, so each decision (which stream is waited for, which protocol is used,
what is refused before any GPU work) is checked without a device. The views are real CuPy arrays: building
one over a pointer whose device is given makes no CUDA call.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from optixasync import cuda
from optixasync.cuda import _interop
from optixasync.validation import describe_array, is_c_contiguous, is_device_array

CONSUMER = 0x5000  # the consumer stream's handle
PRODUCER = 0x7000  # a producer's cudaStream_t


class FakeEvent:
    def __init__(self, stream: int) -> None:
        self.ptr = 0xE000 + stream
        self.stream = stream


class CaiProducer:
    """An array known only through ``__cuda_array_interface__``, over host memory (never read)."""

    def __init__(self, host: np.ndarray, *, version: int = 3, stream=None, strides="auto", extra=None) -> None:
        self.host = host
        iface = {"shape": host.shape, "typestr": host.dtype.str, "data": (host.ctypes.data, False), "version": version}
        if strides == "auto":
            iface["strides"] = None if host.flags.c_contiguous else host.strides
        else:
            iface["strides"] = strides
        if version >= 3:
            iface["stream"] = stream
        iface.update(extra or {})
        self._iface = iface

    @property
    def __cuda_array_interface__(self):
        return dict(self._iface)

    def __array__(self, *args, **kwargs):
        raise AssertionError("device array data was read on the host")


class DLPackProducer:
    """A DLPack producer: records each ``__dlpack__`` call; its "capsule" names the host array to view."""

    def __init__(self, host: np.ndarray, device=(2, 0), *, refuse: Exception | None = None) -> None:
        self.host = host
        self.device = device
        self.refuse = refuse
        self.calls: list[dict] = []
        self.shape = host.shape
        self.dtype = host.dtype

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, copy=None):
        self.calls.append({"stream": stream, "max_version": max_version, "copy": copy})
        if self.refuse is not None:
            raise self.refuse
        return ("capsule", self)


class OldDLPackProducer(DLPackProducer):
    """A producer from before DLPack 1.0: ``__dlpack__`` takes ``stream`` only."""

    def __dlpack__(self, stream=None):  # noqa: D105 - the old signature is the point
        self.calls.append({"stream": stream})
        return ("capsule", self)


class Both(CaiProducer):
    """CAI (of a chosen version) and DLPack on one object, like a CuPy array (v3) or a PyTorch tensor (v2)."""

    def __init__(self, host: np.ndarray, version: int, stream=None) -> None:
        super().__init__(host, version=version, stream=stream)
        self.dlpack_calls: list[dict] = []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, *, stream=None, max_version=None, copy=None):
        self.dlpack_calls.append({"stream": stream})
        return ("capsule", self)


def host_view(host: np.ndarray, owner=None, device: int = 0):
    """A CuPy array over host memory (never read): what ``cupy.from_dlpack`` would give for a device capsule."""
    import cupy

    memory = cupy.cuda.UnownedMemory(host.ctypes.data, host.nbytes, owner if owner is not None else host, device)
    return cupy.ndarray(host.shape, host.dtype, memptr=cupy.cuda.MemoryPointer(memory, 0), strides=host.strides)


@pytest.fixture
def driver(monkeypatch):
    """Stand-ins for the CUDA calls: the records and waits asked for, and where each pointer lives."""
    calls = SimpleNamespace(records=[], waits=[], pointers={}, queried=[])

    def record(stream):
        calls.records.append(stream.ptr)
        return FakeEvent(stream.ptr)

    def location(ptr):
        calls.queried.append(ptr)
        return calls.pointers.get(ptr, (2, 0))  # device memory of device 0 unless a test says otherwise

    monkeypatch.setattr(_interop, "record_event", record)
    monkeypatch.setattr(_interop, "wait_event", lambda stream, event: calls.waits.append((stream, event.ptr)))
    monkeypatch.setattr(_interop, "_pointer_location", location)
    monkeypatch.setattr(_interop, "_from_capsule", lambda capsule: host_view(capsule[1].host))
    return calls


def vertices(n: int = 6) -> np.ndarray:
    return np.arange(3 * n, dtype=np.float32).reshape(n, 3)


def consume(array, **kwargs):
    kwargs.setdefault("device", 0)
    return cuda.consume_device_array(array, SimpleNamespace(ptr=CONSUMER), **kwargs)


# --- __cuda_array_interface__: parsing ------------------------------------------------------------------------------


def test_interface_is_parsed_without_reading_the_data():
    host = vertices()
    info = _interop.parse_cuda_array_interface(CaiProducer(host, stream=PRODUCER).__cuda_array_interface__)
    assert info.ptr == host.ctypes.data and info.shape == (6, 3) and info.dtype == np.float32
    assert info.strides is None and info.version == 3 and info.stream == PRODUCER
    wide = np.zeros((6, 5), np.float32)[:, :3]
    info = _interop.parse_cuda_array_interface(CaiProducer(wide).__cuda_array_interface__)
    assert info.strides == (20, 4) and info.stream is None


@pytest.mark.parametrize("change, match", [
    ({"shape": None}, "malformed"),
    ({"data": None}, "malformed"),
    ({"typestr": "not a type"}, "malformed"),
    ({"mask": object()}, "masked"),
    ({"typestr": ">f4"}, "big-endian"),
    ({"stream": 0}, "stream 0 is not allowed"),
])
def test_malformed_interfaces_are_refused_by_name(change, match):
    iface = CaiProducer(vertices()).__cuda_array_interface__
    iface.update(change)
    with pytest.raises(ValueError, match=match) as info:
        _interop.parse_cuda_array_interface(iface, "positions")
    assert "positions" in str(info.value)


# --- __cuda_array_interface__: the stream entry ---------------------------------------------------------------------


@pytest.mark.parametrize("stream, waited", [
    (None, None),  # nothing pending: no wait
    (1, 1),  # the legacy default stream
    (2, 2),  # the per-thread default stream
    (PRODUCER, PRODUCER),  # a cudaStream_t
    (CONSUMER, None),  # the consumer's own stream: already in order
])
def test_stream_entry_decides_what_is_waited_for(driver, stream, waited):
    host = vertices()
    result = consume(CaiProducer(host, stream=stream), name="vertices")
    assert result.protocol == "cuda_array_interface" and result.producer_stream == waited
    if waited is None:
        assert driver.records == [] and driver.waits == [] and result.event is None
    else:
        # one event recorded on the producer's stream, and the consumer waits for it (on the GPU)
        assert driver.records == [waited]
        assert driver.waits == [(CONSUMER, result.event.ptr)] and result.event.stream == waited
    assert _interop.stream_to_wait_for(stream, CONSUMER) == waited


def test_version_2_without_a_stream_waits_for_nothing(driver):
    result = consume(CaiProducer(vertices(), version=2))
    assert result.producer_stream is None and driver.records == [] and driver.waits == []


def test_the_view_is_the_producers_memory_and_keeps_it_alive(driver):
    host = vertices()
    producer = CaiProducer(host, stream=PRODUCER)
    result = consume(producer, name="vertices", dtype=np.float32)
    view = result.array
    assert view.data.ptr == host.ctypes.data  # no copy
    assert view.shape == (6, 3) and view.dtype == np.float32 and view.flags.c_contiguous
    assert view.data.device_id == 0
    assert view.data.mem._owner is result.owner and result.owner.producer is producer
    assert cuda.is_library_array(view) and cuda.is_library_array(view[1:])  # not consumed twice
    assert driver.queried == [host.ctypes.data]  # the pointer's device was asked for


def test_zero_size_arrays_need_no_pointer(driver):
    empty = np.zeros((0, 3), np.float32)
    producer = CaiProducer(empty, extra={"data": (0, False)})
    result = consume(producer)
    assert result.array.shape == (0, 3) and driver.queried == []


# --- refusals, before any GPU work ----------------------------------------------------------------------------------


def test_non_contiguous_arrays_are_refused(driver):
    strided = np.zeros((12, 3), np.float32)[::2]
    with pytest.raises(ValueError, match=r"vertices must be C-contiguous"):
        consume(CaiProducer(strided, stream=PRODUCER), name="vertices")
    column = np.zeros((6, 5), np.float32)[:, :3]
    with pytest.raises(ValueError, match=r"mesh 2 vertices must be C-contiguous"):
        consume(CaiProducer(column), name="mesh 2 vertices")
    assert driver.records == [] and driver.waits == []


def test_size_one_dimensions_do_not_break_contiguity(driver):
    host = vertices(1)
    result = consume(CaiProducer(host, strides=(999, 4)))  # the stride of an extent-1 axis is never used
    assert result.array.shape == (1, 3)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
def test_unsupported_vertex_dtype_is_refused(driver, dtype):
    with pytest.raises(ValueError, match=f"vertices must have dtype float32, got {np.dtype(dtype).name}"):
        consume(CaiProducer(vertices().astype(dtype)), name="vertices", dtype=np.float32)
    assert driver.records == [] and driver.waits == []


def test_unsupported_vertex_dtype_is_refused_by_the_triangle_input():
    from optixasync.accel import TriangleInput

    indices = np.array([[0, 1, 2], [3, 4, 5]], np.int32)
    with pytest.raises(ValueError, match="float32"):
        TriangleInput(CaiProducer(vertices().astype(np.float64)), indices)
    with pytest.raises(ValueError, match="int32 or uint32"):
        TriangleInput(CaiProducer(vertices()), CaiProducer(indices.astype(np.int64)))
    assert TriangleInput(CaiProducer(vertices()), CaiProducer(indices)).num_triangles == 2


def test_index_dtypes(driver):
    indices = np.zeros((2, 3), np.uint32)
    assert consume(CaiProducer(indices), dtype=(np.int32, np.uint32)).array.dtype == np.uint32
    with pytest.raises(ValueError, match="must have dtype int32 or uint32, got int64"):
        consume(CaiProducer(indices.astype(np.int64)), name="indices", dtype=(np.int32, np.uint32))


def test_another_device_is_refused_naming_both(driver):
    host = vertices()
    driver.pointers[host.ctypes.data] = (2, 1)  # device memory of device 1
    with pytest.raises(ValueError, match=r"vertices is on CUDA device 1, but the optixasync context is on device 0"):
        consume(CaiProducer(host, stream=PRODUCER), name="vertices", device=0)
    assert driver.records == [] and driver.waits == []
    assert consume(CaiProducer(host, stream=PRODUCER), device=1).array.data.device_id == 1


@pytest.mark.parametrize("memory_type, kind", [(0, "unregistered host memory"), (1, "pinned host memory")])
def test_host_memory_is_refused(driver, memory_type, kind):
    host = vertices()
    driver.pointers[host.ctypes.data] = (memory_type, -1)
    with pytest.raises(ValueError, match=f"vertices points to {kind}"):
        consume(CaiProducer(host), name="vertices")


def test_managed_memory_of_any_device_is_accepted(driver):
    host = vertices()
    driver.pointers[host.ctypes.data] = (3, 1)
    assert consume(CaiProducer(host), device=0).array.shape == (6, 3)


def test_not_a_device_array():
    with pytest.raises(TypeError, match="positions must be a device array"):
        cuda.consume_device_array(np.zeros((3, 3), np.float32), SimpleNamespace(ptr=CONSUMER), name="positions")


def test_the_legacy_default_stream_is_refused_as_the_consumer(driver):
    with pytest.raises(ValueError, match="legacy default stream"):
        cuda.consume_device_array(CaiProducer(vertices()), 0, device=0)


# --- DLPack -----------------------------------------------------------------------------------------------------


def test_dlpack_producer_is_given_the_consumer_stream(driver):
    host = vertices()
    producer = DLPackProducer(host)
    result = consume(producer, name="vertices", dtype=np.float32)
    # the producer orders our stream after its own work; we record and wait for nothing ourselves
    assert producer.calls == [{"stream": CONSUMER, "max_version": (1, 0), "copy": False}]
    assert driver.records == [] and driver.waits == []
    assert result.protocol == "dlpack" and result.producer_stream is None and result.event is None
    assert result.array.data.ptr == host.ctypes.data and result.array.shape == (6, 3)
    assert result.owner.producer is producer and result.array.data.mem._owner is result.owner
    assert cuda.is_library_array(result.array)


def test_producers_before_dlpack_1_get_the_stream_alone(driver):
    producer = OldDLPackProducer(vertices())
    assert consume(producer).protocol == "dlpack"
    assert producer.calls == [{"stream": CONSUMER}]


def test_dlpack_on_another_device_is_refused_before_export(driver):
    producer = DLPackProducer(vertices(), device=(2, 3))
    with pytest.raises(ValueError, match=r"vertices is on CUDA device 3, but the optixasync context is on device 0"):
        consume(producer, name="vertices", device=0)
    assert producer.calls == []


@pytest.mark.parametrize("device", [(1, 0), (3, 0)])  # CPU, pinned host memory
def test_dlpack_host_memory_is_not_a_device_array(driver, device):
    producer = DLPackProducer(vertices(), device=device)
    assert not is_device_array(producer)
    with pytest.raises(TypeError, match="must be a device array"):
        consume(producer)


def test_dlpack_refusal_names_the_argument(driver):
    producer = DLPackProducer(vertices(), refuse=BufferError("Can't export tensors that require gradient"))
    with pytest.raises(ValueError, match=r"vertices could not be exported through DLPack \(BufferError: Can't export"):
        consume(producer, name="vertices")


@pytest.mark.parametrize("error", [TypeError("Unsupported dtype"), NotImplementedError("bfloat16"),
                                   BufferError("DLPack version 2.0 is not supported")])
def test_a_capsule_cupy_cannot_import_is_refused_by_name(driver, monkeypatch, error):
    def refuse(capsule):
        raise error

    monkeypatch.setattr(_interop, "_from_capsule", refuse)
    pattern = rf"vertices could not be imported from its DLPack capsule \({type(error).__name__}: "
    with pytest.raises(ValueError, match=pattern) as info:
        consume(DLPackProducer(vertices()), name="vertices")
    assert info.value.__cause__ is error


def test_non_contiguous_dlpack_capsule_is_refused(driver):
    producer = DLPackProducer(np.zeros((12, 3), np.float32)[::2])
    with pytest.raises(ValueError, match="vertices must be C-contiguous"):
        consume(producer, name="vertices")


def test_dlpack_dtype_is_checked_on_the_capsule(driver):
    producer = DLPackProducer(vertices().astype(np.float64))
    with pytest.raises(ValueError, match="must have dtype float32, got float64"):
        consume(producer, name="vertices", dtype=np.float32)


# --- which protocol -------------------------------------------------------------------------------------------------


def test_cai_version_3_is_preferred_to_dlpack(driver):
    producer = Both(vertices(), version=3, stream=PRODUCER)  # like a CuPy array
    result = consume(producer)
    assert result.protocol == "cuda_array_interface" and producer.dlpack_calls == []
    assert driver.records == [PRODUCER]


def test_dlpack_is_preferred_to_cai_version_2(driver):
    producer = Both(vertices(), version=2)  # like a PyTorch tensor or a JAX array: CAI v2 has no stream order
    result = consume(producer)
    assert result.protocol == "dlpack" and producer.dlpack_calls == [{"stream": CONSUMER}]
    assert driver.records == [] and driver.waits == []


def test_cai_that_raises_falls_back_to_dlpack(driver):
    class RequiresGrad(DLPackProducer):  # PyTorch: __cuda_array_interface__ raises RuntimeError
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad.")

    producer = RequiresGrad(vertices())
    assert is_device_array(producer)
    assert consume(producer).protocol == "dlpack"


# --- validation of DLPack-only producers ----------------------------------------------------------------------------


class TorchLikeDtype:
    def __str__(self) -> str:
        return "torch.float32"


def test_describe_a_dlpack_only_producer_from_its_attributes():
    producer = DLPackProducer(vertices())
    producer.dtype = TorchLikeDtype()  # not a numpy dtype: read by its name
    info = describe_array(producer, "vertices")
    assert info == ((6, 3), np.dtype(np.float32), True, True)
    assert producer.calls == []  # no capsule was made: no stream ordering, no host wait


def test_describe_a_dlpack_only_producer_with_numpy_strides():
    producer = DLPackProducer(vertices())
    producer.strides = (24, 4)
    assert describe_array(producer).contiguous is False


def test_describe_refuses_an_unreadable_dtype():
    producer = DLPackProducer(vertices())
    producer.dtype = "bfloat16"
    with pytest.raises(TypeError, match="vertices: cannot tell the dtype"):
        describe_array(producer, "vertices")


def test_describe_keeps_reading_the_cuda_array_interface():
    info = describe_array(CaiProducer(np.zeros((6, 5), np.float32)[:, :3]), "positions")
    assert info == ((6, 3), np.dtype(np.float32), False, True)


def test_is_device_array():
    assert is_device_array(CaiProducer(vertices()))
    assert is_device_array(DLPackProducer(vertices()))
    assert is_device_array(DLPackProducer(vertices(), device=(13, 0)))  # managed memory
    assert not is_device_array(vertices())  # numpy has __dlpack__ too, on the CPU
    assert not is_device_array([1, 2, 3])


@pytest.mark.parametrize("shape, strides, contiguous", [
    ((6, 3), None, True),
    ((6, 3), (12, 4), True),
    ((6, 3), (24, 4), False),
    ((6, 3), (4, 24), False),
    ((1, 3), (999, 4), True),
    ((6, 1), (4, 999), True),
    ((0, 3), (7, 7), True),
    ((6, 3), (12,), False),
])
def test_c_contiguity(shape, strides, contiguous):
    assert is_c_contiguous(shape, strides, 4) is contiguous


# --- the call sites: builds and scenes ------------------------------------------------------------------------------


def test_geometry_accel_consumes_foreign_arrays_on_its_stream(driver):
    from optixasync.accel import GeometryAccel

    uploads = []
    ctx = SimpleNamespace(device_id=0, upload=lambda array, stream: uploads.append(array) or "uploaded")
    fake = SimpleNamespace(ctx=ctx)
    host = vertices()
    stream = SimpleNamespace(ptr=CONSUMER)
    assert GeometryAccel._device_array(fake, host, stream, "vertices", np.float32) == "uploaded"
    view = GeometryAccel._device_array(fake, CaiProducer(host, stream=PRODUCER), stream, "vertices", np.float32)
    assert view.data.ptr == host.ctypes.data and driver.waits == [(CONSUMER, FakeEvent(PRODUCER).ptr)]
    assert GeometryAccel._device_array(fake, view, stream, "vertices", np.float32) is view  # ours: used as it is
    assert len(driver.waits) == 1
    with pytest.raises(ValueError, match="inputs\\[1\\].vertices must have dtype float32"):
        GeometryAccel._device_array(fake, CaiProducer(host.astype(np.float64)), stream, "inputs[1].vertices",
                                    np.float32)


def test_device_scene_consumes_foreign_arrays_instead_of_cupy_asarray(driver):
    from optixasync.render._placement import DevicePlacement

    placement = object.__new__(DevicePlacement)  # no context: a foreign array needs none but its device id
    placement.ctx, placement.stream, placement._kept = SimpleNamespace(device_id=0), SimpleNamespace(ptr=CONSUMER), []
    producer = DLPackProducer(vertices())
    view = placement.mesh_array(producer, "mesh 0 vertices", np.float32, shared=False)
    assert producer.calls[0]["stream"] == CONSUMER and view.data.ptr == producer.host.ctypes.data
    assert view.data.mem._owner.producer is producer  # the scene's view keeps the producer alive
    assert placement._kept == [view]  # and the placement keeps the view until the scene is released


def test_allocator_memory_is_a_library_array():
    import cupy

    from optixasync.cuda._memory import _StreamOrderedAllocation

    block = object.__new__(_StreamOrderedAllocation)  # no allocation made: its finalizer frees nothing
    memory = cupy.cuda.UnownedMemory(0x1000, 48, block, 0)
    array = cupy.ndarray((4, 3), np.float32, memptr=cupy.cuda.MemoryPointer(memory, 0))
    assert cuda.is_library_array(array)
    assert not cuda.is_library_array(vertices()) and not cuda.is_library_array(CaiProducer(vertices()))
