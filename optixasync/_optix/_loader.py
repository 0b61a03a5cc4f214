"""Find ``libnvoptix`` and obtain its function table for an OptiX ABI.

The OptiX host API is not exported by the driver library as symbols: the
library exports one entry point, ``optixQueryFunctionTable``, which fills a
struct of function pointers laid out for a given ABI version. This module
knows, per ABI, the order of the entries in that struct (our own name
table), and nothing else: no policy, no error translation beyond "could not
load".
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

from ..errors import DriverNotFoundError

__all__ = [
    "ABI_TABLES", "ABI_TABLE_SIZES", "ABI_OPTIX_VERSIONS", "DEFAULT_ABI", "LIBRARY_ENV", "check_abi", "library_names",
    "load_library", "probe_abi", "query_function_table",
]

#: Environment variable holding an explicit path to the OptiX driver library.
LIBRARY_ENV = "OPTIXASYNC_OPTIX_LIBRARY"

#: The ABI optixasync speaks by default: OptiX 8.0, accepted by drivers R535 and newer.
DEFAULT_ABI = 87

# Entry order of the function table of each ABI. Adding an ABI is adding a list.
_ABI_87 = (
    "optixGetErrorName",
    "optixGetErrorString",
    "optixDeviceContextCreate",
    "optixDeviceContextDestroy",
    "optixDeviceContextGetProperty",
    "optixDeviceContextSetLogCallback",
    "optixDeviceContextSetCacheEnabled",
    "optixDeviceContextSetCacheLocation",
    "optixDeviceContextSetCacheDatabaseSizes",
    "optixDeviceContextGetCacheEnabled",
    "optixDeviceContextGetCacheLocation",
    "optixDeviceContextGetCacheDatabaseSizes",
    "optixModuleCreate",
    "optixModuleCreateWithTasks",
    "optixModuleGetCompilationState",
    "optixModuleDestroy",
    "optixBuiltinISModuleGet",
    "optixTaskExecute",
    "optixProgramGroupCreate",
    "optixProgramGroupDestroy",
    "optixProgramGroupGetStackSize",
    "optixPipelineCreate",
    "optixPipelineDestroy",
    "optixPipelineSetStackSize",
    "optixAccelComputeMemoryUsage",
    "optixAccelBuild",
    "optixAccelGetRelocationInfo",
    "optixCheckRelocationCompatibility",
    "optixAccelRelocate",
    "optixAccelCompact",
    "optixAccelEmitProperty",
    "optixConvertPointerToTraversableHandle",
    "optixOpacityMicromapArrayComputeMemoryUsage",
    "optixOpacityMicromapArrayBuild",
    "optixOpacityMicromapArrayGetRelocationInfo",
    "optixOpacityMicromapArrayRelocate",
    "optixDisplacementMicromapArrayComputeMemoryUsage",
    "optixDisplacementMicromapArrayBuild",
    "optixSbtRecordPackHeader",
    "optixLaunch",
    "optixDenoiserCreate",
    "optixDenoiserDestroy",
    "optixDenoiserComputeMemoryResources",
    "optixDenoiserSetup",
    "optixDenoiserInvoke",
    "optixDenoiserComputeIntensity",
    "optixDenoiserComputeAverageColor",
    "optixDenoiserCreateWithUserModel",
)

ABI_TABLES: dict[int, tuple[str, ...]] = {87: _ABI_87}

#: Number of entries in the function table of each known ABI (OptiX 8.0, 8.1, 9.0, 9.1). Enough to ask
#: the driver whether it accepts an ABI; calling into one needs its name table in ``ABI_TABLES``.
ABI_TABLE_SIZES: dict[int, int] = {87: 48, 93: 48, 105: 52, 118: 58}
ABI_OPTIX_VERSIONS: dict[int, str] = {87: "8.0", 93: "8.1", 105: "9.0", 118: "9.1"}

# optixQueryFunctionTable(int abiId, unsigned numOptions, int* optionKeys,
#                         const void** optionValues, void* table, size_t sizeOfTable)
_QUERY_PROTOTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t
)


def library_names() -> list[str]:
    """Candidate names or paths of the OptiX driver library, in search order."""
    override = os.environ.get(LIBRARY_ENV)
    if override:
        return [override]
    if sys.platform == "win32":
        return ["nvoptix.dll"]
    return ["libnvoptix.so.1"]


def load_library() -> ctypes.CDLL:
    """Load the OptiX driver library.

    Raises
    ------
    DriverNotFoundError
        If no candidate could be loaded; the message says what to do and what the loader reported.
    """
    from .._driver import no_optix_message

    errors = []
    for name in library_names():
        try:
            return ctypes.CDLL(name)
        except OSError as exc:
            errors.append(str(exc))  # the loader's text already names the file
    raise DriverNotFoundError(no_optix_message("; ".join(errors)))


def check_abi(abi: object) -> int:
    """``abi`` as an int if optixasync can call into it (it has the entry order of its function table).

    Raises
    ------
    ValueError
        On an ABI without a name table here, naming the supported ones.
    """
    if isinstance(abi, bool) or not isinstance(abi, int) or abi not in ABI_TABLES:
        known = ", ".join(f"{a} (OptiX {ABI_OPTIX_VERSIONS[a]})" for a in sorted(ABI_TABLES))
        raise ValueError(f"OptiX ABI {abi!r} is not supported by optixasync; supported: {known}")
    return int(abi)


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
    query = _query_entry(lib)
    table = (ctypes.c_void_p * ABI_TABLE_SIZES[abi])()
    return int(query(abi, 0, None, None, ctypes.cast(table, ctypes.c_void_p), ctypes.sizeof(table)))


def query_function_table(lib: ctypes.CDLL, abi: int) -> tuple[int, dict[str, int]]:
    """Ask the driver for the function table of ``abi``.

    Returns
    -------
    status : int
        The ``OptixResult`` of ``optixQueryFunctionTable`` (0 on success).
    entries : dict
        Entry name to function address; empty unless ``status`` is 0.
    """
    names = ABI_TABLES[check_abi(abi)]
    query = _query_entry(lib)
    table = (ctypes.c_void_p * len(names))()
    status = query(abi, 0, None, None, ctypes.cast(table, ctypes.c_void_p), ctypes.sizeof(table))
    if status != 0:
        return status, {}
    return 0, {name: table[i] or 0 for i, name in enumerate(names)}
