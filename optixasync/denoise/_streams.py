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

from ..cuda import create_stream, fence_event, join_streams
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

    ``before(caller, own)``: work enqueued on ``own`` from now on waits for what ``caller`` holds so far.
    ``after(own, caller)``: the other way round. Each direction re-records its own event
    (:func:`optixasync.cuda.join_streams`), so a join costs no event creation.
    """

    def __init__(self) -> None:
        self._events: list[Any] = [fence_event(), fence_event()]

    def before(self, caller: int, own: int) -> None:
        join_streams(own, caller, self._events[0])

    def after(self, own: int, caller: int) -> None:
        join_streams(caller, own, self._events[1])

    def destroy(self) -> None:
        self._events.clear()  # CuPy destroys an event when its last reference goes
