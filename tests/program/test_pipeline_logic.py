"""Stack sizing, option dataclasses and the argument checks of Pipeline, on the CPU (no driver calls)."""

from __future__ import annotations

import dataclasses
import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from optixasync import ExceptionFlags, PrimitiveTypeFlags, TraversableGraphFlags

# The binding's ctypes declarations (StackSizes, the compile-option structs and enums) have no public door.
from optixasync._optix import structs_for
from optixasync._optix import types as t
from optixasync.cuda import Context, LaunchQueue
from optixasync.program import (
    Module,
    ModuleOptions,
    Pipeline,
    PipelineOptions,
    ProgramGroup,
    ShaderBindingTable,
    compute_stack_sizes,
    merge_stack_sizes,
)
from optixasync.validation import coerce_options


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
        traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_LEVEL_INSTANCING,
        exception_flags=ExceptionFlags.STACK_OVERFLOW | ExceptionFlags.TRACE_DEPTH,
        primitive_type_flags=PrimitiveTypeFlags.TRIANGLE | PrimitiveTypeFlags.CUSTOM,
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
        (TraversableGraphFlags.ALLOW_SINGLE_GAS, 1),
        (TraversableGraphFlags.ALLOW_SINGLE_LEVEL_INSTANCING, 2),
        (TraversableGraphFlags.ALLOW_ANY, 2),
    ],
)
def test_max_traversable_depth(flags, depth):
    assert PipelineOptions(traversable_graph_flags=flags).max_traversable_depth == depth


def test_pipeline_options_compare_and_hash_by_value():
    a = PipelineOptions(num_payload_values=4, traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS)
    b = PipelineOptions(num_payload_values=4, traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS)
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
#
# Program groups, pipelines and SBTs are made through their own constructors on a stand-in device context: it
# answers the few OptiX calls a constructor makes (handles, stack sizes, record headers) and fails the test on any
# other one, so an argument check that passes here ran before optixLaunch or any other driver work.


class NoDriverCall(AssertionError):
    pass


class FakeApi:
    """The OptiX calls that creating groups, pipelines and SBTs make, answered without a driver."""

    def __init__(self, abi: int = 87) -> None:
        self._handles = itertools.count(0x1000, 0x10)
        self.abi = abi
        self.structs = structs_for(abi)
        self.calls: list = []  # (name, arguments) of the calls made

    def _new_handle(self, handle_ref) -> int:
        handle_ref._obj.value = next(self._handles)  # byref() keeps the object it points at in _obj
        return 0

    def optixProgramGroupCreate(self, ctx, desc, count, options, log, log_size, handle):
        self.calls.append(("optixProgramGroupCreate", t.ProgramGroupDesc.from_buffer_copy(desc._obj), options._obj))
        return self._new_handle(handle)

    def optixPipelineCreate(self, ctx, compile_options, link_options, groups, count, log, log_size, handle):
        self.calls.append(("optixPipelineCreate", bytes(compile_options._obj), bytes(link_options._obj)))
        return self._new_handle(handle)

    def optixProgramGroupGetStackSize(self, group, sizes, pipeline):
        sizes._obj.cssCC, sizes._obj.dssDC, sizes._obj.cssRG = 24, 16, 100
        return 0

    def optixPipelineSetStackSize(self, pipeline, dc_traversal, dc_state, continuation, depth):
        self.calls.append(("optixPipelineSetStackSize", (dc_traversal, dc_state, continuation, depth)))
        return 0

    def optixSbtRecordPackHeader(self, group, address):
        return 0

    def optixPipelineDestroy(self, pipeline):
        return 0

    def __getattr__(self, name):
        raise NoDriverCall(f"unexpected OptiX call {name}")


class FakeDeviceContext(Context):
    """A device context without a device: the real ownership checks, stand-ins for the driver and memory."""

    def __init__(self, device_id: int = 0, abi: int = 87) -> None:  # no super().__init__(): it would load the driver
        self.handle = 0xC0DE
        self.device_id = device_id
        self.abi = abi
        self.api = FakeApi(abi)
        self.stream = 0x5000 + device_id  # a raw CUstream handle is a stream-like
        self.tracked: list = []
        self.memory = SimpleNamespace(empty=lambda shape, dtype, stream: SimpleNamespace(
            data=SimpleNamespace(ptr=0xD000), nbytes=int(np.prod(shape)) * np.dtype(dtype).itemsize))
        self.uploads: list = []  # (target, host bytes) of every upload_into
        self.deferred = SimpleNamespace(after=lambda stream, *objects: SimpleNamespace(done=True, ptr=0xE000))
        self.launch_queue = LaunchQueue(None)

    def upload_into(self, target, array, stream=None) -> None:
        assert array.nbytes == target.nbytes
        self.uploads.append((target, np.array(array)))

    def track(self, resource):
        self.require_open()
        self.tracked.append(resource)
        return resource


