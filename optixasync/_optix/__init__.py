"""The OptiX driver binding: loader, ABI tables, ctypes types and ``check``.

This layer carries no policy; the rest of optixasync builds on it.
"""

from . import _types as types
from ._api import LOG_SIZE, OptixApi, check, get_api, log_buffer, result_name
from ._loader import ABI_TABLES, DEFAULT_ABI, LIBRARY_ENV

__all__ = [
    "types", "LOG_SIZE", "OptixApi", "check", "get_api", "log_buffer", "result_name", "ABI_TABLES", "DEFAULT_ABI",
    "LIBRARY_ENV",
]
