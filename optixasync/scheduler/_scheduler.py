"""The frame scheduler: N frame slots on one non-blocking stream, fenced by events.

The host records frame ``k`` while the GPU still executes frames ``k-1`` ...
``k-N+1``. Each slot owns pinned staging for the launch parameters, a device
copy of them, persistent device buffers and pinned readback buffers; a slot
is reused only after the fence of the frame that last used it has passed.

Calls that may block the host, and why
--------------------------------------
* :meth:`FrameScheduler.begin_frame` waits on the fence of the frame that
  last used the slot, only when the host is ``frames_in_flight`` frames
  ahead. This is the designed wait; it is measured (``fence_wait_ms``).
* ``optixLaunch`` inside :meth:`Frame.launch` blocks until all work of the
  context is done when the context has validation mode on.
* :meth:`FrameHandle.result`, :meth:`FrameScheduler.drain` and
  :meth:`FrameScheduler.close` wait for the frames they return, by design.
* The completion thread waits on fences with ``cudaEventSynchronize``
  (the GIL released), never the submitting thread.
Everything else (copies from pinned memory, stream-ordered allocations,
event records and queries) is asynchronous.

With NVTX on (``OPTIXASYNC_NVTX=1``), the phases are named ranges:
``optixasync.acquire``, ``.upload``, ``.launch``, ``.readback``, ``.submit``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._options import coerce_options
from ..cuda import PinnedBuffer, _nvtx, create_stream, fence_event, stream_handle, timing_event
from ._ring import FrameRing, InFlight
from ._stats import FrameStats, SchedulerStats

__all__ = ["SchedulerOptions", "FrameScheduler", "Frame", "FrameHandle", "FrameResult", "FrameAbortedError"]

_log = logging.getLogger("optixasync")


@dataclass(frozen=True)
class SchedulerOptions:
    """Options of a :class:`FrameScheduler`.

    Attributes
    ----------
    timing : bool
        Record timing events around each frame's GPU work (GPU time and idle gap).
    completion_thread : bool
        Retire frames in a background thread as soon as their fences pass, so
        callbacks run and ``result()`` returns without the submitting thread's help.
    keep_results : bool
        Queue completed frames for :meth:`FrameScheduler.poll`. Turn off when
        results are consumed through handles or callbacks only.
    """

    timing: bool = True
    completion_thread: bool = True
    keep_results: bool = True


class FrameAbortedError(RuntimeError):
    """The frame raised while it was being recorded; its GPU work (if any) was fenced and discarded."""


@dataclass
class FrameResult:
    """A completed frame: its readbacks (plain numpy arrays owned by the caller) and stats."""

    index: int
    readbacks: dict[str, np.ndarray]
    stats: FrameStats

    def __getitem__(self, name: str) -> np.ndarray:
        return self.readbacks[name]


class FrameHandle:
    """A future for one submitted frame."""

    def __init__(self, index: int) -> None:
        self.index = index
        self._done = threading.Event()
        self._result: FrameResult | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[FrameHandle], None]] = []
        self._lock = threading.Lock()
        self._scheduler: FrameScheduler | None = None

    def done(self) -> bool:
        """Whether the frame has completed and been retired (never blocks)."""
        return self._done.is_set()

    def result(self, timeout: float | None = None) -> FrameResult:
        """The frame's result, waiting for this frame only (``timeout`` in seconds).

        Raises
        ------
        TimeoutError
            If the frame did not complete in ``timeout`` seconds.
        FrameAbortedError
            If recording the frame raised.
        """
        if not self._done.is_set():
            scheduler = self._scheduler
            if scheduler is not None and not scheduler._has_completer:
                scheduler._retire_through(self.index, timeout)
            if not self._done.wait(timeout):
                raise TimeoutError(f"frame {self.index} did not complete within {timeout} s")
        if self._error is not None:
            raise FrameAbortedError(f"frame {self.index} was aborted: {self._error!r}") from self._error
        assert self._result is not None
        return self._result

    def add_done_callback(self, fn: Callable[[FrameHandle], None]) -> None:
        """Call ``fn(handle)`` when the frame completes (in the completion thread), or now if it has."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(fn)
                return
        fn(self)

    def __await__(self):
        """``await handle`` gives the :class:`FrameResult` without blocking the event loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def _deliver(handle: FrameHandle) -> None:
            def _set() -> None:
                if future.done():
                    return
                if handle._error is not None:
                    future.set_exception(FrameAbortedError(f"frame {handle.index} was aborted: {handle._error!r}"))
                else:
                    future.set_result(handle._result)

            loop.call_soon_threadsafe(_set)

        if self._scheduler is not None and not self._scheduler._has_completer and not self.done():
            return loop.run_in_executor(None, self.result).__await__()
        self.add_done_callback(_deliver)
        return future.__await__()

    def _finish(self, result: FrameResult | None, error: BaseException | None) -> list[Callable]:
        with self._lock:
            self._result, self._error = result, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        return callbacks

    def __repr__(self) -> str:
        return f"<FrameHandle {self.index} {'done' if self.done() else 'pending'}>"


class _Slot:
    """Resources of one frame slot, reused by every N-th frame."""

    def __init__(self, scheduler: FrameScheduler, index: int) -> None:
        ctx = scheduler.ctx
        self.index = index
        self.params_staging: PinnedBuffer | None = None
        self.params_view: np.ndarray | None = None
        self.params_device: Any = None
        if scheduler.params_dtype is not None:
            self.params_staging = ctx.pinned.allocate(scheduler.params_dtype.itemsize)
            self.params_view = self.params_staging.view(scheduler.params_dtype, (1,)).reshape(())
            self.params_device = ctx.memory.alloc(scheduler.params_dtype.itemsize, scheduler.stream)
        self.buffers: dict[str, Any] = {}
        self.readback_staging: dict[str, tuple[PinnedBuffer, np.ndarray]] = {}


class Frame:
    """One frame being recorded. Get it from :meth:`FrameScheduler.begin_frame` or ``frame()``.

    Attributes
    ----------
    index : int
        Frame number (0, 1, 2, ...).
    slot : int
        The slot this frame uses (``index % frames_in_flight``).
    params : numpy structured scalar
        The launch parameters in the slot's pinned staging; write fields
        before the first :meth:`launch`, which copies them to the device.
    stream : cupy.cuda.Stream
        The scheduler's stream: enqueue the frame's own work (builds,
        kernels) there so it is ordered with the launches and fenced.
        Taking it starts the frame's GPU timer (``stats.gpu_ms``).
    launched : bool
        Whether the frame has launched (its parameters are on their way).
    """

    def __init__(self, scheduler: FrameScheduler, index: int, slot: _Slot, stats: FrameStats) -> None:
        self._scheduler = scheduler
        self.index = index
        self.slot = slot.index
        self._slot = slot
        self._stream = scheduler.stream
        self.params = slot.params_view
        self.stats = stats
        self._params_uploaded = False
        self._started = False
        self._start_event: Any = None
        self._holds: list[Any] = []  # per-frame staging and temporaries, released when the frame retires
        self._readbacks: list[tuple[str, np.ndarray, int]] = []

    # -- GPU work ----------------------------------------------------------------
    @property
    def launched(self) -> bool:
        """Whether the frame has launched (its parameters are already on their way to the device)."""
        return self._params_uploaded

    @property
    def stream(self) -> Any:
        # Whoever takes the stream is about to enqueue the frame's work on it (kernels,
        # refits): the frame's GPU time starts here, before that work.
        self._begin_gpu_work()
        return self._stream

    def _begin_gpu_work(self) -> None:
        if not self._started:
            self._started = True
            if self._scheduler.options.timing:
                self._start_event = timing_event()
                self._start_event.record(self._stream)

    @contextlib.contextmanager
    def _timed(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stats.submit_ms += (time.perf_counter() - start) * 1e3

    def _upload_params(self) -> None:
        if self._params_uploaded or self._slot.params_staging is None:
            return
        self._begin_gpu_work()
        self._slot.params_staging.copy_to_device_async(self._slot.params_device, self.stream)
        self._params_uploaded = True

    def launch(self, pipeline: Any, sbt: Any, width: int, height: int = 1, depth: int = 1) -> None:
        """Enqueue ``optixLaunch`` with this frame's parameters (copied to the device on the first launch)."""
        if self._slot.params_device is None:
            raise RuntimeError("this scheduler was created without params_dtype; it has no launch parameters")
        with self._timed(), _nvtx.annotate("optixasync.launch"):
            self._upload_params()
            start = time.perf_counter()
            pipeline.launch(
                sbt, self._slot.params_device, width, height, depth, stream=self.stream,
                params_size=self._scheduler.params_dtype.itemsize,
            )
            self.stats.launch_ms += (time.perf_counter() - start) * 1e3

    def buffer(self, name: str, shape: Any, dtype: Any) -> Any:
        """A device array owned by this slot, kept across frames (reallocated if shape or dtype change).

        Frames in other slots have their own, so frame ``k+1`` can write its
        buffer while frame ``k``'s is still being read.
        """
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in np.atleast_1d(shape))
        current = self._slot.buffers.get(name)
        if current is None or current.shape != shape or current.dtype != dtype:
            with self._timed():
                current = self._scheduler.ctx.memory.empty(shape, dtype, self._stream)
                self._slot.buffers[name] = current
        return current

    def upload(self, array: Any) -> Any:
        """Copy a host array to a new device array through pinned staging, in this frame's stream order."""
        with self._timed(), _nvtx.annotate("optixasync.upload"):
            self._begin_gpu_work()
            device = self._scheduler.ctx.upload(array, self.stream)  # staging held until the copy has passed
            self._holds.append(device)
        return device

    def readback(self, device_array: Any, name: str) -> None:
        """Enqueue a copy of ``device_array`` to the slot's pinned memory; delivered as ``result[name]``."""
        if any(n == name for n, _, _ in self._readbacks):
            raise ValueError(f"readback {name!r} already requested in frame {self.index}")
        with self._timed(), _nvtx.annotate("optixasync.readback"):
            nbytes = int(device_array.nbytes)
            staged = self._slot.readback_staging.get(name)
            if staged is None or staged[1].shape != device_array.shape or staged[1].dtype != device_array.dtype:
                staged = self._scheduler.ctx.pinned.array(device_array.shape, device_array.dtype)
                self._slot.readback_staging[name] = staged
            self._begin_gpu_work()
            staged[0].copy_from_device_async(device_array, self.stream, nbytes)
            self._readbacks.append((name, staged[1], nbytes))

    def hold(self, *objects: Any) -> None:
        """Keep ``objects`` alive until this frame has completed (temporaries used by its GPU work)."""
        self._holds.extend(objects)


