"""Which denoiser backends work on this machine, and why not (for ``optixasync doctor``).

Blocking calls
--------------
Probing is set-up work, for diagnostics only: it loads OIDN's library and
creates, commits and releases one device per backend (see
:mod:`optixasync.denoise._device`). The CUDA probe initialises CUDA, binds
its device to a new non-blocking stream and submits no work.
"""

from __future__ import annotations

import ctypes
import os

from ._device import OidnDevice
from ._errors import DenoiseError, MissingExtraError
from ._oidn import DEVICE_TYPE_CUDA, OidnLibrary, load_library, version_string

__all__ = ["available_denoisers", "OPTIX_WEIGHTS_FILE"]

#: Where the NVIDIA driver keeps the OptiX AI denoiser's weights (with the graphics capability installed).
OPTIX_WEIGHTS_FILE = "/usr/share/nvidia/nvoptix.bin"


def _probe_cpu(lib: OidnLibrary) -> str:
    if not lib.oidnIsCPUDeviceSupported():
        return (
            "not available: OIDN's CPU device is not supported here (this OIDN build has no CPU device "
            "library, or the CPU lacks SSE4.1)"
        )
    device = OidnDevice.cpu(lib)
    try:
        threads = int(lib.oidnGetDeviceInt(device.handle, b"numThreads"))
        return f"available: Intel Open Image Denoise {version_string(device.version)}, CPU device, {threads} thread(s)"
    finally:
        device.release()


def _probe_cuda(lib: OidnLibrary) -> str:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "not available: no NVIDIA driver (libcuda.so.1 cannot be loaded)"
    count = int(lib.oidnGetNumPhysicalDevices())
    cuda_devices = [i for i in range(count) if lib.oidnGetPhysicalDeviceInt(i, b"type") == DEVICE_TYPE_CUDA]
    lib.error(None)  # clear what the queries may have left in this thread
    if not cuda_devices or not lib.oidnIsCUDADeviceSupported(0):
        return (
            "not available: OIDN sees no supported CUDA device (this OIDN build has no CUDA device library, "
            "or the GPU's architecture is not supported)"
        )
    name = lib.oidnGetPhysicalDeviceString(cuda_devices[0], b"name")
    name = name.decode("utf-8", "replace") if name else "unknown GPU"
    try:
        device = OidnDevice.cuda(lib, 0)  # on a new non-blocking stream; no work is submitted
    except MissingExtraError as exc:
        return f"not available: {exc}"
    try:
        return (
            f"available: Intel Open Image Denoise {version_string(device.version)}, CUDA device 0 ({name}), "
            "on a stream of our own"
        )
    finally:
        device.release()


def _probe_optix() -> str:
    if not os.path.exists(OPTIX_WEIGHTS_FILE):
        return (
            f"not available: the OptiX denoiser's weights file {OPTIX_WEIGHTS_FILE} is missing "
            "(containers need NVIDIA_DRIVER_CAPABILITIES to include graphics)"
        )
    return (
        f"not available: optixasync has no OptiX denoiser backend (its weights file {OPTIX_WEIGHTS_FILE} "
        "is present; use 'oidn-cuda')"
    )


def available_denoisers() -> dict[str, str]:
    """Which denoiser backends work on this machine, and why the others do not.

    Returns
    -------
    dict[str, str]
        Backend name (``"oidn-cpu"``, ``"oidn-cuda"``, ``"optix"``) to a one-line
        status starting with ``"available: "`` or ``"not available: "``.
        Never raises: a probe that fails reports its error as the reason.

    Notes
    -----
    Set-up cost: loads OIDN and creates and releases one device per
    backend (a CUDA device on a new non-blocking stream, with no work).
    The OptiX AI denoiser is only reported on: optixasync has no backend for it.
    """
    result: dict[str, str] = {}
    try:
        lib = load_library()
    except (MissingExtraError, DenoiseError) as exc:
        result["oidn-cpu"] = result["oidn-cuda"] = f"not available: {exc}"
    else:
        for name, probe in (("oidn-cpu", _probe_cpu), ("oidn-cuda", _probe_cuda)):
            try:
                result[name] = probe(lib)
            except Exception as exc:  # a diagnostic: report, never raise
                result[name] = f"not available: {type(exc).__name__}: {exc}"
    result["optix"] = _probe_optix()
    return result
