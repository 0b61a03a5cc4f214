"""What a completed frame hands out: its result (zero-copy readbacks), its handle, and the poll queue.

A frame's readbacks land in pinned buffers leased for that frame from the
context's pinned pool; the :class:`FrameResult` exposes numpy views of them,
so retiring a frame copies nothing. An array stays valid as long as anyone
holds it (the view keeps its buffer alive); :meth:`FrameResult.release`
drops the result's own references so the buffers go back to the pool, and
:meth:`FrameResult.copy` makes pageable copies to keep for longer without
holding pinned memory.

A frame's result is one :class:`FrameResult` object, which its handle
always gives (:meth:`FrameHandle.result`, ``await``, a done callback) and
which :meth:`FrameScheduler.poll` may also return (see the delivery rule
in :mod:`._scheduler`). Both give the same object, so :meth:`FrameResult.release`
by one consumer releases it for the other too.

Blocking calls
--------------
:meth:`FrameHandle.result` waits for its own frame (by design, that is the
call). Nothing else here waits.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import numpy as np

from ..errors import FrameAbortedError
from ._stats import FrameStats

__all__ = ["FrameHandle", "FrameResult", "HandleOwner", "ResultQueue"]


class HandleOwner(Protocol):
    """What a :class:`FrameHandle` asks of the side that retires its frame (the scheduler's ``Completion``)."""

    @property
    def threaded(self) -> bool:
        """Whether a completion thread retires frames (else the waiting caller retires them)."""

    def claim(self, handle: FrameHandle) -> None:
        """Take the handle's result out of the poll queue's way (under the lock retirement holds)."""

    def wait_for(self, handle: FrameHandle, deadline: float | None) -> bool:
        """Wait until the handle's frame has retired, or ``deadline`` (a ``perf_counter`` time) passed."""


class FrameResult:
    """A completed frame: its readbacks and its stats.

    Attributes
    ----------
    index : int
        The frame number.
    stats : FrameStats
    readbacks : dict of str to numpy.ndarray
        Zero-copy views of the frame's pinned readback buffers, by the names
        given to :meth:`Frame.readback` (empty once released).

    Notes
    -----
    ``result["image"]`` is the same as ``result.readbacks["image"]``. Use the
    result as a context manager (``with result: ...``) or call
    :meth:`release` when done, so the pinned buffers return to the pool
    right away; keep data with :meth:`copy`.
    """

    __slots__ = ("index", "stats", "readbacks", "_released")

    def __init__(self, index: int, readbacks: dict[str, np.ndarray], stats: FrameStats) -> None:
        self.index = index
        self.readbacks = readbacks
        self.stats = stats
        self._released = False

    def __getitem__(self, name: str) -> np.ndarray:
        if self._released:
            raise RuntimeError(f"frame {self.index}'s result was released; copy() what you need to keep before that")
        try:
            return self.readbacks[name]
        except KeyError:
            raise KeyError(f"frame {self.index} has no readback {name!r}; it has {sorted(self.readbacks)}") from None

    @property
    def released(self) -> bool:
        """Whether :meth:`release` was called."""
        return self._released

    def copy(self) -> FrameResult:
        """A result with pageable copies of the readbacks, independent of the pinned pool."""
        if self._released:
            raise RuntimeError(f"frame {self.index}'s result was released: nothing left to copy")
        return FrameResult(self.index, {name: view.copy() for name, view in self.readbacks.items()}, self.stats)

    def release(self) -> None:
        """Drop this result's references to its pinned buffers (they return to the pool once no array refers to them)."""
        self._released = True
        self.readbacks = {}

    def __enter__(self) -> FrameResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else f"readbacks={sorted(self.readbacks)}"
        return f"<FrameResult {self.index} {state}>"

    def _repr_png_(self) -> bytes | None:
        """In a notebook, a result with an 8-bit ``image`` readback (H, W, 3 or 4) shows as that picture (RGB)."""
        image = self.readbacks.get("image")
        if image is None or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in (3, 4):
            return None
        import io

        from PIL import Image

        out = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(image[..., :3]), "RGB").save(out, "PNG")
        return out.getvalue()


