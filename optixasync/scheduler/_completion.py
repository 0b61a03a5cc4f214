"""Retiring frames: read their timing, build their results, deliver them, run callbacks; in a thread or inline.

Frames complete in submission order on the scheduler's stream. Retiring a
frame (once its fence has passed) reads its GPU timestamps from events that
have passed, builds its :class:`FrameResult` from the views of its pinned
readbacks (no copy), delivers it by the scheduler's delivery rule, gives its
events back to the pool and drops its temporaries. Callbacks run after,
outside the lock, in the thread that retired the frame.

No handle is left pending when something fails: if retiring one frame
raises, that frame and the rest of its batch are finished with the error;
if the completion thread stops (a device error, an error while retiring, a
``BaseException`` from a callback), it first finishes every frame still in
flight with that error, so a waiting ``result()`` or ``await`` raises
:class:`~optixasync.errors.FrameAbortedError` instead of waiting forever.

Blocking calls
--------------
* The completion thread waits on the oldest in-flight fence with
  ``cudaEventSynchronize`` (the GIL released): that is its job, and it is
  never the submitting thread.
* :meth:`Completion.retire_through` waits for a requested frame's fence,
  for ``FrameHandle.result()`` (without the completion thread),
  ``drain()`` and ``close()``, by design;
  it waits without holding the scheduler's lock, so other threads keep
  submitting and polling meanwhile.
* Retirement takes the scheduler's lock and, for each frame, the
  statistics' lock (one list append). Every ``stats_window`` frames, the
  statistics fold their oldest frames into the totals (about 5 ms for
  4096 frames) after the scheduler's lock is released.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import numpy as np

from ..cuda import EventPool, GpuSpan, elapsed_ms, synchronize
from ._results import FrameHandle, FrameResult, ResultQueue
from ._stats import FrameStats

if TYPE_CHECKING:
    from ._options import SchedulerOptions
    from ._ring import FrameRing, InFlight
    from ._stats import SchedulerStats

__all__ = ["Completion", "Retiring"]

_log = logging.getLogger("optixasync")
_POLL_INTERVAL_S = 50e-6  # sleep between fence queries of a timed wait without the completion thread

Finished = list[tuple[FrameHandle, list[Callable]]]


class Retiring(Protocol):
    """What retirement reads of a submitted frame (a scheduler ``Frame``)."""

    index: int
    stats: FrameStats
    span: GpuSpan | None
    error: BaseException | None
    handle: FrameHandle

    def retire(self) -> dict[str, np.ndarray]:
        """The frame's readbacks (views of its pinned destinations); the frame lets go of its temporaries."""


