"""CUDA and OptiX stubbed out: the Python side of frames, run on a machine without a GPU.

:class:`StubCuda` replaces, while it is entered, the few CuPy entry points
optixasync calls on a frame's path (events, streams, the runtime's
asynchronous copies and stream-ordered allocations, the pinned pool, event
timing) and the CUDA graph API of :mod:`optixasync.cuda._graph` with
stand-ins that do nothing on a device. :meth:`StubCuda.context` gives a
:class:`~optixasync.Context` whose OptiX function table is a stand-in too,
and :meth:`StubCuda.pipeline` / :meth:`StubCuda.sbt` real ``Pipeline`` and
``ShaderBindingTable`` objects over it, so the library's own code runs
unchanged around the stubbed calls. Two uses:

* the host cost of the submit path, measured without the GPU's calls
  (``benchmarks/bench_submit.py``);
* CPU tests of the scheduler's logic: with ``record=True`` every stubbed call
  is logged in order (``calls``), and work enqueued on a stream that is being
  captured goes into the graph being captured instead (``graphs``), as CUDA
  does. A replayed graph logs one ``graph_launch``.

The OptiX stand-in also answers the acceleration-structure calls (memory
usage, builds, refits and compactions, enqueued like launches), so a real
:class:`~optixasync.accel.GeometryAccel` and a real render pipeline's device
scene are built over it; :meth:`StubCuda.kernel` gives a stand-in of a CuPy
``RawKernel`` whose launches are enqueued by name.

The stream-ordered allocations are counted (:attr:`StubCuda.allocations`), and
the device pool's used bytes (``ctx.memory.used_bytes()``) are theirs, so a CPU
test can check that closing something leaves no device memory behind.

The GPU is "infinitely fast" by default (every event has passed when it is
recorded); :meth:`StubCuda.pause` holds back the completion of work recorded
from then on until :meth:`StubCuda.resume` or a synchronization reaches it.

Blocking calls
--------------
None: while the stubs are in place no CUDA call is made at all.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import time
from typing import Any

from ._stubdevice import StubKernel, StubOptixApi

__all__ = ["StubArray", "StubCuda", "StubEvent", "StubKernel", "StubStream", "active_stub"]

_CAPTURE_INVALIDATED = 901  # cudaErrorStreamCaptureInvalidated


class StubStream:
    """A stand-in for ``cupy.cuda.Stream``: a handle and the stream protocol."""

    _handles = itertools.count(0x5000, 0x10)

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False, priority: int = 0) -> None:
        self.ptr = 0 if null else next(StubStream._handles)
        self.non_blocking = non_blocking

    @classmethod
    def from_external(cls, obj: Any) -> StubStream:
        stream = cls.__new__(cls)
        stream.ptr = int(obj.__cuda_stream__()[1])
        stream.non_blocking = True
        stream._owner = obj
        return stream

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self.ptr

    def synchronize(self) -> None:
        _active().complete_all()

    def __repr__(self) -> str:
        return f"<StubStream 0x{self.ptr:x}>"


class StubEvent:
    """A stand-in for ``cupy.cuda.Event``: it has passed once the stub's GPU has reached its record."""

    __slots__ = ("ptr", "timing", "serial", "stream", "due", "__weakref__")
    _pointers = itertools.count(0xE000, 0x10)

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self.ptr = next(StubEvent._pointers)
        self.timing = not disable_timing
        self.serial = 0  # 0: never recorded (an unrecorded event has passed, as in CUDA)
        self.stream = 0
        self.due = 0.0  # perf_counter time the modelled GPU reaches the record
        _active().events[self.ptr] = self

    def record(self, stream: Any = None) -> None:
        _active().record(self, 0 if stream is None else int(stream.ptr))

    @property
    def done(self) -> bool:
        return _active().passed(self)

    def synchronize(self) -> None:
        _active().wait_for(self)


class StubArray:
    """A stand-in for ``cupy.ndarray`` over stub device memory (CuPy's own asks the driver for its current stream)."""

    def __init__(self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None,
                 order: str = "C") -> None:
        import numpy as np

        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize
        self.data = memptr

    @property
    def flags(self) -> Any:
        """The layout flags CuPy's arrays have (stub arrays are C-contiguous)."""
        from types import SimpleNamespace

        return SimpleNamespace(c_contiguous=True, f_contiguous=self.ndim <= 1)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        # What CuPy 14 reports (version 3, with the current stream): built afresh on every access, as CuPy does.
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr, "strides": None,
                "data": (int(self.data.ptr) if self.data is not None else 0, False), "version": 3, "stream": 1}

    def __repr__(self) -> str:
        return f"<StubArray {self.dtype} {self.shape}>"


