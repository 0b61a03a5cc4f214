"""The frame scheduler: N frame slots on one non-blocking stream, fenced by events.

The host records frame ``k`` while the GPU still executes frames ``k-1`` ...
``k-N+1``. Each slot owns pinned staging for the launch parameters, a device
copy of them and persistent device buffers; a slot is reused only after the
fence of the frame that last used it has passed. Recording lives in
:mod:`._frame`, retirement and the completion thread in :mod:`._completion`,
results and handles in :mod:`._results`.

Delivery rule
-------------
Each frame has one :class:`FrameResult` object (none for an aborted frame),
made when the frame retires:

* **its handle** always gives it (``handle.result()``, ``await handle``,
  ``handle.add_done_callback``), the same object every time;
* **the poll queue** also gets it, if ``keep_results`` is on and nobody had
  asked through the handle before the frame retired. Asking through the
  handle later takes it out of the queue if it is still there. ``poll()``
  returns each queued result once. The queue holds at most
  ``max_queued_results``; beyond that ``on_full`` decides: drop the oldest
  (counted in ``stats.dropped_results``, logged once) or raise
  :class:`~optixasync.errors.ResultsOverflowError` from the next
  ``begin_frame``.

So ``poll()`` never returns a result that was asked for through its handle
first, but a result that ``poll()`` returned is still given by its handle if
that is asked later: it is the same object, and :meth:`FrameResult.release`
by either consumer releases it for both (copy what one of them must keep).

The handle keeps its result as long as the handle lives, the poll queue
until it is polled or dropped; nothing else does. So no pattern of
consumption makes memory grow without bound, and a frame's readbacks are
never copied: they are views of pinned buffers leased for the frame,
returned to the pool when the result and its arrays are gone.

Callbacks run in the thread that retires the frame (the completion thread,
or one calling ``poll()``, ``drain()``, ``close()``, ``begin_frame()``, or
``result()`` without the completion thread), so callbacks of different
frames may run at the same time and out of frame order.

Blocking calls
--------------
* :meth:`FrameScheduler.begin_frame` waits on the fence of the frame that
  last used the slot, only when the host is ``frames_in_flight`` frames
  ahead. This is the designed wait; it is measured (``fence_wait_ms``).
* ``optixLaunch`` inside :meth:`Frame.launch` blocks until all work of the
  context is done when the context has validation mode on.
* :meth:`FrameHandle.result`, :meth:`FrameScheduler.drain` and
  :meth:`FrameScheduler.close` wait for the frames they return, by design,
  without holding the scheduler's lock (other threads keep polling and
  submitting meanwhile).
* The completion thread waits on fences with ``cudaEventSynchronize``
  (the GIL released), never the submitting thread.
* The scheduler's lock is held briefly by every call, and while frames
  retire (see :mod:`._completion`).
Everything else (copies from pinned memory, stream-ordered allocations,
event records and queries) is asynchronous.

With NVTX on (``OPTIXASYNC_NVTX=1``), the phases are named ranges:
``optixasync.acquire``, ``.upload``, ``.launch``, ``.readback``, ``.submit``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import _nvtx, as_cupy_stream, create_stream, synchronize
from ..errors import ResultsOverflowError
from ..validation import coerce_options
from ._completion import Completion
from ._frame import Frame, Slot
from ._options import SchedulerOptions
from ._results import FrameHandle, FrameResult
from ._ring import FrameRing
from ._stats import FrameStats, SchedulerStats

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["FrameScheduler", "MAX_FRAMES_IN_FLIGHT"]

#: The most frame slots a scheduler takes (beyond a few, more slots only add latency and memory).
MAX_FRAMES_IN_FLIGHT = 64


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

    Attributes
    ----------
    stats : SchedulerStats
        The newest frames' measurements and whole-run totals.

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
    ...         with result:
    ...             show(result["image"])
    """

    def __init__(
        self,
        ctx: Context,
        frames_in_flight: int = 2,
        *,
        params_dtype: Any = None,
        options: SchedulerOptions | dict | None = None,
        stream: Any = None,
    ) -> None:
        ctx.require_open()
        self.ctx = ctx
        self.options = coerce_options(SchedulerOptions, options)
        if isinstance(frames_in_flight, bool) or not isinstance(frames_in_flight, (int, np.integer)):
            raise TypeError(f"frames_in_flight must be an int, got {type(frames_in_flight).__name__}")
        self.frames_in_flight = int(frames_in_flight)
        if self.frames_in_flight > MAX_FRAMES_IN_FLIGHT:
            raise ValueError(f"frames_in_flight must be at most {MAX_FRAMES_IN_FLIGHT} (each slot holds staging and "
                             f"buffers), got {self.frames_in_flight}")
        self._ring: FrameRing[Frame] = FrameRing(self.frames_in_flight)
        self.params_dtype = np.dtype(params_dtype) if params_dtype is not None else None
        self.stream = create_stream() if stream is None else as_cupy_stream(stream)
        self._slots = [Slot(self, i) for i in range(self.frames_in_flight)]
        self.stats = SchedulerStats(self.options.stats_window)
        self._lock = threading.RLock()
        self._current: Frame | None = None
        self._closed = False
        self._completion = Completion(self._ring, self._lock, self.options, self.stats, self.stream)
        ctx.track(self)

    @property
    def _threaded(self) -> bool:
        return self._completion.threaded

    # -- recording -------------------------------------------------------------
    def begin_frame(self) -> Frame:
        """Acquire the next slot and start recording a frame.

        Waits (the one designed wait) only if the frame that last used the
        slot is still in flight.

        Raises
        ------
        RuntimeError
            On a closed scheduler, or while another frame is being recorded.
        ResultsOverflowError
            With ``on_full="raise"``, while more results wait for ``poll()`` than allowed.

        If the wait or the retirement of the blocking frame raises (also a
        callback's ``BaseException``), no frame is being recorded afterwards.
        """
        if self._closed:
            raise RuntimeError("begin_frame on a closed FrameScheduler")
        begin = time.perf_counter()
        with _nvtx.annotate("optixasync.acquire"):
            with self._lock:
                if self._completion.results.overflowing:
                    queued = len(self._completion.results)
                    raise ResultsOverflowError(
                        f"{queued} completed frames wait for poll() (max_queued_results="
                        f"{self.options.max_queued_results}): poll them, consume them through their handles, "
                        "or create the scheduler with keep_results=False")
                index, slot, blocker = self._ring.begin()
            stats = FrameStats(index=index, host_begin=begin)
            if blocker is not None:
                wait_start = stats.host_wait_start = time.perf_counter()
                try:
                    synchronize(blocker.fence, f"waiting for frame {blocker.index}'s fence")
                    stats.fence_wait_ms = (time.perf_counter() - wait_start) * 1e3
                    stats.waited = True
                    self._completion.retire_through(blocker.index)
                except BaseException:
                    with self._lock:
                        self._ring.cancel()  # no frame is being recorded: the next begin_frame may try again
                    raise
        frame = Frame(self, index, self._slots[slot], stats)
        self._current = frame
        return frame

    def submit(self, frame: Frame, error: BaseException | None = None) -> FrameHandle:
        """Fence the frame and hand it to the GPU; returns its :class:`FrameHandle`.

        With ``error``, the frame is marked aborted: its work is fenced, its
        handle raises :class:`~optixasync.errors.FrameAbortedError`, and no result is delivered.
        """
        if frame is not self._current:
            raise RuntimeError(f"frame {frame.index} is not the frame being recorded")
        frame.error = error
        with frame._timed(), _nvtx.annotate("optixasync.submit"):
            frame.begin_gpu_work()
            fence = self._completion.fence(frame)
        frame.submitted = True
        frame.stats.host_submit = time.perf_counter()
        with self._lock:
            ahead = self._ring.pending()
            self._ring.submit(fence, frame)
            frame.handle._submitted = True  # in flight: its result() may wait from now on
            frame.stats.ahead = ahead
            frame.stats.in_flight = ahead + (0 if fence.done else 1)
            self._current = None
            self._completion.notify()
        return frame.handle

    @contextlib.contextmanager
    def frame(self) -> Iterator[Frame]:
        """Record a frame: ``begin_frame`` on entry, ``submit`` on exit.

        If the body raises, the frame is fenced behind whatever it enqueued
        and marked aborted (its handle raises
        :class:`~optixasync.errors.FrameAbortedError`, no result is
        delivered, its index is not reused), the exception propagates, and
        the scheduler stays usable.
        """
        frame = self.begin_frame()
        try:
            yield frame
        except BaseException as exc:
            self.submit(frame, error=exc)
            raise
        self.submit(frame)

    # -- completion ---------------------------------------------------------------
    def _wait_for(self, handle: FrameHandle, deadline: float | None) -> bool:
        """Wait until ``handle``'s frame has retired or ``deadline`` passed (for ``FrameHandle.result``)."""
        if not self._threaded and not self._completion.retire_through(handle.index, deadline):
            return False
        remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
        return handle._done.wait(remaining)

    def _claim(self, handle: FrameHandle) -> None:
        """Claim ``handle``'s result for the handle: not queued for poll() from now on, and out of the queue.

        Under the lock that retirement holds while it decides where a result goes, so a claim is either
        seen by the retirement or removes what it queued.
        """
        with self._lock:
            handle.claimed = True
            if handle.done():
                self._completion.results.discard(handle.index)

    def poll(self) -> list[FrameResult]:
        """Completed frames queued for polling, in order (see the delivery rule). Never blocks.

        Retires the frames whose fences have passed and runs their callbacks
        (in this thread) before taking the queued results, so if a callback
        raises a ``BaseException``, it propagates after the other callbacks
        have run and the results stay queued for the next ``poll()``.
        """
        self._completion.run_callbacks(self._completion.retire_completed())
        with self._lock:
            return self._completion.results.take_all()

    def drain(self) -> list[FrameResult]:
        """Wait for every submitted frame; return the completed frames queued for polling."""
        with self._lock:
            last = self._ring.next_index - 1
        if last >= 0:
            self._completion.retire_through(last)
        return self.poll()

    @property
    def in_flight(self) -> int:
        """Frames submitted and not yet complete (queries events; never blocks)."""
        with self._lock:
            return self._ring.pending()

    # -- lifetime ----------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Drain in-flight frames, stop the completion thread and release the slots. Idempotent.

        A frame still being recorded is ended first: its handle raises
        :class:`~optixasync.errors.FrameAbortedError` and the frame takes no
        more work (if it enqueued GPU work, it is submitted aborted, so
        nothing it enqueued is freed under the GPU). If draining raises (a
        device error), the scheduler is closed all the same and the error
        propagates; the slots of frames still in flight are then left to
        the garbage collector rather than released.
        """
        if self._closed:
            return
        try:
            self._end_recording()
            self.drain()
        finally:
            self._closed = True
            self._completion.stop()
            with self._lock:
                self._completion.results.take_all()
                idle = len(self._ring) == 0
            if idle:
                for slot in self._slots:
                    slot.release()  # a Frame the caller still holds must not keep the slot's memory
                self._slots = []

    def _end_recording(self) -> None:
        """For close(): end the frame being recorded, if any, so that its handle completes (with an error)."""
        current = self._current
        if current is None:
            return
        if current.started:
            # Fence the half-recorded frame so nothing it enqueued is freed under the GPU.
            self.submit(current, error=RuntimeError("scheduler closed while the frame was being recorded"))
            return
        error = RuntimeError(f"the scheduler was closed before frame {current.index} was submitted")
        with self._lock:
            self._ring.cancel()
            self._current = None
        current.error = error
        current.submitted = True  # the frame's methods refuse work from now on
        self._completion.run_callbacks([(current.handle, current.handle._finish(None, error))])

    def __enter__(self) -> FrameScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
