"""Hit groups with intersection programs, built-in modules, callables, specialization, payload types and parallel
compilation, on a stand-in device context (CPU; NVRTC compiles the real device code of ``kernels/primitives.cu``).

Every argument check here runs before the OptiX call it guards: the stand-in records the calls it answers and
fails the test on any other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_optix import FakeContext

from optixasync import PrimitiveTypeFlags, TraversableGraphFlags, struct_dtype
from optixasync._optix import types as t
from optixasync.errors import OptixError
from optixasync.program import (
    BoundValue,
    BuiltinModule,
    CompileOptions,
    Module,
    ModuleOptions,
    PayloadType,
    Pipeline,
    PipelineOptions,
    ProgramGroup,
    ShaderBindingTable,
    bind_params,
)

SOURCE = (Path(__file__).resolve().parent / "kernels" / "primitives.cu").read_text()
S = t.PayloadSemantics
PAYLOAD = PayloadType((S.TRACE_CALLER_READ_WRITE | S.CH_WRITE | S.MS_WRITE, S.TRACE_CALLER_READ | S.CH_WRITE))
OPTIONS = PipelineOptions(num_payload_values=4, num_attribute_values=8,
                          primitive_type_flags=PrimitiveTypeFlags.TRIANGLE | PrimitiveTypeFlags.CUSTOM
                          | PrimitiveTypeFlags.SPHERE | PrimitiveTypeFlags.ROUND_CUBIC_BSPLINE)


@pytest.fixture
def ctx() -> FakeContext:
    return FakeContext()


@pytest.fixture
def module(ctx) -> Module:
    return Module(ctx, SOURCE, pipeline_options=OPTIONS)


def test_module_entries_include_the_callables(module):
    assert {"__direct_callable__tint", "__continuation_callable__shadow", "__intersection__box",
            "__raygen__all"} <= module.entries
    assert module.tasks_executed == 0 and module.ctx.api.last("optixModuleCreate")


# --- hit groups -----------------------------------------------------------------------------------------------------


def test_a_custom_primitive_hit_group_names_its_intersection_program(ctx, module):
    group = ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__custom", intersection="__intersection__box")
    desc = ctx.api.last("optixProgramGroupCreate")[1]
    assert desc.hitgroup.moduleIS == module.handle and desc.hitgroup.entryFunctionNameIS == b"__intersection__box"
    assert desc.hitgroup.entryFunctionNameCH == b"__closesthit__custom" and not desc.hitgroup.moduleAH
    assert group.intersection == "custom"


def test_an_intersection_program_of_another_module(ctx, module):
    other = Module(ctx, SOURCE, pipeline_options=OPTIONS)
    ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__custom", intersection="__intersection__box",
                          intersection_module=other)
    desc = ctx.api.last("optixProgramGroupCreate")[1]
    assert desc.hitgroup.moduleIS == other.handle and desc.hitgroup.moduleCH == module.handle


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"intersection": "__intersection__nope"}, "no entry point '__intersection__nope'"),
    ({"intersection": "__closesthit__custom"}, "must start with '__intersection__'"),
])
def test_bad_intersection_names(ctx, module, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ProgramGroup.hitgroup(ctx, module, **kwargs)
    assert not [c for c in ctx.api.calls if c[0] == "optixProgramGroupCreate"]


def test_a_hit_group_program_without_its_module(ctx):
    with pytest.raises(ValueError, match="needs the module that holds them"):
        ProgramGroup.hitgroup(ctx, None, closesthit="__closesthit__custom")
    with pytest.raises(ValueError, match="needs the module that holds it"):
        ProgramGroup.hitgroup(ctx, None, intersection="__intersection__box")


def test_a_sphere_hit_group_takes_the_builtin_module(ctx, module):
    spheres = BuiltinModule(ctx, "sphere", pipeline_options=OPTIONS)
    name, options, _ = ctx.api.last("optixBuiltinISModuleGet")
    assert (options.builtinISModuleType, options.usesMotionBlur, options.curveEndcapFlags) == (0x2506, 0, 0)
    assert options.buildFlags == int(t.BuildFlags.PREFER_FAST_TRACE)
    group = ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__sphere", intersection_module=spheres)
    desc = ctx.api.last("optixProgramGroupCreate")[1]
    assert desc.hitgroup.moduleIS == spheres.handle and desc.hitgroup.entryFunctionNameIS is None
    assert group.intersection == "sphere" and spheres in group.modules
    with pytest.raises(ValueError, match="has no entry points"):
        ProgramGroup.hitgroup(ctx, module, intersection="__intersection__box", intersection_module=spheres)


def test_a_curve_module_with_motion_and_end_caps(ctx):
    options = PipelineOptions(primitive_type_flags=PrimitiveTypeFlags.ROUND_CUBIC_BSPLINE, uses_motion_blur=True)
    BuiltinModule(ctx, "cubic_bspline", pipeline_options=options, motion=True, endcaps=True,
                  build_flags=int(t.BuildFlags.PREFER_FAST_BUILD | t.BuildFlags.ALLOW_COMPACTION))
    _, builtin, pipeline = ctx.api.last("optixBuiltinISModuleGet")
    assert (builtin.builtinISModuleType, builtin.usesMotionBlur, builtin.curveEndcapFlags) == (0x2502, 1, 1)
    assert builtin.buildFlags == 8 | 2
    assert pipeline.usesMotionBlur == 1 and pipeline.usesPrimitiveTypeFlags == 4


@pytest.mark.parametrize(("primitive", "kwargs", "match"), [
    ("triangle", {}, "no built-in intersection module: OptiX intersects triangles itself"),
    ("custom", {}, "custom primitives need an __intersection__ program"),
    ("cone", {}, "unknown primitive kind 'cone'; known: triangle, custom, sphere, linear"),
    ("sphere", {"pipeline_options": PipelineOptions()}, "must include PrimitiveTypeFlags.SPHERE"),
    ("sphere", {"motion": True}, "needs PipelineOptions\\(uses_motion_blur=True\\)"),
    ("linear", {"endcaps": True, "pipeline_options": PipelineOptions(primitive_type_flags=PrimitiveTypeFlags.ROUND_LINEAR)},
     "end caps are for quadratic and cubic curves"),
    ("sphere", {"endcaps": True}, "end caps are for quadratic and cubic curves"),
    ("cubic_bspline_rocaps", {}, "need OptiX ABI 105 \\(OptiX 9.0\\) or newer; this context uses 87 \\(OptiX 8.0\\)"),
])
def test_builtin_modules_refuse_before_optix(ctx, primitive, kwargs, match):
    kwargs.setdefault("pipeline_options", OPTIONS)
    with pytest.raises(ValueError, match=match):
        BuiltinModule(ctx, primitive, **kwargs)
    assert not ctx.api.calls


def test_rocaps_curves_on_abi_105(ctx):
    ctx105 = FakeContext(abi=105)
    options = PipelineOptions(primitive_type_flags=PrimitiveTypeFlags.ROUND_CUBIC_BSPLINE_ROCAPS)
    BuiltinModule(ctx105, "cubic_bspline_rocaps", pipeline_options=options)
    _, builtin, pipeline = ctx105.api.last("optixBuiltinISModuleGet")
    assert builtin.builtinISModuleType == 0x2509
    assert type(pipeline).__name__ == "PipelineCompileOptions105" and pipeline.usesPrimitiveTypeFlags == 1 << 9


# --- callables ------------------------------------------------------------------------------------------------------


def test_callables_groups(ctx, module):
    both = ProgramGroup.callables(ctx, module, direct="__direct_callable__tint",
                                  continuation="__continuation_callable__shadow")
    desc = ctx.api.last("optixProgramGroupCreate")[1]
    assert desc.kind == t.ProgramGroupKind.CALLABLES
    assert desc.callables.entryFunctionNameDC == b"__direct_callable__tint"
    assert desc.callables.entryFunctionNameCC == b"__continuation_callable__shadow"
    assert (both.direct, both.continuation) == (True, True)
    direct = ProgramGroup.callables(ctx, module, direct="__direct_callable__tint")
    assert (direct.direct, direct.continuation) == (True, False)
    with pytest.raises(ValueError, match="a direct callable, a continuation callable, or both"):
        ProgramGroup.callables(ctx, module)
    with pytest.raises(ValueError, match="must start with '__direct_callable__'"):
        ProgramGroup.callables(ctx, module, direct="__continuation_callable__shadow")


def _pipeline_groups(ctx, module):
    raygen = ProgramGroup.raygen(ctx, module, "__raygen__all")
    direct = ProgramGroup.callables(ctx, module, direct="__direct_callable__tint")
    continuation = ProgramGroup.callables(ctx, module, continuation="__continuation_callable__shadow")
    return raygen, direct, continuation


def test_callables_beyond_the_declared_depth_are_refused(ctx, module):
    raygen, direct, continuation = _pipeline_groups(ctx, module)
    with pytest.raises(ValueError, match="1 direct callable program\\(s\\) but max_direct_callable_depth is 0"):
        Pipeline(ctx, [raygen, direct])
    with pytest.raises(ValueError, match="1 continuation callable program\\(s\\) but max_continuation_callable_depth is 0"):
        Pipeline(ctx, [raygen, continuation], max_direct_callable_depth=1)
    with pytest.raises(ValueError, match="max_direct_callable_depth"):
        Pipeline(ctx, [raygen, direct], max_direct_callable_depth=65)
    assert not [c for c in ctx.api.calls if c[0] == "optixPipelineCreate"]


def test_callables_size_the_stacks(ctx, module):
    raygen, direct, continuation = _pipeline_groups(ctx, module)
    ctx.api.stack_sizes.update(cssCC=24, dssDC=16)
    pipeline = Pipeline(ctx, [raygen, direct, continuation], max_trace_depth=2, max_direct_callable_depth=3,
                        max_continuation_callable_depth=2)
    cc_tree = 2 * 24
    continuation_stack = 100 + cc_tree + (50 + cc_tree) + max(50 + cc_tree, 16 + 8)
    assert pipeline.stack_sizes == (3 * 16, 3 * 16, continuation_stack)
    assert ctx.api.last("optixPipelineSetStackSize")[1] == (48, 48, continuation_stack, 2)
    _, _, link = ctx.api.last("optixPipelineCreate")
    assert type(link) is t.PipelineLinkOptions and link.maxTraceDepth == 2  # ABI 87: the depths are not linked


def test_abi_118_links_the_depths(module):
    ctx = FakeContext(abi=118)
    module = Module(ctx, SOURCE, pipeline_options=OPTIONS)
    raygen, direct, continuation = _pipeline_groups(ctx, module)
    Pipeline(ctx, [raygen, direct, continuation], max_direct_callable_depth=2, max_continuation_callable_depth=1,
             max_traversable_depth=3)
    _, compile_options, link = ctx.api.last("optixPipelineCreate")
    assert type(link).__name__ == "PipelineLinkOptions118"
    assert (link.maxTraceDepth, link.maxContinuationCallableDepth, link.maxDirectCallableDepthFromState,
            link.maxDirectCallableDepthFromTraversal, link.maxTraversableGraphDepth) == (1, 1, 2, 2, 3)
    assert type(compile_options).__name__ == "PipelineCompileOptions118"
    assert ctx.api.last("optixPipelineSetStackSize")[1][3] == 3


def test_a_pipeline_must_enable_the_primitives_of_its_hit_groups(ctx):
    options = PipelineOptions(num_attribute_values=8)  # triangles only
    module = Module(ctx, SOURCE, pipeline_options=options)
    raygen = ProgramGroup.raygen(ctx, module, "__raygen__all")
    custom = ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__custom", intersection="__intersection__box")
    with pytest.raises(ValueError, match="intersects 'custom' primitives .* add PrimitiveTypeFlags.CUSTOM"):
        Pipeline(ctx, [raygen, custom])


def test_sbt_callables_records(ctx, module):
    raygen, direct, continuation = _pipeline_groups(ctx, module)
    weight = struct_dtype([("weight", "float")])
    data = np.zeros((), weight)
    data["weight"] = 0.25
    miss = ProgramGroup.miss(ctx, module, "__miss__all")
    sbt = ShaderBindingTable(ctx, raygen, [miss], callables=[(direct, data), continuation])
    s = sbt.struct
    assert (s.callablesRecordBase, s.callablesRecordStrideInBytes, s.callablesRecordCount) == (0xD000 + 64, 48, 2)
    assert (s.missRecordBase, s.missRecordCount, s.hitgroupRecordBase) == (0xD000 + 32, 1, 0)
    assert sbt.nbytes == 32 + 32 + 2 * 48
    assert np.frombuffer(sbt.host_bytes[96:100].tobytes(), np.float32)[0] == 0.25
    with pytest.raises(ValueError, match="callables record needs a callables program group, got raygen"):
        ShaderBindingTable(ctx, raygen, [miss], callables=[raygen])
    with pytest.raises(ValueError, match="needs at least one miss record"):
        ShaderBindingTable(ctx, raygen, callables=[(direct, data)])


# --- specialization and payload types -------------------------------------------------------------------------------

PARAMS = struct_dtype([("out", "ptr"), ("handle", "handle"), ("time", "float"), ("samples", "uint")])


def test_bound_values_reach_the_module_options(ctx):
    bound = bind_params(PARAMS, {"samples": 16, "time": 0.5})
    assert bound == (BoundValue(20, np.uint32(16).tobytes(), "samples"), BoundValue(16, np.float32(0.5).tobytes(), "time"))
    Module(ctx, SOURCE, pipeline_options=OPTIONS, module_options={"bound_values": bound})
    options = ctx.api.last("optixModuleCreate")[1]
    assert options.numBoundValues == 2
    entries = (t.ModuleCompileBoundValueEntry * 2).from_address(options.boundValues)
    assert [(e.pipelineParamOffsetInBytes, e.sizeInBytes, e.annotation) for e in entries] == [
        (20, 4, b"samples"), (16, 4, b"time")]
    import ctypes
    assert ctypes.string_at(entries[0].boundValuePtr, 4) == np.uint32(16).tobytes()


@pytest.mark.parametrize(("values", "exc", "match"), [
    ({"spp": 1}, KeyError, "no field 'spp'; they have: out, handle, time, samples"),
    ({"samples": -1}, ValueError, "does not fit uint32"),
    ({"samples": 2**32}, ValueError, "does not fit"),
])
def test_bad_bound_values(values, exc, match):
    with pytest.raises(exc, match=match):
        bind_params(PARAMS, values)


def test_overlapping_bound_values_and_sizes(ctx):
    with pytest.raises(ValueError, match="bound values overlap: bytes 16..20 and 18..22"):
        ModuleOptions(bound_values=(BoundValue(16, b"1234"), BoundValue(18, b"5678")))
    with pytest.raises(TypeError, match="non-empty bytes"):
        BoundValue(0, b"")
    options = PipelineOptions(launch_params_size=24)
    with pytest.raises(ValueError, match="ends at byte 28, past the 24 bytes"):
        Module(ctx, SOURCE, pipeline_options=options, module_options={"bound_values": (BoundValue(24, b"abcd", "x"),)})
    assert not ctx.api.calls


def test_payload_types(ctx):
    options = PipelineOptions(num_payload_values=0, num_attribute_values=8)
    module = Module(ctx, SOURCE, pipeline_options=options, module_options={"payload_types": (PAYLOAD,)})
    created = ctx.api.last("optixModuleCreate")[1]
    assert created.numPayloadTypes == 1
    struct = t.PayloadType.from_address(created.payloadTypes)
    assert [struct.payloadSemantics[k] for k in range(struct.numPayloadValues)] == list(PAYLOAD.semantics)
    ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__typed", payload_type=PAYLOAD)
    assert ctx.api.last("optixProgramGroupCreate")[2] == list(PAYLOAD.semantics)
    with pytest.raises(ValueError, match="does not declare this payload type"):
        ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__typed", payload_type=PayloadType((3,)))


def test_payload_types_need_zero_payload_values(ctx):
    with pytest.raises(ValueError, match="needs PipelineOptions\\(num_payload_values=0\\)"):
        Module(ctx, SOURCE, pipeline_options=OPTIONS, module_options={"payload_types": (PAYLOAD,)})
    with pytest.raises(ValueError, match="1 to 32 registers"):
        PayloadType(())
    with pytest.raises(ValueError, match="at most 8 payload types"):
        ModuleOptions(payload_types=(PAYLOAD,) * 9)
    assert not ctx.api.calls


# --- parallel compilation -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 4])
def test_compile_tasks_run_every_task(ctx, threads):
    module = Module(ctx, SOURCE, pipeline_options=OPTIONS, compile_threads=threads)
    assert ctx.api.last("optixModuleCreateWithTasks")
    assert sorted(ctx.api.executed) == list(range(1, 8)) and module.tasks_executed == 7
    assert module.handle == ctx.api.module and ctx.api.destroyed == []


def test_a_module_from_the_optix_cache_runs_no_task(ctx):
    ctx.api.cached = True
    module = Module(ctx, SOURCE, pipeline_options=OPTIONS, compile_threads=4)
    assert module.tasks_executed == 0 and ctx.api.executed == [] and module.handle == ctx.api.module


def test_a_failing_task_destroys_the_module_and_raises(ctx):
    ctx.api.failing_task = 4
    with pytest.raises(OptixError, match="optixTaskExecute\\(program.cu\\) left the module failed") as info:
        Module(ctx, SOURCE, pipeline_options=OPTIONS, compile_threads=3)
    assert info.value.status == 7299
    assert ctx.api.destroyed == [ctx.api.module]
    assert 7 not in ctx.api.executed  # the failed task handed out no children


def test_compile_threads_is_checked_first(ctx):
    with pytest.raises(ValueError, match="compile_threads"):
        Module(ctx, SOURCE, compile_threads=-1)
    with pytest.raises(TypeError, match="compile_threads"):
        Module(ctx, SOURCE, compile_threads=2.0)
    assert not ctx.api.calls


def test_the_same_compile_options_give_the_same_ptx_with_and_without_tasks(ctx):
    """Tasks change how OptiX compiles, not what: the module options and PTX handed over are identical."""
    serial = Module(ctx, SOURCE, pipeline_options=OPTIONS, compile_options=CompileOptions())
    _, module_options, pipeline_options, ptx = ctx.api.last("optixModuleCreate")
    Module(ctx, SOURCE, pipeline_options=OPTIONS, compile_options=CompileOptions(), compile_threads=2)
    _, module_options_tasks, pipeline_options_tasks, ptx_tasks = ctx.api.last("optixModuleCreateWithTasks")
    assert ptx_tasks == ptx and b".entry __raygen__all" in ptx
    assert bytes(module_options_tasks) == bytes(module_options)
    fields = [f[0] for f in type(pipeline_options)._fields_ if f[0] != "pipelineLaunchParamsVariableName"]
    assert [getattr(pipeline_options_tasks, f) for f in fields] == [getattr(pipeline_options, f) for f in fields]
    assert serial.entries


def test_graph_depth_of_motion_pipelines():
    assert PipelineOptions(uses_motion_blur=True).max_traversable_depth == 3
    assert PipelineOptions(uses_motion_blur=True,
                           traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_LEVEL_INSTANCING
                           ).max_traversable_depth == 2
