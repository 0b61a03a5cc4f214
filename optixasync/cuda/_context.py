"""The context every layer builds on: one GPU, its OptiX context, a set-up stream, memory, staging.

:class:`Context` (``optixasync.Context``) is the one context class of the
package. It owns what the program, accel, scheduler and render layers need
from the device and nothing above it: the OptiX device context (bound to
CuPy's CUDA context of one device), a non-blocking set-up stream,
stream-ordered device memory, pooled pinned staging, deferred release, and
the list of resources to close with it. Resources are created by their own
constructors, the context first (``Module(ctx, ...)``,
``GeometryAccel(ctx, ...)``): that is the one way to make each, and each
registers itself with :meth:`Context.track` there, so :meth:`close`
releases everything.

Blocking calls
--------------
* Creating a context initialises the CUDA driver and the OptiX device
  context (a device synchronize): set-up time. With ``warm_up=True`` it
  then runs the set-up steps the layers above registered, which may wait
  for their own GPU work (the acceleration structures' warm-up does).
* :meth:`Context.close` synchronizes the device before destroying the
  OptiX context, so no in-flight work refers to freed objects, and again
  after closing its resources, so everything held for deferred release goes
  too; it then frees the pinned pool's unused blocks (``cuMemFreeHost``,
  which may synchronize). A context still open when the interpreter exits
  is closed then.
* :meth:`Context.upload` does not wait for the GPU: it copies the
  array into pinned staging on the host and enqueues the copy; the staging
  is held until the copy has passed. It can block in the allocators, as
  :mod:`optixasync.cuda._memory` describes: the first staging buffer of a
  size is a new ``cuMemHostAlloc`` (which can take milliseconds), and a
  device allocation that grows the device's memory pool maps new memory.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import logging
import os
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import _config
from .._driver import load_cuda_library, no_driver_message, require_cupy
from .._optix import DEFAULT_ABI, DeviceProperties, check, get_api, query_device_properties
from .._optix import types as t
from .._optix._abi import check_abi_request
from ..errors import DriverNotFoundError
from ..validation import as_int
from . import _nvtx
from ._deferred import DeferredRelease
from ._errors import cuda_errors
from ._launch_queue import LaunchQueue
from ._memory import DeviceMemory, PinnedPool
from ._streams import as_cupy_stream, create_stream

__all__ = ["Context", "register_setup_step"]

#: Set-up steps of the layers above, run by every new context created with ``warm_up=True`` (in order).
_setup_steps: list[Callable[[Context], None]] = []


def register_setup_step(step: Callable[[Context], None]) -> None:
    """Run ``step(ctx)`` at the end of the creation of every later :class:`Context` made with ``warm_up=True``.

    How a layer above this one does its one-time set-up at the point where waiting is harmless (the
    acceleration structures' warm-up registers itself so). Registering the same step twice runs it once.
    """
    if step not in _setup_steps:
        _setup_steps.append(step)

# Contexts still open when the interpreter exits are closed then, before the memory module stops freeing
# (atexit runs handlers last-registered first; this module registers after optixasync.cuda._memory).
_open_contexts: weakref.WeakSet[Context] = weakref.WeakSet()


@atexit.register
def _close_open_contexts() -> None:
    for ctx in list(_open_contexts):
        try:
            ctx.close()
        except Exception:  # the driver may already be going away; nothing more to save
            pass

_log = logging.getLogger("optixasync.optix")
_close_log = logging.getLogger("optixasync")

# OptiX log levels: 1 fatal, 2 error, 3 warning, 4 print.
_LEVELS = {1: logging.CRITICAL, 2: logging.ERROR, 3: logging.WARNING, 4: logging.INFO}


@t.LOG_CALLBACK
def _log_callback(level: int, tag: bytes | None, message: bytes | None, _data: int | None) -> None:
    text = (message or b"").decode(errors="replace").rstrip()
    _log.log(_LEVELS.get(level, logging.DEBUG), "[%s] %s", (tag or b"").decode(errors="replace").strip(), text)


@contextlib.contextmanager
def _attempt(errors: list[Exception]) -> Iterator[None]:
    """Run the block; an exception it raises is appended to ``errors`` instead of stopping the caller."""
    try:
        yield
    except Exception as exc:
        errors.append(exc)


class Context:
    """An OptiX device context on CuPy's CUDA context of one device, with its stream, memory and staging.

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
    abi : int or "newest"
        OptiX ABI to request from the driver: 87 (OptiX 8.0, drivers R535+; the default, the ABI every GPU
        run of the test suite has used), 93 (8.1), 105 (9.0) or 118 (9.1, drivers R590+), pinned: a driver
        that refuses it raises :class:`OptixError` naming the ABIs it accepts. ``"newest"`` negotiates: the
        newest ABI the driver accepts, a refusal falling back silently to the next older one (on an R580
        driver, 105).
    disk_cache : bool
        Enable OptiX's own module disk cache, kept beside optixasync's PTX cache.
    warm_up : bool
        Run the registered set-up steps now (:func:`register_setup_step`):
        the acceleration structures' warm-up builds, compacts and refits a
        one-triangle GAS and IAS and waits for them (about 4 ms on an H200).
        OptiX loads the code of the first refit of a process on demand, and
        that load waits for every queued GPU operation: without the warm-up
        the first refit inside a render loop blocked the host for the whole
        of the GPU's queued work (50.9 ms behind 50 ms of work, measured).

    Attributes
    ----------
    handle : int
        The ``OptixDeviceContext`` (0 once closed).
    abi : int
        The OptiX ABI of the function table in use.
    properties : DeviceProperties
        What the device reports through that ABI: RT cores (``rtcore_version``), shader execution
        reordering, cooperative vectors and cluster acceleration structures (None where the ABI lacks the
        property), and the limits.
    validation, warm_up : bool
        As given.
    device_id : int
        The CUDA device of the context and of everything created with it.
    stream : cupy.cuda.Stream
        A non-blocking stream for set-up work (uploads, builds) when the caller passes none.
    memory : DeviceMemory
        Stream-ordered device allocator.
    pinned : PinnedPool
        Pooled page-locked host memory used for every transfer.
    deferred : DeferredRelease
        Objects held until the GPU work that uses them has passed.
    launch_queue : LaunchQueue
        The OptiX launches of this context not yet passed, bounded when a limit is asked for (off by default:
        ``OPTIXASYNC_OPTIX_QUEUE_LIMIT``, ``SchedulerOptions.optix_queue_limit``).

    Raises
    ------
    ValueError
        On an OptiX ABI optixasync cannot call (naming the supported ones),
        or a ``log_level`` outside [0, 4]; raised before the driver is asked anything.
    TypeError
        On a ``log_level`` that is not an integer.
    DriverNotFoundError, OptixError
        When the driver or its OptiX library is missing or refuses.
    """

    def __init__(
        self,
        device: int | None = None,
        *,
        validation: bool = False,
        log_level: int = 3,
        abi: int | str = DEFAULT_ABI,
        disk_cache: bool = True,
        warm_up: bool = True,
    ) -> None:
        check_abi_request(abi)  # bad input first, before the machine is asked anything
        log_level = as_int("log_level", log_level, 0, 4)
        launch_queue = LaunchQueue()  # reads OPTIXASYNC_OPTIX_QUEUE_LIMIT: a bad value is refused here
        if load_cuda_library() is None:
            raise DriverNotFoundError(no_driver_message())
        self.api = get_api(abi)  # checks the ABI and loads the OptiX library before any CUDA work
        cupy = require_cupy()
        self.abi = self.api.abi
        self.validation = bool(validation)
        self.warm_up = bool(warm_up)
        with cuda_errors(f"selecting CUDA device {device}"):
            self.device = cupy.cuda.Device(device) if device is not None else cupy.cuda.Device()
            self.device.use()
            cupy.cuda.runtime.free(0)  # makes sure the primary context exists and is current
            cu_context = cupy.cuda.driver.ctxGetCurrent()
        self.device_id: int = self.device.id

        options = t.DeviceContextOptions()
        options.logCallbackFunction = _log_callback
        options.logCallbackLevel = log_level
        options.validationMode = int(t.ValidationMode.ALL if validation else t.ValidationMode.OFF)
        handle = ctypes.c_void_p()
        check(
            self.api.optixDeviceContextCreate(cu_context, ctypes.byref(options), ctypes.byref(handle)),
            "optixDeviceContextCreate",
            api=self.api,
        )
        self.handle: int = handle.value or 0
        self._tracked: dict[int, weakref.ref[Any]] = {}
        self._serial = itertools.count()
        try:
            self.properties: DeviceProperties = query_device_properties(self.api, self.handle)
            if disk_cache and _config.cache_enabled():
                self._enable_disk_cache()
            self.stream = create_stream()
            self.memory = DeviceMemory(self.device_id)
            self.pinned = PinnedPool()
            self.deferred = DeferredRelease()
            self.launch_queue = launch_queue
        except BaseException:
            # The caller never gets this object to close: the OptiX context would leak with it.
            self.api.optixDeviceContextDestroy(self.handle)
            self.handle = 0
            raise
        _open_contexts.add(self)
        if self.warm_up:
            self._run_setup_steps()

    def _run_setup_steps(self) -> None:
        try:
            for step in list(_setup_steps):
                step(self)
        except BaseException as exc:
            # The caller never gets this context to close: close it here, as leaving a `with` block does after
            # an exception (the step's error is the one raised).
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def _enable_disk_cache(self) -> None:
        location = _config.optix_cache_dir()
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

    # -- resources -----------------------------------------------------------------
    def track(self, resource: Any) -> Any:
        """Register ``resource`` (anything with ``close()``) to be closed with the context; returns it.

        Every optixasync resource calls this in its own constructor. The
        context holds it weakly: a resource dropped by its user is not kept
        alive. :meth:`close` closes the live ones, newest first, so users
        close before what they use (a pipeline before its modules).

        Raises
        ------
        RuntimeError
            If the context is closed.
        """
        self.require_open()
        key = next(self._serial)
        self._tracked[key] = weakref.ref(resource, lambda _ref, key=key: self._tracked.pop(key, None))
        return resource

    def require_open(self) -> None:
        """Raise ``RuntimeError`` if the context is closed."""
        if self.handle == 0:
            raise RuntimeError("this optixasync context is closed")

    def require_own(self, resource: Any, what: str) -> None:
        """Raise ``ValueError`` unless ``resource`` was created with this context (naming both devices).

        Objects of another context may live on another GPU: using them here
        would read foreign device memory (an illegal-address crash), so the
        mix-up is caught on the host first.
        """
        owner = getattr(resource, "ctx", None)
        if owner is not self:
            where = f"device {owner.device_id}" if isinstance(owner, Context) else "no optixasync context"
            raise ValueError(f"{what} belongs to another context ({where}); this context is on device {self.device_id}")

    # -- transfers ---------------------------------------------------------------
    def upload(self, array: Any, stream: Any = None) -> Any:
        """Copy a host array to a new device array through pinned staging, asynchronously on ``stream``.

        The staging buffer is held until the copy has passed; the host never waits.
        """
        self.require_open()
        stream = self.stream if stream is None else as_cupy_stream(stream)
        with _nvtx.annotate("optixasync.upload"):
            array = np.ascontiguousarray(array)
            staging, view = self.pinned.array(array.shape, array.dtype)
            view[...] = array
            device = self.memory.empty(array.shape, array.dtype, stream)
            staging.copy_to_device_async(device, stream, array.nbytes)
            self.deferred.after(stream, staging)
        return device

    def upload_into(self, target: Any, array: Any, stream: Any = None) -> None:
        """Copy a host array into the existing device buffer ``target`` through pinned staging, on ``stream``.

        ``array`` must have ``target``'s size in bytes (any dtype: the bytes are copied). Asynchronous like
        :meth:`upload`: the staging is held until the copy has passed.

        Raises
        ------
        ValueError
            If the sizes differ.
        """
        self.require_open()
        stream = self.stream if stream is None else as_cupy_stream(stream)
        array = np.ascontiguousarray(array)
        if array.nbytes != int(target.nbytes):
            raise ValueError(f"cannot copy {array.nbytes} bytes into a device buffer of {int(target.nbytes)} bytes")
        with _nvtx.annotate("optixasync.upload"):
            staging, view = self.pinned.array(array.shape, array.dtype)
            view[...] = array
            staging.copy_to_device_async(target, stream, array.nbytes)
            self.deferred.after(stream, staging)

    # -- lifetime ----------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self.handle == 0

    def close(self) -> None:
        """Wait for the device, close every resource registered with :meth:`track` (newest first), then destroy.

        Idempotent. The staging and deferred objects are released once the
        device is idle. A step that fails (every synchronize fails after a
        sticky device error) does not stop the others: the OptiX context is
        destroyed and the context counts as closed in any case, and the first
        error is raised at the end. Objects held for deferred release stay
        held when the device could not be seen idle.
        """
        if self.handle == 0:
            return
        errors: list[Exception] = []
        try:
            with _attempt(errors), cuda_errors("synchronizing the device before closing the context"):
                self.device.synchronize()
            for key in sorted(self._tracked, reverse=True):
                ref = self._tracked.pop(key, None)
                resource = ref() if ref is not None else None
                if resource is not None:
                    with _attempt(errors):
                        resource.close()
            # The closes handed buffers to deferred release and enqueued stream-ordered frees. Once the device is
            # idle everything held can go; its frees are enqueued in turn, and after they have run the pool's
            # cached blocks go back to the driver: the process keeps no device memory.
            with _attempt(errors), cuda_errors("synchronizing the device after closing the context's resources"):
                self.device.synchronize()
                self.deferred.clear()
                self.device.synchronize()
            with _attempt(errors):
                self.memory.trim()
            with _attempt(errors):
                self.pinned.release()  # now, not whenever the pool happens to be collected (inside someone's frame)
        finally:
            # Whatever failed, the context is closed: a later close() would only fail the same way again.
            self.api.optixDeviceContextDestroy(self.handle)
            self.handle = 0
            _open_contexts.discard(self)
        if errors:
            raise errors[0]

    def __enter__(self) -> Context:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except Exception as close_error:
            # Closing after a failure often fails for the same reason (a sticky device error); the body's
            # exception is the one that explains it and keeps propagating.
            _close_log.warning("closing the optixasync context after an exception also failed: %s", close_error)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"handle=0x{self.handle:x}"
        return f"<optixasync.{type(self).__name__} device={self.device_id} validation={self.validation} {state}>"
