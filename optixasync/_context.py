"""The OptiX device context, bound to CuPy's CUDA context for one device.

Blocking calls: creating a :class:`Context` initialises the CUDA driver and
the OptiX device context, and (``warm_up=True``) runs each acceleration
structure operation once and waits for it, so that OptiX's first-use code
loads, which wait for all queued GPU work, happen here and not inside a
frame; :meth:`Context.close` synchronizes the device before destroying it.
None of these belongs on a frame's path.
"""

from __future__ import annotations

import ctypes
import logging
import os
import weakref
from typing import Any

from . import _config
from ._optix import DEFAULT_ABI, check, get_api
from ._optix import types as t
from .cuda import DeviceMemory, PinnedPool, _nvtx, create_stream
from .cuda._deferred import DeferredRelease

__all__ = ["Context"]

_log = logging.getLogger("optixasync.optix")

# OptiX log levels: 1 fatal, 2 error, 3 warning, 4 print.
_LEVELS = {1: logging.CRITICAL, 2: logging.ERROR, 3: logging.WARNING, 4: logging.INFO}


@t.LOG_CALLBACK
def _log_callback(level: int, tag: bytes | None, message: bytes | None, _data: int | None) -> None:
    text = (message or b"").decode(errors="replace").rstrip()
    _log.log(_LEVELS.get(level, logging.DEBUG), "[%s] %s", (tag or b"").decode(errors="replace").strip(), text)


