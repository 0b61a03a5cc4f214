"""Ask the OptiX driver library for the function table of an ABI, and negotiate the newest it accepts.

The library itself is found and loaded by :func:`optixasync._driver.load_optix_library`
(the one place that looks for it); the slot order of each ABI's table is in
:mod:`optixasync._optix._abi`. This module only talks to the library's one
exported entry point, ``optixQueryFunctionTable``. No policy beyond the
negotiation order, no error translation beyond "could not load".
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable

from ..errors import DriverNotFoundError
from ._abi import ABI_TABLES, SUPPORTED_ABIS, check_abi

__all__ = ["NegotiatedTable", "negotiate_abi", "probe_abi", "query_function_table"]

# optixQueryFunctionTable(int abiId, unsigned numOptions, int* optionKeys,
#                         const void** optionValues, void* table, size_t sizeOfTable)
_QUERY_PROTOTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t
)


def _query_entry(lib: ctypes.CDLL) -> Callable[..., int]:
    """The library's ``optixQueryFunctionTable``.

    Raises
    ------
    DriverNotFoundError
        If the library has no such entry point (not the OptiX driver library).
    """
    try:
        return _QUERY_PROTOTYPE(("optixQueryFunctionTable", lib))
    except AttributeError as exc:
        raise DriverNotFoundError(f"{lib._name} has no optixQueryFunctionTable entry point: {exc}") from None


def probe_abi(lib: ctypes.CDLL, abi: int) -> int:
    """The ``OptixResult`` the driver gives for a function table request of ``abi`` (0: accepted).

    Raises
    ------
    DriverNotFoundError
        If ``lib`` has no ``optixQueryFunctionTable`` entry point.
    """
    return query_function_table(lib, abi)[0]


def query_function_table(lib: ctypes.CDLL, abi: int) -> tuple[int, dict[str, int]]:
    """Ask the driver for the function table of ``abi``.

    Returns
    -------
    status : int
        The ``OptixResult`` of ``optixQueryFunctionTable`` (0 on success).
    entries : dict
        Slot name to function address; empty unless ``status`` is 0.
    """
    names = ABI_TABLES[check_abi(abi)]
    query = _query_entry(lib)
    table = (ctypes.c_void_p * len(names))()
    status = int(query(abi, 0, None, None, ctypes.cast(table, ctypes.c_void_p), ctypes.sizeof(table)))
    if status != 0:
        return status, {}
    return 0, {name: table[i] or 0 for i, name in enumerate(names)}


class NegotiatedTable(tuple):
    """``(abi, entries, refused)``: the ABI chosen, its slot addresses, and ``{abi: status}`` of those refused."""

    __slots__ = ()

    @property
    def abi(self) -> int | None:
        return self[0]

    @property
    def entries(self) -> dict[str, int]:
        return self[1]

    @property
    def refused(self) -> dict[int, int]:
        return self[2]


def negotiate_abi(lib: ctypes.CDLL, candidates: Iterable[int] = SUPPORTED_ABIS) -> NegotiatedTable:
    """The first of ``candidates`` (newest first by default) whose table the driver gives.

    A refusal (``OPTIX_ERROR_UNSUPPORTED_ABI_VERSION`` from a driver older than the ABI, or any other status)
    moves on to the next candidate silently; the statuses are kept in ``refused``. ``abi`` is None when the
    driver refused every candidate.

    Raises
    ------
    DriverNotFoundError
        If ``lib`` has no ``optixQueryFunctionTable`` entry point.
    """
    refused: dict[int, int] = {}
    for abi in candidates:
        status, entries = query_function_table(lib, abi)
        if status == 0:
            return NegotiatedTable((abi, entries, refused))
        refused[abi] = status
    return NegotiatedTable((None, {}, refused))
