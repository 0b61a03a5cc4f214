"""optixasync: OptiX ray tracing from Python with an asynchronous frame pipeline.

Needs only the NVIDIA driver (R535+): the OptiX host API comes from the
driver's ``libnvoptix``, kernels are compiled at run time by NVRTC, and
device memory, streams and events come from CuPy.
"""

from __future__ import annotations

from ._context import Context
from ._optix._types import BuildFlags, ExceptionFlags, PrimitiveTypeFlags, RayFlags, TraversableGraphFlags
from ._structs import struct_dtype
from .accel import AccelOptions, GeometryAccel, Instance, InstanceAccel, RayCaster, TriangleInput
from .errors import CudaError, DriverNotFoundError, NvrtcError, OptixAsyncError, OptixError
from .program import (
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
from .scheduler import FrameHandle, FrameResult, FrameScheduler, SchedulerOptions

__version__ = "0.1.0"

__all__ = [
    "AccelOptions",
    "BuildFlags",
    "CompileOptions",
    "Context",
    "CudaError",
    "DriverNotFoundError",
    "ExceptionFlags",
    "FrameHandle",
    "FrameResult",
    "FrameScheduler",
    "GeometryAccel",
    "Instance",
    "InstanceAccel",
    "RayCaster",
    "Module",
    "ModuleOptions",
    "NvrtcError",
    "OptixAsyncError",
    "OptixError",
    "Pipeline",
    "PipelineOptions",
    "PrimitiveTypeFlags",
    "ProgramGroup",
    "RayFlags",
    "SchedulerOptions",
    "ShaderBindingTable",
    "TraversableGraphFlags",
    "TriangleInput",
    "clear_cache",
    "record_dtype",
    "struct_dtype",
    "__version__",
]
