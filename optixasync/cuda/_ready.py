"""Readiness: the end of some GPU work, and which streams are already ordered after it.

An object whose GPU-side state other streams must wait for (a structure's
build, an SBT upload, a scene's set-up) keeps one :class:`Readiness`. Its
producer calls :meth:`Readiness.record` (or :meth:`adopt`) after enqueuing
the work; every consumer calls :meth:`Readiness.order` with its stream
before enqueuing work that reads it. Each stream waits at most once per
recorded event, and the stream that recorded it never waits.

While the producer's stream is being captured into a CUDA graph (a refit
inside a frame graph), :meth:`Readiness.record` and :meth:`Readiness.adopt`
record nothing: every launch of the graph makes the event recorded after it
the new end. :meth:`Readiness.order` refuses a wait on a captured stream
(:class:`~optixasync.errors.GraphCaptureError`).

Blocking calls
--------------
None: event records and ``cudaStreamWaitEvent`` are asynchronous.
"""

from __future__ import annotations

from typing import Any

from ..errors import CudaError
from ._capture import capture_of, refuse
from ._events import event_done, record_event
from ._streams import as_cupy_stream, stream_handle, wait_event

__all__ = ["Readiness"]


class Readiness:
    """The event after an object's last GPU operation, and the streams ordered after it.

    Attributes
    ----------
    event : cupy.cuda.Event or None
        Recorded after the last operation; None before the first.
    """

    __slots__ = ("event", "_ordered")

    def __init__(self) -> None:
        self.event: Any = None
        self._ordered: set[int] = set()

    def record(self, stream: Any) -> Any:
        """Record a new event after the work enqueued on ``stream`` so far; returns it (None inside a capture)."""
        cupy_stream = as_cupy_stream(stream)
        capture = capture_of(int(cupy_stream.ptr))
        if capture is not None:
            capture.after_replay(self._replayed)
            return None
        return self.adopt(record_event(cupy_stream), cupy_stream)

    def adopt(self, event: Any, stream: Any) -> Any:
        """Take ``event``, already recorded on ``stream`` after the work, as the new end; returns it.

        Inside a capture of ``stream`` the end is the event recorded after each launch of the graph instead.
        """
        handle = stream_handle(stream)
        capture = capture_of(handle)
        if capture is not None:
            capture.after_replay(self._replayed)
            return event
        self.event = event
        self._ordered = {handle}
        return event

    def _replayed(self, end: Any, stream: Any) -> None:
        """After a launch of a graph that holds this object's last operation: ``end`` is the new end."""
        self.event = end
        self._ordered = {stream_handle(stream)}

    def order(self, stream: Any) -> int:
        """Make ``stream`` wait (on the GPU) for the last operation, once; returns the stream's handle.

        Raises
        ------
        GraphCaptureError
            If ``stream`` is being captured and still has to wait.
        """
        handle = stream_handle(stream)
        if self.event is not None and handle not in self._ordered:
            if capture_of(handle) is not None:
                refuse("a wait for work of another stream (a structure's build or an upload) on the captured "
                       "stream: the first frame of a shape runs eagerly and orders the stream once")
            wait_event(handle, self.event)
            self._ordered.add(handle)
        return handle

    @property
    def done(self) -> bool:
        """Whether the last operation has finished (an event query; never waits).

        Raises
        ------
        CudaError
            If the work before the event failed (a sticky error), instead of reporting "not yet" for ever.
        """
        return self.event is None or event_done(self.event)

    def __repr__(self) -> str:
        try:
            state = "none" if self.event is None else ("done" if self.done else "pending")
        except CudaError:  # a repr never raises: the error surfaces where the state is used
            state = "failed"
        return f"<Readiness {state}, {len(self._ordered)} stream(s) ordered>"
