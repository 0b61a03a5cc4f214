"""Stack sizing, option dataclasses and the argument checks of Pipeline, on the CPU (no driver calls)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from optixasync._options import coerce_options
from optixasync._optix import types as t
from optixasync.program import (
    ModuleOptions,
    Pipeline,
    PipelineOptions,
    ProgramGroup,
    ShaderBindingTable,
    compute_stack_sizes,
    merge_stack_sizes,
)


def stack_sizes(**values: int) -> t.StackSizes:
    sizes = t.StackSizes()
    for name, value in values.items():
        setattr(sizes, name, value)
    return sizes


BASE = dict(cssRG=100, cssMS=20, cssCH=50, cssAH=8, cssIS=16)

# --- compute_stack_sizes ---------------------------------------------------------------------------------------------


def test_depth_one():
    # raygen frame + the larger of (closest hit or miss) and (intersection + any hit)
    assert compute_stack_sizes(stack_sizes(**BASE), max_trace_depth=1) == (0, 0, 100 + max(50, 16 + 8))
    assert compute_stack_sizes(stack_sizes(**BASE), 1)[2] == 150


def test_depth_two_adds_one_closest_hit_frame():
    assert compute_stack_sizes(stack_sizes(**BASE), 2) == (0, 0, 100 + 50 + 50)


def test_depth_grows_linearly():
    sizes = stack_sizes(**BASE)
    for depth in range(1, 8):
        assert compute_stack_sizes(sizes, depth)[2] == 100 + (depth - 1) * 50 + 50


def test_intersection_plus_anyhit_wins_at_the_deepest_level():
    sizes = stack_sizes(cssRG=100, cssMS=20, cssCH=50, cssAH=30, cssIS=40)
    assert compute_stack_sizes(sizes, 1)[2] == 100 + 70
    # only the deepest level counts IS + AH; the levels above it count CH
    assert compute_stack_sizes(sizes, 2)[2] == 100 + 50 + 70
    assert compute_stack_sizes(sizes, 3)[2] == 100 + 50 + 50 + 70


def test_miss_larger_than_closest_hit():
    sizes = stack_sizes(cssRG=64, cssMS=80, cssCH=50, cssAH=0, cssIS=0)
    assert compute_stack_sizes(sizes, 1)[2] == 64 + 80
    assert compute_stack_sizes(sizes, 2)[2] == 64 + 80 + 80


def test_depth_zero_is_the_raygen_frame_only():
    assert compute_stack_sizes(stack_sizes(**BASE), 0) == (0, 0, 100)


def test_callables():
    sizes = stack_sizes(**BASE, cssCC=10, dssDC=12)
    dc_traversal, dc_state, continuation = compute_stack_sizes(sizes, 1, max_cc_depth=2, max_dc_depth=3)
    assert dc_traversal == dc_state == 3 * 12
    cc_tree = 2 * 10
    assert continuation == 100 + cc_tree + max(50 + cc_tree, 16 + 8)
    _, _, deeper = compute_stack_sizes(sizes, 2, max_cc_depth=2, max_dc_depth=3)
    assert deeper == 100 + cc_tree + (50 + cc_tree) + (50 + cc_tree)


def test_all_zero():
    assert compute_stack_sizes(t.StackSizes(), 1) == (0, 0, 0)


# --- merge_stack_sizes -----------------------------------------------------------------------------------------------


def _as_dict(sizes: t.StackSizes) -> dict[str, int]:
    return {name: getattr(sizes, name) for name, _ in t.StackSizes._fields_}


def test_merge_is_the_fieldwise_max():
    raygen = stack_sizes(cssRG=100)
    miss = stack_sizes(cssMS=20, dssDC=4)
    hit = stack_sizes(cssCH=50, cssAH=8, cssIS=16, cssCC=3)
    other_hit = stack_sizes(cssCH=70, cssAH=2, dssDC=9)
    merged = merge_stack_sizes([raygen, miss, hit, other_hit])
    assert isinstance(merged, t.StackSizes)
    assert _as_dict(merged) == {"cssRG": 100, "cssMS": 20, "cssCH": 70, "cssAH": 8, "cssIS": 16, "cssCC": 3, "dssDC": 9}


def test_merge_of_nothing_is_zero():
    assert set(_as_dict(merge_stack_sizes([])).values()) == {0}


def test_merge_does_not_modify_its_inputs():
    a = stack_sizes(cssRG=1)
    b = stack_sizes(cssRG=5)
    merge_stack_sizes([a, b])
    assert (a.cssRG, b.cssRG) == (1, 5)


# --- PipelineOptions and ModuleOptions -------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [-1, 33])
def test_payload_values_range(count):
    with pytest.raises(ValueError, match="num_payload_values"):
        PipelineOptions(num_payload_values=count)


def test_payload_values_limits_accepted():
    assert PipelineOptions(num_payload_values=0).num_payload_values == 0
    assert PipelineOptions(num_payload_values=32).num_payload_values == 32


@pytest.mark.parametrize("count", [-1, 9])
def test_attribute_values_range(count):
    with pytest.raises(ValueError, match="num_attribute_values"):
        PipelineOptions(num_attribute_values=count)


@pytest.mark.parametrize("name", ["", "my params", "1params", "params;", "a-b"])
def test_bad_launch_params_name(name):
    with pytest.raises(ValueError, match="launch_params_name"):
        PipelineOptions(launch_params_name=name)


def test_pipeline_options_defaults_to_struct():
    s = PipelineOptions().to_struct()
    assert isinstance(s, t.PipelineCompileOptions)
    assert s.usesMotionBlur == 0
    assert s.traversableGraphFlags == 0
    assert s.numPayloadValues == 4
    assert s.numAttributeValues == 2
    assert s.exceptionFlags == 0
    assert s.pipelineLaunchParamsVariableName == b"params"
    assert s.usesPrimitiveTypeFlags == 0x80000000
    assert s.allowOpacityMicromaps == 0


def test_pipeline_options_to_struct():
    options = PipelineOptions(
        num_payload_values=8,
        num_attribute_values=3,
        launch_params_name="frame_params",
        traversable_graph_flags=t.TraversableGraphFlags.ALLOW_SINGLE_LEVEL_INSTANCING,
        exception_flags=t.ExceptionFlags.STACK_OVERFLOW | t.ExceptionFlags.TRACE_DEPTH,
        primitive_type_flags=t.PrimitiveTypeFlags.TRIANGLE | t.PrimitiveTypeFlags.CUSTOM,
        uses_motion_blur=True,
    )
    s = options.to_struct()
    assert s.usesMotionBlur == 1
    assert s.traversableGraphFlags == 2
    assert s.numPayloadValues == 8
    assert s.numAttributeValues == 3
    assert s.exceptionFlags == 3
    assert s.pipelineLaunchParamsVariableName == b"frame_params"
    assert s.usesPrimitiveTypeFlags == 0x80000001


@pytest.mark.parametrize(
    ("flags", "depth"),
    [
        (t.TraversableGraphFlags.ALLOW_SINGLE_GAS, 1),
        (t.TraversableGraphFlags.ALLOW_SINGLE_LEVEL_INSTANCING, 2),
        (t.TraversableGraphFlags.ALLOW_ANY, 2),
    ],
)
def test_max_traversable_depth(flags, depth):
    assert PipelineOptions(traversable_graph_flags=flags).max_traversable_depth == depth


def test_pipeline_options_compare_and_hash_by_value():
    a = PipelineOptions(num_payload_values=4, traversable_graph_flags=t.TraversableGraphFlags.ALLOW_SINGLE_GAS)
    b = PipelineOptions(num_payload_values=4, traversable_graph_flags=t.TraversableGraphFlags.ALLOW_SINGLE_GAS)
    assert a == b
    assert hash(a) == hash(b)
    assert a != PipelineOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.num_payload_values = 5  # type: ignore[misc]


def test_module_options_to_struct():
    s = ModuleOptions(
        max_register_count=64, opt_level=t.CompileOptimizationLevel.LEVEL_3, debug_level=t.CompileDebugLevel.MINIMAL
    ).to_struct()
    assert isinstance(s, t.ModuleCompileOptions)
    assert (s.maxRegisterCount, s.optLevel, s.debugLevel) == (64, 0x2343, 0x2351)
    assert (s.numBoundValues, s.numPayloadTypes) == (0, 0)
    d = ModuleOptions().to_struct()
    assert (d.maxRegisterCount, d.optLevel, d.debugLevel) == (0, 0, 0)


# --- coerce_options -------------------------------------------------------------------------------------------------


def test_coerce_none_gives_defaults():
    assert coerce_options(PipelineOptions, None) == PipelineOptions()


def test_coerce_dict():
    options = coerce_options(PipelineOptions, {"num_payload_values": 2, "launch_params_name": "p"})
    assert options == PipelineOptions(num_payload_values=2, launch_params_name="p")


def test_coerce_instance_is_returned_as_is():
    options = PipelineOptions(num_payload_values=6)
    assert coerce_options(PipelineOptions, options) is options


def test_coerce_unknown_key_names_it():
    with pytest.raises(TypeError) as info:
        coerce_options(PipelineOptions, {"num_payload_values": 2, "num_payloads": 3})
    message = str(info.value)
    assert "num_payloads" in message
    assert "num_payload_values" in message  # the accepted names are listed
    assert "PipelineOptions" in message


@pytest.mark.parametrize("value", [4, "params", [("num_payload_values", 4)], ModuleOptions()])
def test_coerce_wrong_type(value):
    with pytest.raises(TypeError, match="PipelineOptions"):
        coerce_options(PipelineOptions, value)


def test_coerce_dict_is_validated():
    with pytest.raises(ValueError, match="num_payload_values"):
        coerce_options(PipelineOptions, {"num_payload_values": 40})


# --- Pipeline argument checks (before any driver call) --------------------------------------------------------------


def fake_group(kind: t.ProgramGroupKind, options: PipelineOptions | None = None) -> ProgramGroup:
    group = ProgramGroup.__new__(ProgramGroup)
    group.kind = kind
    group.modules = [SimpleNamespace(pipeline_options=options or PipelineOptions())]
    group.handle = 0
    return group


@pytest.mark.parametrize("groups", [[], ["raygen"], [None]])
def test_pipeline_needs_program_groups(groups):
    with pytest.raises(TypeError, match="ProgramGroup"):
        Pipeline(None, groups)


def test_pipeline_needs_exactly_one_raygen():
    miss = fake_group(t.ProgramGroupKind.MISS)
    with pytest.raises(ValueError, match="raygen"):
        Pipeline(None, [miss])
    raygen = fake_group(t.ProgramGroupKind.RAYGEN)
    with pytest.raises(ValueError, match="raygen"):
        Pipeline(None, [raygen, fake_group(t.ProgramGroupKind.RAYGEN), miss])


@pytest.mark.parametrize("depth", [0, 32])
def test_pipeline_trace_depth_range(depth):
    with pytest.raises(ValueError, match="max_trace_depth"):
        Pipeline(None, [fake_group(t.ProgramGroupKind.RAYGEN)], max_trace_depth=depth)


def test_pipeline_modules_with_different_options():
    raygen = fake_group(t.ProgramGroupKind.RAYGEN, PipelineOptions(num_payload_values=4))
    miss = fake_group(t.ProgramGroupKind.MISS, PipelineOptions(num_payload_values=2))
    with pytest.raises(ValueError, match="different PipelineOptions"):
        Pipeline(None, [raygen, miss])


def test_pipeline_options_must_match_the_modules():
    raygen = fake_group(t.ProgramGroupKind.RAYGEN, PipelineOptions(num_payload_values=4))
    with pytest.raises(ValueError, match="differ"):
        Pipeline(None, [raygen], pipeline_options={"num_payload_values": 2})
    with pytest.raises(TypeError, match="unknown"):
        Pipeline(None, [raygen], pipeline_options={"payloads": 2})


def _bare_pipeline() -> Pipeline:
    pipeline = Pipeline.__new__(Pipeline)
    pipeline.handle = 0
    pipeline.ctx = None
    return pipeline


@pytest.mark.parametrize("sbt", ["notsbt", None, 0])
def test_launch_needs_a_shader_binding_table(sbt):
    with pytest.raises(TypeError, match="ShaderBindingTable"):
        _bare_pipeline().launch(sbt, None, 1, 1)


@pytest.mark.parametrize("dims", [(0, 1, 1), (1, 0, 1), (4, 4, 0), (-1, 1, 1)])
def test_launch_dimensions_at_least_one(dims):
    sbt = ShaderBindingTable.__new__(ShaderBindingTable)
    with pytest.raises(ValueError, match="launch dimensions"):
        _bare_pipeline().launch(sbt, None, *dims)


def test_launch_thread_limit():
    sbt = ShaderBindingTable.__new__(ShaderBindingTable)
    with pytest.raises(ValueError, match="2\\*\\*30"):
        _bare_pipeline().launch(sbt, None, 2**16, 2**15)


def test_launch_needs_params_size_for_a_raw_pointer():
    sbt = ShaderBindingTable.__new__(ShaderBindingTable)
    with pytest.raises(TypeError, match="params_size"):
        _bare_pipeline().launch(sbt, 0x1000, 4, 4)
