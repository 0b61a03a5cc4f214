"""Launch parameters written again: a block filled before for the same inputs gets its sample counts only.

A progressive frame's parameters differ from those its slot's previous frame
wrote in four fields: the first sample's index, the samples per pixel, the
accumulate flag and the inverse of the sample total. Writing a numpy
structured scalar field by field costs about a microsecond per field (the
whole path tracer block, 38 us on the 2-core test machine), which was most
of a frame's host time. So :class:`ParamsRefill` remembers, per parameter
block (a slot's pinned staging), the inputs it was last filled from and the
bytes written then; when the same inputs come again and the block still holds
those bytes (nothing else wrote to it), only the four fields are packed, with
:mod:`struct`, bit for bit what a full fill writes.

The inputs a block was filled from include device buffers (the accumulation, a
frame slot's outputs): those are remembered through weak references, and a
block is forgotten as soon as one of them goes, so the memory keeps no buffer
alive. (It held them: a closed scheduler's slot buffers stayed allocated as
long as the pipeline lived, and a closed pipeline's as long as anyone held it.)

Blocking calls
--------------
None: host memory only.
"""

from __future__ import annotations

import struct
import weakref
from typing import Any

import numpy as np

__all__ = ["COUNT_FIELDS", "ParamsRefill"]

#: The fields a refill writes: what changes between the progressive launches of one block.
COUNT_FIELDS = ("sample_offset", "spp", "accumulate", "inv_total")

#: Most blocks remembered (a scheduler's slots; launches with parameters of their own come and go).
_BLOCKS_KEPT = 64


class _Forget:
    """The weak references' callback of one remembered block: one of its inputs went, forget the block."""

    __slots__ = ("_refill", "_key")

    def __init__(self, refill: ParamsRefill, key: int) -> None:
        self._refill = weakref.ref(refill)  # no cycle: the references hold this callback
        self._key = key

    def __call__(self, _ref: Any) -> None:
        refill = self._refill()
        if refill is not None:
            blocks = refill._blocks
            entry = blocks.get(self._key)
            if entry is not None and entry.forget is self:  # not a later entry of the same block
                blocks.pop(self._key, None)


def _hold(obj: Any, callback: _Forget) -> Any:
    """A weak reference to ``obj`` calling ``callback`` when it goes; ``obj`` itself where it has none (None, a
    tuple such as the camera basis: host objects)."""
    try:
        return weakref.ref(obj, callback)
    except TypeError:
        return obj


class _Filled:
    __slots__ = ("params", "inputs", "forget", "ids", "contents", "view", "written")

    def __init__(self, params: Any, static: tuple, contents: bytes, view: memoryview, forget: _Forget) -> None:
        self.params = params  # held: its id cannot be reused while it is remembered
        # The inputs, weakly where they can be: the entry goes with the first of them to go (``forget``), so while
        # it is remembered, equal ids are the same live objects; and it keeps no device buffer alive.
        self.forget = forget
        self.inputs = tuple(_hold(obj, forget) for obj in static)
        self.ids = tuple(map(id, static))
        self.contents = contents
        self.view = view
        self.written = bytes(view)


def _packers(dtype: np.dtype) -> list[tuple[struct.Struct, int, int, int]]:
    """``(packer, offset, first, end)`` per run of adjacent count fields: one ``pack_into`` writes each run."""
    fields = sorted((dtype.fields[name][1], k, dtype.fields[name][0]) for k, name in enumerate(COUNT_FIELDS))
    runs: list[list] = []
    for offset, k, field in fields:
        if runs and runs[-1][1] == offset and runs[-1][3] == k:
            runs[-1][0] += field.char
            runs[-1][1] += field.itemsize
            runs[-1][3] = k + 1
        else:
            runs.append([field.char, offset + field.itemsize, k, k + 1, offset])
    return [(struct.Struct("<" + chars), start, first, end) for chars, _end, first, end, start in runs]


class ParamsRefill:
    """What each parameter block was last filled from; refills of the same inputs write the sample counts only.

    Parameters
    ----------
    dtype : numpy dtype
        The parameters' layout; it has the :data:`COUNT_FIELDS`.
    """

    def __init__(self, dtype: np.dtype) -> None:
        self._packers = _packers(np.dtype(dtype))
        self._blocks: dict[int, _Filled] = {}

    def counts_only(self, params: Any, static: tuple, contents: bytes, sample_offset: int, spp: int,
                    accumulate: bool) -> bool:
        """Write the sample counts into ``params`` if it was last filled from ``static`` (the same objects) and
        ``contents`` (equal bytes: an input changed in place, such as the scene record's structure handle), and
        holds what was written then; returns whether it did (False: fill it, then :meth:`remember`)."""
        # Written flat: this runs for every progressive frame (a Python statement costs ~0.3 us on a small core).
        entry = self._blocks.get(id(params))
        if entry is None or entry.params is not params or entry.contents != contents \
                or entry.ids != tuple(map(id, static)):
            return False
        view = entry.view
        if bytes(view) != entry.written:
            return False  # something else wrote into the block since
        values = (sample_offset, spp, 1 if accumulate else 0, 1.0 / (sample_offset + spp))
        for packer, offset, first, end in self._packers:
            packer.pack_into(view, offset, *values[first:end])
        entry.written = bytes(view)
        return True

    def remember(self, params: Any, static: tuple, contents: bytes) -> None:
        """``params`` was just filled from ``static`` and ``contents`` (held weakly where they can be: the block is
        forgotten when one of them goes)."""
        if len(self._blocks) >= _BLOCKS_KEPT:
            self._blocks.clear()
        view = memoryview(params.reshape(1).view(np.uint8))
        key = id(params)
        self._blocks[key] = _Filled(params, static, contents, view, _Forget(self, key))

    def clear(self) -> None:
        """Forget every block (the integrator is closing)."""
        self._blocks.clear()
