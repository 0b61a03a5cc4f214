"""Streams, taken from CuPy rather than wrapped in a class of our own, and the one way to order them.

optixasync passes streams explicitly everywhere inside the library (never
CuPy's "current stream"), accepts any :data:`StreamLike` at its public entry
points, and converts it once with :func:`as_cupy_stream`.

Blocking calls
--------------
None: stream creation and ``cudaStreamWaitEvent`` are asynchronous driver calls.
"""

from __future__ import annotations

from typing import Any, Protocol, Union

from ._capture import capture_of, refuse
from ._errors import cuda_errors, reraise

__all__ = ["StreamLike", "as_cupy_stream", "create_stream", "join_streams", "stream_handle", "wait_event"]


class _CudaStreamProtocol(Protocol):
    def __cuda_stream__(self) -> tuple[int, int]: ...


#: Anything optixasync accepts as a stream: a ``cupy.cuda.Stream``, an object
#: with ``__cuda_stream__`` (cuda.core, PyTorch, an optixasync ``Frame``), or a raw ``CUstream`` int.
StreamLike = Union["cupy.cuda.Stream", _CudaStreamProtocol, int]  # noqa: F821


def create_stream() -> Any:
    """A new non-blocking CuPy stream (never synchronizes with the legacy default stream)."""
    import cupy

    with cuda_errors("creating a stream"):
        return cupy.cuda.Stream(non_blocking=True)


def stream_handle(stream: Any) -> int:
    """The raw ``CUstream`` of any :data:`StreamLike`.

    Raises
    ------
    TypeError
        If ``stream`` is none of the accepted kinds.
    ValueError
        If it is the legacy default stream (handle 0 or 1), which would
        serialize the pipeline with every other stream of the device, or a
        negative number (no stream has one).
    """
    if type(stream) is int and stream > 1:
        return stream  # a raw handle: the common case inside the library (a frame's copies)
    if isinstance(stream, int) and not isinstance(stream, bool):
        handle = stream
    elif hasattr(stream, "__cuda_stream__"):
        _version, handle = stream.__cuda_stream__()
    elif hasattr(stream, "ptr"):
        handle = stream.ptr
    else:
        raise TypeError(f"expected a CUDA stream (cupy.cuda.Stream, __cuda_stream__ or int), got {type(stream).__name__}")
    if handle in (0, 1):  # 0: legacy default stream, 1: cudaStreamLegacy
        raise ValueError(
            "the legacy default stream serializes all work on the device; pass a non-blocking stream "
            "(optixasync.cuda.create_stream())"
        )
    if handle < 0:
        raise ValueError(f"a CUDA stream handle is an address and cannot be negative, got {handle}")
    return int(handle)


def as_cupy_stream(stream: Any) -> Any:
    """``stream`` as a CuPy stream object, for the CuPy calls that want one (event records, kernel launches).

    A CuPy stream is returned as it is; an object with ``__cuda_stream__``
    whose ``stream`` attribute is the CuPy stream of that handle (an
    optixasync ``Frame``) gives that stream; anything else is wrapped with
    ``cupy.cuda.Stream.from_external`` over its handle (which does not own
    it), keeping a reference to ``stream``, so that the stream object stays
    alive as long as the wrapper (kept by structures and allocations) does:
    a PyTorch or cuda.core stream destroys its stream when collected.
    Raises like :func:`stream_handle`.
    """
    import cupy

    if isinstance(stream, cupy.cuda.Stream):
        stream_handle(stream)  # rejects the legacy default stream
        return stream
    handle = stream_handle(stream)  # for a Frame: marks the start of its GPU work
    # What carries its CuPy stream as ``.stream`` beside ``__cuda_stream__`` (an optixasync Frame) gives that one.
    # (A runtime Protocol's isinstance took 5 to 30 us here, on every kernel a frame launches.)
    inner = stream.stream if hasattr(stream, "stream") else None
    if isinstance(inner, cupy.cuda.Stream) and inner.ptr == handle:
        return inner
    # The stream's own __cuda_stream__ is not called again (a Frame marks its GPU work there); the wrapper keeps
    # the _Handle, which keeps the stream object.
    return cupy.cuda.Stream.from_external(_Handle(handle, stream))


class _Handle:
    """A raw stream handle presented through the CUDA stream protocol (for ``Stream.from_external``).

    ``owner`` is the object the handle came from, kept alive with the wrapper that holds this.
    """

    __slots__ = ("handle", "owner")

    def __init__(self, handle: int, owner: Any = None) -> None:
        self.handle = handle
        self.owner = owner

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self.handle


def wait_event(stream: Any, event: Any) -> None:
    """Make work enqueued on ``stream`` from now on wait (on the GPU, not the host) for ``event``.

    Raises
    ------
    GraphCaptureError
        If ``stream`` is being captured: a wait for work outside the capture crosses its boundary.
    """
    import cupy

    handle = stream_handle(stream)
    if capture_of(handle) is not None:
        refuse("a wait for another stream's work on the captured stream (it crosses the capture's boundary): "
               "order the stream before the capture (the first frame of a shape does)")
    try:
        cupy.cuda.runtime.streamWaitEvent(handle, event.ptr, 0)
    except Exception as exc:
        reraise(exc, "cudaStreamWaitEvent")


def join_streams(waiter: Any, producer: Any, event: Any = None) -> Any:
    """Make work enqueued on ``waiter`` from now on wait (on the GPU) for what ``producer`` holds so far.

    Records ``event`` (a new fence event if None) on ``producer`` and makes ``waiter`` wait for it; both may be
    any stream-like. Re-recording an event later is safe: a wait already enqueued refers to the record it saw.
    Returns the event.
    """
    from ._events import record_event

    event = record_event(as_cupy_stream(producer), event)
    wait_event(waiter, event)
    return event
