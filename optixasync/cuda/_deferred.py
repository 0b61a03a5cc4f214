"""Keep host and device objects alive until the GPU work that uses them has passed.

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
        return len(freed)

    def clear(self) -> None:
        """Drop every held object now (the caller knows the device is idle)."""
        with self._lock:
            self._pending.clear()

    def __len__(self) -> int:
        return len(self._pending)