class Completion:
    """The retirement half of a :class:`FrameScheduler`: fences, timing, results, delivery, callbacks.

    It is also the owner of the frames' handles (:class:`~._results.HandleOwner`): a handle claims its
    result and waits for its frame here.

    Parameters
    ----------
    ring : FrameRing
        The scheduler's in-flight frames; read and popped under ``lock``.
    lock : threading.RLock
        The scheduler's lock.
    options : SchedulerOptions
    stats : SchedulerStats
    stream : cupy.cuda.Stream
        The scheduler's stream (the origin event is recorded there).
    """

    def __init__(self, ring: FrameRing[Retiring], lock: threading.RLock, options: SchedulerOptions,
                 stats: SchedulerStats, stream: Any) -> None:
        self._ring = ring
        self._lock = lock
        self._options = options
        self._stats = stats
        self._timing_events = EventPool(timing=True)
        self._fence_events = EventPool(timing=False)
        self._origin: Any = None
        self._prev_end: Any = None
        self.results = ResultQueue(options.max_queued_results, drop_oldest=options.on_full == "drop_oldest")
        self._warned_drop = False
        if options.timing:
            # GPU time 0 of every frame's timestamps; read only against events that have passed.
            self._origin = self._timing_events.acquire()
            self._origin.record(stream)
            stats.gpu_origin_host = time.perf_counter()
        self._closed = False
        self._stopped = False  # the completion thread stopped on an error: frames retire inline from then on
        self._work = threading.Condition(lock)
        self._idle = False  # the thread waits on the condition for a frame (under the lock)
        self._thread: threading.Thread | None = None
        if options.completion_thread:
            self._thread = threading.Thread(target=self._loop, name="optixasync-completion", daemon=True)
            self._thread.start()

    # -- events ----------------------------------------------------------------------------------------------
    def start_span(self, stream: Any) -> GpuSpan | None:
        """A frame's GPU span starting now on ``stream`` (None without timing)."""
        if not self._options.timing:
            return None
        event = self._timing_events.acquire()
        event.record(stream)
        return GpuSpan(event)

    def new_fence(self) -> Any:
        """An event for a frame's fence (a timing event when timed: it ends the frame's span), not recorded yet."""
        return (self._timing_events if self._options.timing else self._fence_events).acquire()

    @property
    def threaded(self) -> bool:
        """Whether the completion thread is running (and has not stopped on an error)."""
        return self._thread is not None and not self._stopped and self._thread.is_alive()

    def notify(self) -> None:
        """Wake the completion thread if it waits for a frame: one was submitted (call with the lock held).

        While the thread waits on a fence it needs no wake-up (it finds the new frame when that fence passes),
        so the condition is only notified when the thread is idle.
        """
        if self._idle:
            self._work.notify()

    # -- the handles' owner ------------------------------------------------------------------------------------
    def claim(self, handle: FrameHandle) -> None:
        """Claim ``handle``'s result for the handle: not queued for poll() from now on, and out of the queue.

        Under the lock that retirement holds while it decides where a result goes, so a claim is either
        seen by the retirement or removes what it queued.
        """
        with self._lock:
            handle.claimed = True
            if handle.done():
                self.results.discard(handle.index)

    def wait_for(self, handle: FrameHandle, deadline: float | None) -> bool:
        """Wait until ``handle``'s frame has retired or ``deadline`` passed (for ``FrameHandle.result``)."""
        if not self.threaded and not self.retire_through(handle.index, deadline):
            return False
        remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
        return handle.wait(remaining)

    # -- retirement ------------------------------------------------------------------------------------------
    def _read_timing(self, frame: Retiring, fence: Any) -> None:
        stats, span = frame.stats, frame.span
        if span is None or not self._options.timing:
            return
        stats.gpu_ms = elapsed_ms(span.start, fence)
        stats.gpu_start_ms = elapsed_ms(self._origin, span.start)
        stats.gpu_end_ms = elapsed_ms(self._origin, fence)
        if self._prev_end is not None:
            stats.gap_us = max(0.0, elapsed_ms(self._prev_end, span.start) * 1e3)
        self._timing_events.release(span.start)

    def _recycle_fence(self, fence: Any) -> None:
        # The newest fence stays as the end of "the previous frame" for the next gap; the one before is free.
        if self._options.timing:
            if self._prev_end is not None:
                self._timing_events.release(self._prev_end)
            self._prev_end = fence
        else:
            self._fence_events.release(fence)

    def _retire(self, entry: InFlight[Retiring]) -> tuple[FrameHandle, list[Callable]]:
        begin = time.perf_counter()
        frame = entry.payload
        stats = frame.stats
        stats.host_done = begin
        self._read_timing(frame, entry.fence)
        self._recycle_fence(entry.fence)
        readbacks = frame.retire()
        result = None
        if frame.error is None and not frame.handle.done():  # done: aborted when the completion thread stopped
            result = FrameResult(frame.index, readbacks, stats)
            if self._options.keep_results and not frame.handle.claimed:
                self._queue(result)
        stats.retire_ms = (time.perf_counter() - begin) * 1e3
        self._stats.add(stats, fold=False)  # folded by the caller, outside the scheduler's lock
        return frame.handle, frame.handle.finish(result, frame.error)

    def _retire_batch(self, entries: list[InFlight[Retiring]]) -> tuple[Finished, BaseException | None]:
        """Retire ``entries`` (taken off the ring, in order), under the lock; returns the callbacks and any error.

        The entries are off the ring, so nothing else would finish their handles: if retiring one raises, it
        and every later one are finished with that error (their handles raise ``FrameAbortedError``).
        """
        finished: Finished = []
        for k, entry in enumerate(entries):
            try:
                finished.append(self._retire(entry))
            except BaseException as exc:
                for failed in entries[k:]:
                    handle = failed.payload.handle
                    finished.append((handle, handle.finish(None, exc)))
                return finished, exc
        return finished, None

    def _raise_after(self, finished: Finished, error: BaseException) -> NoReturn:
        """Run the callbacks of a batch whose retirement failed, then raise the error."""
        self.run_callbacks(finished)  # a callback's BaseException propagates instead; the handles are finished
        raise error

    def _queue(self, result: FrameResult) -> None:
        dropped = self.results.put(result)
        if dropped is not None:
            self._stats.dropped_results = self.results.dropped
            if not self._warned_drop:
                self._warned_drop = True
                _log.warning("frame %d's result was dropped: more than %d results wait for poll() "
                             "(counted in stats.dropped_results; poll, use handles, or keep_results=False)",
                             dropped.index, self.results.bound)

    def retire_completed(self) -> Finished:
        """Retire the leading frames whose fences have passed (never waits); returns callbacks to run.

        If retiring a frame raises, the whole batch is finished (see :meth:`_retire_batch`), its callbacks
        run, and the error is raised.
        """
        with self._lock:
            finished, error = self._retire_batch(self._ring.pop_completed())
        self._stats.fold()
        if error is not None:
            self._raise_after(finished, error)
        return finished

    def retire_through(self, index: int, deadline: float | None = None) -> bool:
        """Wait for frame ``index`` (until ``deadline``, a ``perf_counter`` time), retire it and all before it.

        Returns whether it was retired (False: the deadline passed first).
        Callbacks run before returning. The wait holds no lock; if another
        thread retires the frame meanwhile, there is nothing left to retire.
        """
        with self._lock:
            target = self._ring.find(index)
        # Frames complete in order on one stream: once ``index`` has passed, so have all before it.
        if target is not None and deadline is None:
            synchronize(target.fence, f"waiting for frame {index}")
        elif target is not None:
            # Once retired elsewhere, its fence may be recycled for a newer frame: stop looking at it then.
            while not target.retired and not target.fence.done:
                if time.perf_counter() >= deadline:
                    return False
                time.sleep(_POLL_INTERVAL_S)
        with self._lock:
            finished, error = self._retire_batch(self._ring.pop_through(index))  # fences passed: no wait
        self._stats.fold()
        if error is not None:
            self._raise_after(finished, error)
        self.run_callbacks(finished)
        return True

    @staticmethod
    def run_callbacks(finished: Finished) -> None:
        """Call the callbacks of finished frames, in order.

        A callback's ``Exception`` is logged and the others still run. A
        ``BaseException`` (``KeyboardInterrupt``, ``SystemExit``) is raised
        once every other callback has run, so no frame's callbacks are skipped.
        """
        interrupt: BaseException | None = None
        for handle, callbacks in finished:
            for fn in callbacks:
                try:
                    fn(handle)
                except Exception:
                    _log.exception("frame %d completion callback raised", handle.index)
                except BaseException as exc:
                    if interrupt is None:
                        interrupt = exc
        if interrupt is not None:
            raise interrupt

    # -- the thread -----------------------------------------------------------------------------------------
    def _loop(self) -> None:
        """The completion thread; if it stops on an error, it fails the frames left in flight first."""
        try:
            self._serve()
        except BaseException as exc:
            _log.exception("the completion thread stops; the frames still in flight are aborted")
            self._abort_in_flight(exc)

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._closed and self._ring.oldest() is None:
                    self._idle = True
                    try:
                        self._work.wait()
                    finally:
                        self._idle = False
                oldest = self._ring.oldest()
                if oldest is None:
                    return  # closed, and nothing left in flight
            # The GIL is released. A device error raises here (it is sticky: waits elsewhere raise it too).
            synchronize(oldest.fence, f"the completion thread waiting for frame {oldest.index}")
            self.run_callbacks(self.retire_completed())

    def _abort_in_flight(self, cause: BaseException) -> None:
        """Finish every frame still in flight with ``cause`` (the completion thread stops: nothing else would).

        The frames stay on the ring, so their slots are reused only once their fences have passed; whoever
        retires them later (inline, from now on) delivers no result for them.
        """
        with self._lock:
            self._stopped = True
            finished = [(entry.payload.handle, entry.payload.handle.finish(None, cause))
                        for entry in self._ring.in_flight()]
        self.run_callbacks(finished)

    def stop(self) -> None:
        """Stop the completion thread once the ring is empty (call after draining).

        Called from the completion thread itself (``close()`` in a callback), it does not wait for it.
        """
        with self._lock:
            self._closed = True
            self._work.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
