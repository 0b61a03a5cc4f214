"""The path tracer's compiled program: module, program groups, pipeline, and the SBT layout of a scene.

Blocking calls
--------------
Creating a :class:`PathTracerProgram` compiles ``kernels/pathtracer.cu``
(NVRTC on a PTX cache miss, then OptiX) and links the pipeline: set-up
time, seconds on a cold cache.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .._optix._types import CompileDebugLevel, CompileOptimizationLevel, TraversableGraphFlags
from ..program import CompileOptions, Module, ModuleOptions, Pipeline, PipelineOptions, ProgramGroup, ShaderBindingTable

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["COMPILE_OPTIONS", "INSTANCED_PIPELINE_OPTIONS", "MODULE_OPTIONS", "PIPELINE_OPTIONS", "PathTracerProgram"]

#: Pipeline-wide options: 5 payloads (t, primitive, mesh, barycentrics), one GAS traced directly, no exception
#: checks. Scenes with instanced meshes use :data:`INSTANCED_PIPELINE_OPTIONS`.
PIPELINE_OPTIONS = PipelineOptions(num_payload_values=5, num_attribute_values=2,
                                   traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS)
#: The same for one level of instances. A module compiled for both graphs traced a single GAS 7-8% slower
#: (material scene 170.3 against 159.0 ms, Cornell box 26.9 against 24.8 ms), so each graph gets its own.
INSTANCED_PIPELINE_OPTIONS = dataclasses.replace(
    PIPELINE_OPTIONS, traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_LEVEL_INSTANCING)
#: Full OptiX optimisation, no debug information.
MODULE_OPTIONS = ModuleOptions(opt_level=CompileOptimizationLevel.LEVEL_3, debug_level=CompileDebugLevel.NONE)
#: NVRTC with fast math (approximate rsqrt, sincos, pow; flush denormals).
COMPILE_OPTIONS = CompileOptions(use_fast_math=True)


class PathTracerProgram:
    """``kernels/pathtracer.cu`` compiled and linked: raygen, radiance and shadow miss, one hit group (closest hit and the cut-out any hit).

    Two pipelines share the miss and hit groups: ``pipeline`` launches the plain raygen, ``pipeline_aovs``
    the one that also writes the denoiser's inputs (a separate entry point, so that the plain launch
    carries none of that code).

    Parameters
    ----------
    ctx : Context
    instanced : bool
        Trace an instance structure (scenes with instanced meshes) rather than one GAS.

    Attributes
    ----------
    module : Module
    raygen, raygen_aovs, miss_radiance, miss_shadow, hit : ProgramGroup
    pipeline, pipeline_aovs : Pipeline
    """

    def __init__(self, ctx: Context, *, instanced: bool = False) -> None:
        self.ctx = ctx
        self.instanced = bool(instanced)
        pipeline_options = INSTANCED_PIPELINE_OPTIONS if self.instanced else PIPELINE_OPTIONS
        self.module = Module(ctx, "pathtracer.cu", pipeline_options=pipeline_options, module_options=MODULE_OPTIONS,
                             compile_options=COMPILE_OPTIONS)
        self.raygen = ProgramGroup.raygen(ctx, self.module, "__raygen__pathtrace")
        self.raygen_aovs = ProgramGroup.raygen(ctx, self.module, "__raygen__pathtrace_aovs")
        self.miss_radiance = ProgramGroup.miss(ctx, self.module, "__miss__radiance")
        self.miss_shadow = ProgramGroup.miss(ctx, self.module, "__miss__shadow")
        # The any-hit program runs only on meshes built with any-hit enabled (cut-out materials).
        self.hit = ProgramGroup.hitgroup(ctx, self.module, closesthit="__closesthit__radiance",
                                         anyhit="__anyhit__cutout")
        shared = [self.miss_radiance, self.miss_shadow, self.hit]
        self.pipeline = Pipeline(ctx, [self.raygen, *shared], max_trace_depth=1)
        self.pipeline_aovs = Pipeline(ctx, [self.raygen_aovs, *shared], max_trace_depth=1)

    def shader_binding_table(self, num_meshes: int, stream: Any, *, aovs: bool = False) -> ShaderBindingTable:
        """The SBT of a scene of ``num_meshes`` meshes (one hit record per mesh = build input), uploaded on ``stream``.

        ``aovs``: its raygen record is the one that writes the denoiser's inputs (for ``pipeline_aovs``).
        """
        return ShaderBindingTable(self.ctx, self.raygen_aovs if aovs else self.raygen,
                                  [self.miss_radiance, self.miss_shadow], [self.hit] * num_meshes, stream=stream)

    def close(self) -> None:
        """Destroy the pipelines, then the program groups, then the module (the caller waited for its launches)."""
        for obj in (self.pipeline_aovs, self.pipeline, self.hit, self.miss_shadow, self.miss_radiance,
                    self.raygen_aovs, self.raygen, self.module):
            obj.close()
