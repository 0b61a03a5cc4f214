"""Wrong input on a real driver: each mistake is a clear Python exception, and the context stays usable."""

from __future__ import annotations

import re

import numpy as np
import pytest

import optixasync
from optixasync import TraversableGraphFlags, struct_dtype

# The ABI tests ask the real driver through the OptiX binding itself (its loader, probe and function-table
# request), which has no public door: optixasync.Context only ever requests the ABIs it has a name table for.
from optixasync._driver import load_optix_library
from optixasync._optix import SUPPORTED_ABIS, OptixApi
from optixasync._optix import types as optix_types
from optixasync._optix._loader import probe_abi
from optixasync.accel import GeometryAccel, TriangleInput
from optixasync.errors import NvrtcError, OptixError
from optixasync.program import Module, Pipeline, PipelineOptions, ProgramGroup, ShaderBindingTable
from optixasync.testing import DEFAULT_TRIANGLE, HELLO_PARAMS, render_triangle

pytestmark = pytest.mark.gpu

HELLO_OPTIONS = PipelineOptions(num_payload_values=4, traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS)
MISS_DATA = struct_dtype([("color", "float3")])  # the miss record of hello_triangle.cu


@pytest.fixture(scope="module")
def hello(ctx, tmp_path_factory):
    """Module, program groups and pipeline of ``hello_triangle.cu``, built as ``optixasync.testing.HelloRenderer`` builds them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPTIXASYNC_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
        module = Module(ctx, "hello_triangle.cu", pipeline_options=HELLO_OPTIONS)
        raygen = ProgramGroup.raygen(ctx, module, "__raygen__hello")
        miss = ProgramGroup.miss(ctx, module, "__miss__hello")
        hit = ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__hello")
        pipeline = Pipeline(ctx, [raygen, miss, hit], max_trace_depth=1)
    groups = {"module": module, "raygen": raygen, "miss": miss, "hit": hit, "pipeline": pipeline}
    yield groups
    ctx.stream.synchronize()
    for name in ("pipeline", "hit", "miss", "raygen", "module"):
        groups[name].close()


@pytest.fixture
def sbt(ctx, hello):
    miss_data = np.zeros((), MISS_DATA)
    miss_data["color"] = (0.1, 0.2, 0.3)
    return ShaderBindingTable(ctx, hello["raygen"], [(hello["miss"], miss_data)], [hello["hit"]])


# --- entry points ---------------------------------------------------------------------------------------------------


def test_unknown_raygen_lists_the_defined_entries(ctx, hello):
    with pytest.raises(ValueError) as info:
        ProgramGroup.raygen(ctx, hello["module"], "__raygen__nope")
    message = str(info.value)
    assert "__raygen__nope" in message
    assert "__raygen__hello" in message
    assert "__miss__hello" in message
    assert "__closesthit__hello" in message


def test_entry_of_the_wrong_kind(ctx, hello):
    with pytest.raises(ValueError, match="__raygen__"):
        ProgramGroup.raygen(ctx, hello["module"], "__miss__hello")
    with pytest.raises(ValueError, match="__miss__"):
        ProgramGroup.miss(ctx, hello["module"], "__raygen__hello")
    with pytest.raises(ValueError, match="__closesthit__"):
        ProgramGroup.hitgroup(ctx, hello["module"], closesthit="__miss__hello")
    with pytest.raises(ValueError, match="__anyhit__"):
        ProgramGroup.hitgroup(ctx, hello["module"], anyhit="__closesthit__hello")


def test_unknown_miss_and_hit_entries(ctx, hello):
    with pytest.raises(ValueError, match="__miss__hello"):
        ProgramGroup.miss(ctx, hello["module"], "__miss__nope")
    with pytest.raises(ValueError, match="__closesthit__hello"):
        ProgramGroup.hitgroup(ctx, hello["module"], closesthit="__closesthit__nope")


def test_entry_name_must_be_a_str(ctx, hello):
    with pytest.raises(TypeError, match="str"):
        ProgramGroup.raygen(ctx, hello["module"], b"__raygen__hello")


# --- ABIs -----------------------------------------------------------------------------------------------------------


def test_default_abi_is_accepted():
    assert probe_abi(load_optix_library(), 87) == 0


def test_abi_118_is_refused_with_unsupported_abi_version():
    if probe_abi(load_optix_library(), 118) == 0:
        pytest.skip("this driver accepts ABI 118")
    with pytest.raises(OptixError) as info:
        OptixApi(118)
    assert info.value.status == int(optix_types.OptixResult.ERROR_UNSUPPORTED_ABI_VERSION) == 7801
    assert info.value.name == "OPTIX_ERROR_UNSUPPORTED_ABI_VERSION"
    assert "driver" in str(info.value)
    assert "118" in str(info.value)


@pytest.mark.parametrize("abi", sorted(SUPPORTED_ABIS))
def test_refused_abi_raises_the_probed_status(abi):
    status = probe_abi(load_optix_library(), abi)
    if status == 0:
        pytest.skip(f"this driver accepts ABI {abi}")
    with pytest.raises(OptixError) as info:
        OptixApi(abi)
    assert info.value.status == status
    assert str(abi) in str(info.value)


# --- compile errors -------------------------------------------------------------------------------------------------


def test_cuda_syntax_error(ctx):
    with pytest.raises(NvrtcError) as info:
        Module(ctx, 'extern "C" __global__ void __raygen__x() { oops }\n')
    err = info.value
    assert err.log, "NVRTC gave no log"
    assert re.search(r"\(1\): error", err.log), err.log
    assert "oops" in err.log
    assert "oops" in str(err)


# --- shader binding table and launch --------------------------------------------------------------------------------


def test_sbt_raygen_of_the_wrong_kind(ctx, hello):
    with pytest.raises(ValueError, match="raygen"):
        optixasync.ShaderBindingTable(ctx, hello["miss"])


def test_sbt_raygen_not_a_program_group(ctx):
    with pytest.raises(TypeError, match="ProgramGroup"):
        optixasync.ShaderBindingTable(ctx, "__raygen__hello")


def test_sbt_miss_and_hit_of_the_wrong_kind(ctx, hello):
    with pytest.raises(ValueError, match="miss"):
        optixasync.ShaderBindingTable(ctx, hello["raygen"], [hello["hit"]])
    with pytest.raises(ValueError, match="hitgroup"):
        optixasync.ShaderBindingTable(ctx, hello["raygen"], [hello["miss"]], [hello["miss"]])


def test_sbt_layout(ctx, hello, sbt):
    s = sbt.struct
    assert s.raygenRecord != 0
    assert (s.missRecordStrideInBytes, s.missRecordCount) == (48, 1)
    assert (s.hitgroupRecordStrideInBytes, s.hitgroupRecordCount) == (32, 1)
    assert sbt.nbytes == 32 + 48 + 32
    np.testing.assert_array_equal(
        np.frombuffer(sbt.host_bytes[32 + 32 : 32 + 44].tobytes(), np.float32), np.float32([0.1, 0.2, 0.3])
    )


def params_buffer(ctx):
    """Device memory of the size of ``HelloParams`` (the launches below are refused before reading it)."""
    return ctx.memory.empty((HELLO_PARAMS.itemsize,), np.uint8, ctx.stream)


@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-4, 4)])
def test_launch_dimensions(ctx, hello, sbt, dims):
    params = params_buffer(ctx)
    with pytest.raises(ValueError, match="launch dimensions"):
        hello["pipeline"].launch(sbt, params, *dims)


def test_launch_needs_a_shader_binding_table(ctx, hello):
    params = params_buffer(ctx)
    with pytest.raises(TypeError, match="ShaderBindingTable"):
        hello["pipeline"].launch("notsbt", params, 1, 1)


# --- geometry -------------------------------------------------------------------------------------------------------


@pytest.fixture
def no_gpu_work(ctx, monkeypatch):
    """Make any upload or device allocation through ``ctx`` fail the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("GPU work was started for an invalid input")

    monkeypatch.setattr(ctx, "upload", refuse)
    monkeypatch.setattr(ctx.memory, "alloc", refuse)
    monkeypatch.setattr(ctx.memory, "empty", refuse)


