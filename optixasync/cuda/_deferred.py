"""Keep host and device objects alive until the GPU work that uses them has passed.

Blocking calls
--------------
None: completion is checked with ``cudaEventQuery``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ._events import record_event
from ._streams import as_cupy_stream

__all__ = ["DeferredRelease"]


class DeferredRelease:
    """Objects held until an event recorded after their last use completes."""

    def __init__(self) -> None:
        self._pending: deque[tuple[Any, tuple[Any, ...]]] = deque()

    def after(self, stream: Any, *objects: Any) -> Any:
        """Hold ``objects`` until the work enqueued on ``stream`` so far is done; returns the event."""
        event = record_event(as_cupy_stream(stream))
        self._pending.append((event, objects))
        self.collect()
        return event

    def collect(self) -> int:
        """Drop the objects whose event has completed (oldest first); returns how many sets were freed."""
        freed = 0
        while self._pending and self._pending[0][0].done:
            self._pending.popleft()
            freed += 1
        return freed

    def clear(self) -> None:
        """Drop every held object now (the caller knows the device is idle)."""
        self._pending.clear()

    def __len__(self) -> int:
        return len(self._pending)
