"""Typed callables for the OptiX entry points optixasync uses, and ``check``.

``OptixApi`` binds our prototypes to the addresses returned by the driver's
function table. It adds no policy: callers pass ctypes arguments and get
the raw ``OptixResult`` back; :func:`check` turns a non-zero result into an
:class:`~optixasync.errors.OptixError`.

Blocking calls
--------------
* ``optixModuleCreate``, ``optixProgramGroupCreate`` and ``optixPipelineCreate``
  compile on the CPU (set-up).
* ``optixDeviceContextCreate`` and ``optixDeviceContextDestroy`` synchronize
  the device (set-up and tear-down).
* ``optixLaunch`` and ``optixAccelBuild`` block only when the context has
  validation mode on (OptiX then waits for all work of the context).
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

from ..errors import OptixError
from . import _types as t
from ._loader import DEFAULT_ABI, check_abi, load_library, query_function_table

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
    "optixModuleCreate": (
        _R,
        (c_void_p, POINTER(t.ModuleCompileOptions), POINTER(t.PipelineCompileOptions), c_char_p, c_size_t,
         c_char_p, _SIZE_P, POINTER(c_void_p)),
    ),
    "optixModuleDestroy": (_R, (c_void_p,)),
    "optixProgramGroupCreate": (
        _R,
        (c_void_p, POINTER(t.ProgramGroupDesc), c_uint, POINTER(t.ProgramGroupOptions), c_char_p, _SIZE_P,
         POINTER(c_void_p)),
    ),
    "optixProgramGroupDestroy": (_R, (c_void_p,)),
    "optixProgramGroupGetStackSize": (_R, (c_void_p, POINTER(t.StackSizes), c_void_p)),
    "optixPipelineCreate": (
        _R,
        (c_void_p, POINTER(t.PipelineCompileOptions), POINTER(t.PipelineLinkOptions), POINTER(c_void_p), c_uint,
         c_char_p, _SIZE_P, POINTER(c_void_p)),
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
    "optixSbtRecordPackHeader": (_R, (c_void_p, c_void_p)),
    "optixLaunch": (
        _R, (c_void_p, c_void_p, c_uint64, c_size_t, POINTER(t.ShaderBindingTable), c_uint, c_uint, c_uint)
    ),
}


class OptixApi:
    """The OptiX entry points of one ABI, as ctypes callables.

    Parameters
    ----------
    abi : int
        The OptiX ABI version to request from the driver (87 = OptiX 8.0).
    """

    def __init__(self, abi: int = DEFAULT_ABI) -> None:
        self.abi = abi = check_abi(abi)
        self.library = load_library()
        status, entries = query_function_table(self.library, abi)
        if status != 0:
            name = result_name(status)
            if status == t.OptixResult.ERROR_UNSUPPORTED_ABI_VERSION:
                explanation = (
                    f"the installed NVIDIA driver does not accept OptiX ABI {abi}; "
                    "ABI 87 (OptiX 8.0) needs driver R535 or newer"
                )
            else:
                explanation = f"optixQueryFunctionTable failed for ABI {abi}"
            raise OptixError(status, name, explanation)
        self.addresses = entries
        for name, (restype, argtypes) in _PROTOTYPES.items():
            address = entries.get(name)
            if not address:
                raise OptixError(
                    int(t.OptixResult.ERROR_ENTRY_SYMBOL_NOT_FOUND),
                    "OPTIX_ERROR_ENTRY_SYMBOL_NOT_FOUND",
                    f"the driver's function table for ABI {abi} has no {name}",
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


_api_cache: dict[int, OptixApi] = {}


def get_api(abi: int = DEFAULT_ABI) -> OptixApi:
    """The process-wide :class:`OptixApi` for ``abi`` (loaded on first use)."""
    abi = check_abi(abi)
    api = _api_cache.get(abi)
    if api is None:
        api = _api_cache[abi] = OptixApi(abi)
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
