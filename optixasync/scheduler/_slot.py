"""One frame slot's resources, reused by every N-th frame: parameter staging, device buffers, readback destinations.

Readbacks land in pinned buffers that the slot keeps by name
(:class:`Destinations`): the frame's result hands out views of them (no
copy), and when the slot comes round again the same buffer takes the next
frame's copy, unless something still refers to it. Then the buffer goes with
whoever holds it (it returns to the context's pinned pool once the last
view is gone, as a buffer leased per frame would) and the slot takes a new
one: nothing waits and nothing is copied. Whether a buffer is still held is
read from CPython's reference counts of the slot's view and of the array
every derived view points to, so a result, an array taken from it, or a
slice of that all count.

The fixed destinations are what a frame graph copies into (a captured copy
always writes to the same address); the slot's generations
(:attr:`Slot.generation`, :attr:`Destinations.generation`) tell its graph
when a buffer or a destination changed.

Blocking calls
--------------
None: a new destination or buffer comes from the pools (see
:mod:`optixasync.cuda._memory`); nothing here waits for the GPU.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import PinnedBuffer, StagedStruct

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["Destinations", "Slot"]


def _references(view: np.ndarray) -> tuple[int, int]:
    """References to a destination's view and to the array its derived views point to (taken the same way always)."""
    return sys.getrefcount(view), sys.getrefcount(view.base)


class _Destination:
    __slots__ = ("buffer", "view", "shape", "dtype", "baseline")

    def __init__(self, buffer: PinnedBuffer, view: np.ndarray) -> None:
        self.buffer = buffer
        self.view = view
        self.shape = view.shape
        self.dtype = view.dtype
        self.baseline = (0, 0)


class Destinations:
    """The pinned readback destinations of one slot, by name, handed over to their holders when still held.

    Parameters
    ----------
    ctx : Context
        Its pinned pool provides the buffers.

    Attributes
    ----------
    generation : int
        Incremented whenever a destination is made anew (a new name, shape or dtype, or a handover).
    handovers : int
        Destinations given up to a holder because a result or an array still referred to them.
    reason : str
        Why the last destination was made anew.
    """

    def __init__(self, ctx: Context) -> None:
        self._pinned = ctx.pinned
        self._entries: dict[str, _Destination] = {}
        self.generation = 0
        self.handovers = 0
        self.reason = ""

    def get(self, name: str, shape: tuple[int, ...], dtype: np.dtype, allocate: bool = True) -> _Destination | None:
        """The destination ``name`` for an array of ``shape`` and ``dtype``: the slot's own when it fits and is free.

        Returns None when a new one is needed and ``allocate`` is false.
        """
        entry = self._entries.get(name)
        if entry is not None and entry.shape == shape and entry.dtype == dtype:
            if _references(entry.view) == entry.baseline:
                return entry
            if not allocate:
                return None
            self.handovers += 1
            self.reason = f"readback {name!r} still held when its slot came round"
        elif not allocate:
            return None
        else:
            self.reason = f"readback {name!r} is new or changed shape"
        return self._make(name, shape, dtype)

    def _make(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> _Destination:
        entry = self._entries[name] = _Destination(*self._pinned.array(shape, dtype))
        entry.baseline = _references(entry.view)  # no other reference exists yet
        self.generation += 1
        return entry

    def held(self, names: Any) -> str | None:
        """The first of ``names`` whose destination something still refers to, or None."""
        entries = self._entries
        for name in names:
            entry = entries.get(name)
            if entry is not None and _references(entry.view) != entry.baseline:
                return name
        return None

    def hand_over(self, names: Any) -> bool:
        """Give every destination of ``names`` that something still refers to to its holder; whether any was."""
        handed = False
        for name in names:
            entry = self._entries.get(name)
            if entry is not None and _references(entry.view) != entry.baseline:
                self._make(name, entry.shape, entry.dtype)
                self.handovers += 1
                self.reason = f"readback {name!r} still held when its slot came round"
                handed = True
        return handed

    def like(self, other: Destinations, names: Any) -> None:
        """Make destinations of ``names`` shaped as ``other``'s (a new set for the same frame)."""
        for name in names:
            entry = other._entries[name]
            self._make(name, entry.shape, entry.dtype)

    def names(self) -> tuple[str, ...]:
        """The names of the slot's destinations."""
        return tuple(self._entries)

    def views(self, names: Any) -> list[tuple[str, np.ndarray]]:
        """``(name, view)`` of the destinations of ``names``, for a replayed frame's result."""
        entries = self._entries
        return [(name, entries[name].view) for name in names]

    def clear(self) -> None:
        self._entries = {}


class Slot:
    """Resources of one frame slot: parameter staging, persistent device buffers, readback destinations.

    Parameters
    ----------
    ctx : Context
    index : int
    params_dtype : numpy dtype or None
        The launch parameters' layout (None: no parameters).
    stream : cupy.cuda.Stream
        Where the device memory is allocated.

    Attributes
    ----------
    params : StagedStruct or None
    buffers : dict of str to cupy.ndarray
    generation : int
        Incremented whenever a buffer is (re)allocated; ``reallocated`` names the last one.
    destinations : Destinations
    graph : object
        The slot's frame graph, made by the scheduler's graph logic when a frame asks for one.
    """

    def __init__(self, ctx: Context, index: int, params_dtype: np.dtype | None, stream: Any) -> None:
        self.index = index
        self.params: StagedStruct | None = StagedStruct(ctx, params_dtype, stream) if params_dtype is not None else None
        self.buffers: dict[str, Any] = {}
        self.generation = 0
        self.reallocated = ""
        self.destinations = Destinations(ctx)
        self.graph: Any = None

    @property
    def params_view(self) -> np.ndarray | None:
        """The launch parameters in pinned memory (None without a parameter layout)."""
        return self.params.host if self.params is not None else None

    def store(self, name: str, array: Any) -> None:
        """Keep ``array`` as the slot's buffer ``name`` (a new allocation: the slot's generation moves)."""
        self.buffers[name] = array
        self.generation += 1
        self.reallocated = name

    def release(self) -> None:
        """Let go of the slot's device and pinned memory (the scheduler is closing; its frames have completed)."""
        self.buffers = {}
        self.destinations.clear()
        if self.graph is not None:
            self.graph.close()
            self.graph = None
        if self.params is not None:
            self.params.release()
            self.params = None
