"""The OptiX driver binding: ABI tables, function-table negotiation, ctypes types and ``check``.

This layer carries no policy; the rest of optixasync builds on it. The OptiX
library itself is found by :func:`optixasync._driver.load_optix_library`.
"""

from . import _types as types
from ._abi import ABI_OPTIX_VERSIONS, ABI_TABLES, DEFAULT_ABI, NEWEST, SUPPORTED_ABIS, abi_name, check_abi
from ._api import LOG_SIZE, OptixApi, check, get_api, log_buffer, result_name
from ._layouts import AbiStructs, structs_for
from ._properties import DeviceProperties, query_device_properties

__all__ = [
    "types", "ABI_OPTIX_VERSIONS", "ABI_TABLES", "AbiStructs", "DEFAULT_ABI", "DeviceProperties", "LOG_SIZE", "NEWEST",
    "OptixApi", "SUPPORTED_ABIS", "abi_name", "check", "check_abi", "get_api", "log_buffer",
    "query_device_properties", "result_name", "structs_for",
]
