"""Turning CUDA C++ programs into OptiX modules, program groups, pipelines and SBTs.

Modules (compiled serially or in parallel tasks, specialized by bound values, with payload types), the
built-in intersection modules of spheres and curves, program groups of every kind (raygen, miss, hit groups
with intersection programs, direct and continuation callables), pipelines with their stack sizes, and the
shader binding table.
"""

from __future__ import annotations

from ._builtin import BuiltinModule
from ._cache import cache_key, clear_cache, compile_ptx_cached, optix_cache_dir
from ._groups import ProgramGroup
from ._module import Module
from ._nvrtc import (
    CompileOptions,
    compile_ptx,
    driver_cuda_version,
    fit_ptx_to_driver,
    max_ptx_isa_for_cuda,
    nvrtc_version,
    ptx_isa_version,
    unsupported_ptx_message,
)
from ._options import ModuleOptions, PipelineOptions
from ._pipeline import Pipeline, compute_stack_sizes, merge_stack_sizes
from ._sbt import ShaderBindingTable, record_dtype
from ._specialize import BoundValue, PayloadType, bind_params

__all__ = [
    "BoundValue",
    "BuiltinModule",
    "Module",
    "ModuleOptions",
    "PayloadType",
    "Pipeline",
    "PipelineOptions",
    "ProgramGroup",
    "ShaderBindingTable",
    "compute_stack_sizes",
    "merge_stack_sizes",
    "record_dtype",
    "CompileOptions",
    "bind_params",
    "cache_key",
    "clear_cache",
    "compile_ptx",
    "compile_ptx_cached",
    "driver_cuda_version",
    "fit_ptx_to_driver",
    "max_ptx_isa_for_cuda",
    "nvrtc_version",
    "optix_cache_dir",
    "ptx_isa_version",
    "unsupported_ptx_message",
]
