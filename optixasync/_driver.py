"""What the NVIDIA driver offers on this machine, asked through ctypes alone.

The one place that probes the driver: the CLI (``doctor``, ``render``), the
compiler (which PTX ISA the driver reads), the examples and the test suite
all ask here, and each condition has one message saying what to do. No
CuPy, no CUDA Python package and no GPU context are needed: the driver's own
libraries (``libcuda``, ``libnvoptix``, ``libnvidia-ml``) are loaded with
ctypes and asked directly.

Blocking calls
--------------
``cuInit`` (inside :func:`device_count` and :func:`unavailable_reason`)
initialises the driver once per process: set-up time, tens of milliseconds.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any, NamedTuple

from . import _config
from .errors import DriverNotFoundError, MissingExtraError

__all__ = [
    "CUDA_LIBRARY",
    "DeviceInfo",
    "devices",
    "require_cupy",
    "NVML_LIBRARY",
    "cuda_extra",
    "device_count",
    "driver_cuda_version",
    "driver_version",
    "load_cuda_library",
    "load_optix_library",
    "no_driver_message",
    "no_optix_message",
    "optix_library_names",
    "unavailable_reason",
]

CUDA_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
NVML_LIBRARY = "nvml.dll" if sys.platform == "win32" else "libnvidia-ml.so.1"


def no_driver_message(detail: str = "") -> str:
    """The message for a machine without the NVIDIA driver's CUDA library."""
    text = (f"no NVIDIA driver: {CUDA_LIBRARY} cannot be loaded (install the NVIDIA driver, R535 or newer; "
            "in a container, start it with the NVIDIA container runtime)")
    return text + (f" [{detail}]" if detail else "")


def no_optix_message(detail: str = "") -> str:
    """The message for a driver without its OptiX library (often a container without the graphics capability)."""
    text = ("the NVIDIA driver's OptiX library libnvoptix.so.1 cannot be loaded: it ships with the display driver "
            "(R535 or newer); in a container, set NVIDIA_DRIVER_CAPABILITIES to include 'graphics' (or 'all'); "
            f"if it is installed elsewhere, set {_config.OPTIX_LIBRARY_ENV} to its path")
    return text + (f" [{detail}]" if detail else "")


@functools.lru_cache(maxsize=1)
def _cuda_library() -> tuple[ctypes.CDLL | None, str]:
    try:
        return ctypes.CDLL(CUDA_LIBRARY), ""
    except OSError as exc:
        return None, str(exc)


def load_cuda_library() -> ctypes.CDLL | None:
    """The driver's CUDA library, or None where it cannot be loaded (cached)."""
    return _cuda_library()[0]


@functools.lru_cache(maxsize=1)
def driver_cuda_version() -> int | None:
    """CUDA version of the installed driver (``cuDriverGetVersion``, e.g. 13000), or None without a driver."""
    lib = load_cuda_library()
    if lib is None:
        return None
    try:
        fn = lib.cuDriverGetVersion
    except AttributeError:
        return None
    fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
    fn.restype = ctypes.c_int
    version = ctypes.c_int(0)
    if fn(ctypes.byref(version)) != 0 or version.value <= 0:
        return None
    return int(version.value)


def cuda_extra(cuda_version: int | None = None) -> str | None:
    """The optixasync extra matching the driver's CUDA major version (``cuda13`` / ``cuda12``), None if unknown."""
    version = driver_cuda_version() if cuda_version is None else cuda_version
    if not version:
        return None
    return "cuda13" if version >= 13000 else "cuda12"


@functools.lru_cache(maxsize=1)
def driver_version() -> str | None:
    """The display driver's version string (e.g. ``580.159.04``) from the driver's NVML library, or None."""
    try:
        nvml = ctypes.CDLL(NVML_LIBRARY)
    except OSError:
        return None
    try:
        if nvml.nvmlInit_v2() != 0:
            return None
        buffer = ctypes.create_string_buffer(96)
        status = nvml.nvmlSystemGetDriverVersion(buffer, ctypes.c_uint(len(buffer)))
        nvml.nvmlShutdown()
    except AttributeError:
        return None
    return buffer.value.decode() if status == 0 else None


@functools.lru_cache(maxsize=1)
def device_count() -> int:
    """Number of CUDA devices the driver sees (``cuInit`` + ``cuDeviceGetCount``); 0 without a driver."""
    lib = load_cuda_library()
    if lib is None or lib.cuInit(0) != 0:
        return 0
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return int(count.value)


class DeviceInfo(NamedTuple):
    """One CUDA device as the driver describes it."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    memory_bytes: int


_ATTRIBUTE_CC_MAJOR, _ATTRIBUTE_CC_MINOR = 75, 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR


def devices() -> list[DeviceInfo]:
    """Every CUDA device the driver sees (name, compute capability, memory), through ``libcuda`` alone."""
    lib = load_cuda_library()
    infos: list[DeviceInfo] = []
    for index in range(device_count()):
        device = ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(device), index) != 0:
            continue
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(name, len(name), device)
        major, minor, memory = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_size_t(0)
        lib.cuDeviceGetAttribute(ctypes.byref(major), _ATTRIBUTE_CC_MAJOR, device)
        lib.cuDeviceGetAttribute(ctypes.byref(minor), _ATTRIBUTE_CC_MINOR, device)
        lib.cuDeviceTotalMem_v2(ctypes.byref(memory), device)
        infos.append(DeviceInfo(index, name.value.decode(errors="replace"), (major.value, minor.value), memory.value))
    return infos


def require_cupy() -> Any:
    """Import CuPy, or raise :class:`MissingExtraError` naming the extra that matches this driver."""
    try:
        import cupy
    except ImportError as exc:
        extra = cuda_extra() or "cuda13"
        raise MissingExtraError("optixasync's CUDA layer", f"cupy-{extra}x", extra) from exc
    return cupy


def optix_library_names() -> list[str]:
    """Candidate names or paths of the OptiX driver library, in search order (the override alone when set)."""
    override = _config.optix_library_override()
    if override:
        return [override]
    if sys.platform == "win32":
        return ["nvoptix.dll"]
    return ["libnvoptix.so.1"]


def _try_optix_library() -> tuple[ctypes.CDLL | None, list[str]]:
    errors = []
    for name in optix_library_names():
        try:
            return ctypes.CDLL(name), errors
        except OSError as exc:
            errors.append(str(exc))  # the loader's text already names the file
    return None, errors


def load_optix_library() -> ctypes.CDLL:
    """Load the OptiX driver library (``libnvoptix``): the one place that looks for it.

    Raises
    ------
    DriverNotFoundError
        If no candidate could be loaded; the message says what to do and what the loader reported.
    """
    library, errors = _try_optix_library()
    if library is None:
        raise DriverNotFoundError(no_optix_message("; ".join(errors)))
    return library


def _optix_library_problem() -> str | None:
    library, errors = _try_optix_library()
    return None if library is not None else no_optix_message("; ".join(errors))


def unavailable_reason() -> str | None:
    """None when optixasync can run on a GPU here, else one line saying why not and what to do.

    Checks, in order: the driver's CUDA library, a CUDA device, the OptiX
    library, CuPy (the extra matching the driver).
    """
    if load_cuda_library() is None:
        return no_driver_message()
    if device_count() == 0:
        return "no CUDA device: the NVIDIA driver is loaded but sees no GPU (check nvidia-smi)"
    problem = _optix_library_problem()
    if problem is not None:
        return problem
    try:
        require_cupy()
    except MissingExtraError as exc:
        return str(exc)
    return None
