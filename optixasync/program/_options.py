"""Option dataclasses for modules and pipelines, and their ctypes forms in each ABI's layout."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

from .._optix import DEFAULT_ABI, structs_for
from .._optix import types as t
from ..validation import as_int
from ._specialize import BoundValue, PayloadType, pack_bound_values, pack_payload_types

__all__ = ["ModuleOptions", "PipelineOptions"]


def _as_tuple(name: str, values: Any, cls: type) -> tuple:
    items = tuple(values)
    for k, item in enumerate(items):
        if not isinstance(item, cls):
            raise TypeError(f"{name}[{k}] must be a {cls.__name__}, got {type(item).__name__}")
    return items


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
    bound_values : tuple of BoundValue
        Launch-parameter bytes fixed at compile time (specialization; see
        :func:`~optixasync.program.bind_params`). Every launch of the module's programs must carry exactly
        these bytes there; OptiX does not check it.
    payload_types : tuple of PayloadType
        Typed payloads of the module's traces (at most 8). With payload types, the pipeline's
        ``num_payload_values`` must be 0 and each program group names the type it uses.
    """

    max_register_count: int = 0
    opt_level: t.CompileOptimizationLevel = t.CompileOptimizationLevel.DEFAULT
    debug_level: t.CompileDebugLevel = t.CompileDebugLevel.DEFAULT
    bound_values: tuple[BoundValue, ...] = field(default=())
    payload_types: tuple[PayloadType, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "bound_values", _as_tuple("bound_values", self.bound_values, BoundValue))
        object.__setattr__(self, "payload_types", _as_tuple("payload_types", self.payload_types, PayloadType))
        if len(self.payload_types) > t.COMPILE_MAX_PAYLOAD_TYPES:
            raise ValueError(f"a module declares at most {t.COMPILE_MAX_PAYLOAD_TYPES} payload types, "
                             f"got {len(self.payload_types)}")
        pack_bound_values(self.bound_values)  # overlapping bound values are refused here, not by OptiX

    def to_struct(self, abi: int = DEFAULT_ABI) -> Any:
        """``OptixModuleCompileOptions`` in ``abi``'s layout; the arrays it points into ride on ``struct.keep``."""
        s = structs_for(abi).module_compile_options()
        s.maxRegisterCount = int(self.max_register_count)
        s.optLevel = int(self.opt_level)
        s.debugLevel = int(self.debug_level)
        keep: list[Any] = []
        if self.bound_values:
            entries, held = pack_bound_values(self.bound_values)
            s.boundValues, s.numBoundValues = ctypes.addressof(entries), len(self.bound_values)
            keep += held
        if self.payload_types:
            types, held = pack_payload_types(self.payload_types)
            s.payloadTypes, s.numPayloadTypes = ctypes.addressof(types), len(self.payload_types)
            keep += held
        s.keep = keep  # ctypes stores no Python references for void* fields: the arrays live as long as s
        return s


@dataclass(frozen=True)
class PipelineOptions:
    """Options that every module of one pipeline must share.

    Attributes
    ----------
    num_payload_values : int
        32-bit payload registers carried by a trace (at most 32); 0 with payload types.
    num_attribute_values : int
        Attribute registers reported by intersections (2 for triangles; custom primitives up to 8).
    launch_params_name : str
        Name of the ``extern "C" __constant__`` launch parameter variable.
    traversable_graph_flags : TraversableGraphFlags
        ``ALLOW_SINGLE_GAS`` when the pipeline traces one GAS directly,
        ``ALLOW_SINGLE_LEVEL_INSTANCING`` for an IAS over GASes, ``ALLOW_ANY`` otherwise (motion
        transforms between an IAS and its GASes need ``ALLOW_ANY``).
    exception_flags : ExceptionFlags
        Exceptions OptiX checks for (each check costs time).
    primitive_type_flags : PrimitiveTypeFlags
        Kinds of primitives the pipeline intersects (``TRIANGLE``, ``SPHERE``, ``CUSTOM``, the curve kinds).
    uses_motion_blur : bool
        Whether motion acceleration structures or motion transforms are traced.
    launch_params_size : int
        ``sizeof`` the launch-parameter variable, checked by the OptiX compiler (ABI 118, OptiX 9.1, only;
        0 leaves it unchecked). Ignored by the older ABIs, whose layout has no such field.
    """

    num_payload_values: int = 4
    num_attribute_values: int = 2
    launch_params_name: str = "params"
    traversable_graph_flags: t.TraversableGraphFlags = t.TraversableGraphFlags.ALLOW_ANY
    exception_flags: t.ExceptionFlags = t.ExceptionFlags.NONE
    primitive_type_flags: t.PrimitiveTypeFlags = t.PrimitiveTypeFlags.TRIANGLE
    uses_motion_blur: bool = False
    launch_params_size: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.num_payload_values <= 32:
            raise ValueError(f"num_payload_values must be in [0, 32], got {self.num_payload_values}")
        if not 0 <= self.num_attribute_values <= 8:
            raise ValueError(f"num_attribute_values must be in [0, 8], got {self.num_attribute_values}")
        if not (self.launch_params_name.isascii() and self.launch_params_name.isidentifier()):
            raise ValueError(f"launch_params_name must be a C identifier, got {self.launch_params_name!r}")
        as_int("launch_params_size", self.launch_params_size, 0)
        if not isinstance(self.uses_motion_blur, bool):
            raise TypeError(f"uses_motion_blur must be a bool, got {type(self.uses_motion_blur).__name__}")

    def to_struct(self, abi: int = DEFAULT_ABI) -> Any:
        """``OptixPipelineCompileOptions`` in ``abi``'s layout."""
        structs = structs_for(abi)
        s = structs.pipeline_compile_options()
        s.usesMotionBlur = int(self.uses_motion_blur)
        s.traversableGraphFlags = int(self.traversable_graph_flags)
        s.numPayloadValues = int(self.num_payload_values)
        s.numAttributeValues = int(self.num_attribute_values)
        s.exceptionFlags = int(self.exception_flags)
        # ctypes keeps the bytes object alive as long as the struct.
        s.pipelineLaunchParamsVariableName = self.launch_params_name.encode()
        s.usesPrimitiveTypeFlags = int(self.primitive_type_flags) & 0xFFFFFFFF
        s.allowOpacityMicromaps = 0
        if structs.has_link_depths:
            s.pipelineLaunchParamsSizeInBytes = int(self.launch_params_size)
        return s

    @property
    def max_traversable_depth(self) -> int:
        """Depth of the traversable graph implied by the flags (for the pipeline's stack sizes).

        1 for a single GAS, 2 for one level of instances; ``ALLOW_ANY`` is taken to mean an IAS over GASes,
        unless motion is on, where an IAS, a motion transform and a GAS make 3.
        """
        if self.traversable_graph_flags == t.TraversableGraphFlags.ALLOW_SINGLE_GAS:
            return 1
        if self.traversable_graph_flags == t.TraversableGraphFlags.ALLOW_ANY and self.uses_motion_blur:
            return 3
        return 2