class FrameHandle:
    """A future for one frame (``frame.handle``).

    The handle always gives its frame's result, the same
    :class:`FrameResult` object each time, whether or not
    :meth:`FrameScheduler.poll` also returned it. Asking for the result
    before the frame completes (:meth:`result`, ``await``,
    :meth:`add_done_callback`) claims it for the handle: the result is then
    not also queued for :meth:`FrameScheduler.poll`; asking after it was
    queued takes it out of the queue, if ``poll()`` has not returned it yet.

    Parameters
    ----------
    index : int
        The frame's number.
    owner : HandleOwner
        What retires the frame (the scheduler's completion side).

    Notes
    -----
    :meth:`set_submitted`, :meth:`finish` and :meth:`wait` are the scheduler's side of the handle (as
    ``concurrent.futures.Future.set_result`` is the executor's); applications use the other methods.
    """

    def __init__(self, index: int, owner: HandleOwner) -> None:
        self.index = index
        self._owner = owner
        self._done = False
        self._event: threading.Event | None = None  # made only when someone waits: most frames are never waited for
        self._result: FrameResult | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[FrameHandle], None]] = []
        self._lock = threading.Lock()
        self.claimed = False  # someone asked through the handle: its result skips the poll queue
        self.submitted = False  # the frame is in flight: its result() may wait from then on

    def done(self) -> bool:
        """Whether the frame has completed and been retired (never blocks)."""
        return self._done

    # -- the scheduler's side ---------------------------------------------------------------------------------
    def set_submitted(self) -> None:
        """The frame was submitted (a wait for its result may begin)."""
        self.submitted = True

    def finish(self, result: FrameResult | None, error: BaseException | None) -> list[Callable]:
        """Complete the handle; returns the callbacks to run. The first outcome stays: finishing again does nothing."""
        with self._lock:
            if self._done:
                return []
            self._result, self._error = result, error
            self._done = True
            callbacks, self._callbacks = self._callbacks, []
            event = self._event
        if event is not None:
            event.set()
        return callbacks

    def wait(self, timeout: float | None) -> bool:
        """Wait until :meth:`finish` was called or ``timeout`` seconds passed; whether it was."""
        with self._lock:
            if self._done:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    # -- the application's side -------------------------------------------------------------------------------
    def _claim(self) -> None:
        if not self.claimed:
            self._owner.claim(self)  # under the scheduler's lock: retirement reads `claimed` under it

    def _require_submitted(self) -> None:
        if not self.submitted and not self._done:
            raise RuntimeError(f"frame {self.index} has not been submitted yet: its result exists only after "
                               "submit() (the end of its `with sched.frame()` block); ask for it after that")

    def result(self, timeout: float | None = None) -> FrameResult:
        """The frame's result, waiting for this frame only (``timeout`` in seconds, in total).

        Raises
        ------
        TimeoutError
            If the frame did not complete within ``timeout`` seconds.
        FrameAbortedError
            If recording the frame raised, the scheduler was closed before
            it was submitted, or the completion thread stopped on an error
            before the frame retired (chained to that error).
        RuntimeError
            If the frame is still being recorded (not submitted yet): it
            cannot complete before that.
        """
        self._require_submitted()
        self._claim()
        if not self._done:
            deadline = None if timeout is None else time.perf_counter() + timeout
            if not self._owner.wait_for(self, deadline):
                raise TimeoutError(f"frame {self.index} did not complete within {timeout} s")
        if self._error is not None:
            raise FrameAbortedError(f"frame {self.index} was aborted: {self._error!r}") from self._error
        assert self._result is not None
        return self._result

    def add_done_callback(self, fn: Callable[[FrameHandle], None]) -> None:
        """Call ``fn(handle)`` when the frame completes, or now (in this thread) if it has.

        The callback runs in the thread that retires the frame: the
        completion thread, or a thread calling ``poll()``, ``drain()``,
        ``close()`` or ``begin_frame()`` (these retire frames too), or
        ``result()`` without the completion thread. So callbacks of
        different frames may run at the same time in two threads, and not
        necessarily in frame order. An exception from ``fn`` is logged and
        does not stop the delivery of other frames.
        """
        self._claim()
        with self._lock:
            if not self._done:
                self._callbacks.append(fn)
                return
        fn(self)

    def __await__(self):
        """``await handle`` gives the :class:`FrameResult` without blocking the event loop."""
        import asyncio

        self._require_submitted()
        self._claim()
        loop = asyncio.get_running_loop()
        if not self._owner.threaded and not self.done():
            return loop.run_in_executor(None, self.result).__await__()
        future = loop.create_future()

        def _set(handle: FrameHandle) -> None:
            if future.done():
                return
            if handle._error is not None:
                error = FrameAbortedError(f"frame {handle.index} was aborted: {handle._error!r}")
                error.__cause__ = handle._error  # as ``raise ... from`` in result()
                future.set_exception(error)
            else:
                future.set_result(handle._result)

        self.add_done_callback(lambda handle: loop.call_soon_threadsafe(_set, handle))
        return future.__await__()

    def __repr__(self) -> str:
        return f"<FrameHandle {self.index} {'done' if self.done() else 'pending'}>"


class ResultQueue:
    """Completed frames waiting for ``poll()``: in order, bounded, with the overflow policy.

    Parameters
    ----------
    bound : int
        Most results held.
    drop_oldest : bool
        True: a result beyond the bound pushes out the oldest (counted in
        :attr:`dropped`). False: nothing is dropped; :attr:`overflowing`
        says the bound is exceeded, for the producer to raise.
    """

    def __init__(self, bound: int, drop_oldest: bool) -> None:
        self.bound = int(bound)
        self.drop_oldest = bool(drop_oldest)
        self._items: OrderedDict[int, FrameResult] = OrderedDict()
        self.dropped = 0
        self.holding = 0  # while positive (drain(), a pipeline's frames()), nothing is dropped and nothing overflows

    def put(self, result: FrameResult) -> FrameResult | None:
        """Queue ``result``; returns the result dropped to make room, if any."""
        self._items[result.index] = result
        if self.drop_oldest and not self.holding and len(self._items) > self.bound:
            self.dropped += 1
            return self._items.popitem(last=False)[1]
        return None

    def discard(self, index: int) -> None:
        """Forget frame ``index``'s result (it was consumed through its handle)."""
        self._items.pop(index, None)

    def take_all(self) -> list[FrameResult]:
        """Every queued result, oldest first, leaving the queue empty."""
        items = list(self._items.values())
        self._items.clear()
        return items

    @property
    def overflowing(self) -> bool:
        return not self.holding and len(self._items) > self.bound

    def __len__(self) -> int:
        return len(self._items)

