"""Frame-slot bookkeeping: which frame holds which slot, which frames are in flight.

Pure logic over "fence" objects that have a non-blocking ``done`` property
and a blocking ``synchronize()``, so it is tested on the CPU with fake
fences and used on the GPU with CUDA events.

Blocking calls
--------------
:meth:`FrameRing.pop_through` waits on the fences of the frames it pops
(for ``result()``, ``drain()`` and ``close()``); the scheduler calls it
once those fences have passed, so there it returns at once.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, Protocol, TypeVar

from ..cuda import synchronize

__all__ = ["Fence", "FrameRing", "InFlight"]


class Fence(Protocol):
    @property
    def done(self) -> bool: ...

    def synchronize(self) -> None: ...


T = TypeVar("T")


class InFlight(Generic[T]):
    """A submitted frame: its number, slot, fence and payload (the scheduler's record)."""

    __slots__ = ("index", "slot", "fence", "payload", "retired", "passed")

    def __init__(self, index: int, slot: int, fence: Fence, payload: T) -> None:
        self.index = index
        self.slot = slot
        self.fence = fence
        self.payload = payload
        self.retired = False  # taken off the ring: its fence may be recycled for a newer frame from then on
        self.passed = False  # its fence was seen passed (it stays passed: no need to ask again)

    def done(self) -> bool:
        """Whether the fence has passed (asked of the fence until it has once)."""
        if not self.passed:
            self.passed = self.fence.done
        return self.passed


class FrameRing(Generic[T]):
    """N slots used round-robin by consecutive frames.

    Frame ``k`` uses slot ``k % N``; before it may be recorded, the frame that
    last used that slot (``k - N``) must have passed its fence. Frames
    retire strictly in submission order.
    """

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"frames_in_flight must be at least 1, got {slots}")
        self.slots = slots
        self.next_index = 0
        self._in_flight: deque[InFlight[T]] = deque()
        self._recording: int | None = None

    # -- recording -------------------------------------------------------------
    def slot_holder(self, slot: int) -> InFlight[T] | None:
        """The unretired frame that occupies ``slot``, if any."""
        for entry in self._in_flight:
            if entry.slot == slot:
                return entry
        return None

    def begin(self) -> tuple[int, int, InFlight[T] | None]:
        """Start recording the next frame.

        Returns
        -------
        index, slot, blocker
            ``blocker`` is the in-flight frame that still holds the slot; the
            caller must wait on its fence and retire it before recording.
        """
        if self._recording is not None:
            raise RuntimeError(f"frame {self._recording} is still being recorded; submit or abort it first")
        index = self.next_index
        slot = index % self.slots
        self._recording = index
        return index, slot, self.slot_holder(slot)

    def submit(self, fence: Fence, payload: T) -> InFlight[T]:
        """Finish recording: the frame is in flight behind ``fence``."""
        if self._recording is None:
            raise RuntimeError("submit without begin")
        index = self._recording
        if self.slot_holder(index % self.slots) is not None:
            raise RuntimeError(f"slot {index % self.slots} is still held; retire its frame before submitting")
        entry = InFlight(index, index % self.slots, fence, payload)
        self._in_flight.append(entry)
        self._recording = None
        self.next_index += 1
        return entry

    def cancel(self) -> None:
        """Forget the frame being recorded (nothing was enqueued for it)."""
        self._recording = None

    # -- completion ------------------------------------------------------------
    def pending(self) -> int:
        """Number of submitted frames whose fence has not passed (queries, never waits)."""
        return sum(1 for entry in self._in_flight if not entry.done())

    def find(self, index: int) -> InFlight[T] | None:
        """The unretired frame ``index``, if it is still in flight."""
        return next((entry for entry in self._in_flight if entry.index == index), None)

    def oldest(self) -> InFlight[T] | None:
        return self._in_flight[0] if self._in_flight else None

    def pop_completed(self) -> list[InFlight[T]]:
        """Remove and return, in order, the leading frames whose fences have passed."""
        done = []
        while self._in_flight and self._in_flight[0].done():
            entry = self._in_flight.popleft()
            entry.retired = True
            done.append(entry)
        return done

    def in_flight(self) -> list[InFlight[T]]:
        """The submitted frames not yet removed, oldest first (a new list)."""
        return list(self._in_flight)

    def pop_through(self, index: int) -> list[InFlight[T]]:
        """Wait for the fences of frame ``index`` and every earlier frame, then remove them and return them, in order.

        If a wait raises, nothing is removed: the frames stay in flight for a later retirement.
        """
        through = [entry for entry in self._in_flight if entry.index <= index]
        for entry in through:
            synchronize(entry.fence, f"waiting for frame {entry.index}")
        for entry in through:
            self._in_flight.popleft()
            entry.retired = True
        return through

    def __len__(self) -> int:
        return len(self._in_flight)
