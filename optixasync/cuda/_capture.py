"""Streams being captured into a CUDA graph, and what the cuda layer's mechanisms do while one is.

A stream being captured (by :class:`~optixasync.cuda.StreamGraph`) records
work instead of running it, and the graph replays that work, with the same
addresses, every time it is launched. So a mechanism that does more than
enqueue work behaves differently while its stream is captured; each asks
:func:`capture_of` (a dictionary lookup, skipped when nothing is captured):

* a **device allocation** on the stream would become a graph memory node,
  and a pinned **download** or **upload** would copy through a buffer leased
  for this one frame: both are refused (:func:`refuse`, a
  :class:`~optixasync.errors.GraphCaptureError`). Allocate before the
  capture (a frame's slot buffers) and copy into fixed destinations;
* a **stream-ordered free** of memory on the stream is not enqueued (it would
  be captured and replayed): the block is kept for the graph's lifetime and
  freed when the graph is (:meth:`Capture.defer_free`); the work captured may
  still read it;
* a **deferred release** or an **event record** on the stream would record
  an event that cannot be queried after the capture: refused;
* a **wait for another stream's event** crosses the capture's boundary:
  refused (the first frame of a shape runs eagerly and makes it; later
  captures find the stream already ordered);
* a **readiness record** (the end of a structure's refit) becomes a hook run
  after every launch of the graph (:meth:`Capture.after_replay`), which
  adopts the event recorded after the launch; a **GPU timer** measures
  nothing inside a capture (the frame's own timing events surround the
  graph's launch).

Objects the captured work reads (a structure's buffers, a frame's
temporaries) are kept with the graph (:meth:`Capture.hold`), and checks
(:meth:`Capture.check`) say before each launch whether the graph still
matches them.

Blocking calls
--------------
None: bookkeeping on the host.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NoReturn

from ..errors import GraphCaptureError

__all__ = ["Capture", "capture_lock", "capture_of", "capturing", "refuse"]

#: Stream handle -> the capture in progress on it. Written by the capturing thread under ``capture_lock``; read
#: by anyone (a free in a finalizer may run in any thread).
_active: dict[int, Capture] = {}

#: Held while a capture starts or ends, and by a stream-ordered free while it decides whether to enqueue: a free
#: racing with the start of a capture is then either enqueued before it or deferred, never captured.
capture_lock = threading.RLock()


class Capture:
    """One capture of a stream in progress: what its graph keeps, checks and does after each launch.

    Attributes
    ----------
    stream : int
        The stream's handle.
    holds : list
        Objects kept alive as long as the graph.
    hooks : list of callable
        ``hook(end_event, stream)`` after every launch; a hook returns None or why the graph must be
        recorded again before its next launch.
    checks : list of callable
        ``check()`` before every launch; None or why the graph no longer matches.
    frees : list of callable
        Stream-ordered frees deferred to the graph's end.
    """

    __slots__ = ("stream", "holds", "hooks", "checks", "frees")

    def __init__(self, stream: int) -> None:
        self.stream = int(stream)
        self.holds: list[Any] = []
        self.hooks: list[Callable[[Any, Any], str | None]] = []
        self.checks: list[Callable[[], str | None]] = []
        self.frees: list[Callable[[], None]] = []

    def hold(self, *objects: Any) -> None:
        """Keep ``objects`` alive as long as the graph (the captured work reads them)."""
        self.holds.extend(objects)

    def after_replay(self, hook: Callable[[Any, Any], str | None]) -> None:
        """Run ``hook(end_event, stream)`` after every launch of the graph (the first one included)."""
        self.hooks.append(hook)

    def check(self, check: Callable[[], str | None]) -> None:
        """Ask ``check()`` before every launch whether the graph still matches (None: it does)."""
        self.checks.append(check)

    def defer_free(self, free: Callable[[], None]) -> None:
        """Run ``free()`` when the graph is destroyed instead of now."""
        self.frees.append(free)


def capture_of(stream: int) -> Capture | None:
    """The capture in progress on the stream with this handle, or None (never a CUDA call)."""
    return _active.get(stream) if _active else None


def capturing() -> bool:
    """Whether any stream of the process is being captured by optixasync."""
    return bool(_active)


def refuse(reason: str) -> NoReturn:
    """Raise :class:`~optixasync.errors.GraphCaptureError`: ``reason`` cannot go into a graph."""
    raise GraphCaptureError(reason)