class FakeModule:
    """A compiled module as program groups and pipelines see it (its entry check is the real one)."""

    require_entry = Module.require_entry

    def __init__(self, ctx: Context, options: PipelineOptions | None = None) -> None:
        self.ctx = ctx
        self.name = "fake.cu"
        self.handle = 0xAB
        self.pipeline_options = options or PipelineOptions()
        self.entries = frozenset({"__raygen__rg", "__miss__ms", "__closesthit__ch"})


@pytest.fixture
def fake_ctx() -> FakeDeviceContext:
    return FakeDeviceContext()


def make_group(ctx: Context, kind: str, options: PipelineOptions | None = None) -> ProgramGroup:
    module = FakeModule(ctx, options)
    if kind == "raygen":
        return ProgramGroup.raygen(ctx, module, "__raygen__rg")
    if kind == "miss":
        return ProgramGroup.miss(ctx, module, "__miss__ms")
    return ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__ch")


def test_the_stand_in_context_builds_groups_pipelines_and_sbts(fake_ctx):
    raygen, miss, hit = (make_group(fake_ctx, kind) for kind in ("raygen", "miss", "hitgroup"))
    assert [g.kind for g in (raygen, miss, hit)] == [t.ProgramGroupKind.RAYGEN, t.ProgramGroupKind.MISS,
                                                     t.ProgramGroupKind.HITGROUP]
    pipeline = Pipeline(fake_ctx, [raygen, miss, hit])
    sbt = ShaderBindingTable(fake_ctx, raygen, [miss], [hit, hit])
    assert pipeline.handle != 0 and sbt.nbytes == 32 + 32 + 2 * 32
    assert fake_ctx.tracked == [raygen, miss, hit, pipeline, sbt]  # every resource registers itself
    with pytest.raises(ValueError, match="no entry point '__raygen__other'"):
        ProgramGroup.raygen(fake_ctx, FakeModule(fake_ctx), "__raygen__other")


@pytest.mark.parametrize("groups", [[], ["raygen"], [None]])
def test_pipeline_needs_program_groups(fake_ctx, groups):
    with pytest.raises(TypeError, match="ProgramGroup"):
        Pipeline(fake_ctx, groups)


def test_pipeline_needs_exactly_one_raygen(fake_ctx):
    miss = make_group(fake_ctx, "miss")
    with pytest.raises(ValueError, match="raygen"):
        Pipeline(fake_ctx, [miss])
    raygen = make_group(fake_ctx, "raygen")
    with pytest.raises(ValueError, match="raygen"):
        Pipeline(fake_ctx, [raygen, make_group(fake_ctx, "raygen"), miss])


@pytest.mark.parametrize("depth", [0, 32])
def test_pipeline_trace_depth_range(fake_ctx, depth):
    with pytest.raises(ValueError, match="max_trace_depth"):
        Pipeline(fake_ctx, [make_group(fake_ctx, "raygen")], max_trace_depth=depth)


def test_pipeline_modules_with_different_options(fake_ctx):
    raygen = make_group(fake_ctx, "raygen", PipelineOptions(num_payload_values=4))
    miss = make_group(fake_ctx, "miss", PipelineOptions(num_payload_values=2))
    with pytest.raises(ValueError, match="different PipelineOptions"):
        Pipeline(fake_ctx, [raygen, miss])


def test_pipeline_options_must_match_the_modules(fake_ctx):
    raygen = make_group(fake_ctx, "raygen", PipelineOptions(num_payload_values=4))
    with pytest.raises(ValueError, match="differ"):
        Pipeline(fake_ctx, [raygen], pipeline_options={"num_payload_values": 2})
    with pytest.raises(TypeError, match="unknown"):
        Pipeline(fake_ctx, [raygen], pipeline_options={"payloads": 2})


def test_pipeline_refuses_groups_of_another_context(fake_ctx):
    other = FakeDeviceContext(device_id=1)
    with pytest.raises(ValueError, match="belongs to another context \\(device 1\\); this context is on device 0"):
        Pipeline(fake_ctx, [make_group(other, "raygen")])


@pytest.fixture
def pipeline_and_sbt(fake_ctx):
    raygen, miss = make_group(fake_ctx, "raygen"), make_group(fake_ctx, "miss")
    return Pipeline(fake_ctx, [raygen, miss]), ShaderBindingTable(fake_ctx, raygen, [miss])


@pytest.mark.parametrize("sbt", ["notsbt", None, 0])
def test_launch_needs_a_shader_binding_table(pipeline_and_sbt, sbt):
    pipeline, _ = pipeline_and_sbt
    with pytest.raises(TypeError, match="ShaderBindingTable"):
        pipeline.launch(sbt, None, 1, 1)


@pytest.mark.parametrize("dims", [(0, 1, 1), (1, 0, 1), (4, 4, 0), (-1, 1, 1)])
def test_launch_dimensions_at_least_one(pipeline_and_sbt, dims):
    pipeline, sbt = pipeline_and_sbt
    with pytest.raises(ValueError, match="launch dimensions"):
        pipeline.launch(sbt, None, *dims)


