"""The public :class:`Context`: the device context plus the factories and the acceleration-structure warm-up.

It sits above the program and accel layers, which only ever receive the
lower-level :class:`~optixasync.cuda.DeviceContext` (a ``Context`` is one).
Every factory here is the resource's own constructor with this context
passed in; each resource registers itself with the context in that
constructor, so ``close()`` releases it whichever way it was created.

Blocking calls
--------------
* Creating a :class:`Context` initialises the CUDA driver and the OptiX
  device context and (``warm_up=True``) runs each acceleration-structure
  operation once and waits for it, so that OptiX's first-use code loads,
  which wait for all queued GPU work, happen here and not inside a frame.
* :meth:`Context.close` synchronizes the device before destroying it.
* ``create_module``, ``create_raygen``/``miss``/``hitgroup`` and
  ``create_pipeline`` compile on the CPU (set-up).
None of these belongs on a frame's path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._optix import DEFAULT_ABI
from .accel import GeometryAccel, Instance, InstanceAccel, TriangleInput
from .accel._warmup import warm_up as warm_up_accel
from .cuda import DeviceContext
from .program import Module, Pipeline, ProgramGroup, ShaderBindingTable

__all__ = ["Context"]


class Context(DeviceContext):
    """An OptiX device context on CuPy's CUDA context of one device: the entry point of optixasync.

    Parameters
    ----------
    device : int, optional
        CUDA device ordinal (default: CuPy's current device).
    validation : bool
        Turn on OptiX's validation mode. OptiX then checks every launch and
        build, and makes ``optixLaunch`` and ``optixAccelBuild`` wait for all
        outstanding work of the context: the host can no longer run ahead.
        Meant for debugging.
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
    handle, device_id, stream, memory, pinned, deferred
        See :class:`~optixasync.cuda.DeviceContext`.

    Examples
    --------
    >>> with optixasync.Context() as ctx:                       # doctest: +SKIP
    ...     module = ctx.create_module("hello_triangle.cu")
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
        super().__init__(device, validation=validation, log_level=log_level, abi=abi, disk_cache=disk_cache)
        if warm_up:
            try:
                warm_up_accel(self)
            except BaseException as exc:
                # The caller never gets this context to close: close it here, as leaving a `with` block does
                # after an exception (the warm-up's error is the one raised).
                self.__exit__(type(exc), exc, exc.__traceback__)
                raise

    # -- programs ----------------------------------------------------------------
    def create_module(self, source: Any, **kwargs: Any) -> Module:
        """Compile ``source`` (``.cu`` path, kernel file name or CUDA text) into a :class:`Module`.

        Keyword arguments are those of :class:`~optixasync.program.Module`.
        """
        return Module(self, source, **kwargs)

    def create_raygen(self, module: Module, entry: str) -> ProgramGroup:
        """A raygen program group for the ``__raygen__`` entry ``entry`` of ``module``."""
        return ProgramGroup.raygen(self, module, entry)

    def create_miss(self, module: Module | None, entry: str | None) -> ProgramGroup:
        """A miss program group (``module=None, entry=None``: nothing runs on a miss)."""
        return ProgramGroup.miss(self, module, entry)

    def create_hitgroup(self, module: Module, closesthit: str | None = None, anyhit: str | None = None) -> ProgramGroup:
        """A hit group program group from the ``__closesthit__`` and/or ``__anyhit__`` entries of ``module``."""
        return ProgramGroup.hitgroup(self, module, closesthit=closesthit, anyhit=anyhit)

    def create_pipeline(self, program_groups: Sequence[ProgramGroup], **kwargs: Any) -> Pipeline:
        """Link ``program_groups`` into a :class:`~optixasync.program.Pipeline` (keywords: its options)."""
        return Pipeline(self, program_groups, **kwargs)

    def create_sbt(self, raygen: Any, miss: Sequence[Any] = (), hitgroup: Sequence[Any] = (), *,
                   stream: Any = None) -> ShaderBindingTable:
        """A :class:`~optixasync.program.ShaderBindingTable` uploaded on ``stream`` (default: the context's)."""
        return ShaderBindingTable(self, raygen, miss, hitgroup, stream=stream)

    # -- acceleration structures -----------------------------------------------------
    def create_geometry_accel(self, inputs: TriangleInput | Sequence[TriangleInput], options: Any = None, *,
                              stream: Any = None) -> GeometryAccel:
        """Build a :class:`~optixasync.accel.GeometryAccel` (GAS) over triangle inputs, on ``stream``."""
        return GeometryAccel(self, inputs, options, stream=stream)

    def create_instance_accel(self, instances: Sequence[Instance], options: Any = None, *,
                              stream: Any = None) -> InstanceAccel:
        """Build an :class:`~optixasync.accel.InstanceAccel` (IAS) over instances, on ``stream``."""
        return InstanceAccel(self, instances, options, stream=stream)