class Context:
    """An OptiX device context on CuPy's CUDA context of one device.

    Parameters
    ----------
    device : int, optional
        CUDA device ordinal (default: CuPy's current device).
    validation : bool
        Turn on ``OPTIX_DEVICE_CONTEXT_VALIDATION_MODE_ALL``. OptiX then checks
        every launch and build, and makes ``optixLaunch`` and ``optixAccelBuild``
        wait for all outstanding work of the context: the host can no longer
        run ahead. Meant for debugging.
    log_level : int
        OptiX log verbosity forwarded to the ``optixasync.optix`` logger
        (0 none, 1 fatal, 2 error, 3 warning, 4 print).
    abi : int
        OptiX ABI to request from the driver (87 = OptiX 8.0, drivers R535+).
    disk_cache : bool
        Enable OptiX's own module disk cache, kept beside optixasync's PTX cache.
    warm_up : bool
        Build, compact and refit a one-triangle structure (GAS and IAS) now and
        wait for it (about 4 ms on an H200). OptiX loads the code of the first
        refit of a process on demand, and that load waits for every queued GPU
        operation: without the warm-up the first refit inside a render loop
        blocked the host for the whole of the GPU's queued work (50.9 ms behind
        50 ms of work, measured).

    Attributes
    ----------
    handle : int
        The ``OptixDeviceContext``.
    stream : cupy.cuda.Stream
        A non-blocking stream for set-up work (uploads, builds) when the
        caller passes none.
    memory : DeviceMemory
        Stream-ordered device allocator used by the library.
    pinned : PinnedPool
        Pooled page-locked host memory used for every transfer.
    """

    def __init__(
        self,
        device: int | None = None,
        *,
        validation: bool = False,
        log_level: int = 3,
        abi: int = DEFAULT_ABI,
        disk_cache: bool = True,
        warm_up: bool = True,
    ) -> None:
        import cupy

        self.api = get_api(abi)
        self.abi = abi
        self.validation = bool(validation)
        self.device = cupy.cuda.Device(device) if device is not None else cupy.cuda.Device()
        self.device.use()
        cupy.cuda.runtime.free(0)  # makes sure the primary context exists and is current
        cu_context = cupy.cuda.driver.ctxGetCurrent()

        options = t.DeviceContextOptions()
        options.logCallbackFunction = _log_callback
        options.logCallbackLevel = int(log_level)
        options.validationMode = int(t.ValidationMode.ALL if validation else t.ValidationMode.OFF)
        handle = ctypes.c_void_p()
        check(
            self.api.optixDeviceContextCreate(cu_context, ctypes.byref(options), ctypes.byref(handle)),
            "optixDeviceContextCreate",
            api=self.api,
        )
        self.handle: int = handle.value or 0
        self._children: weakref.WeakSet[Any] = weakref.WeakSet()
        if disk_cache and _config.cache_enabled():
            self._enable_disk_cache()
        self.stream = create_stream()
        self.memory = DeviceMemory()
        self.pinned = PinnedPool()
        self.deferred = DeferredRelease()
        if warm_up:
            from .accel._warmup import warm_up as warm_up_accel  # the accel layer builds on this one

            warm_up_accel(self)

    def _enable_disk_cache(self) -> None:
        from .program import optix_cache_dir

        location = optix_cache_dir()
        try:
            location.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _log.warning("OptiX disk cache disabled: cannot create %s (%s)", location, exc)
            return
        status = self.api.optixDeviceContextSetCacheLocation(self.handle, os.fsencode(location))
        if status != 0:
            _log.warning("OptiX disk cache location %s refused (%s)", location, self.api.error_name(status))
            return
        check(self.api.optixDeviceContextSetCacheEnabled(self.handle, 1), "optixDeviceContextSetCacheEnabled", api=self.api)

    # -- properties ------------------------------------------------------------
    def get_property(self, prop: t.DeviceProperty) -> int:
        """An OptiX device property (for example ``DeviceProperty.LIMIT_MAX_TRACE_DEPTH``)."""
        value = ctypes.c_uint()
        check(
            self.api.optixDeviceContextGetProperty(self.handle, int(prop), ctypes.byref(value), ctypes.sizeof(value)),
            f"optixDeviceContextGetProperty({prop!r})",
            api=self.api,
        )
        return value.value

    # -- transfers ---------------------------------------------------------------
    def upload(self, array: Any, stream: Any = None) -> Any:
        """Copy a host array to a new device array through pinned staging, asynchronously on ``stream``.

        The staging buffer is held until the copy has passed; the host never waits.
        """
        import numpy as np

        stream = self.stream if stream is None else stream
        with _nvtx.annotate("optixasync.upload"):
            array = np.ascontiguousarray(array)
            staging, view = self.pinned.array(array.shape, array.dtype)
            view[...] = array
            device = self.memory.empty(array.shape, array.dtype, stream)
            staging.copy_to_device_async(device, stream, array.nbytes)
            self.deferred.after(stream, staging)
        return device

    def create_sbt(self, raygen: Any, miss: Any = (), hitgroup: Any = (), *, stream: Any = None):
        """A :class:`ShaderBindingTable` uploaded on ``stream``."""
        from .program import ShaderBindingTable

        return ShaderBindingTable(self, raygen, miss, hitgroup, stream=stream)

    # -- resource creation -------------------------------------------------------
    def create_module(self, source: Any, **kwargs: Any):
        """Compile ``source`` (``.cu`` path, kernel file name or CUDA text) into a :class:`Module`."""
        from .program import Module

        return self._own(Module(self, source, **kwargs))

    def create_raygen(self, module, entry: str):
        from .program import ProgramGroup

        return self._own(ProgramGroup.raygen(self, module, entry))

    def create_miss(self, module, entry: str | None):
        from .program import ProgramGroup

        return self._own(ProgramGroup.miss(self, module, entry))

    def create_hitgroup(self, module, closesthit: str | None = None, anyhit: str | None = None):
        from .program import ProgramGroup

        return self._own(ProgramGroup.hitgroup(self, module, closesthit=closesthit, anyhit=anyhit))

    def create_pipeline(self, program_groups, **kwargs: Any):
        from .program import Pipeline

        return self._own(Pipeline(self, program_groups, **kwargs))

    def _own(self, child: Any) -> Any:
        self._children.add(child)
        return child

    # -- lifetime ----------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self.handle == 0

    def close(self) -> None:
        """Wait for the device, close every resource created through this context, then destroy it."""
        if self.handle == 0:
            return
        self.device.synchronize()
        for child in list(self._children):
            child.close()
        self.api.optixDeviceContextDestroy(self.handle)
        self.handle = 0

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"handle=0x{self.handle:x}"
        return f"<optixasync.Context device={self.device.id} validation={self.validation} {state}>"
