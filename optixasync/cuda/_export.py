"""Device arrays handed to other libraries without a copy, ordered by an event on the consumer's stream.

:class:`ExportedArray` wraps one of optixasync's device arrays with the
event recorded after the GPU work that wrote it. A consumer that imports it
through DLPack (``torch.from_dlpack``, ``jax.dlpack.from_dlpack``,
``cupy.from_dlpack``) passes its stream to ``__dlpack__``; that stream is
made to wait for the event (``cudaStreamWaitEvent``: the GPU waits, the host
does not), and it is remembered, so that :meth:`ExportedArray.consumers_done`
can later give the events that optixasync's stream waits for (what the consumers
enqueued there) before it writes the memory again. The capsule itself is made without
CuPy's own stream handling (``stream=-1``: the ordering is done).

``__cuda_array_interface__`` (version 3) names the stream the array was
written on, as the protocol asks: a consumer must order itself after that
stream (Numba records an event there; CuPy's import waits for it on the
host, which is why DLPack is the way to hand these arrays to CuPy).

Blocking calls
--------------
None: ``cudaStreamWaitEvent`` and event records. A consumer's own import
may block (CuPy's of a CAI object synchronizes the stream it names).
"""

from __future__ import annotations

from typing import Any

from ._errors import reraise
from ._events import record_event
from ._interop import _RawStream

__all__ = ["ExportedArray"]

#: ``stream`` values of ``__dlpack__`` for CUDA: None and 1 the legacy default stream, 2 the per-thread one,
#: -1 "do not synchronize".
_LEGACY, _NO_SYNC = 1, -1


def _wait(handle: int, event: Any) -> None:
    """``cudaStreamWaitEvent(handle, event)`` for a consumer's stream, default streams included."""
    import cupy

    try:
        cupy.cuda.runtime.streamWaitEvent(int(handle), event.ptr, 0)
    except Exception as exc:
        reraise(exc, "cudaStreamWaitEvent")


class ExportedArray:
    """A device array for other libraries (see the module documentation).

    Parameters
    ----------
    array : cupy.ndarray
        optixasync's memory (kept alive by this object and by the capsules it makes).
    event : cupy.cuda.Event
        Recorded after the work that wrote ``array``.
    stream : int
        The handle of the stream that wrote it (for ``__cuda_array_interface__``).

    Attributes
    ----------
    consumers : set of int
        The streams that imported it through DLPack.
    """

    def __init__(self, array: Any, event: Any, stream: int) -> None:
        self.array = array
        self.event = event
        self.stream = int(stream)
        self.consumers: set[int] = set()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def dtype(self) -> Any:
        return self.array.dtype

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.array.__dlpack_device__()

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """A DLPack capsule of the array; ``stream`` (the consumer's) waits on the GPU for the array's writes."""
        if copy:
            raise BufferError("an exported output is shared, never copied: pass copy=None or False")
        handle = _LEGACY if stream is None else int(stream)
        if handle != _NO_SYNC:
            _wait(handle, self.event)
            self.consumers.add(handle)
        try:
            return self.array.__dlpack__(stream=_NO_SYNC, max_version=max_version, dl_device=dl_device, copy=copy)
        except (TypeError, ValueError, BufferError, NotImplementedError):
            # a CuPy without the DLPack 1.0 keywords or the "no synchronization" stream: its legacy capsule, which
            # synchronizes nothing either
            return self.array.toDlpack()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        interface = dict(self.array.__cuda_array_interface__)
        interface["version"] = 3
        interface["stream"] = self.stream
        return interface

    def consumers_done(self) -> list[Any]:
        """Events recorded now on each consumer's stream (after what it enqueued so far); forgets the consumers.

        The owner waits for them (``wait_event``, on the GPU) before it writes the array again.
        """
        events = [record_event(_RawStream(handle)) for handle in sorted(self.consumers)]
        self.consumers.clear()
        return events

    def __repr__(self) -> str:
        return f"<optixasync.cuda.ExportedArray {self.array.dtype} {tuple(self.array.shape)}>"
