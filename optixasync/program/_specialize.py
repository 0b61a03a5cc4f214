"""Module specialization: launch-parameter values bound at compile time, and payload types.

A bound value tells OptiX the value some bytes of the launch parameters will
always have when a module's programs run, so it folds them into the code
(a sample count, a feature switch): the launch must then carry those bytes
unchanged, which OptiX does not check. Payload types give each trace a typed
payload with per-register read/write semantics, so OptiX keeps only the
registers each program needs live. Both exist in every ABI optixasync speaks.

Blocking calls
--------------
None: host-side values only.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._optix import types as t
from ..validation import as_int

__all__ = ["BoundValue", "PayloadType", "bind_params", "pack_bound_values", "pack_payload_types"]


@dataclass(frozen=True)
class BoundValue:
    """Bytes of the launch parameters whose value is fixed at compile time.

    Attributes
    ----------
    offset : int
        Byte offset in the launch-parameter struct.
    value : bytes
        The bytes the launch parameters hold there at every launch.
    annotation : str
        Shown by OptiX in its log ("No annotation" when empty).
    """

    offset: int
    value: bytes
    annotation: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "offset", as_int("BoundValue.offset", self.offset, 0))
        if not isinstance(self.value, (bytes, bytearray)) or not self.value:
            raise TypeError(f"BoundValue.value must be non-empty bytes, got {type(self.value).__name__}")
        object.__setattr__(self, "value", bytes(self.value))
        if not isinstance(self.annotation, str):
            raise TypeError(f"BoundValue.annotation must be a str, got {type(self.annotation).__name__}")

    @property
    def end(self) -> int:
        return self.offset + len(self.value)


def bind_params(params_dtype: Any, values: Mapping[str, Any]) -> tuple[BoundValue, ...]:
    """Bound values for named fields of a launch-parameter layout (an ``optixasync.struct_dtype``).

    >>> import numpy as np
    >>> dtype = np.dtype({"names": ["image", "spp"], "formats": ["<u8", "<u4"], "offsets": [0, 8], "itemsize": 16})
    >>> bind_params(dtype, {"spp": 4})
    (BoundValue(offset=8, value=b'\\x04\\x00\\x00\\x00', annotation='spp'),)

    Raises
    ------
    KeyError
        On a field the layout does not have (naming the ones it has).
    ValueError
        On a value that does not fit the field's type.
    """
    dtype = np.dtype(params_dtype)
    names = dtype.names or ()
    out = []
    for name, value in values.items():
        if name not in names:
            raise KeyError(f"the launch parameters have no field {name!r}; they have: {', '.join(names)}")
        field_dtype, offset = dtype.fields[name][:2]
        packed = np.zeros((), field_dtype)
        try:
            packed[()] = value
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"bound value {name}={value!r} does not fit {field_dtype}: {exc}") from None
        if field_dtype.kind in "iu" and packed != value:
            raise ValueError(f"bound value {name}={value!r} does not fit {field_dtype}")
        out.append(BoundValue(int(offset), packed.tobytes(), name))
    return tuple(out)


@dataclass(frozen=True)
class PayloadType:
    """One payload type: the semantics of each of its 32-bit registers.

    Attributes
    ----------
    semantics : tuple of int
        Per register, a combination of :class:`~optixasync._optix.types.PayloadSemantics` (who reads and
        who writes it: the trace caller, closest hit, miss, any hit, intersection); 1 to 32 registers.
    """

    semantics: tuple[int, ...]

    def __post_init__(self) -> None:
        values = tuple(as_int(f"PayloadType.semantics[{k}]", int(v) if isinstance(v, t.PayloadSemantics) else v,
                              0, 0x3FF) for k, v in enumerate(self.semantics))
        if not 1 <= len(values) <= 32:
            raise ValueError(f"a payload type has 1 to 32 registers, got {len(values)}")
        object.__setattr__(self, "semantics", values)



def pack_bound_values(values: tuple[BoundValue, ...]) -> tuple[Any, list[Any]]:
    """The ``OptixModuleCompileBoundValueEntry`` array of ``values`` and the buffers it points into (keep both).

    Raises
    ------
    ValueError
        If two bound values overlap.
    """
    ordered = sorted(values, key=lambda v: v.offset)
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after.offset < before.end:
            raise ValueError(f"bound values overlap: bytes {before.offset}..{before.end} and "
                             f"{after.offset}..{after.end} of the launch parameters")
    entries = (t.ModuleCompileBoundValueEntry * len(values))()
    keep: list[Any] = [entries]
    for entry, value in zip(entries, values, strict=True):
        buffer = ctypes.create_string_buffer(value.value, len(value.value))
        annotation = value.annotation.encode() or None
        keep += [buffer, annotation]
        entry.pipelineParamOffsetInBytes = value.offset
        entry.sizeInBytes = len(value.value)
        entry.boundValuePtr = ctypes.cast(buffer, ctypes.c_void_p)
        entry.annotation = annotation
    return entries, keep


def pack_payload_types(types: tuple[PayloadType, ...]) -> tuple[Any, list[Any]]:
    """The ``OptixPayloadType`` array of ``types`` and the semantics arrays it points into (keep both)."""
    structs = (t.PayloadType * len(types))()
    keep: list[Any] = [structs]
    for struct, payload in zip(structs, types, strict=True):
        semantics = (ctypes.c_uint * len(payload.semantics))(*payload.semantics)
        keep.append(semantics)
        struct.numPayloadValues = len(payload.semantics)
        struct.payloadSemantics = ctypes.cast(semantics, ctypes.POINTER(ctypes.c_uint))
    return structs, keep
