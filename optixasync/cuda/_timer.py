"""GPU time of spans of work on a stream, read without waiting.

A :class:`GpuSpan` is a pair of timing events around some work; its
``ms`` is None until the end event has passed, then the elapsed time. A
:class:`GpuTimer` hands out spans from an :class:`~optixasync.cuda.EventPool`
and takes their events back once read, so a render loop creates no events
per frame, and keeps the newest finished time.

Inside a capture of its stream (a CUDA graph), :meth:`GpuTimer.start` gives
a span that measures nothing: the graph's launches are timed around the
graph (a frame's own timing events).

Blocking calls
--------------
None: records and queries only; ``cudaEventElapsedTime`` is asked only of
events that have passed.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ._capture import capture_of
from ._events import EventPool, elapsed_ms, record_event, timing_event

__all__ = ["GpuSpan", "GpuTimer"]


class GpuSpan:
    """Timing events around one span of GPU work: ``start`` recorded, ``end`` once stopped.

    :meth:`begin` and :meth:`stop` make a span with events of its own (one
    measurement kept as long as the span); :class:`GpuTimer` makes spans
    whose pooled events it takes back once read.
    """

    __slots__ = ("start", "end")

    def __init__(self, start: Any) -> None:
        self.start = start
        self.end: Any = None

    @classmethod
    def begin(cls, stream: Any) -> GpuSpan:
        """A span with its own start event, recorded now on ``stream`` (a CuPy stream)."""
        return cls(record_event(stream, timing_event()))

    def stop(self, stream: Any) -> Any:
        """Record the end on ``stream``; returns the end event."""
        self.end = record_event(stream, timing_event())
        return self.end

    @property
    def done(self) -> bool:
        """Whether the span was stopped and its end has passed (a query; never waits)."""
        return self.end is not None and bool(self.end.done)

    @property
    def ms(self) -> float | None:
        """GPU milliseconds of the span, None until its end has passed."""
        return elapsed_ms(self.start, self.end) if self.done else None


class GpuTimer:
    """Spans of GPU work with pooled events, and the time of the newest finished one.

    Attributes
    ----------
    last_ms : float or None
        GPU time of the newest span found finished by :meth:`poll`.
    """

    def __init__(self) -> None:
        self._events = EventPool(timing=True)
        self._pending: deque[GpuSpan] = deque()
        self.last_ms: float | None = None

    def start(self, stream: Any) -> GpuSpan:
        """Record a span's start event on ``stream`` (a CuPy stream); a span that measures nothing inside a capture."""
        if capture_of(int(stream.ptr)) is not None:
            return GpuSpan(None)
        event = self._events.acquire()
        event.record(stream)
        return GpuSpan(event)

    def stop(self, span: GpuSpan, stream: Any) -> Any:
        """Record the span's end on ``stream``; the timer reads it in a later :meth:`poll`. Returns the end event.

        A span started inside a capture records nothing (returns None).
        """
        if span.start is None:
            return None
        span.end = self._events.acquire()
        span.end.record(stream)
        self._pending.append(span)
        self.poll()
        return span.end

    def cancel(self, span: GpuSpan) -> None:
        """Give back the start event of a span that will not be stopped (the work it timed was never enqueued).

        Nothing reads the event again; recording it afresh for a later span is safe.
        """
        if span.start is not None:
            self._events.release(span.start)

    def poll(self) -> float | None:
        """Read every finished span, oldest first, and give its events back to the pool; returns :attr:`last_ms`."""
        while self._pending and self._pending[0].done:
            span = self._pending.popleft()
            self.last_ms = elapsed_ms(span.start, span.end)
            self._events.release(span.start)
            self._events.release(span.end)
        return self.last_ms

    @property
    def pending(self) -> int:
        """Spans stopped and not yet read."""
        return len(self._pending)
