"""CUDA graphs: GPU work captured once from a stream and replayed, for apps and for the frame scheduler.

:class:`StreamGraph` is the record-once, replay-many door: :meth:`StreamGraph.record`
captures what a function enqueues on a stream (stream capture, thread-local
mode: other threads keep working, and this thread may not make calls that
would synchronize), instantiates it, and :meth:`StreamGraph.launch` replays it
with one driver call. Recording again updates the executable graph in place
when the new capture has the same shape (``cuGraphExecUpdate``), and
instantiates a new one otherwise. Only the *contents* of memory change
between launches: a kernel argument, a launch dimension or an address is
fixed at capture, so per-launch values live in device memory that the
captured work reads (the scheduler's frames upload their parameters from
fixed pinned staging as the graph's first node). What the cuda layer's
mechanisms do while a stream is captured is in :mod:`._capture`.

The driver calls go through :func:`graph_api` (``cuda.bindings.driver``), one
small object, so the CPU tests swap in a recording stand-in
(:class:`optixasync.testing.StubCuda`).

Blocking calls
--------------
* ``cuGraphInstantiate`` and ``cuGraphExecUpdate`` (in :meth:`StreamGraph.record`)
  are CPU work in the driver, tens to hundreds of microseconds: set-up of a
  shape, not steady state. They do not wait for the GPU.
* A capture first waits for the device to be idle (``cuCtxSynchronize``, in
  :meth:`StreamGraph.record`): OptiX makes its launches wait for events of
  its own outstanding work, which inside a capture would be dependencies on
  uncaptured work. Once per shape and slot: set-up, not steady state.
* ``cuStreamBeginCapture``, ``cuStreamEndCapture`` and ``cuGraphLaunch`` are
  asynchronous.
* :meth:`StreamGraph.close` destroys the executable graph
  (``cuGraphExecDestroy``; the driver defers the release of a graph still
  running).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import CudaError, GraphCaptureError, OptixError, StaleGraphError
from ._capture import Capture, _active, capture_lock
from ._errors import is_cuda_exception
from ._events import fence_event, record_event
from ._streams import as_cupy_stream, stream_handle

__all__ = ["DriverGraphs", "StreamGraph", "graph_api"]

T = TypeVar("T")


class DriverGraphs:
    """The CUDA driver's graph calls (``cuda.bindings.driver``), each checked into :class:`CudaError`."""

    def __init__(self) -> None:
        from cuda.bindings import driver

        self._driver = driver
        self._success = driver.CUresult.CUDA_SUCCESS
        self._update_failed = driver.CUresult.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
        # Relaxed: OptiX queries events of its own outstanding work inside optixLaunch and the builds, which the
        # stricter modes refuse in the capturing thread (cudaErrorStreamCaptureUnsupported, seen on an H200, R580).
        self._mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        self._none = driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
        self._streams: dict[int, Any] = {}

    def _stream(self, handle: int) -> Any:
        stream = self._streams.get(handle)
        if stream is None:
            stream = self._streams[handle] = self._driver.CUstream(handle)
        return stream

    def _check(self, result: tuple, what: str) -> Any:
        status = result[0]
        if status != self._success:
            _, name = self._driver.cuGetErrorName(status)
            raise CudaError(int(status), (name or b"CUDA_ERROR").decode(), f"{what} failed")
        return result[1] if len(result) > 1 else None

    def settle(self) -> None:
        """Wait for the device to be idle (``cuCtxSynchronize``): before a capture, once per shape."""
        self._check(self._driver.cuCtxSynchronize(), "cuCtxSynchronize")

    def begin_capture(self, stream: int) -> None:
        self._check(self._driver.cuStreamBeginCapture(self._stream(stream), self._mode), "cuStreamBeginCapture")

    def end_capture(self, stream: int) -> Any:
        return self._check(self._driver.cuStreamEndCapture(self._stream(stream)), "cuStreamEndCapture")

    def is_capturing(self, stream: int) -> bool:
        return self._check(self._driver.cuStreamIsCapturing(self._stream(stream)), "cuStreamIsCapturing") != self._none

    def instantiate(self, graph: Any) -> Any:
        return self._check(self._driver.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")

    def update(self, exec_: Any, graph: Any) -> bool:
        result = self._driver.cuGraphExecUpdate(exec_, graph)
        if result[0] == self._update_failed:
            return False  # another topology: instantiate anew
        self._check(result, "cuGraphExecUpdate")
        return True

    def launch(self, exec_: Any, stream: int) -> None:
        status = self._driver.cuGraphLaunch(exec_, self._stream(stream))[0]
        if status != self._success:
            self._check((status,), "cuGraphLaunch")

    def destroy_graph(self, graph: Any) -> None:
        self._check(self._driver.cuGraphDestroy(graph), "cuGraphDestroy")

    def destroy_exec(self, exec_: Any) -> None:
        self._check(self._driver.cuGraphExecDestroy(exec_), "cuGraphExecDestroy")


@functools.lru_cache(maxsize=1)
def _driver_graphs() -> DriverGraphs:
    return DriverGraphs()


def graph_api() -> Any:
    """The graph calls in use: the driver's (:class:`DriverGraphs`), or a test's stand-in while one is installed."""
    return _driver_graphs()


class StreamGraph:
    """GPU work captured once from a stream and replayed: one CUDA graph, executable.

    Attributes
    ----------
    captures, updates, instantiations, launches : int
        Recordings; those that updated the executable graph in place; those that instantiated one;
        launches.

    Examples
    --------
    >>> graph = StreamGraph()                                                     # doctest: +SKIP
    >>> graph.record(stream, lambda s: kernel(grid, block, (t_device, out), stream=s))
    >>> for k in range(1000):
    ...     staging.host["t"] = k * dt        # pinned memory the graph's first copy reads
    ...     graph.launch(stream)              # one driver call
    """

    def __init__(self) -> None:
        self._exec: Any = None
        self._capture: Capture | None = None
        self._stream: Any = None  # the stream of the last launch, with its handle and CuPy stream (a loop's)
        self._stream_handle = 0
        self._cupy_stream: Any = None
        self._pending: str | None = None  # why the next launch would be wrong (a hook said so)
        self.captures = self.updates = self.instantiations = self.launches = 0

    @property
    def recorded(self) -> bool:
        """Whether a graph has been recorded (and not closed)."""
        return self._exec is not None

    # -- recording -------------------------------------------------------------------------------------------
    def record(self, stream: Any, work: Callable[[Any], T]) -> T:
        """Capture what ``work(stream)`` enqueues on ``stream`` and make it this graph; returns what ``work`` returned.

        ``work`` receives ``stream`` as a CuPy stream; it is run once, on this thread, with the garbage
        collector paused (a collection could free memory in the middle of the capture). Record again only
        once the graph's earlier launches have completed.

        Raises
        ------
        GraphCaptureError
            If ``work`` enqueued something a graph cannot hold (see :mod:`optixasync.cuda._capture`), a CUDA
            or OptiX call inside it failed (as calls that cannot be captured do), or the driver invalidated
            the capture. Nothing was enqueued; the graph recorded before, if any, is kept. Other exceptions
            of ``work`` propagate as they are, after the capture was ended and discarded.
        """
        api = graph_api()
        handle = stream_handle(stream)
        cupy_stream = as_cupy_stream(stream)
        capture = Capture(handle)
        value, graph = self._capture_graph(api, handle, capture, lambda: work(cupy_stream))
        try:
            self._install(api, graph)
        except BaseException:
            self._release(capture)
            raise
        finally:
            api.destroy_graph(graph)
        self._retire_capture()
        self._capture, self._pending = capture, None
        self.captures += 1
        return value

    def _capture_graph(self, api: Any, handle: int, capture: Capture, run: Callable[[], T]) -> tuple[T, Any]:
        """Run ``run`` with ``handle`` captured into a new graph; (its value, the graph)."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            # OptiX keeps events of work of its own still outstanding (module and pipeline uploads, builds) and
            # makes each launch wait for them: inside a capture, a dependency on uncaptured work, which the driver
            # refuses (cudaErrorStreamCaptureIsolation, seen on an H200, R580). An idle device leaves none.
            api.settle()
            with capture_lock:
                if handle in _active:
                    raise GraphCaptureError("the stream is already being captured")
                _active[handle] = capture
                try:
                    api.begin_capture(handle)
                except BaseException:
                    del _active[handle]
                    raise
            try:
                value = run()
            except BaseException as exc:
                self._end(api, handle, discard=True)
                self._release(capture)
                if isinstance(exc, (CudaError, OptixError)) or is_cuda_exception(exc):
                    # A CUDA or OptiX call that cannot run inside a capture fails with a capture error (the
                    # capture is invalid from then on, the stream usable again once it ended): uncapturable.
                    raise GraphCaptureError(f"a call failed inside the capture ({exc})") from exc
                raise
            try:
                graph = self._end(api, handle, discard=False)
            except CudaError as exc:
                self._release(capture)
                raise GraphCaptureError(f"the driver invalidated the capture ({exc.name}): something on the stream "
                                        "could not be captured") from exc
            return value, graph
        finally:
            if collecting:
                gc.enable()

    @staticmethod
    def _end(api: Any, handle: int, discard: bool) -> Any:
        with capture_lock:
            try:
                graph = api.end_capture(handle)
            except BaseException:
                if discard:
                    return None  # the capture was already invalid: nothing to destroy
                raise
            finally:
                del _active[handle]
        if discard and graph is not None:
            api.destroy_graph(graph)
        return graph

    def _install(self, api: Any, graph: Any) -> None:
        if self._exec is not None and api.update(self._exec, graph):
            self.updates += 1
            return
        exec_ = api.instantiate(graph)
        if self._exec is not None:
            api.destroy_exec(self._exec)
        self._exec = exec_
        self.instantiations += 1

    # -- launching -------------------------------------------------------------------------------------------
    def stale(self) -> str | None:
        """Why the recorded graph no longer matches what it captured, or None (it does, or none is recorded)."""
        if self._pending is not None:
            return self._pending
        capture = self._capture
        if capture is not None:
            for check in capture.checks:
                reason = check()
                if reason is not None:
                    return reason
        return None

    def launch(self, stream: Any, end: Any = None, *, check: bool = True) -> Any:
        """Replay the graph on ``stream``; record ``end`` (an event) after it when given; returns ``end``.

        When the captured work updates objects that other streams order after (a structure's refit), an
        event is recorded after the launch (``end``, or a new one) and they adopt it.

        Raises
        ------
        RuntimeError
            If nothing was recorded.
        StaleGraphError
            With ``check``, if the graph no longer matches what it captured (see :meth:`stale`).
        """
        if self._exec is None:
            raise RuntimeError("launch of a StreamGraph that has recorded nothing (or was closed)")
        if check:
            reason = self.stale()
            if reason is not None:
                raise StaleGraphError(reason)
        if stream is not self._stream:
            self._stream_handle, self._cupy_stream = stream_handle(stream), as_cupy_stream(stream)
            self._stream = stream
        graph_api().launch(self._exec, self._stream_handle)
        self.launches += 1
        capture = self._capture
        if capture is not None and capture.hooks:
            end = record_event(self._cupy_stream, end if end is not None else fence_event())
            for hook in capture.hooks:
                reason = hook(end, stream)
                if reason is not None and self._pending is None:
                    self._pending = reason
        elif end is not None:
            end.record(self._cupy_stream)
        return end

    # -- lifetime --------------------------------------------------------------------------------------------
    def _retire_capture(self) -> None:
        if self._capture is not None:
            self._release(self._capture)
            self._capture = None

    @staticmethod
    def _release(capture: Capture) -> None:
        frees, capture.frees = capture.frees, []
        for free in frees:
            free()
        capture.holds.clear()

    def close(self) -> None:
        """Destroy the executable graph and let go of what it held (its last launch must have completed)."""
        if self._exec is not None:
            exec_, self._exec = self._exec, None
            graph_api().destroy_exec(exec_)
        self._retire_capture()

    def __repr__(self) -> str:
        state = "recorded" if self.recorded else "empty"
        return f"<StreamGraph {state}, {self.captures} capture(s), {self.launches} launch(es)>"
