"""The host structs whose layout differs between the OptiX ABIs optixasync speaks, one declaration per layout.

Read from the public OptiX headers (``optix_types.h``) of each release:

* OptiX 8.0 and 8.1 (ABI 87 and 93) share every layout optixasync uses.
* OptiX 9.0 (ABI 105) adds ``allowClusteredGeometry`` at the end of
  ``OptixPipelineCompileOptions`` (40 -> 48 bytes).
* OptiX 9.1 (ABI 118) adds ``pipelineLaunchParamsSizeInBytes`` after the
  launch-parameter name in ``OptixPipelineCompileOptions`` (56 bytes),
  ``baseModule`` at the end of ``OptixModuleCompileOptions`` (40 -> 48), the
  callable and traversable-graph depths to ``OptixPipelineLinkOptions``
  (4 -> 20), and drops the displacement micromap from
  ``OptixBuildInputTriangleArray`` (240 -> 144). ``OptixBuildInput`` stays
  1032 bytes (its union is padded to 1024), so the ABI 87 triangle array,
  whose first 144 bytes are the ABI 118 one and whose displacement part
  optixasync leaves zero, fills it identically.

Everything else the binding declares has one layout in all four ABIs
(:mod:`optixasync._optix._types`). ``tests/_optix/test_abi_layouts.py`` pins
each ABI's sizes and offsets.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from . import _types as t
from ._abi import check_abi

__all__ = ["AbiStructs", "ModuleCompileOptions118", "PipelineCompileOptions105", "PipelineCompileOptions118",
           "PipelineLinkOptions118", "BuildInputTriangleArray118", "structs_for"]


class PipelineCompileOptions105(ctypes.Structure):
    _fields_ = [*t.PipelineCompileOptions._fields_, ("allowClusteredGeometry", ctypes.c_int)]


class PipelineCompileOptions118(ctypes.Structure):
    _fields_ = [
        ("usesMotionBlur", ctypes.c_int),
        ("traversableGraphFlags", ctypes.c_uint),
        ("numPayloadValues", ctypes.c_int),
        ("numAttributeValues", ctypes.c_int),
        ("exceptionFlags", ctypes.c_uint),
        ("pipelineLaunchParamsVariableName", ctypes.c_char_p),
        ("pipelineLaunchParamsSizeInBytes", ctypes.c_size_t),
        ("usesPrimitiveTypeFlags", ctypes.c_uint),
        ("allowOpacityMicromaps", ctypes.c_int),
        ("allowClusteredGeometry", ctypes.c_int),
    ]


class ModuleCompileOptions118(ctypes.Structure):
    _fields_ = [*t.ModuleCompileOptions._fields_, ("baseModule", ctypes.c_void_p)]


class PipelineLinkOptions118(ctypes.Structure):
    _fields_ = [
        ("maxTraceDepth", ctypes.c_uint),
        ("maxContinuationCallableDepth", ctypes.c_uint),
        ("maxDirectCallableDepthFromState", ctypes.c_uint),
        ("maxDirectCallableDepthFromTraversal", ctypes.c_uint),
        ("maxTraversableGraphDepth", ctypes.c_uint),
    ]


class BuildInputTriangleArray118(ctypes.Structure):
    # Declared for the layout check only: builds fill the ABI 87 declaration (see the module docstring).
    _fields_ = [f for f in t.BuildInputTriangleArray._fields_ if f[0] != "displacementMicromap"]


@dataclass(frozen=True)
class AbiStructs:
    """The struct classes of one ABI for what changed between ABIs.

    Attributes
    ----------
    abi : int
    module_compile_options, pipeline_compile_options, pipeline_link_options, triangle_array : type
        ctypes structure classes.
    """

    abi: int
    module_compile_options: type[ctypes.Structure]
    pipeline_compile_options: type[ctypes.Structure]
    pipeline_link_options: type[ctypes.Structure]
    triangle_array: type[ctypes.Structure]

    @property
    def has_clustered_geometry(self) -> bool:
        """Whether the pipeline compile options carry ``allowClusteredGeometry`` (ABI 105 and later)."""
        return self.abi >= 105

    @property
    def has_link_depths(self) -> bool:
        """Whether the link options carry the callable and graph depths, and the compile options the launch
        parameters' size (ABI 118)."""
        return self.abi >= 118


_ABI_87 = (t.ModuleCompileOptions, t.PipelineCompileOptions, t.PipelineLinkOptions, t.BuildInputTriangleArray)
_STRUCTS: dict[int, AbiStructs] = {
    87: AbiStructs(87, *_ABI_87),
    93: AbiStructs(93, *_ABI_87),
    105: AbiStructs(105, t.ModuleCompileOptions, PipelineCompileOptions105, t.PipelineLinkOptions,
                    t.BuildInputTriangleArray),
    118: AbiStructs(118, ModuleCompileOptions118, PipelineCompileOptions118, PipelineLinkOptions118,
                    BuildInputTriangleArray118),
}


def structs_for(abi: int) -> AbiStructs:
    """The struct classes of ``abi`` for the structs whose layout differs between ABIs.

    Raises
    ------
    ValueError
        On an ABI optixasync does not speak.
    """
    return _STRUCTS[check_abi(abi)]
