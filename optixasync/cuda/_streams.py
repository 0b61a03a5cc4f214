"""Streams and events, taken from CuPy rather than wrapped in classes of our own.

Nothing here blocks the host: stream creation, event creation, event record
and stream-wait-event are all asynchronous driver calls.
"""

from __future__ import annotations

from typing import Any, Protocol, Union

__all__ = ["StreamLike", "create_stream", "stream_handle", "record_event", "timing_event", "fence_event"]


class _CudaStreamProtocol(Protocol):
    def __cuda_stream__(self) -> tuple[int, int]: ...


#: Anything optixasync accepts as a stream: a ``cupy.cuda.Stream``, an object
#: with ``__cuda_stream__`` (cuda.core, PyTorch >= 2.x), or a raw ``CUstream`` int.
StreamLike = Union["cupy.cuda.Stream", _CudaStreamProtocol, int]  # noqa: F821


def create_stream() -> Any:
    """A new non-blocking CuPy stream (never synchronizes with the legacy default stream)."""
    import cupy

    return cupy.cuda.Stream(non_blocking=True)


def stream_handle(stream: Any) -> int:
    """The raw ``CUstream`` of any :data:`StreamLike`.

    Raises
    ------
    TypeError
        If ``stream`` is none of the accepted kinds.
    ValueError
        If it is the legacy default stream (handle 0), which would serialize
        the pipeline with every other stream of the device.
    """
    if isinstance(stream, int):
        handle = stream
    elif hasattr(stream, "__cuda_stream__"):
        version, handle = stream.__cuda_stream__()
    elif hasattr(stream, "ptr"):
        handle = stream.ptr
    else:
        raise TypeError(f"expected a CUDA stream (cupy.cuda.Stream, __cuda_stream__ or int), got {type(stream).__name__}")
    if handle in (0, 1):  # 0: legacy default stream, 1: cudaStreamLegacy
        raise ValueError(
            "the legacy default stream serializes all work on the device; pass a non-blocking stream "
            "(optixasync.cuda.create_stream())"
        )
    return int(handle)


def fence_event() -> Any:
    """An event for completion checks only (no timing, cheapest to record and query)."""
    import cupy

    return cupy.cuda.Event(block=False, disable_timing=True)


def timing_event() -> Any:
    """An event that can be used with ``cupy.cuda.get_elapsed_time``."""
    import cupy

    return cupy.cuda.Event(block=False, disable_timing=False)


def record_event(stream: Any, event: Any | None = None) -> Any:
    """Record ``event`` (a new fence event if None) on ``stream`` and return it."""
    event = event if event is not None else fence_event()
    event.record(stream)
    return event
