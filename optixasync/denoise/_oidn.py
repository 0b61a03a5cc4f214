"""Find Intel Open Image Denoise's C library and declare the part of its API we call.

The library is the ``libOpenImageDenoise`` bundled in the ``pyoidn`` wheel
(``pyoidn/oidn/lib``), found without importing ``pyoidn``'s Python code,
or else whatever the dynamic loader finds (``LD_LIBRARY_PATH``, a system
install). It is loaded once, on first use. Every function goes through a
wrapper that counts its calls (``OidnLibrary.calls``), which is how tests
check that bad input is refused before any OIDN work.

Blocking calls
--------------
Loading the library (once) reads it from disk. Of the calls declared
here, which may block the host and why is listed in the docstring of
:mod:`optixasync.denoise`; :meth:`OidnLibrary.check`
(``oidnGetDeviceError``) only reads a stored error and never waits.
"""

from __future__ import annotations

import collections
import ctypes
import glob
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ._errors import DenoiseError, OidnError, missing_pyoidn

__all__ = [
    "OidnLibrary",
    "load_library",
    "oidn_library_path",
    "library_candidates",
    "DEVICE_TYPE_CPU",
    "DEVICE_TYPE_CUDA",
    "FORMAT_FLOAT3",
    "QUALITY",
    "MIN_VERSION",
    "version_string",
]

#: ``OIDNDeviceType`` values.
DEVICE_TYPE_CPU = 1
DEVICE_TYPE_CUDA = 3
#: ``OIDNFormat`` of three float32 channels (our images: FLOAT3, any pixel stride >= 12 bytes).
FORMAT_FLOAT3 = 3
#: ``OIDNQuality`` values by name.
QUALITY: dict[str, int] = {"fast": 4, "balanced": 5, "high": 6}
#: Oldest OIDN we accept: 2.0 brought CUDA devices on a given stream, shared buffers and asynchronous execution.
MIN_VERSION = 20000

_vp = ctypes.c_void_p
_sz = ctypes.c_size_t
_str = ctypes.c_char_p

# name -> (restype, argtypes), as declared in oidn.h of OIDN 2.x.
_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "oidnIsCPUDeviceSupported": (ctypes.c_bool, []),
    "oidnIsCUDADeviceSupported": (ctypes.c_bool, [ctypes.c_int]),
    "oidnGetNumPhysicalDevices": (ctypes.c_int, []),
    "oidnGetPhysicalDeviceInt": (ctypes.c_int, [ctypes.c_int, _str]),
    "oidnGetPhysicalDeviceString": (_str, [ctypes.c_int, _str]),
    "oidnNewDevice": (_vp, [ctypes.c_int]),
    # OIDNDevice oidnNewCUDADevice(const int* deviceIDs, const cudaStream_t* streams, int numPairs)
    "oidnNewCUDADevice": (_vp, [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(_vp), ctypes.c_int]),
    "oidnCommitDevice": (None, [_vp]),
    "oidnSyncDevice": (None, [_vp]),
    "oidnReleaseDevice": (None, [_vp]),
    "oidnGetDeviceInt": (ctypes.c_int, [_vp, _str]),
    "oidnGetDeviceError": (ctypes.c_int, [_vp, ctypes.POINTER(_str)]),
    "oidnNewBuffer": (_vp, [_vp, _sz]),
    "oidnReleaseBuffer": (None, [_vp]),
    "oidnNewFilter": (_vp, [_vp, _str]),
    # (filter, name, buffer, format, width, height, byteOffset, pixelByteStride, rowByteStride)
    "oidnSetFilterImage": (None, [_vp, _str, _vp, ctypes.c_int, _sz, _sz, _sz, _sz, _sz]),
    # (filter, name, devPtr, format, width, height, byteOffset, pixelByteStride, rowByteStride)
    "oidnSetSharedFilterImage": (None, [_vp, _str, _vp, ctypes.c_int, _sz, _sz, _sz, _sz, _sz]),
    "oidnSetFilterBool": (None, [_vp, _str, ctypes.c_bool]),
    "oidnSetFilterInt": (None, [_vp, _str, ctypes.c_int]),
    "oidnSetFilterFloat": (None, [_vp, _str, ctypes.c_float]),
    "oidnCommitFilter": (None, [_vp]),
    "oidnExecuteFilter": (None, [_vp]),
    "oidnExecuteFilterAsync": (None, [_vp]),
    "oidnReleaseFilter": (None, [_vp]),
}


def version_string(version: int) -> str:
    """OIDN's ``version`` integer (20501) as text (``2.5.1``)."""
    return f"{version // 10000}.{version // 100 % 100}.{version % 100}"


