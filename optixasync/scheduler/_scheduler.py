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
  ``begin_frame``. Neither happens to the frames :meth:`~FrameScheduler.drain`
  waits for, nor inside :meth:`~FrameScheduler.holding_results` (a render
  pipeline's ``frames()`` runs in one): those consumers return every result.

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
* With ``SchedulerOptions.optix_queue_limit`` (off by default),
  :meth:`Frame.launch` waits on the oldest queued launch of the OptiX context
  when that many are queued: the second designed wait (``queue_wait_ms``,
  ``stats.queue_waits`` by cause), made so that ``optixLaunch`` itself never
  waits for OptiX's ring of launch resources (see
  :mod:`optixasync.cuda._launch_queue`).
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

Lifetime
--------
A submitted frame's slot and holds (the programs it launched, its uploads,
what its recorder held: a render pipeline holds itself) are handed to the
context's deferred release behind the frame's fence (one ``cudaEventQuery``
of the oldest held set per submit). So a scheduler, a pipeline or the
frames dropped without ``close()`` while frames are in flight, in any order,
free nothing that a queued launch still reads.

With NVTX on (``OPTIXASYNC_NVTX=1``), the phases are named ranges:
``optixasync.acquire``, ``.upload``, ``.launch``, ``.readback``, ``.submit``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import GpuSpan, _nvtx, as_cupy_stream, create_stream, synchronize
from ..errors import ResultsOverflowError
from ..validation import coerce_options
from ._completion import Completion
from ._frame import Frame
from ._graphs import NO_WORK, FrameGraphs
from ._options import SchedulerOptions
from ._results import FrameHandle, FrameResult
from ._ring import FrameRing
from ._slot import Slot
from ._stats import FrameStats, SchedulerStats

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["FrameScheduler", "MAX_FRAMES_IN_FLIGHT"]

#: The most frame slots a scheduler takes (beyond a few, more slots only add latency and memory).
MAX_FRAMES_IN_FLIGHT = 64

