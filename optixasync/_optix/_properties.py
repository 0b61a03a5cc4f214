"""What an OptiX device context reports about its device (``optixDeviceContextGetProperty``).

Each property is asked for only where the ABI in use has it (the shader
execution reordering property exists in every ABI optixasync speaks; the
cooperative-vector and cluster properties from ABI 105, OptiX 9.0). A
property the ABI lacks, or one the driver refuses to report, reads as None,
which is not the same as "no": the device may have it, the ABI (or driver)
cannot say. The properties describe; a refused query never stops a context.

Blocking calls
--------------
None: each query is a host-side read of the context's device description.
"""

from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass, fields
from typing import Any

from . import _types as t
from ._api import OptixApi

__all__ = ["DeviceProperties", "PROPERTY_MIN_ABI", "query_device_properties"]

#: The first ABI of each property optixasync reads (the others are in every ABI it speaks).
PROPERTY_MIN_ABI: dict[t.DeviceProperty, int] = {
    t.DeviceProperty.COOP_VEC: 105,
    t.DeviceProperty.CLUSTER_ACCEL: 105,
    t.DeviceProperty.LIMIT_MAX_CLUSTER_VERTICES: 105,
    t.DeviceProperty.LIMIT_MAX_CLUSTER_TRIANGLES: 105,
}

# field -> (property, is a yes/no flag word)
_FIELDS: dict[str, tuple[t.DeviceProperty, bool]] = {
    "rtcore_version": (t.DeviceProperty.RTCORE_VERSION, False),
    "max_trace_depth": (t.DeviceProperty.LIMIT_MAX_TRACE_DEPTH, False),
    "max_traversable_graph_depth": (t.DeviceProperty.LIMIT_MAX_TRAVERSABLE_GRAPH_DEPTH, False),
    "max_primitives_per_gas": (t.DeviceProperty.LIMIT_MAX_PRIMITIVES_PER_GAS, False),
    "max_instances_per_ias": (t.DeviceProperty.LIMIT_MAX_INSTANCES_PER_IAS, False),
    "max_instance_id": (t.DeviceProperty.LIMIT_MAX_INSTANCE_ID, False),
    "visibility_mask_bits": (t.DeviceProperty.LIMIT_NUM_BITS_INSTANCE_VISIBILITY_MASK, False),
    "max_sbt_records_per_gas": (t.DeviceProperty.LIMIT_MAX_SBT_RECORDS_PER_GAS, False),
    "max_sbt_offset": (t.DeviceProperty.LIMIT_MAX_SBT_OFFSET, False),
    "shader_execution_reordering": (t.DeviceProperty.SHADER_EXECUTION_REORDERING, True),
    "cooperative_vectors": (t.DeviceProperty.COOP_VEC, True),
    "cluster_accel": (t.DeviceProperty.CLUSTER_ACCEL, True),
    "max_cluster_vertices": (t.DeviceProperty.LIMIT_MAX_CLUSTER_VERTICES, False),
    "max_cluster_triangles": (t.DeviceProperty.LIMIT_MAX_CLUSTER_TRIANGLES, False),
}


@dataclass(frozen=True)
class DeviceProperties:
    """The device as its OptiX context describes it. A field is None where the ABI in use lacks the property.

    Attributes
    ----------
    abi : int
        The ABI the properties were asked through.
    rtcore_version : int or None
        RT core version (10 for 1.0); 0 on a GPU without RT cores (an H100 or H200), where OptiX traces in
        software on the SMs.
    max_trace_depth, max_traversable_graph_depth, max_primitives_per_gas, max_instances_per_ias,
    max_instance_id, visibility_mask_bits, max_sbt_records_per_gas, max_sbt_offset : int or None
        Limits.
    shader_execution_reordering : bool or None
        Whether ``optixReorder`` reorders (the standard flag of the property); False means it is accepted
        and does nothing.
    cooperative_vectors, cluster_accel : bool or None
        Whether the device supports cooperative vectors and cluster acceleration structures (ABI 105+).
    max_cluster_vertices, max_cluster_triangles : int or None
        Per-cluster limits (ABI 105+).
    """

    abi: int
    rtcore_version: int | None
    max_trace_depth: int | None
    max_traversable_graph_depth: int | None
    max_primitives_per_gas: int | None
    max_instances_per_ias: int | None
    max_instance_id: int | None
    visibility_mask_bits: int | None
    max_sbt_records_per_gas: int | None
    max_sbt_offset: int | None
    shader_execution_reordering: bool | None
    cooperative_vectors: bool | None
    cluster_accel: bool | None
    max_cluster_vertices: int | None
    max_cluster_triangles: int | None

    @property
    def rt_cores(self) -> bool | None:
        """Whether the device has RT cores (``rtcore_version`` > 0); None when it was not reported."""
        return None if self.rtcore_version is None else self.rtcore_version > 0

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_log = logging.getLogger("optixasync.optix")


def _read(api: OptixApi, handle: int, prop: t.DeviceProperty) -> int | None:
    """The property's 32-bit value, or None when the driver refuses the query (logged at debug level)."""
    value = ctypes.c_uint(0)
    status = api.optixDeviceContextGetProperty(handle, int(prop), ctypes.byref(value), ctypes.sizeof(value))
    if status != 0:
        _log.debug("optixDeviceContextGetProperty(%s) refused: %s", prop.name, api.error_name(status))
        return None
    return int(value.value)


def query_device_properties(api: OptixApi, handle: int) -> DeviceProperties:
    """Ask the context ``handle`` (created through ``api``) for every property its ABI has.

    A property the ABI lacks, or whose query the driver refuses, is None.
    """
    values: dict[str, Any] = {"abi": api.abi}
    for name, (prop, is_flag) in _FIELDS.items():
        raw = None if api.abi < PROPERTY_MIN_ABI.get(prop, 0) else _read(api, handle, prop)
        values[name] = raw if raw is None or not is_flag else bool(raw & 1)  # flag words: bit 0, "standard"
    return DeviceProperties(**values)
