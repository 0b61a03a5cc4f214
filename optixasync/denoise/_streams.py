"""Streams and events of the 'cuda' denoiser, through :mod:`optixasync.cuda`'s primitives.

The denoiser names the argument in its messages (``stream: ...``); the
rules are those of :func:`optixasync.cuda.stream_handle` (non-blocking
streams only, the legacy default stream refused).

Blocking calls
--------------
None: stream and event creation, event record and stream-wait-event are
asynchronous driver calls.
"""

from __future__ import annotations

from typing import Any

from ..cuda import as_cupy_stream, create_stream, fence_event, record_event, wait_event
from ..cuda import stream_handle as _stream_handle

__all__ = ["stream_handle", "create_stream", "EventPair"]


def stream_handle(stream: Any, name: str = "stream") -> int:
    """The raw ``CUstream`` of any stream-like, with ``name`` leading the message of a refusal.

    Raises
    ------
    TypeError
        If ``stream`` is no stream-like (``stream: expected a CUDA stream ...``).
    ValueError
        If it is the legacy default stream, or a negative handle.
    """
    try:
        return _stream_handle(stream)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


class EventPair:
    """Two events that join the denoiser's stream with a caller's stream, both ways, without a host wait.

    ``before(caller, own)``: work enqueued on ``own`` from now on waits for what
    ``caller`` holds so far. ``after(own, caller)``: work enqueued on
    ``caller`` from now on waits for what ``own`` holds so far. Re-recording an
    event is safe: a wait already enqueued refers to the record it saw.
    """

    def __init__(self) -> None:
        self._events: list[Any] = [fence_event(), fence_event()]

    def _join(self, event: Any, first: int, then: int) -> None:
        record_event(as_cupy_stream(first), event)
        wait_event(then, event)

    def before(self, caller: int, own: int) -> None:
        self._join(self._events[0], caller, own)

    def after(self, own: int, caller: int) -> None:
        self._join(self._events[1], own, caller)

    def destroy(self) -> None:
        self._events.clear()  # CuPy destroys an event when its last reference goes