def test_launch_thread_limit(pipeline_and_sbt):
    pipeline, sbt = pipeline_and_sbt
    with pytest.raises(ValueError, match="2\\*\\*30"):
        pipeline.launch(sbt, None, 2**16, 2**15)


def test_launch_needs_params_size_for_a_raw_pointer(pipeline_and_sbt):
    pipeline, sbt = pipeline_and_sbt
    with pytest.raises(TypeError, match="params_size"):
        pipeline.launch(sbt, 0x1000, 4, 4)


def test_launch_refuses_an_sbt_of_another_context(pipeline_and_sbt):
    pipeline, _ = pipeline_and_sbt
    other = FakeDeviceContext(device_id=1)
    foreign = ShaderBindingTable(other, make_group(other, "raygen"), [make_group(other, "miss")])
    with pytest.raises(ValueError, match="shader binding table belongs to another context"):
        pipeline.launch(foreign, np.zeros(4, np.uint8), 4, 4)


def test_launch_on_a_closed_pipeline(pipeline_and_sbt):
    pipeline, sbt = pipeline_and_sbt
    pipeline.close()
    assert pipeline.handle == 0
    with pytest.raises(RuntimeError, match="closed Pipeline"):
        pipeline.launch(sbt, np.zeros(4, np.uint8), 4, 4)


def test_a_valid_launch_reaches_the_driver(pipeline_and_sbt):
    pipeline, sbt = pipeline_and_sbt
    with pytest.raises(NoDriverCall, match="optixLaunch"):
        pipeline.launch(sbt, np.zeros(4, np.uint8), 4, 4)


def test_closing_an_sbt_zeroes_its_struct_and_a_launch_with_it_is_refused(pipeline_and_sbt):
    pipeline, sbt = pipeline_and_sbt
    struct = sbt.struct
    assert struct.raygenRecord != 0 and not sbt.closed
    sbt.close()
    assert sbt.closed
    assert bytes(struct) == bytes(len(bytes(struct)))  # no freed device address is left in it
    with pytest.raises(RuntimeError, match="closed ShaderBindingTable"):
        pipeline.launch(sbt, np.zeros(4, np.uint8), 4, 4)


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"params_size": 8}, ValueError, "params_size 8 exceeds the 4 bytes of params"),
    ({"params_size": -1}, ValueError, "params_size"),
    ({"params_size": 2.0}, TypeError, "params_size"),
])
def test_launch_checks_params_size(pipeline_and_sbt, kwargs, exc, match):
    pipeline, sbt = pipeline_and_sbt
    with pytest.raises(exc, match=match):
        pipeline.launch(sbt, np.zeros(4, np.uint8), 4, 4, **kwargs)


def test_launch_params_size_within_params_reaches_the_driver(pipeline_and_sbt):
    pipeline, sbt = pipeline_and_sbt
    with pytest.raises(NoDriverCall, match="optixLaunch"):
        pipeline.launch(sbt, np.zeros(8, np.uint8), 4, 4, params_size=4)


@pytest.mark.parametrize(("dims", "name"), [((4.0, 1, 1), "width"), ((4, True, 1), "height"), ((4, 1, "1"), "depth")])
def test_launch_dimensions_must_be_integers(pipeline_and_sbt, dims, name):
    pipeline, sbt = pipeline_and_sbt
    with pytest.raises(TypeError, match=f"{name} must be an integer"):
        pipeline.launch(sbt, np.zeros(4, np.uint8), *dims)


def test_pipeline_trace_depth_must_be_an_integer(fake_ctx):
    with pytest.raises(TypeError, match="max_trace_depth must be an integer"):
        Pipeline(fake_ctx, [make_group(fake_ctx, "raygen")], max_trace_depth=1.0)


@pytest.mark.parametrize("which", ["module", "entry"])
def test_miss_group_needs_both_module_and_entry_or_neither(fake_ctx, which):
    module = FakeModule(fake_ctx)
    args = (module, None) if which == "module" else (None, "__miss__ms")
    with pytest.raises(ValueError, match=f"both module and entry, or neither: {which} was given"):
        ProgramGroup.miss(fake_ctx, *args)
    assert ProgramGroup.miss(fake_ctx, None, None).modules == []  # neither: a miss group that does nothing


def test_a_launch_the_driver_refuses_raises_optix_error():
    from optixasync.errors import OptixError
    from optixasync.testing import StubCuda

    with StubCuda() as cuda:
        ctx = cuda.context()
        pipeline, sbt = cuda.pipeline(ctx), cuda.sbt(ctx)
        ctx.api.optixLaunch = lambda *args: 7251  # OPTIX_ERROR_LAUNCH_FAILURE
        with pytest.raises(OptixError, match="optixLaunch"):
            pipeline.launch(sbt, 0x1000, 4, 4, params_size=16)
