"""optixasync: OptiX ray tracing from Python with an asynchronous frame pipeline.

Needs only the NVIDIA driver (R535+): the OptiX host API comes from the
driver's ``libnvoptix``, kernels are compiled at run time by NVRTC, and
device memory, streams and events come from CuPy (the ``cuda13`` or
``cuda12`` extra, by the driver's CUDA version).

Layers, each importing only those before it: the OptiX binding
(``_optix``), ``cuda`` (device context, streams, events, memory),
``program`` (NVRTC, modules, pipelines, SBT), ``accel`` (GAS, IAS),
``scheduler`` (frames in flight), ``scene``,
``render`` (the path tracer); ``diagnostics`` beside them. ``cpu`` (the
CPU device: :class:`CpuContext`, the kernel's host build) needs no driver. See
``docs/architecture.md``.
"""

from __future__ import annotations

from ._optix._types import BuildFlags, ExceptionFlags, PrimitiveTypeFlags, RayFlags, TraversableGraphFlags
from ._structs import struct_dtype
from ._version import __version__
from .accel import (
    AccelOptions,
    CurveInput,
    CustomInput,
    GeometryAccel,
    Instance,
    InstanceAccel,
    MatrixMotionTransform,
    MotionOptions,
    RayCaster,
    SphereInput,
    SRTMotionTransform,
    TriangleInput,
    srt_key,
)
from .cpu import CpuContext
from .cuda import Context
from .errors import (
    AssetPathError,
    CompilerNotFoundError,
    CudaError,
    DriverNotFoundError,
    FrameAbortedError,
    HostBuildError,
    LoadLimitError,
    MissingExtraError,
    NvrtcError,
    OptixAsyncError,
    OptixError,
    ResultsOverflowError,
)
from .program import (
    BuiltinModule,
    CompileOptions,
    Module,
    ModuleOptions,
    Pipeline,
    PipelineOptions,
    ProgramGroup,
    ShaderBindingTable,
    clear_cache,
    record_dtype,
)
from .scheduler import Frame, FrameHandle, FrameResult, FrameScheduler, SchedulerOptions

__all__ = [
    "AccelOptions",
    "AssetPathError",
    "BuildFlags",
    "BuiltinModule",
    "CompileOptions",
    "CompilerNotFoundError",
    "Context",
    "CpuContext",
    "CudaError",
    "CurveInput",
    "CustomInput",
    "DriverNotFoundError",
    "ExceptionFlags",
    "Frame",
    "FrameAbortedError",
    "FrameHandle",
    "FrameResult",
    "FrameScheduler",
    "HostBuildError",
    "GeometryAccel",
    "Instance",
    "InstanceAccel",
    "LoadLimitError",
    "MatrixMotionTransform",
    "MissingExtraError",
    "Module",
    "ModuleOptions",
    "MotionOptions",
    "NvrtcError",
    "OptixAsyncError",
    "OptixError",
    "Pipeline",
    "PipelineOptions",
    "PrimitiveTypeFlags",
    "ProgramGroup",
    "RayCaster",
    "RayFlags",
    "ResultsOverflowError",
    "SRTMotionTransform",
    "SchedulerOptions",
    "ShaderBindingTable",
    "SphereInput",
    "TraversableGraphFlags",
    "TriangleInput",
    "clear_cache",
    "record_dtype",
    "srt_key",
    "struct_dtype",
    "__version__",
]
