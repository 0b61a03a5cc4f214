"""What a device context reports, read through a stand-in API: each property asked only where the ABI has it."""

from __future__ import annotations

import ctypes

import pytest

from optixasync._optix import DeviceProperties, query_device_properties
from optixasync._optix import types as t

P = t.DeviceProperty

#: What an H200 would answer (no RT cores), as raw property words.
ANSWERS = {
    P.RTCORE_VERSION: 0, P.LIMIT_MAX_TRACE_DEPTH: 31, P.LIMIT_MAX_TRAVERSABLE_GRAPH_DEPTH: 31,
    P.LIMIT_MAX_PRIMITIVES_PER_GAS: 2**29, P.LIMIT_MAX_INSTANCES_PER_IAS: 2**24, P.LIMIT_MAX_INSTANCE_ID: 2**28 - 1,
    P.LIMIT_NUM_BITS_INSTANCE_VISIBILITY_MASK: 8, P.LIMIT_MAX_SBT_RECORDS_PER_GAS: 2**28,
    P.LIMIT_MAX_SBT_OFFSET: 2**28 - 1, P.SHADER_EXECUTION_REORDERING: 0, P.COOP_VEC: 1, P.CLUSTER_ACCEL: 1,
    P.LIMIT_MAX_CLUSTER_VERTICES: 256, P.LIMIT_MAX_CLUSTER_TRIANGLES: 256,
}


class FakeApi:
    def __init__(self, abi: int, answers: dict) -> None:
        self.abi = abi
        self.answers = answers
        self.asked: list[int] = []

    def optixDeviceContextGetProperty(self, handle, prop, value, size):
        assert handle == 0xC0DE and size == 4
        self.asked.append(prop)
        if prop not in self.answers:
            return 7001
        ctypes.cast(value, ctypes.POINTER(ctypes.c_uint))[0] = self.answers[prop]
        return 0

    def error_name(self, status):
        return "OPTIX_ERROR_INVALID_VALUE"

    def error_string(self, status):
        return "unknown property"


@pytest.mark.parametrize("abi", [87, 93])
def test_before_9_0_the_new_properties_are_not_asked(abi):
    api = FakeApi(abi, ANSWERS)
    props = query_device_properties(api, 0xC0DE)
    assert isinstance(props, DeviceProperties) and props.abi == abi
    assert (props.cooperative_vectors, props.cluster_accel, props.max_cluster_vertices) == (None, None, None)
    assert P.COOP_VEC not in api.asked and P.CLUSTER_ACCEL not in api.asked
    assert props.shader_execution_reordering is False  # the property exists since ABI 87
    assert props.rtcore_version == 0 and not props.rt_cores
    assert props.max_trace_depth == 31 and props.visibility_mask_bits == 8


@pytest.mark.parametrize("abi", [105, 118])
def test_from_9_0_cooperative_vectors_and_clusters(abi):
    answers = {**ANSWERS, P.RTCORE_VERSION: 10, P.SHADER_EXECUTION_REORDERING: 1}
    props = query_device_properties(FakeApi(abi, answers), 0xC0DE)
    assert props.rt_cores and props.rtcore_version == 10
    assert props.shader_execution_reordering is True
    assert (props.cooperative_vectors, props.cluster_accel) == (True, True)
    assert (props.max_cluster_vertices, props.max_cluster_triangles) == (256, 256)
    assert props.as_dict()["abi"] == abi


def test_a_refused_query_reads_as_unknown_and_never_stops_the_context(caplog):
    answers = {k: v for k, v in ANSWERS.items() if k not in (P.SHADER_EXECUTION_REORDERING, P.RTCORE_VERSION)}
    with caplog.at_level("DEBUG", logger="optixasync.optix"):
        props = query_device_properties(FakeApi(87, answers), 0xC0DE)
    assert props.shader_execution_reordering is None and props.rtcore_version is None and props.rt_cores is None
    assert props.max_trace_depth == 31
    assert "optixDeviceContextGetProperty(SHADER_EXECUTION_REORDERING) refused" in caplog.text
