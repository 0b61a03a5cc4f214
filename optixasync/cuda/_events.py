"""Events: fences for completion checks, timing events, a pool that reuses them, and the one host wait.

Blocking calls
--------------
:func:`synchronize` waits for an event, on purpose, where a caller asked
for a result (``FrameHandle.result``, an offline render, the scheduler's
slot fence). Everything else (create, record, query, elapsed time of events
that have passed) returns at once.
"""

from __future__ import annotations

import functools
from typing import Any

from ._capture import capture_of, refuse
from ._errors import as_cuda_error, cuda_errors, reraise

__all__ = ["EventPool", "elapsed_ms", "event_done", "fence_event", "record_event", "synchronize", "timing_event"]


def fence_event() -> Any:
    """An event for completion checks only (no timing: the cheapest to record and query)."""
    import cupy

    with cuda_errors("creating an event"):
        return cupy.cuda.Event(block=False, disable_timing=True)


def timing_event() -> Any:
    """An event that can be used with :func:`elapsed_ms`."""
    import cupy

    with cuda_errors("creating a timing event"):
        return cupy.cuda.Event(block=False, disable_timing=False)


def record_event(stream: Any, event: Any | None = None) -> Any:
    """Record ``event`` (a new fence event if None) on ``stream`` (a CuPy stream) and return it.

    Raises
    ------
    GraphCaptureError
        If ``stream`` is being captured: an event recorded inside a capture cannot be queried or waited for
        afterwards.
    """
    if capture_of(int(stream.ptr)) is not None:
        refuse("an event record on the captured stream (it could not be queried or waited for after the capture)")
    event = event if event is not None else fence_event()
    try:
        event.record(stream)
    except Exception as exc:
        reraise(exc, "cudaEventRecord")
    return event


def elapsed_ms(start: Any, end: Any) -> float:
    """Milliseconds between two timing events that have both passed (never waits)."""
    try:
        return float(_get_elapsed_time()(start, end))
    except Exception as exc:
        reraise(exc, "cudaEventElapsedTime")


@functools.lru_cache(maxsize=1)
def _get_elapsed_time() -> Any:
    import cupy

    return cupy.cuda.get_elapsed_time


#: ``cudaErrorNotReady``: what ``cudaEventQuery`` returns while the work before the event is still running.
_NOT_READY = 600


def event_done(event: Any) -> bool:
    """Whether ``event`` has passed: a ``cudaEventQuery``, which never waits.

    CuPy's ``Event.done`` compares the query's status with success only, so
    an event behind work that failed (a sticky error such as an illegal
    address) would read as "not yet" for ever; here that status is raised.

    Raises
    ------
    CudaError
        When the query reports anything but success or "not ready".
    """
    runtime = _get_runtime()
    status = int(runtime.eventQuery(event.ptr))
    if status == 0:
        return True
    if status == _NOT_READY:
        return False
    raise as_cuda_error(runtime.CUDARuntimeError(status), "querying an event (cudaEventQuery)")


@functools.lru_cache(maxsize=1)
def _get_runtime() -> Any:
    import cupy

    return cupy.cuda.runtime


def synchronize(event: Any, what: str = "waiting for GPU work") -> None:
    """Block the host until ``event`` has passed (the GIL is released); errors of the work surface here."""
    try:
        event.synchronize()
    except Exception as exc:
        reraise(exc, what)


class EventPool:
    """Events handed out and taken back, so a render loop creates none per frame.

    The caller gives an event back only once it has passed (its ``done`` is
    true) and nothing will read it again; recording it afresh is then safe.
    """

    def __init__(self, timing: bool) -> None:
        self.timing = bool(timing)
        self._free: list[Any] = []
        self.created = 0

    def acquire(self) -> Any:
        """A free event of this pool's kind (a new one when none is free)."""
        if self._free:
            return self._free.pop()
        self.created += 1
        return timing_event() if self.timing else fence_event()

    def release(self, event: Any) -> None:
        """Take back an event that has passed."""
        self._free.append(event)

    def __len__(self) -> int:
        return len(self._free)
