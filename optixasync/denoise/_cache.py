"""A bounded cache of committed filters, one entry per set of buffers.

OIDN binds image pointers to a filter, and a filter runs only after a
commit. Re-binding pointers and committing on every frame would cost a few
OIDN calls per frame; worse, any commit that changes more than pointers
(size, strides, in-place or not, a guide added) re-initializes the filter,
which allocates. So the denoiser keeps one committed filter set per buffer
set it has seen: with N frame slots, each passing its own buffers, every
frame finds its filters committed and only executes them.

The cache is bounded (``DenoiseOptions.max_filters``). When it is full, a
new buffer set takes over the least recently used entry by re-binding its
images (for the same strides, a pointer-only change: OIDN's commit then does
not re-initialize), instead of releasing filters that in-flight work may
still use. The cache itself knows nothing of OIDN: it calls ``create``,
``rebind`` and ``release``, which makes its logic testable on its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["FilterCache", "CacheStats"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
A = TypeVar("A")


@dataclass
class CacheStats:
    """Counts of what the cache did.

    Attributes
    ----------
    hits : int
        Lookups that found their entry (no OIDN call at all).
    created : int
        Entries made from nothing (new filters, committed).
    rebound : int
        Entries taken over by another buffer set when the cache was full (images re-set, committed).
    released : int
        Entries released (``clear``, or a failed re-bind).
    """

    hits: int = 0
    created: int = 0
    rebound: int = 0
    released: int = 0


class FilterCache(Generic[K, V, A]):
    """Least-recently-used map from a buffer-set key to its committed filters.

    Parameters
    ----------
    capacity : int
        Most entries kept (at least 1).
    create : callable
        ``create(args) -> value``: make and commit the filters of a new entry.
    rebind : callable
        ``rebind(value, args)``: point an existing entry's filters at other buffers, and commit.
    release : callable
        ``release(value)``: free an entry's filters.
    """

    def __init__(
        self,
        capacity: int,
        create: Callable[[A], V],
        rebind: Callable[[V, A], None],
        release: Callable[[V], None],
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._create = create
        self._rebind = rebind
        self._release = release
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._parked: list[V] = []  # entries whose re-bind failed: queued work may still use them
        self.stats = CacheStats()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> Iterator[K]:
        """Keys from least to most recently used."""
        return iter(list(self._entries))

    def get(self, key: K, args: A) -> V:
        """The entry of ``key``, made (or taken over from the least recently used one) if absent.

        If ``create`` or ``rebind`` raises, the cache holds no entry for
        ``key``; an entry whose re-bind failed leaves the cache and is
        released by the next :meth:`clear` (work queued before may still use
        its filters, and only the caller knows when that work has passed).
        """
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return value
        if len(self._entries) < self.capacity:
            value = self._create(args)
            self.stats.created += 1
        else:
            _, value = self._entries.popitem(last=False)
            try:
                self._rebind(value, args)
            except BaseException:
                self._parked.append(value)
                raise
            self.stats.rebound += 1
        self._entries[key] = value
        return value

    def clear(self) -> None:
        """Release every entry, and those whose re-bind failed (the caller makes sure no queued work uses them)."""
        while self._entries or self._parked:
            value = self._entries.popitem(last=False)[1] if self._entries else self._parked.pop()
            self.stats.released += 1
            self._release(value)