def _library_names() -> tuple[str, list[str]]:
    """(folder inside the pyoidn package, file names of the C library in preference order) on this platform."""
    if sys.platform == "win32":
        return "bin", ["OpenImageDenoise.dll"]
    if sys.platform == "darwin":
        return "lib", ["libOpenImageDenoise.2.dylib", "libOpenImageDenoise.dylib"]
    return "lib", ["libOpenImageDenoise.so.2", "libOpenImageDenoise.so"]


def library_candidates() -> list[str]:
    """Paths or names of ``libOpenImageDenoise`` to try, in order.

    First the copy bundled in the installed ``pyoidn`` package (located with
    ``importlib.util.find_spec``, which does not run the package's code: its
    ``__init__`` imports PyTorch when that is installed), under any of its
    usual names (a trimmed package may keep only ``libOpenImageDenoise.so.2.5.1``),
    then the bare names for the dynamic loader (``LD_LIBRARY_PATH``, a system install).
    """
    folder, names = _library_names()
    candidates = []
    try:
        spec = importlib.util.find_spec("pyoidn")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            directory = os.path.join(root, "oidn", folder)
            versioned = sorted(glob.glob(os.path.join(directory, names[0] + ".*")), reverse=True)
            for path in [os.path.join(directory, name) for name in names] + versioned:
                if os.path.exists(path) and path not in candidates:
                    candidates.append(path)
    return candidates + names


class OidnLibrary:
    """The OIDN C functions we use, each counting its calls.

    Attributes
    ----------
    path : str
        The file or name the library was loaded from.
    calls : collections.Counter
        Number of calls per OIDN function name since the library was loaded.
    """

    def __init__(self, cdll: ctypes.CDLL, path: str) -> None:
        self.path = path
        self.calls: collections.Counter[str] = collections.Counter()
        missing = [name for name in _PROTOTYPES if not hasattr(cdll, name)]
        if missing:
            raise DenoiseError(
                f"{path} is not Intel Open Image Denoise 2.x (it lacks {', '.join(missing)}): "
                "pip install 'optixasync[denoise]'"
            )
        for name, (restype, argtypes) in _PROTOTYPES.items():
            function = getattr(cdll, name)
            function.restype = restype
            function.argtypes = argtypes
            setattr(self, name, self._counted(name, function))

    def _counted(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        calls = self.calls

        def call(*args: Any) -> Any:
            calls[name] += 1
            return function(*args)

        call.__name__ = name
        return call

    def total_calls(self) -> int:
        """All OIDN calls made so far."""
        return sum(self.calls.values())

    def error(self, device: int | None) -> tuple[int, str]:
        """The first unqueried error of ``device`` (None: of this thread) as (code, message); clears it."""
        message = ctypes.c_char_p()
        code = int(self.oidnGetDeviceError(device, ctypes.byref(message)))  # type: ignore[attr-defined]
        text = message.value.decode("utf-8", "replace") if message.value else ""
        return code, text

    def check(self, device: int | None, operation: str) -> None:
        """Raise :class:`OidnError` if ``device`` (None: this thread) holds an error.

        Reads the error OIDN stored; never waits for queued work. Errors of
        work still running on a GPU surface at a later check.
        """
        code, text = self.error(device)
        if code != 0:
            raise OidnError(code, text, operation)


_lock = threading.Lock()
_library: OidnLibrary | None = None


def load_library() -> OidnLibrary:
    """The OIDN library, loaded on the first call.

    Raises
    ------
    MissingExtraError
        If no candidate of :func:`library_candidates` loads (``pyoidn`` is not installed).
    DenoiseError
        If the library that loaded is not OIDN 2.x.
    """
    global _library
    with _lock:
        if _library is not None:
            return _library
        errors = []
        for candidate in library_candidates():
            try:
                cdll = ctypes.CDLL(candidate)
            except OSError as exc:
                errors.append(f"{candidate}: {exc}")
                continue
            _library = OidnLibrary(cdll, candidate)
            return _library
        raise missing_pyoidn() from OSError("could not load Intel Open Image Denoise; tried: " + "; ".join(errors))


def oidn_library_path() -> str:
    """The file or name Intel Open Image Denoise is loaded from (loading it on the first call).

    Touches no GPU: a program checks with it that the ``denoise`` extra is
    installed before it starts GPU work.

    Raises
    ------
    MissingExtraError
        If ``pyoidn`` is not installed and no OIDN library is on the loader's path.
    """
    return load_library().path