class _StubPinned(bytearray):
    """Pinned memory from the stub pool: a host buffer with an address."""

    @property
    def ptr(self) -> int:
        return ctypes.addressof(ctypes.c_char.from_buffer(self)) if len(self) else 0


class _StubPinnedPool:
    """A stand-in for ``cupy.cuda.PinnedMemoryPool`` (a new buffer each time; nothing to pool on the host)."""

    def malloc(self, nbytes: int) -> _StubPinned:
        _active().log("pinned_alloc", 0, int(nbytes))
        return _StubPinned(int(nbytes))

    def free_all_blocks(self) -> None:
        pass


class _StubDevice:
    id = 0

    def __init__(self, cuda: StubCuda) -> None:
        self._cuda = cuda

    def synchronize(self) -> None:
        self._cuda.complete_all()

    def use(self) -> None:
        pass


class StubGraphApi:
    """The CUDA graph calls of :mod:`optixasync.cuda._graph`, against the stub: captures collect the calls.

    Attributes
    ----------
    graphs : dict of int to list
        Each captured graph's nodes: the calls enqueued on the stream while it was captured (kept after
        the graph is destroyed, which ``destroyed`` records).
    execs : dict of int to int
        Each executable graph and the graph it was instantiated from (or last updated with).
    refuse_update : bool
        Make every update fail (as when the topology changed), so the caller instantiates anew.
    """

    def __init__(self, cuda: StubCuda) -> None:
        self._cuda = cuda
        self._ids = itertools.count(0x6000, 0x10)
        self.capturing: dict[int, list] = {}
        self.graphs: dict[int, list] = {}
        self.execs: dict[int, int] = {}
        self.invalidated: set[int] = set()
        self.destroyed: set[int] = set()
        self.refuse_update = False

    def settle(self) -> None:
        self._cuda.log("settle", 0, None)

    def begin_capture(self, stream: int) -> None:
        self._cuda.log("begin_capture", stream, None)
        self.capturing[stream] = []

    def is_capturing(self, stream: int) -> bool:
        return stream in self.capturing

    def end_capture(self, stream: int) -> int:
        nodes = self.capturing.pop(stream)
        self._cuda.log("end_capture", stream, None)
        if stream in self.invalidated:
            self.invalidated.discard(stream)
            raise self._cuda.error(_CAPTURE_INVALIDATED, "cudaErrorStreamCaptureInvalidated")
        graph = next(self._ids)
        self.graphs[graph] = nodes
        return graph

    def instantiate(self, graph: int) -> int:
        exec_ = next(self._ids)
        self.execs[exec_] = graph
        self._cuda.log("instantiate", 0, (graph, exec_))
        return exec_

    def update(self, exec_: int, graph: int) -> bool:
        old = self.graphs.get(self.execs[exec_], [])
        same = not self.refuse_update and [n[0] for n in old] == [n[0] for n in self.graphs[graph]]
        self._cuda.log("update", 0, (exec_, graph, same))
        if same:
            self.execs[exec_] = graph
        return same

    def launch(self, exec_: int, stream: int) -> None:
        self._cuda.enqueue("graph_launch", stream, (exec_, self.execs[exec_]))

    def destroy_graph(self, graph: int) -> None:
        self._cuda.log("destroy_graph", 0, graph)
        self.destroyed.add(graph)  # its nodes stay readable in ``graphs``

    def destroy_exec(self, exec_: int) -> None:
        self._cuda.log("destroy_exec", 0, exec_)
        self.execs.pop(exec_, None)

    def nodes(self, exec_: int) -> list[str]:
        """The names of the calls an executable graph replays."""
        return [node[0] for node in self.graphs[self.execs[exec_]]]


_stack: list[StubCuda] = []


def _active() -> StubCuda:
    if not _stack:
        raise RuntimeError("a stub CUDA object was used outside its StubCuda block")
    return _stack[-1]


def active_stub() -> StubCuda:
    """The innermost :class:`StubCuda` entered (RuntimeError outside any)."""
    return _active()


