"""Typed callables for the OptiX entry points optixasync uses, and ``check``.

``OptixApi`` binds our prototypes to the addresses returned by the driver's
function table of one ABI: a pinned one, or the newest the driver accepts
(:data:`~optixasync._optix._abi.NEWEST`). It adds no policy: callers pass
ctypes arguments and get the raw ``OptixResult`` back; :func:`check` turns a
non-zero result into an :class:`~optixasync.errors.OptixError`. The entry
points optixasync calls have the same signature in every ABI it speaks; the
option structs whose layout changed are passed as ``void*`` (the caller
builds the ABI's own, :func:`~optixasync._optix._layouts.structs_for`).

Blocking calls
--------------
* ``optixModuleCreate``, ``optixTaskExecute``, ``optixBuiltinISModuleGet``,
  ``optixProgramGroupCreate`` and ``optixPipelineCreate`` compile on the CPU
  (set-up); ``optixModuleCreateWithTasks`` returns at once (the tasks compile).
* ``optixDeviceContextCreate`` and ``optixDeviceContextDestroy`` synchronize
  the device (set-up and tear-down).
* ``optixLaunch`` and ``optixAccelBuild`` block only when the context has
  validation mode on (OptiX then waits for all work of the context).
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

from .._driver import load_optix_library
from ..errors import OptixError
from . import _types as t
from ._abi import DEFAULT_ABI, NEWEST, SUPPORTED_ABIS, abi_name, check_abi_request
from ._layouts import AbiStructs, structs_for
from ._loader import negotiate_abi, query_function_table

__all__ = ["LOG_SIZE", "OptixApi", "check", "get_api", "log_buffer", "result_name"]

_R = c_int  # OptixResult

#: Bytes of the log buffer handed to the compile and link calls (OptiX truncates longer logs).
LOG_SIZE = 8192


def log_buffer() -> tuple[ctypes.Array, ctypes.c_size_t]:
    """A log buffer and its size variable, for the OptiX calls that write a log."""
    return ctypes.create_string_buffer(LOG_SIZE), ctypes.c_size_t(LOG_SIZE)


_SIZE_P = POINTER(c_size_t)

# name -> (restype, argtypes). Our own prototypes, written from the ABI.
_PROTOTYPES: dict[str, tuple[object, tuple[object, ...]]] = {
    "optixGetErrorName": (c_char_p, (c_int,)),
    "optixGetErrorString": (c_char_p, (c_int,)),
    "optixDeviceContextCreate": (_R, (c_void_p, POINTER(t.DeviceContextOptions), POINTER(c_void_p))),
    "optixDeviceContextDestroy": (_R, (c_void_p,)),
    "optixDeviceContextGetProperty": (_R, (c_void_p, c_int, c_void_p, c_size_t)),
    "optixDeviceContextSetCacheEnabled": (_R, (c_void_p, c_int)),
    "optixDeviceContextSetCacheLocation": (_R, (c_void_p, c_char_p)),
    "optixDeviceContextGetCacheEnabled": (_R, (c_void_p, POINTER(c_int))),
    # (context, module options*, pipeline options*, input, size, log, log size*, module*)
    "optixModuleCreate": (
        _R, (c_void_p, c_void_p, c_void_p, c_char_p, c_size_t, c_char_p, _SIZE_P, POINTER(c_void_p)),
    ),
    # ... and the first task*
    "optixModuleCreateWithTasks": (
        _R,
        (c_void_p, c_void_p, c_void_p, c_char_p, c_size_t, c_char_p, _SIZE_P, POINTER(c_void_p), POINTER(c_void_p)),
    ),
    "optixModuleGetCompilationState": (_R, (c_void_p, POINTER(c_int))),
    "optixModuleDestroy": (_R, (c_void_p,)),
    # (context, module options*, pipeline options*, builtin IS options*, module*)
    "optixBuiltinISModuleGet": (
        _R, (c_void_p, c_void_p, c_void_p, POINTER(t.BuiltinISOptions), POINTER(c_void_p)),
    ),
    # (task, additional tasks*, max additional, created*)
    "optixTaskExecute": (_R, (c_void_p, POINTER(c_void_p), c_uint, POINTER(c_uint))),
    "optixProgramGroupCreate": (
        _R,
        (c_void_p, POINTER(t.ProgramGroupDesc), c_uint, POINTER(t.ProgramGroupOptions), c_char_p, _SIZE_P,
         POINTER(c_void_p)),
    ),
    "optixProgramGroupDestroy": (_R, (c_void_p,)),
    "optixProgramGroupGetStackSize": (_R, (c_void_p, POINTER(t.StackSizes), c_void_p)),
    # (context, pipeline options*, link options*, groups, count, log, log size*, pipeline*)
    "optixPipelineCreate": (
        _R, (c_void_p, c_void_p, c_void_p, POINTER(c_void_p), c_uint, c_char_p, _SIZE_P, POINTER(c_void_p)),
    ),
    "optixPipelineDestroy": (_R, (c_void_p,)),
    "optixPipelineSetStackSize": (_R, (c_void_p, c_uint, c_uint, c_uint, c_uint)),
    "optixAccelComputeMemoryUsage": (
        _R, (c_void_p, POINTER(t.AccelBuildOptions), POINTER(t.BuildInput), c_uint, POINTER(t.AccelBufferSizes))
    ),
    "optixAccelBuild": (
        _R,
        (c_void_p, c_void_p, POINTER(t.AccelBuildOptions), POINTER(t.BuildInput), c_uint, c_uint64, c_size_t,
         c_uint64, c_size_t, POINTER(c_uint64), POINTER(t.AccelEmitDesc), c_uint),
    ),
    "optixAccelCompact": (_R, (c_void_p, c_void_p, c_uint64, c_uint64, c_size_t, POINTER(c_uint64))),
    "optixAccelEmitProperty": (_R, (c_void_p, c_void_p, c_uint64, POINTER(t.AccelEmitDesc))),
    # (context, device pointer, traversable type, handle*)
    "optixConvertPointerToTraversableHandle": (_R, (c_void_p, c_uint64, c_int, POINTER(c_uint64))),
    "optixSbtRecordPackHeader": (_R, (c_void_p, c_void_p)),
    "optixLaunch": (
        _R, (c_void_p, c_void_p, c_uint64, c_size_t, POINTER(t.ShaderBindingTable), c_uint, c_uint, c_uint)
    ),
}


def _refused_message(lib: ctypes.CDLL, abi: int, status: int) -> str:
    """Why a pinned ABI is refused, naming the ABIs this driver does accept (each asked once)."""
    if status != t.OptixResult.ERROR_UNSUPPORTED_ABI_VERSION:
        return f"optixQueryFunctionTable failed for ABI {abi_name(abi)}"
    accepted = [abi_name(a) for a in sorted(SUPPORTED_ABIS) if a != abi and query_function_table(lib, a)[0] == 0]
    if not accepted:
        return (f"the installed NVIDIA driver does not accept OptiX ABI {abi_name(abi)}, nor any other that "
                "optixasync speaks; ABI 87 (OptiX 8.0) needs driver R535 or newer")
    return (f"the installed NVIDIA driver does not accept OptiX ABI {abi_name(abi)}; it accepts "
            f"{', '.join(accepted)}: pin one of those, pass abi={NEWEST!r}, or install a newer driver")


class OptixApi:
    """The OptiX entry points of one ABI, as ctypes callables.

    Parameters
    ----------
    abi : int or "newest"
        The OptiX ABI to request from the driver (87 = OptiX 8.0), or ``"newest"``: the newest one the
        driver accepts, trying 118, 105, 93, 87 in turn (a refusal falls back silently).

    Attributes
    ----------
    abi : int
        The ABI of the table in use.
    requested : int or str
        As given.
    refused : dict
        ``{abi: OptixResult}`` of the ABIs the negotiation tried and the driver refused.
    structs : AbiStructs
        The ABI's own declarations of the structs whose layout changed between ABIs.

    Raises
    ------
    ValueError
        On an ABI optixasync does not speak (before the library is loaded).
    DriverNotFoundError
        When the OptiX library cannot be loaded.
    OptixError
        When the driver refuses a pinned ABI (the message names those it accepts), or every ABI.
    """

    def __init__(self, abi: int | str = DEFAULT_ABI) -> None:
        self.requested = request = check_abi_request(abi)
        self.library = load_optix_library()
        self.refused: dict[int, int] = {}
        if request == NEWEST:
            chosen, entries, self.refused = negotiate_abi(self.library)
            if chosen is None:
                status = self.refused[min(self.refused)]
                raise OptixError(status, result_name(status), _refused_message(self.library, min(self.refused),
                                                                                 status))
        else:
            chosen = int(request)
            status, entries = query_function_table(self.library, chosen)
            if status != 0:
                raise OptixError(status, result_name(status), _refused_message(self.library, chosen, status))
        self.abi: int = chosen
        self.structs: AbiStructs = structs_for(chosen)
        self.addresses = entries
        for name, (restype, argtypes) in _PROTOTYPES.items():
            address = entries.get(name)
            if not address:
                raise OptixError(
                    int(t.OptixResult.ERROR_ENTRY_SYMBOL_NOT_FOUND),
                    "OPTIX_ERROR_ENTRY_SYMBOL_NOT_FOUND",
                    f"the driver's function table for ABI {chosen} has no {name}",
                )
            setattr(self, name, ctypes.CFUNCTYPE(restype, *argtypes)(address))

    def error_name(self, status: int) -> str:
        raw = self.optixGetErrorName(status)  # type: ignore[attr-defined]
        return raw.decode() if raw else result_name(status)

    def error_string(self, status: int) -> str:
        raw = self.optixGetErrorString(status)  # type: ignore[attr-defined]
        return raw.decode() if raw else ""


def result_name(status: int) -> str:
    """Symbolic name of an ``OptixResult`` without needing the driver."""
    try:
        return "OPTIX_" + t.OptixResult(status).name
    except ValueError:
        return f"OPTIX_RESULT_{status}"


_api_cache: dict[int | str, OptixApi] = {}


def get_api(abi: int | str = DEFAULT_ABI) -> OptixApi:
    """The process-wide :class:`OptixApi` for the request ``abi`` (an ABI or ``"newest"``; loaded on first use)."""
    request = check_abi_request(abi)
    api = _api_cache.get(request)
    if api is None:
        api = _api_cache[request] = OptixApi(request)
    return api


def check(status: int, what: str, log: bytes | str = b"", api: OptixApi | None = None) -> None:
    """Raise :class:`OptixError` if ``status`` is not ``OPTIX_SUCCESS``.

    Parameters
    ----------
    status : int
        Return value of an OptiX call.
    what : str
        What optixasync was doing, prefixed to OptiX's message.
    log : bytes or str
        The log buffer the call filled, if any.
    api : OptixApi, optional
        Used to ask the driver for its own error name and message.
    """
    if status == 0:
        return
    if isinstance(log, bytes):
        log = log.split(b"\0", 1)[0].decode(errors="replace")
    name = api.error_name(status) if api is not None else result_name(status)
    message = api.error_string(status) if api is not None else ""
    explanation = f"{what} failed" + (f" ({message})" if message else "")
    raise OptixError(status, name, explanation, log)
