"""The newest-frame mailbox between a source's thread and the viewer's encoder pump."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FrameMailbox", "PublishedFrame"]


@dataclass(frozen=True)
class PublishedFrame:
    """A frame as published: the viewer's sequence number, the image (maybe a view of pinned memory), its meta."""

    seq: int
    image: np.ndarray
    meta: Any
    published_at: float


class FrameMailbox:
    """Holds only the newest published frame; ``put`` is O(1) and never waits for the consumer.

    A frame replaced before :meth:`take` fetched it counts in :attr:`dropped`; its reference
    is released at once. :meth:`latest` is the newest frame whether taken or not (what a
    capture saves): the mailbox keeps that one reference until the next ``put`` or :meth:`clear`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frame: PublishedFrame | None = None
        self._waiter: Callable[[], None] | None = None
        self._latest: PublishedFrame | None = None
        self.published = 0
        self.dropped = 0

    def put(self, image: np.ndarray, meta: Any | Mapping[str, Any]) -> None:
        """Store a frame in place of any unfetched one; wake a waiting consumer."""
        now = time.perf_counter()
        with self._lock:
            self.published += 1
            old = self._frame
            if old is not None:
                self.dropped += 1
            self._frame = self._latest = PublishedFrame(self.published, image, meta, now)
            waiter, self._waiter = self._waiter, None
        del old  # release the replaced image outside the lock
        if waiter is not None:
            waiter()

    def take(self, waiter: Callable[[], None] | None = None) -> PublishedFrame | None:
        """Fetch the newest frame, or None; with None, ``waiter`` is called (once) at the next ``put``."""
        with self._lock:
            frame, self._frame = self._frame, None
            if frame is None:
                self._waiter = waiter
            return frame

    def latest(self) -> PublishedFrame | None:
        """The newest published frame (taken or not), or None before the first ``put``; never blocks."""
        return self._latest

    def clear(self) -> None:
        """Drop any stored frame (not counted as dropped), the latest one included, and forget the waiter."""
        with self._lock:
            self._frame, self._waiter, self._latest = None, None, None