_clock = time.perf_counter


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
    graphs : bool
        Run frames that have a work function (``sched.frame(work)``) as their slot's CUDA graph:
        captured once per shape, then replayed (see :mod:`optixasync.scheduler._graphs`). Off by
        default: frame graphs have not yet been checked on a GPU. ``sched.frame(work, graph=...)``
        decides per frame.

    Attributes
    ----------
    stats : SchedulerStats
        The newest frames' measurements and whole-run totals (``stats.graphs``: frame graphs).
    graphs : bool
        As given: the default of frames with a work function.

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

    With a work function, the same frame can be replayed as a CUDA graph:

    >>> def work(f):                                               # doctest: +SKIP
    ...     f.launch(pipeline, sbt, w, h)
    ...     f.readback(f.buffer("image", (h, w, 4), "f4"), "image")
    >>> sched = FrameScheduler(ctx, 2, params_dtype=PARAMS, graphs=True)   # doctest: +SKIP
    >>> for k in range(100):                                       # doctest: +SKIP
    ...     with sched.frame(work) as f:      # the with block writes the parameters, every frame
    ...         f.params["frame"] = k
    ...         f.params["image"] = f.buffer("image", (h, w, 4), "f4").data.ptr
    """

    def __init__(
        self,
        ctx: Context,
        frames_in_flight: int = 2,
        *,
        params_dtype: Any = None,
        options: SchedulerOptions | dict | None = None,
        stream: Any = None,
        graphs: bool = False,
    ) -> None:
        ctx.require_open()
        if not isinstance(graphs, bool):
            raise TypeError(f"graphs must be a bool, got {type(graphs).__name__}")
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
        self._slots = [Slot(ctx, i, self.params_dtype, self.stream) for i in range(self.frames_in_flight)]
        self.stats = SchedulerStats(self.options.stats_window)
        self.graphs = graphs
        self._graphs = FrameGraphs(ctx, self.stats)
        self._lock = threading.RLock()
        self._current: Frame | None = None
        self._closed = False
        self._completion = Completion(self._ring, self._lock, self.options, self.stats, self.stream)
        self.queue_token = object()  # this scheduler's launches, for the context's launch queue
        self._bounded: Any = None  # the context's launch queue while this scheduler asks it for a limit
        if self.options.optix_queue_limit is not None:
            self._bounded = ctx.launch_queue
            self._bounded.request(self.queue_token, self.options.optix_queue_limit)
        ctx.track(self)

    def start_span(self, stream: Any) -> GpuSpan | None:
        """The GPU span of a frame's work starting now on ``stream`` (for its :class:`Frame`; None without timing)."""
        return self._completion.start_span(stream)

    # -- recording -------------------------------------------------------------
    def begin_frame(self, work: Callable[[Frame], Any] | None = None, *, graph: bool | None = None,
                    key: Any = None) -> Frame:
        """Acquire the next slot and start recording a frame.

        Waits (the one designed wait) only if the frame that last used the
        slot is still in flight.

        Parameters
        ----------
        work : callable, optional
            ``work(frame)`` enqueues the frame's GPU work at :meth:`submit`, after the parameters are
            written: what a frame graph captures (see :class:`FrameScheduler`'s ``graphs``).
        graph : bool, optional
            Run this frame's work as its slot's graph (default: the scheduler's ``graphs``).
        key : hashable, optional
            What the work depends on besides the slot's buffers (image size, outputs, a scene's
            generation); a different key captures the slot's graph again. A mapping's entries are named
            in the recorded reason.

        Raises
        ------
        RuntimeError
            On a closed scheduler, or while another frame is being recorded.
        TypeError
            If ``work`` is not callable or ``graph`` not a bool.
        ResultsOverflowError
            With ``on_full="raise"``, while more results wait for ``poll()`` than allowed.

        If the wait or the retirement of the blocking frame raises (also a
        callback's ``BaseException``), no frame is being recorded afterwards.
        """
        if self._closed:
            raise RuntimeError("begin_frame on a closed FrameScheduler")
        if work is not None and not callable(work):
            raise TypeError(f"work must be callable (it is called with the frame), got {type(work).__name__}")
        if graph is not None and not isinstance(graph, bool):
            raise TypeError(f"graph must be a bool or None, got {type(graph).__name__}")
        begin = _clock()
        with _nvtx.annotate("optixasync.acquire"):
            with self._lock:
                if self._completion.results.overflowing:
                    queued = len(self._completion.results)
                    raise ResultsOverflowError(
                        f"{queued} completed frames wait for poll() (max_queued_results="
                        f"{self.options.max_queued_results}): poll them, consume them through their handles, "
                        "or create the scheduler with keep_results=False")
                index, slot, blocker = self._ring.begin()
            stats = FrameStats(index, begin)
            if blocker is not None:
                self._wait_for_slot(blocker, stats)
        frame = Frame(self, index, self._slots[slot], stats, FrameHandle(index, self._completion))
        frame.work, frame.key = work, key
        frame.graph = self.graphs if graph is None else graph
        self._current = frame
        return frame

    def _wait_for_slot(self, blocker: Any, stats: FrameStats) -> None:
        """Wait for the fence of the frame that holds the slot and retire it (the designed wait)."""
        wait_start = stats.host_wait_start = _clock()
        try:
            synchronize(blocker.fence, f"waiting for frame {blocker.index}'s fence")
            stats.fence_wait_ms = (_clock() - wait_start) * 1e3
            stats.waited = True
            self._completion.retire_through(blocker.index)
        except BaseException:
            with self._lock:
                self._ring.cancel()  # no frame is being recorded: the next begin_frame may try again
            raise

    def submit(self, frame: Frame, error: BaseException | None = None) -> FrameHandle:
        """Run the frame's work (if it has one), fence the frame and hand it to the GPU; returns its handle.

        With ``error``, the frame is marked aborted: its work is not run, what it enqueued is fenced,
        its handle raises :class:`~optixasync.errors.FrameAbortedError`, and no result is delivered. If
        the work raises, the frame is submitted aborted the same way and the exception propagates.
        """
        if frame is not self._current:
            raise RuntimeError(f"frame {frame.index} is not the frame being recorded")
        frame.error = error
        start = _clock()
        recorded = frame.stats.submit_ms  # what the frame's methods measured so far (the work's add to it)
        fence = self._completion.new_fence()
        with _nvtx.annotate("optixasync.submit"):
            if error is None and frame.work is not None:
                try:
                    self._graphs.run(frame, self._slots[frame.slot], fence)  # records the fence after the work
                except BaseException as exc:
                    frame.error = exc  # aborted, fenced behind whatever the work enqueued
                    fence.record(self.stream)
                    self._enqueue(frame, fence, start, recorded)
                    raise
            else:
                if frame.graph and error is None:
                    self._graphs.count_eager(frame, frame.eager_reason or NO_WORK)
                frame.begin_gpu_work()
                fence.record(self.stream)
        return self._enqueue(frame, fence, start, recorded)

    def _enqueue(self, frame: Frame, fence: Any, start: float, recorded: float) -> FrameHandle:
        """The frame is in flight behind ``fence`` (recorded): on the ring, its handle may wait, the thread knows."""
        if frame.span is not None:
            frame.span.end = fence
        frame.submitted = True
        stats = frame.stats
        now = _clock()
        stats.submit_ms = recorded + (now - start) * 1e3  # the work's own methods ran inside this span
        stats.host_submit = now
        # What the frame's GPU work reads (its slot: parameters, buffers, destinations, graph; its holds: the
        # programs it launched, its uploads, the render pipeline that recorded it) lives until its fence has
        # passed, in the context's keeping: dropping this scheduler, the pipeline or the frame first, in any
        # order, frees none of it under the GPU (the ring goes with the scheduler).
        self.ctx.deferred.hold(fence, self._slots[frame.slot], tuple(frame.holds))
        with self._lock:
            ahead = self._ring.pending()
            self._ring.submit(fence, frame)
            frame.handle.set_submitted()  # in flight: its result() may wait from now on
            stats.ahead = ahead
            stats.in_flight = ahead + (0 if fence.done else 1)
            self._current = None
            self._completion.notify()
        return frame.handle

    def frame(self, work: Callable[[Frame], Any] | None = None, *, graph: bool | None = None,
              key: Any = None) -> _Recording:
        """Record a frame: ``begin_frame`` on entry, ``submit`` on exit (the arguments are ``begin_frame``'s).

        If the body raises, the frame is fenced behind whatever it enqueued
        and marked aborted (its handle raises
        :class:`~optixasync.errors.FrameAbortedError`, no result is
        delivered, its index is not reused), the exception propagates, and
        the scheduler stays usable.
        """
        return _Recording(self, self.begin_frame(work, graph=graph, key=key))

    # -- completion ---------------------------------------------------------------
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
        """Wait for every submitted frame; return the completed frames queued for polling.

        The frames it waits for are all returned, however many: the queue's bound (``max_queued_results``) drops
        or refuses nothing meanwhile.
        """
        with self._lock:
            last = self._ring.next_index - 1
        with self.holding_results():
            if last >= 0:
                self._completion.retire_through(last)
            return self.poll()

    @contextlib.contextmanager
    def holding_results(self) -> Iterator[None]:
        """While the block runs, results queued for ``poll()`` are never dropped and never overflow.

        For a consumer that polls every result it makes happen (:meth:`drain`, a render pipeline's ``frames``):
        beyond ``max_queued_results``, ``on_full`` applies again after the block (to results never polled).
        """
        results = self._completion.results
        with self._lock:
            results.holding += 1
        try:
            yield
        finally:
            with self._lock:
                results.holding -= 1

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
            if self._bounded is not None:
                self._bounded.withdraw(self.queue_token)
            self._completion.stop()
            with self._lock:
                self._completion.results.take_all()
                idle = len(self._ring) == 0
            if idle:
                for slot in self._slots:
                    slot.release()  # a Frame the caller still holds must not keep the slot's memory
                self._slots = []
                self.ctx.deferred.collect()  # the frames' fences have passed: what they held goes now

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
        self._completion.run_callbacks([(current.handle, current.handle.finish(None, error))])

    def __enter__(self) -> FrameScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Recording:
    """``with sched.frame() as f:`` (a class rather than a generator: it is entered once per frame)."""

    __slots__ = ("_scheduler", "_frame")

    def __init__(self, scheduler: FrameScheduler, frame: Frame) -> None:
        self._scheduler = scheduler
        self._frame = frame

    def __enter__(self) -> Frame:
        return self._frame

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            self._scheduler.submit(self._frame)
        else:
            self._scheduler.submit(self._frame, error=exc)
