"""Turning CUDA C++ programs into OptiX modules, program groups, pipelines and SBTs."""

from __future__ import annotations

from ._cache import cache_key, clear_cache, compile_ptx_cached, optix_cache_dir
from ._module import Module, ProgramGroup
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

__all__ = [
    "Module",
    "ModuleOptions",
    "Pipeline",
    "PipelineOptions",
    "ProgramGroup",
    "ShaderBindingTable",
    "compute_stack_sizes",
    "merge_stack_sizes",
    "record_dtype",
    "CompileOptions",
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