class FrameScheduler:
    """Runs the host up to ``frames_in_flight`` frames ahead of the GPU.

    Parameters
    ----------
    ctx : Context
    frames_in_flight : int
        Number of frame slots N. The host waits only when it is N frames ahead.
    params_dtype : numpy dtype, optional
        Layout of the launch parameters (see :func:`optixasync.struct_dtype`).
    options : SchedulerOptions or dict, optional
    stream : stream, optional
        A non-blocking stream to submit on (default: a new one).

    Examples
    --------
    >>> sched = FrameScheduler(ctx, 2, params_dtype=PARAMS)       # doctest: +SKIP
    >>> for k in range(100):                                       # doctest: +SKIP
    ...     with sched.frame() as f:
    ...         f.params["frame"] = k
    ...         out = f.buffer("image", (h, w, 4), "f4")
    ...         f.params["image"] = out.data.ptr
    ...         f.launch(pipeline, sbt, w, h)
    ...         f.readback(out, "image")
    ...     for result in sched.poll():
    ...         show(result["image"])
    """

    def __init__(
        self,
        ctx: Any,
        frames_in_flight: int = 2,
        *,
        params_dtype: Any = None,
        options: SchedulerOptions | dict | None = None,
        stream: Any = None,
    ) -> None:
        self.ctx = ctx
        self.options = coerce_options(SchedulerOptions, options)
        self.frames_in_flight = int(frames_in_flight)
        self._ring: FrameRing[tuple[Frame, FrameHandle, Any, BaseException | None]] = FrameRing(self.frames_in_flight)
        self.params_dtype = np.dtype(params_dtype) if params_dtype is not None else None
        self.stream = create_stream() if stream is None else stream
        stream_handle(self.stream)  # rejects the legacy default stream
        self._slots = [_Slot(self, i) for i in range(self.frames_in_flight)]
        self.stats = SchedulerStats()
        self._origin_event: Any = None
        if self.options.timing:
            # GPU time 0 of every frame's timestamps; read only against events that have passed.
            self._origin_event = timing_event()
            self._origin_event.record(self.stream)
            self.stats.gpu_origin_host = time.perf_counter()
        self._lock = threading.RLock()
        self._unpolled: deque[FrameResult] = deque()
        self._prev_end_event: Any = None
        self._current: Frame | None = None
        self._closed = False
        self._completer: threading.Thread | None = None
        self._work = threading.Condition(self._lock)
        if self.options.completion_thread:
            self._completer = threading.Thread(target=self._complete_loop, name="optixasync-completion", daemon=True)
            self._completer.start()
        ctx._own(self)

    @property
    def _has_completer(self) -> bool:
        return self._completer is not None and self._completer.is_alive()

    # -- recording -------------------------------------------------------------
    def begin_frame(self) -> Frame:
        """Acquire the next slot and start recording a frame.

        Waits (the one designed wait) only if the frame that last used the
        slot is still in flight.
        """
        if self._closed:
            raise RuntimeError("begin_frame on a closed FrameScheduler")
        begin = time.perf_counter()
        with _nvtx.annotate("optixasync.acquire"):
            with self._lock:
                index, slot, blocker = self._ring.begin()
            stats = FrameStats(index=index, host_begin=begin)
            if blocker is not None:
                wait_start = stats.host_wait_start = time.perf_counter()
                blocker.fence.synchronize()
                stats.fence_wait_ms = (time.perf_counter() - wait_start) * 1e3
                stats.waited = True
                self._retire_through(blocker.index, None)
        frame = Frame(self, index, self._slots[slot], stats)
        self._current = frame
        return frame

    def submit(self, frame: Frame, error: BaseException | None = None) -> FrameHandle:
        """Fence the frame and hand it to the GPU; returns its :class:`FrameHandle`."""
        if frame is not self._current:
            raise RuntimeError(f"frame {frame.index} is not the frame being recorded")
        handle = FrameHandle(frame.index)
        handle._scheduler = self
        with frame._timed(), _nvtx.annotate("optixasync.submit"):
            frame._begin_gpu_work()
            fence = timing_event() if self.options.timing else fence_event()
            fence.record(self.stream)
        frame.stats.host_submit = time.perf_counter()
        with self._lock:
            ahead = self._ring.pending()
            self._ring.submit(fence, (frame, handle, frame._start_event, error))
            frame.stats.ahead = ahead
            frame.stats.in_flight = ahead + (0 if fence.done else 1)
            self._current = None
            self._work.notify()
        return handle

    @contextlib.contextmanager
    def frame(self) -> Iterator[Frame]:
        """Record a frame: ``begin_frame`` on entry, ``submit`` on exit.

        If the body raises, work already enqueued is fenced and the frame is
        marked aborted (its handle raises :class:`FrameAbortedError`), the
        exception propagates, and the scheduler stays usable.
        """
        frame = self.begin_frame()
        try:
            yield frame
        except BaseException as exc:
            if frame._started:
                frame.handle = self.submit(frame, error=exc)  # type: ignore[attr-defined]
            else:
                with self._lock:
                    self._ring.cancel()
                    self._current = None
            raise
        frame.handle = self.submit(frame)  # type: ignore[attr-defined]

    # -- completion ---------------------------------------------------------------
    def _retire_all(self, entries: list[InFlight]) -> list[tuple[FrameHandle, list[Callable]]]:
        """Retire ``entries`` (in order); returns each handle with the callbacks to run outside the lock."""
        return [self._retire(entry) for entry in entries]

    def _retire(self, entry: InFlight) -> tuple[FrameHandle, list[Callable]]:
        frame, handle, start_event, error = entry.payload
        stats = frame.stats
        stats.host_done = time.perf_counter()
        fence = entry.fence
        if self.options.timing and start_event is not None:
            import cupy

            stats.gpu_ms = cupy.cuda.get_elapsed_time(start_event, fence)
            if self._origin_event is not None:
                stats.gpu_start_ms = cupy.cuda.get_elapsed_time(self._origin_event, start_event)
                stats.gpu_end_ms = cupy.cuda.get_elapsed_time(self._origin_event, fence)
            if self._prev_end_event is not None:
                stats.gap_us = max(0.0, cupy.cuda.get_elapsed_time(self._prev_end_event, start_event) * 1e3)
            self._prev_end_event = fence
        result = None
        if error is None:
            readbacks = {name: view.copy() for name, view, _ in frame._readbacks}
            result = FrameResult(frame.index, readbacks, stats)
            if self.options.keep_results:
                self._unpolled.append(result)
        frame._holds.clear()
        self.stats.frames.append(stats)
        return handle, handle._finish(result, error)

    def _retire_through(self, index: int, timeout: float | None) -> None:
        """Retire every frame up to ``index`` (waiting for their fences), then run their callbacks."""
        if timeout is not None:
            # Frames complete in order on one stream: once ``index`` has passed, so have all before it.
            deadline = time.perf_counter() + timeout
            with self._lock:
                target = self._ring.find(index)
            while target is not None and not target.fence.done:
                if time.perf_counter() > deadline:
                    return
                time.sleep(50e-6)
        with self._lock:
            finished = self._retire_all(self._ring.pop_through(index))
        self._run_callbacks(finished)

    def _run_callbacks(self, finished: list[tuple[FrameHandle, list[Callable]]]) -> None:
        for handle, callbacks in finished:
            for fn in callbacks:
                try:
                    fn(handle)
                except Exception:
                    _log.exception("frame %d completion callback raised", handle.index)

    def _complete_loop(self) -> None:
        while True:
            with self._lock:
                while not self._closed and self._ring.oldest() is None:
                    self._work.wait()
                if self._closed and self._ring.oldest() is None:
                    return
                oldest = self._ring.oldest()
            assert oldest is not None
            oldest.fence.synchronize()  # the GIL is released while waiting
            with self._lock:
                finished = self._retire_all(self._ring.pop_completed())
            self._run_callbacks(finished)

    def poll(self) -> list[FrameResult]:
        """Completed frames not handed out yet, in order. Never blocks."""
        with self._lock:
            finished = self._retire_all(self._ring.pop_completed())
            results = list(self._unpolled)
            self._unpolled.clear()
        self._run_callbacks(finished)
        return results

    def drain(self) -> list[FrameResult]:
        """Wait for every submitted frame; return the completed frames not handed out yet."""
        with self._lock:
            last = self._ring.next_index - 1
        if last >= 0:
            self._retire_through(last, None)
        return self.poll()

    @property
    def in_flight(self) -> int:
        """Frames submitted and not yet complete (queries events; never blocks)."""
        with self._lock:
            return self._ring.pending()

    # -- lifetime ----------------------------------------------------------------
    def close(self) -> None:
        """Drain in-flight frames, stop the completion thread and release the slots."""
        if self._closed:
            return
        if self._current is not None:
            current, self._current = self._current, None
            if current._started:
                # Fence the half-recorded frame so nothing it enqueued is freed under the GPU.
                self._current = current
                self.submit(current, error=RuntimeError("scheduler closed while the frame was being recorded"))
            else:
                self._ring.cancel()
        self.drain()
        with self._lock:
            self._closed = True
            self._work.notify_all()
        if self._completer is not None:
            self._completer.join()
        self._slots = []

    def __enter__(self) -> FrameScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
