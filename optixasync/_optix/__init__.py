"""The OptiX driver binding: loader, ABI tables, ctypes types and ``check``.

This layer carries no policy; the rest of optixasync builds on it.
"""

from . import _types as types
from ._api import OptixApi, check, get_api, result_name
from ._loader import ABI_TABLES, DEFAULT_ABI, LIBRARY_ENV

__all__ = ["types", "OptixApi", "check", "get_api", "result_name", "ABI_TABLES", "DEFAULT_ABI", "LIBRARY_ENV"]
