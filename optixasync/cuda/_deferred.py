"""Keep host and device objects alive until the GPU work that uses them has passed.

A set of objects is held behind an event: one recorded for it (:meth:`DeferredRelease.after`), or one that
already fences the work (:meth:`DeferredRelease.hold`: a frame's fence). Sets are dropped oldest first, once
their event has passed, whenever the release is used again (:meth:`~DeferredRelease.collect`).

Whoever owned the objects may be gone by then: a frame scheduler, a render pipeline or a frame dropped with
frames in flight, in any order a garbage collection takes them. What their launches read stays here until the
frames' fences have passed. If the release itself is collected with sets still held (a context dropped
without ``close()``), the sets move to a module-wide list that every later collection of any release
empties as their events pass; at interpreter exit they are left to the driver.

Blocking calls
--------------
None: completion is checked with ``cudaEventQuery`` (:func:`~optixasync.cuda.event_done`).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from ._capture import capture_of, refuse
from ._events import event_done, record_event
from ._streams import as_cupy_stream, stream_handle

__all__ = ["DeferredRelease"]

# Sets of releases collected before their events passed: (event, objects), dropped by any later collect().
_orphans: deque[tuple[Any, tuple[Any, ...]]] = deque()
_orphans_lock = threading.RLock()


def _passed(event: Any) -> bool:
    """Whether ``event`` has passed; a query that fails (a sticky device error) counts as not passed."""
    try:
        return event_done(event)
    except Exception:
        return False


def _collect_orphans() -> None:
    freed = []
    with _orphans_lock:
        for _ in range(len(_orphans)):
            entry = _orphans.popleft()
            (freed if _passed(entry[0]) else _orphans).append(entry)
    del freed  # after the lock: a finalizer may run arbitrary code


class DeferredRelease:
    """Objects held until an event recorded after their last use completes."""

    def __init__(self) -> None:
        self._pending: deque[tuple[Any, tuple[Any, ...]]] = deque()
        # Without the lock, two threads collecting at once could both see the same head done, and the second
        # popleft would drop a set whose event has not passed. Re-entrant: a finalizer run by a garbage
        # collection inside the loop may release objects through this same instance.
        self._lock = threading.RLock()

    def after(self, stream: Any, *objects: Any) -> Any:
        """Hold ``objects`` until the work enqueued on ``stream`` so far is done; returns the event.

        Raises
        ------
        GraphCaptureError
            If ``stream`` is being captured into a CUDA graph: the event could not be queried after the
            capture (an upload's staging or a replaced buffer belongs before the capture).
        """
        if capture_of(stream_handle(stream)) is not None:
            refuse("a deferred release on the captured stream (an upload's pinned staging, a replaced buffer): "
                   "upload before the capture, or into a fixed buffer whose contents the graph copies")
        event = record_event(as_cupy_stream(stream))
        self._pending.append((event, objects))
        self.collect()
        return event

    def hold(self, event: Any, *objects: Any) -> None:
        """Hold ``objects`` until ``event`` (already recorded after the work that uses them) has passed.

        A frame's fence: what the frame's GPU work reads lives at least as long as the frame runs, whoever
        drops its owners. The event may be recorded again later (a pooled fence): that only holds longer.
        """
        self._pending.append((event, objects))
        self.collect()

    def collect(self) -> int:
        """Drop the objects whose event has completed (oldest first); returns how many sets were freed.

        Safe to call from several threads at once.

        Raises
        ------
        CudaError
            If an event's query reports an error of the work before it (a sticky error): the objects can
            never be known to be free of the GPU, so they stay held.
        """
        freed = []  # dropped after the lock is released: a finalizer may run arbitrary code
        with self._lock:
            while self._pending and event_done(self._pending[0][0]):
                freed.append(self._pending.popleft())
        if _orphans:
            _collect_orphans()
        return len(freed)

    def clear(self) -> None:
        """Drop every held object now (the caller knows the device is idle)."""
        with self._lock:
            self._pending.clear()

    def __len__(self) -> int:
        return len(self._pending)

    def __del__(self) -> None:
        pending = getattr(self, "_pending", None)
        if not pending:
            return
        try:
            with _orphans_lock:
                _orphans.extend(pending)  # still read by queued work: kept until their events pass
            pending.clear()
        except Exception:  # interpreter shutdown: the module's globals may be gone; the driver reclaims the rest
            pass