class StubCuda:
    """CuPy's CUDA calls and the CUDA graph API stubbed out while entered (``with StubCuda() as cuda:``).

    Parameters
    ----------
    record : bool
        Log every stubbed call in :attr:`calls` as ``(name, stream handle, details)``.
    gpu_us : float
        Model a GPU that needs this long after each event record to reach it (0: at once): ``done`` stays
        false until then, and a synchronization sleeps until then, releasing the GIL as CUDA's does.

    Attributes
    ----------
    calls : list of tuple
        The stubbed calls in order, when recording; a call enqueued on a stream being captured is logged
        as ``("captured", stream, (name, details))``.
    graph_api : StubGraphApi
    allocations : dict of int to int
        The live stream-ordered allocations (``cudaMallocAsync`` not yet freed): address to bytes. Their sum is
        what the device pool's used bytes read (:meth:`~optixasync.cuda.DeviceMemory.used_bytes`).
    """

    # Shared by every stub: a block of an earlier one, freed while this one is entered, is never taken for its own.
    _addresses = itertools.count(0x7F0000000000, 0x1000)

    def __init__(self, record: bool = False, *, gpu_us: float = 0.0) -> None:
        self.recording = bool(record)
        self.gpu_s = float(gpu_us) * 1e-6
        self.calls: list[tuple[str, int, Any]] = []
        self.events: dict[int, StubEvent] = {}
        self.graph_api = StubGraphApi(self)
        self._serial = 0
        self._completed = math.inf  # every recorded event has passed
        self._saved: list[tuple[Any, str, Any]] = []
        self.allocations: dict[int, int] = {}

    # -- the stub GPU --------------------------------------------------------------------------------------------
    def log(self, name: str, stream: int, details: Any) -> None:
        if self.recording:
            self.calls.append((name, stream, details))

    def enqueue(self, name: str, stream: int, details: Any) -> None:
        """Work on ``stream``: captured into the graph being captured there, else "run" (logged)."""
        capture = self.graph_api.capturing.get(stream)
        if capture is not None:
            capture.append((name, details))
            self.log("captured", stream, (name, details))
        else:
            self.log(name, stream, details)

    def record(self, event: StubEvent, stream: int) -> None:
        self._serial += 1
        event.serial, event.stream = self._serial, stream
        event.due = time.perf_counter() + self.gpu_s if self.gpu_s else 0.0
        self.enqueue("event_record", stream, event.ptr)

    def passed(self, event: StubEvent) -> bool:
        return event.serial <= self._completed and (not event.due or time.perf_counter() >= event.due)

    def wait_for(self, event: StubEvent) -> None:
        """A synchronization: the stub GPU reaches ``event`` (sleeping, GIL released, until its modelled time)."""
        if event.serial > self._completed:
            self._completed = event.serial
        while event.due and time.perf_counter() < event.due:
            time.sleep(max(0.0, event.due - time.perf_counter()))

    def complete_all(self) -> None:
        self._completed = math.inf

    def pause(self) -> None:
        """Work recorded from now on completes only when waited for or at :meth:`resume`."""
        self._completed = self._serial

    def resume(self) -> None:
        self.complete_all()

    def new_address(self) -> int:
        """A fresh device address or handle (never 0, never repeated)."""
        return next(self._addresses)

    def error(self, status: int, name: str) -> Exception:
        """What the driver's graph calls raise (:class:`~optixasync.cuda._graph.DriverGraphs` checks into it)."""
        from ..errors import CudaError

        return CudaError(status, name, "stubbed failure")

    # -- runtime entry points ------------------------------------------------------------------------------------
    def _memcpy_async(self, dst: int, src: int, nbytes: int, kind: int, stream: int) -> None:
        self.enqueue("memcpy", int(stream), (int(dst), int(src), int(nbytes), int(kind)))

    def _malloc_async(self, nbytes: int, stream: int) -> int:
        if int(stream) in self.graph_api.capturing:
            self.graph_api.invalidated.add(int(stream))
        self.log("malloc_async", int(stream), int(nbytes))
        ptr = next(self._addresses)
        self.allocations[ptr] = int(nbytes)
        return ptr

    def _free_async(self, ptr: int, stream: int) -> None:
        self.allocations.pop(int(ptr), None)
        self.enqueue("free_async", int(stream), int(ptr))

    def used_bytes(self) -> int:
        """The bytes of the live stream-ordered allocations (what the device pool's used bytes read)."""
        return sum(self.allocations.values())

    def _event_query(self, ptr: int) -> int:
        event = self.events.get(int(ptr))
        return 0 if event is None or self.passed(event) else 600

    def _event_record(self, ptr: int, stream: int) -> None:
        self.record(self.events[int(ptr)], int(stream))

    def _stream_wait_event(self, stream: int, event: int, flags: int = 0) -> None:
        self.enqueue("stream_wait_event", int(stream), int(event))

    def _elapsed(self, start: StubEvent, end: StubEvent) -> float:
        return 0.001 * max(0, end.serial - start.serial)

    # -- entering and leaving --------------------------------------------------------------------------------------
    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def __enter__(self) -> StubCuda:
        import cupy
        import cupy_backends.cuda.api.runtime as runtime

        from ..cuda import _events, _graph

        _stack.append(self)
        self._patch(cupy, "ndarray", StubArray)
        self._patch(cupy.cuda, "Event", StubEvent)
        self._patch(cupy.cuda, "Stream", StubStream)
        self._patch(cupy.cuda, "PinnedMemoryPool", _StubPinnedPool)
        self._patch(cupy.cuda, "get_elapsed_time", self._elapsed)
        for name, value in (("memcpyAsync", self._memcpy_async), ("mallocAsync", self._malloc_async),
                            ("freeAsync", self._free_async), ("eventQuery", self._event_query),
                            ("eventRecord", self._event_record),
                            ("streamWaitEvent", self._stream_wait_event), ("deviceGetMemPool", lambda device: 1),
                            ("memPoolSetAttribute", lambda *args: None), ("memPoolTrimTo", lambda *args: None),
                            ("memPoolGetAttribute", lambda pool, attribute: self.used_bytes())):
            self._patch(runtime, name, value)
        self._patch(_graph, "graph_api", lambda: self.graph_api)
        _events._get_elapsed_time.cache_clear()
        return self

    def __exit__(self, *exc: object) -> None:
        from ..cuda import _events

        for owner, name, value in reversed(self._saved):
            setattr(owner, name, value)
        self._saved.clear()
        _events._get_elapsed_time.cache_clear()
        _stack.remove(self)

    # -- objects over the stub -------------------------------------------------------------------------------------
    def context(self, *, validation: bool = False) -> Any:
        """A :class:`~optixasync.Context` without a device: stand-ins for OptiX and the device, real memory code."""
        from ..cuda import Context, DeferredRelease, DeviceMemory, LaunchQueue, PinnedPool

        ctx = Context.__new__(Context)  # no __init__: it would load the driver
        ctx.handle, ctx.device_id, ctx.abi = 0xC0DE, 0, 87
        ctx.api = StubOptixApi(self)
        ctx.validation, ctx.warm_up = bool(validation), False
        ctx.device = _StubDevice(self)
        ctx._tracked, ctx._serial = {}, itertools.count()
        ctx.stream = StubStream(non_blocking=True)
        ctx.memory = DeviceMemory(0)
        ctx.pinned = PinnedPool()
        ctx.deferred = DeferredRelease()
        ctx.launch_queue = LaunchQueue()
        return ctx

    def pipeline(self, ctx: Any, **options: Any) -> Any:
        """A real :class:`~optixasync.program.Pipeline` over the stub (nothing compiled, default
        ``PipelineOptions``); ``options`` become its attributes (``pipeline_options=...``)."""
        from ..program import Pipeline, PipelineOptions

        pipeline = Pipeline.__new__(Pipeline)
        pipeline.ctx, pipeline.handle = ctx, next(self._addresses)
        pipeline.pipeline_options = PipelineOptions()
        for name, value in options.items():
            setattr(pipeline, name, value)
        ctx.track(pipeline)
        return pipeline

    def sbt(self, ctx: Any) -> Any:
        """A real :class:`~optixasync.program.ShaderBindingTable` over the stub (64 bytes of records)."""
        import numpy as np

        from .._optix import types as t
        from ..cuda import Readiness
        from ..program import ShaderBindingTable

        sbt = ShaderBindingTable.__new__(ShaderBindingTable)
        sbt.ctx = ctx
        sbt.buffer = ctx.memory.empty((64,), np.uint8, ctx.stream)
        sbt.struct = t.ShaderBindingTable()
        sbt.ready = Readiness()
        sbt.nbytes = 64
        ctx.track(sbt)
        return sbt

    def kernel(self, name: str) -> StubKernel:
        """A stand-in of a CuPy ``RawKernel`` named ``name`` (its launches are enqueued on their stream)."""
        return StubKernel(self, name)

    def names(self, stream: Any = None) -> list[str]:
        """The names of the recorded calls (on ``stream`` only, when given)."""
        handle = None if stream is None else int(stream.ptr)
        return [c[0] for c in self.calls if handle is None or c[1] == handle]
