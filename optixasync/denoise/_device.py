"""One OIDN device: the CPU device, or the CUDA device bound to a non-blocking stream of ours.

Blocking calls
--------------
* Creating a device is set-up: ``oidnNewCUDADevice`` + ``oidnCommitDevice``
  initialise OIDN's CUDA runtime on the device and query it (the first time,
  CUDA initialisation); ``oidnIsCUDADeviceSupported`` initialises CUDA inside
  OIDN too. ``oidnNewDevice`` for the CPU starts a thread pool. The first
  use of OIDN also loads its libraries.
* :meth:`OidnDevice.sync` is a fence: ``oidnSyncDevice`` waits for all the
  work enqueued on the device.
* :meth:`OidnDevice.release`: ``oidnReleaseDevice`` frees what the device
  still holds (callers sync first); destroying the join events does not wait.
"""

from __future__ import annotations

import ctypes
from typing import Any

from .._driver import require_cupy
from ..cuda import on_device
from ._errors import DenoiseError, DeviceUnsupportedError
from ._oidn import DEVICE_TYPE_CPU, MIN_VERSION, OidnLibrary, version_string
from ._streams import EventPair, create_stream, stream_handle

__all__ = ["OidnDevice"]


class OidnDevice:
    """A committed OIDN device and, for CUDA, the stream it is bound to and the events that join other streams.

    Use :meth:`cpu` or :meth:`cuda` to make one.

    Attributes
    ----------
    lib : OidnLibrary
        The library the device comes from.
    handle : int
        The ``OIDNDevice``.
    kind : {"cpu", "cuda"}
        The device type.
    version : int
        OIDN's version (20501 for 2.5.1).
    stream : object or None
        The stream object OIDN runs on ('cuda'), kept alive here.
    stream_handle : int or None
        Its raw ``CUstream``.
    events : EventPair or None
        The events of the joins with callers' streams ('cuda').
    """

    def __init__(self, lib: OidnLibrary, handle: int | None, kind: str, operation: str,
                 stream: Any = None, stream_handle: int | None = None, events: EventPair | None = None) -> None:
        self.lib = lib
        self.kind = kind
        self.stream = stream
        self.stream_handle = stream_handle
        self.events = events
        self.handle = 0
        if not handle:
            lib.check(None, operation)
            raise DenoiseError(f"OIDN returned no device while {operation}")
        try:
            lib.check(handle, operation)
            lib.oidnCommitDevice(handle)
            lib.check(handle, f"{operation} (commit)")
            self.version = int(lib.oidnGetDeviceInt(handle, b"version"))
            if self.version < MIN_VERSION:
                raise DenoiseError(
                    f"OIDN {version_string(MIN_VERSION)} or newer is needed, found {version_string(self.version)}"
                )
        except BaseException:
            lib.oidnReleaseDevice(handle)
            raise
        self.handle = handle

    @classmethod
    def cpu(cls, lib: OidnLibrary) -> OidnDevice:
        """OIDN's CPU device, committed.

        Raises
        ------
        DeviceUnsupportedError
            If this OIDN build or this CPU has no CPU device.
        OidnError
            If OIDN refuses to create or commit it.
        """
        if not lib.oidnIsCPUDeviceSupported():
            raise DeviceUnsupportedError(
                "OIDN's CPU device is not supported here (this OIDN build has no CPU device library, "
                "or the CPU lacks SSE4.1)"
            )
        return cls(lib, lib.oidnNewDevice(DEVICE_TYPE_CPU), "cpu", "creating the CPU device")

    @classmethod
    def cuda(cls, lib: OidnLibrary, device_id: int, stream: Any = None) -> OidnDevice:
        """OIDN's CUDA device ``device_id``, bound to ``stream`` (None: a new non-blocking stream), committed.

        Raises
        ------
        MissingExtraError
            If CuPy is not installed.
        TypeError, ValueError
            On a bad stream (the legacy default stream is refused).
        DeviceUnsupportedError
            If OIDN does not support the device.
        OidnError
            If OIDN refuses to create or commit it.
        """
        handle = None if stream is None else stream_handle(stream)
        require_cupy()
        with on_device(device_id):
            if stream is None:
                stream = create_stream()
                handle = stream_handle(stream)
            events = EventPair()
        try:
            if not lib.oidnIsCUDADeviceSupported(device_id):
                raise DeviceUnsupportedError(
                    f"OIDN does not support CUDA device {device_id} (this OIDN build has no CUDA device library, "
                    "or the GPU's architecture is not supported); see optixasync.denoise.available_denoisers()"
                )
            ids = (ctypes.c_int * 1)(device_id)
            streams = (ctypes.c_void_p * 1)(handle)
            device = lib.oidnNewCUDADevice(ids, streams, 1)
            return cls(lib, device, "cuda", f"creating the CUDA device {device_id}", stream, handle, events)
        except BaseException:
            events.destroy()
            raise

    def check(self, operation: str) -> None:
        """Raise :class:`OidnError` if the device holds an error (reads it; never waits)."""
        self.lib.check(self.handle, operation)

    def sync(self, operation: str) -> None:
        """Wait for all work enqueued on the device (a fence), then raise its error, if any."""
        self.lib.oidnSyncDevice(self.handle)
        self.check(operation)

    def release(self) -> None:
        """Release the device and destroy the join events. Idempotent; callers :meth:`sync` first."""
        if self.handle:
            handle, self.handle = self.handle, 0
            self.lib.oidnReleaseDevice(handle)
        if self.events is not None:
            events, self.events = self.events, None
            events.destroy()