def test_float64_vertices_fail_before_gpu_work(ctx, no_gpu_work):
    with pytest.raises(ValueError, match="float64"):
        GeometryAccel(ctx, TriangleInput(DEFAULT_TRIANGLE.astype(np.float64)))


def test_raw_array_instead_of_a_triangle_input(ctx, no_gpu_work):
    with pytest.raises(TypeError, match="TriangleInput"):
        GeometryAccel(ctx, DEFAULT_TRIANGLE)
    with pytest.raises(TypeError, match="TriangleInput"):
        GeometryAccel(ctx, [])


def test_bad_accel_options_fail_before_gpu_work(ctx, no_gpu_work):
    with pytest.raises(ValueError, match="prefer"):
        GeometryAccel(ctx, TriangleInput(DEFAULT_TRIANGLE), options={"prefer": "fastest"})
    with pytest.raises(TypeError, match="unknown"):
        GeometryAccel(ctx, TriangleInput(DEFAULT_TRIANGLE), options={"compaction": True})


# --- afterwards -----------------------------------------------------------------------------------------------------


def test_context_still_renders_after_the_errors(ctx):
    result = render_triangle(ctx, 16, 16)
    assert (result.image[..., 3] > 0).sum() > 0
    assert (result.image[..., 3] == -1.0).sum() > 0
