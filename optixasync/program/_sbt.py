"""The shader binding table: raygen, miss, hit group and callables records, packed on the host, uploaded through pinned memory.

Each record is the program group's 32-byte header followed by the user's
data, laid out as a numpy structured dtype (see :func:`record_dtype`).

Blocking calls
--------------
None: the upload is an async copy from pinned staging on the given stream,
and a launch on another stream waits for it on the GPU (its
:class:`~optixasync.cuda.Readiness`), not on the host.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix import types as t
from ..cuda import Readiness, as_cupy_stream
from ._groups import ProgramGroup

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["ShaderBindingTable", "record_dtype"]

_HEADER = t.SBT_RECORD_HEADER_SIZE
_ALIGN = t.SBT_RECORD_ALIGNMENT


def record_dtype(data_dtype: Any = None) -> np.dtype:
    """The dtype of one SBT record: ``header`` (32 bytes) then ``data`` of ``data_dtype``, padded to 16 bytes."""
    fields: list[tuple[str, Any]] = [("header", np.uint8, (_HEADER,))]  # type: ignore[list-item]
    size = _HEADER
    if data_dtype is not None:
        data_dtype = np.dtype(data_dtype)
        fields.append(("data", data_dtype))  # type: ignore[arg-type]
        size += data_dtype.itemsize
    itemsize = (size + _ALIGN - 1) // _ALIGN * _ALIGN
    names = [f[0] for f in fields]
    formats = [(np.uint8, (_HEADER,))] + ([data_dtype] if data_dtype is not None else [])
    return np.dtype({"names": names, "formats": formats, "offsets": [0, _HEADER][: len(names)], "itemsize": itemsize})


def _split(entry: Any, kind: t.ProgramGroupKind, role: str) -> tuple[ProgramGroup, np.ndarray | None]:
    if isinstance(entry, ProgramGroup):
        group, data = entry, None
    elif isinstance(entry, tuple) and len(entry) == 2:
        group, data = entry
    else:
        group, data = None, None
    if not isinstance(group, ProgramGroup):
        raise TypeError(f"{role} record must be a ProgramGroup or (ProgramGroup, data), got {type(entry).__name__}")
    if group.kind != kind:
        raise ValueError(f"{role} record needs a {kind.name.lower()} program group, got {group.kind.name.lower()}")
    if data is not None:
        data = np.asarray(data)
        if data.dtype.hasobject:
            raise TypeError(f"{role} record data must be plain numeric data, got dtype {data.dtype}")
    return group, data


def _struct(base: int, layout: list[tuple[str, list, int, int]]) -> t.ShaderBindingTable:
    """The ``OptixShaderBindingTable`` of records laid out from device address ``base``."""
    s = t.ShaderBindingTable()
    for name, records, stride, offset in layout:
        address = base + offset if records else 0
        if name == "raygen":
            s.raygenRecord = base + offset
        elif name == "miss":
            s.missRecordBase, s.missRecordStrideInBytes, s.missRecordCount = address, stride, len(records)
        elif name == "hitgroup":
            s.hitgroupRecordBase, s.hitgroupRecordStrideInBytes, s.hitgroupRecordCount = address, stride, len(records)
        else:
            s.callablesRecordBase, s.callablesRecordStrideInBytes = address, stride
            s.callablesRecordCount = len(records)
    return s


class ShaderBindingTable:
    """Raygen, miss and hit group records on the device.

    Parameters
    ----------
    ctx : Context
    raygen : ProgramGroup or (ProgramGroup, data)
    miss : sequence of ProgramGroup or (ProgramGroup, data)
        Miss records, indexed by the ``miss_index`` of a trace.
    hitgroup : sequence of ProgramGroup or (ProgramGroup, data)
        Hit group records, indexed by SBT offset and stride.
    callables : sequence of ProgramGroup or (ProgramGroup, data)
        Callables records: record ``k`` is the ``sbt_index`` ``k`` of ``oa::direct_call`` and
        ``oa::continuation_call``.
    stream : stream, optional
        Stream of the upload (default: the context's stream).

    Attributes
    ----------
    ready : Readiness
        The upload's end; launches on other streams are ordered after it.
    nbytes : int
    host_bytes : numpy.ndarray
        The bytes that were uploaded, for inspection and tests.

    Notes
    -----
    ``data`` is a numpy scalar or 0-d/1-element array (any dtype, typically a
    structured one from :func:`optixasync.struct_dtype`); its bytes follow
    the header. All records of one kind share the largest record's stride.
    """

    def __init__(
        self,
        ctx: Context,
        raygen: Any,
        miss: Sequence[Any] = (),
        hitgroup: Sequence[Any] = (),
        callables: Sequence[Any] = (),
        *,
        stream: Any = None,
    ) -> None:
        ctx.require_open()
        self.ctx = ctx
        stream = ctx.stream if stream is None else as_cupy_stream(stream)
        sections = [
            ("raygen", [_split(raygen, t.ProgramGroupKind.RAYGEN, "raygen")]),
            ("miss", [_split(m, t.ProgramGroupKind.MISS, "miss") for m in miss]),
            ("hitgroup", [_split(h, t.ProgramGroupKind.HITGROUP, "hitgroup") for h in hitgroup]),
            ("callables", [_split(c, t.ProgramGroupKind.CALLABLES, "callables") for c in callables]),
        ]
        for role, records in sections:
            for group, _ in records:
                ctx.require_own(group, f"the {role} program group")
        if not sections[1][1]:
            raise ValueError("a shader binding table needs at least one miss record: optixLaunch refuses a table "
                             "without (a raygen that traces no ray can take any miss program of its module)")
        layout = []
        total = 0
        for name, records in sections:
            sizes = [_HEADER + (d.nbytes if d is not None else 0) for _, d in records]
            stride = (max(sizes, default=_HEADER) + _ALIGN - 1) // _ALIGN * _ALIGN
            layout.append((name, records, stride, total))
            total += stride * len(records)
        self.nbytes = total
        host = np.zeros(total, np.uint8)
        for _name, records, stride, offset in layout:
            for i, (group, data) in enumerate(records):
                at = offset + i * stride
                group.pack_header(host.ctypes.data + at)
                if data is not None:
                    host[at + _HEADER : at + _HEADER + data.nbytes] = np.frombuffer(data.tobytes(), np.uint8)
        self.host_bytes = host  # what was uploaded, for inspection and tests
        self.buffer = ctx.memory.empty((total,), np.uint8, stream)
        ctx.upload_into(self.buffer, host, stream)
        self.ready = Readiness()
        self.ready.adopt(ctx.deferred.after(stream), stream)
        self._groups = [g for _, records, _, _ in layout for g, _ in records]  # keep groups alive

        self.struct = _struct(int(self.buffer.data.ptr), layout)
        ctx.track(self)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has released the records (a launch with it is refused)."""
        return self.buffer is None

    def close(self) -> None:
        """Release the device records (freed in stream order once the work queued so far has passed).

        ``struct``, which ``optixLaunch`` reads, is zeroed in place: whoever holds it sees no freed address.
        """
        self.buffer = None
        ctypes.memset(ctypes.addressof(self.struct), 0, ctypes.sizeof(self.struct))
