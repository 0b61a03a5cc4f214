"""The OptiX launches queued on one device context, bounded: a designed wait instead of one inside ``optixLaunch``.

Public evidence, not yet measured by optixasync: OptiX keeps a ring of launch resources per device context,
records an event for each launch on the launch's stream, and a launch that finds the ring wrapped waits on the
host (``cuEventSynchronize``) for the event of the ring's oldest slice. That wait is inside ``optixLaunch``:
the caller cannot see it coming, count it or say why it happened (on an H100 with driver R580, 150 host stalls
in 50 steady-state frames at 2 frames in flight, ``cuEventSynchronize`` inside ``optixLaunch``;
``benchmarks/bench_launch_wait.py`` measures the ring's depth).

:class:`LaunchQueue` mirrors that ring on the caller's side. Every :class:`~optixasync.Context` has one
(``ctx.launch_queue``), shared by every pipeline and scheduler of the context. With a limit ``L``, each launch
records a fence event after itself, and a launch that would find ``L`` launches of the context queued (not yet
passed by their events) first waits for the oldest of them (:meth:`LaunchQueue.make_room`): a designed wait,
counted, with its cause, that syncwatch reports as the designed wait ``optix queue``. With ``L`` at most the
ring's depth, the slice OptiX reuses belongs to a launch that has passed, so OptiX has nothing to wait for.

The limit is off (None) by default: no event, no query, nothing changes. It is turned on by

* ``OPTIXASYNC_OPTIX_QUEUE_LIMIT=N`` in the environment: every context created afterwards, every launch;
* ``SchedulerOptions(optix_queue_limit=N)``: while that scheduler is open, on its context;
* :meth:`LaunchQueue.request` directly.

The smallest limit asked for applies to the whole context.

Blocking calls
--------------
:meth:`LaunchQueue.make_room` waits on the oldest queued launch's event (``cudaEventSynchronize``, the GIL
released) when the context's queue is full: the designed wait. Everything else is an event record or an event
query, and the limit's bookkeeping on the host.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from .. import _config
from ._errors import reraise
from ._events import EventPool, _get_runtime, event_done, synchronize

__all__ = ["LaunchQueue", "QueueWait", "OWN_LAUNCH", "OTHER_LAUNCH"]

#: The cause of a queue wait for a launch of the waiting owner itself (a scheduler's own earlier frame).
OWN_LAUNCH = "optix queue (own launch)"
#: The cause of a queue wait for a launch of another owner on the same context (another scheduler, a direct launch).
OTHER_LAUNCH = "optix queue (another launcher's)"

_clock = time.perf_counter


@dataclass(frozen=True)
class QueueWait:
    """One designed wait of a :class:`LaunchQueue`.

    Attributes
    ----------
    cause : str
        :data:`OWN_LAUNCH` or :data:`OTHER_LAUNCH`.
    launch : int
        The number (0, 1, ...) of the launch waited for, among the context's counted launches.
    limit : int
        The limit in force.
    ms : float
        Host time spent waiting.
    """

    cause: str
    launch: int
    limit: int
    ms: float


class _Entry:
    __slots__ = ("number", "event", "owner")

    def __init__(self, number: int, event: Any, owner: Any) -> None:
        self.number = number
        self.event = event
        self.owner = owner


def _check_limit(limit: Any, what: str) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"{what} must be an int >= 1 (launches queued per OptiX context) or None, got {limit!r}")
    return int(limit)


class LaunchQueue:
    """The launches of one OptiX device context not yet passed by their events, bounded by a limit.

    Parameters
    ----------
    limit : int, optional
        The context's own limit (default: ``OPTIXASYNC_OPTIX_QUEUE_LIMIT``, else None: off).

    Attributes
    ----------
    launches : int
        Launches counted (recorded while a limit was on).
    waits : int
        Designed waits made (:meth:`make_room` that had to wait).
    wait_ms : float
        Host time of those waits.
    """

    def __init__(self, limit: int | None = None) -> None:
        if limit is None:
            limit = _config.optix_queue_limit()
        self._base = None if limit is None else _check_limit(limit, "the launch queue's limit")
        self._requests: dict[int, int] = {}
        self._pending: deque[_Entry] = deque()
        self._events = EventPool(timing=False)
        self._lock = threading.Lock()
        self.limit: int | None = self._base
        self.launches = 0
        self.waits = 0
        self.wait_ms = 0.0

    # -- the limit ------------------------------------------------------------------------------------------------
    def request(self, owner: Any, limit: int) -> None:
        """Ask for at most ``limit`` queued launches on this context while ``owner`` has not withdrawn."""
        limit = _check_limit(limit, "optix_queue_limit")
        with self._lock:
            self._requests[id(owner)] = limit
            self._update()

    def withdraw(self, owner: Any) -> None:
        """``owner`` no longer asks for a limit (idempotent)."""
        with self._lock:
            self._requests.pop(id(owner), None)
            self._update()

    def _update(self) -> None:
        limits = list(self._requests.values()) + ([] if self._base is None else [self._base])
        self.limit = min(limits) if limits else None

    # -- launches -------------------------------------------------------------------------------------------------
    @property
    def queued(self) -> int:
        """Counted launches whose events have not passed, oldest first up to the first that has not (queries)."""
        with self._lock:
            self._drop_passed()
            return len(self._pending)

    def _drop_passed(self) -> None:
        pending = self._pending
        while pending and event_done(pending[0].event):
            self._events.release(pending.popleft().event)

    def make_room(self, owner: Any = None) -> QueueWait | None:
        """Before a launch: while ``limit`` launches are queued, wait for the oldest one's event (the designed wait).

        Returns the wait (summed, when several oldest launches were waited for because the limit was
        lowered), or None when there was room. Never waits with the limit off.
        """
        limit = self.limit
        if limit is None or len(self._pending) < limit:
            return None  # the common case: no lock, no query
        return self._wait_for_room(limit, owner)

    def _wait_for_room(self, limit: int, owner: Any) -> QueueWait | None:
        waited_ms, first = 0.0, None
        while True:
            with self._lock:
                self._drop_passed()
                if len(self._pending) < limit:
                    break
                oldest = self._pending[0]
            if first is None:
                first = oldest
            start = _clock()
            synchronize(oldest.event, f"waiting for launch {oldest.number} of the OptiX context (queue limit {limit})")
            waited_ms += (_clock() - start) * 1e3
            with self._lock:
                if self._pending and self._pending[0] is oldest:
                    self._events.release(self._pending.popleft().event)
        if first is None:
            return None
        cause = OWN_LAUNCH if owner is not None and first.owner is owner else OTHER_LAUNCH
        with self._lock:
            self.waits += 1
            self.wait_ms += waited_ms
        return QueueWait(cause, first.number, limit, waited_ms)

    def record(self, stream: int, owner: Any = None) -> None:
        """After a launch on ``stream`` (a raw handle): count it, behind an event recorded there (limit on only)."""
        if self.limit is None:
            return
        with self._lock:  # the record inside: an entry is never seen before its event is recorded
            event = self._events.acquire()
            _record_raw(event, stream)
            self._pending.append(_Entry(self.launches, event, owner))
            self.launches += 1


def _record_raw(event: Any, stream: int) -> None:
    """``cudaEventRecord(event, stream)`` on a raw stream handle."""
    try:
        _get_runtime().eventRecord(event.ptr, stream)
    except Exception as exc:
        reraise(exc, "cudaEventRecord")
