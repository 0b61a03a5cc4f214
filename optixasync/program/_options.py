"""Option dataclasses for modules and pipelines, and their ctypes forms."""

from __future__ import annotations

from dataclasses import dataclass

from .._optix import types as t

__all__ = ["ModuleOptions", "PipelineOptions"]


@dataclass(frozen=True)
class ModuleOptions:
    """How OptiX compiles one module.

    Attributes
    ----------
    max_register_count : int
        Register limit per thread (0: OptiX decides).
    opt_level : CompileOptimizationLevel
        OptiX optimisation level.
    debug_level : CompileDebugLevel
        OptiX debug level; ``FULL`` disables optimisations.
    """

    max_register_count: int = 0
    opt_level: t.CompileOptimizationLevel = t.CompileOptimizationLevel.DEFAULT
    debug_level: t.CompileDebugLevel = t.CompileDebugLevel.DEFAULT

    def to_struct(self) -> t.ModuleCompileOptions:
        s = t.ModuleCompileOptions()
        s.maxRegisterCount = int(self.max_register_count)
        s.optLevel = int(self.opt_level)
        s.debugLevel = int(self.debug_level)
        return s


@dataclass(frozen=True)
class PipelineOptions:
    """Options that every module of one pipeline must share.

    Attributes
    ----------
    num_payload_values : int
        32-bit payload registers carried by a trace (at most 32).
    num_attribute_values : int
        Attribute registers reported by intersections (2 for triangles).
    launch_params_name : str
        Name of the ``extern "C" __constant__`` launch parameter variable.
    traversable_graph_flags : TraversableGraphFlags
        ``ALLOW_SINGLE_GAS`` when the pipeline traces one GAS directly,
        ``ALLOW_SINGLE_LEVEL_INSTANCING`` for an IAS over GASes, ``ALLOW_ANY`` otherwise.
    exception_flags : ExceptionFlags
        Exceptions OptiX checks for (each check costs time).
    primitive_type_flags : PrimitiveTypeFlags
        Kinds of primitives the pipeline intersects.
    uses_motion_blur : bool
        Whether motion acceleration structures are traced.
    """

    num_payload_values: int = 4
    num_attribute_values: int = 2
    launch_params_name: str = "params"
    traversable_graph_flags: t.TraversableGraphFlags = t.TraversableGraphFlags.ALLOW_ANY
    exception_flags: t.ExceptionFlags = t.ExceptionFlags.NONE
    primitive_type_flags: t.PrimitiveTypeFlags = t.PrimitiveTypeFlags.TRIANGLE
    uses_motion_blur: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.num_payload_values <= 32:
            raise ValueError(f"num_payload_values must be in [0, 32], got {self.num_payload_values}")
        if not 0 <= self.num_attribute_values <= 8:
            raise ValueError(f"num_attribute_values must be in [0, 8], got {self.num_attribute_values}")
        if not (self.launch_params_name.isascii() and self.launch_params_name.isidentifier()):
            raise ValueError(f"launch_params_name must be a C identifier, got {self.launch_params_name!r}")

    def to_struct(self) -> t.PipelineCompileOptions:
        s = t.PipelineCompileOptions()
        s.usesMotionBlur = int(self.uses_motion_blur)
        s.traversableGraphFlags = int(self.traversable_graph_flags)
        s.numPayloadValues = int(self.num_payload_values)
        s.numAttributeValues = int(self.num_attribute_values)
        s.exceptionFlags = int(self.exception_flags)
        # ctypes keeps the bytes object alive as long as the struct.
        s.pipelineLaunchParamsVariableName = self.launch_params_name.encode()
        s.usesPrimitiveTypeFlags = int(self.primitive_type_flags) & 0xFFFFFFFF
        s.allowOpacityMicromaps = 0
        return s

    @property
    def max_traversable_depth(self) -> int:
        """Depth of the traversable graph implied by the flags (for the pipeline's stack sizes).

        1 for a single GAS, else 2: one level of instances (``ALLOW_ANY`` is taken to mean no deeper graph).
        """
        # A graph that may be one GAS or instances of GAS is as deep as the instances.
        if self.traversable_graph_flags == t.TraversableGraphFlags.ALLOW_SINGLE_GAS:
            return 1
        return 2
