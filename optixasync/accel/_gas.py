"""Geometry acceleration structures (GAS) over triangle meshes, built on a stream.

Blocking calls: none. Inputs reach the device through pinned staging on the
build stream (or are used in place when they are device arrays); temporary
and output buffers come from the stream-ordered pool; ``optixAccelBuild`` is
asynchronous (unless the context has validation mode on).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._options import coerce_options
from .._optix import check
from .._optix import types as t
from ..cuda import device_pointer, stream_handle
from ._inputs import TriangleInput, is_device_array

__all__ = ["AccelOptions", "GeometryAccel"]


@dataclass(frozen=True)
class AccelOptions:
    """Build options of an acceleration structure.

    Attributes
    ----------
    prefer : {"fast_trace", "fast_build", "default"}
        Trade build time against trace speed.
    allow_update : bool
        Allow refits (``OPTIX_BUILD_OPERATION_UPDATE``) after the build.
    allow_compaction : bool
        Emit the compacted size so the structure can be compacted later.
    random_vertex_access : bool
        Let programs read triangle vertices back from the GAS.
    """

    prefer: str = "fast_trace"
    allow_update: bool = False
    allow_compaction: bool = False
    random_vertex_access: bool = False

    def __post_init__(self) -> None:
        if self.prefer not in ("fast_trace", "fast_build", "default"):
            raise ValueError(f"prefer must be 'fast_trace', 'fast_build' or 'default', got {self.prefer!r}")

    @property
    def build_flags(self) -> int:
        flags = t.BuildFlags.NONE
        if self.prefer == "fast_trace":
            flags |= t.BuildFlags.PREFER_FAST_TRACE
        elif self.prefer == "fast_build":
            flags |= t.BuildFlags.PREFER_FAST_BUILD
        if self.allow_update:
            flags |= t.BuildFlags.ALLOW_UPDATE
        if self.allow_compaction:
            flags |= t.BuildFlags.ALLOW_COMPACTION
        if self.random_vertex_access:
            flags |= t.BuildFlags.ALLOW_RANDOM_VERTEX_ACCESS
        return int(flags)


def _aligned(nbytes: int, alignment: int = t.ACCEL_BUFFER_BYTE_ALIGNMENT) -> int:
    return (int(nbytes) + alignment - 1) // alignment * alignment


class GeometryAccel:
    """A GAS over one or more triangle inputs.

    Parameters
    ----------
    ctx : Context
    inputs : TriangleInput or sequence of TriangleInput
        Each input gets its own range of SBT records (in order).
    options : AccelOptions or dict, optional
    stream : stream, optional
        Build stream (default: the context's stream). Tracing on another
        stream must be ordered after ``ready`` (``stream.wait_event``).

    Attributes
    ----------
    handle : int
        The ``OptixTraversableHandle``.
    ready : cupy.cuda.Event
        Recorded on the build stream after the build.
    nbytes : int
        Size of the structure's output buffer.
    """

    def __init__(self, ctx: Any, inputs: TriangleInput | Sequence[TriangleInput], options: Any = None, *,
                 stream: Any = None) -> None:
        self.ctx = ctx
        self.options = coerce_options(AccelOptions, options)
        self.inputs = [inputs] if isinstance(inputs, TriangleInput) else list(inputs)
        if not self.inputs or not all(isinstance(i, TriangleInput) for i in self.inputs):
            raise TypeError("inputs must be a TriangleInput or a non-empty sequence of them")
        self.stream = ctx.stream if stream is None else stream
        self._device = [self._to_device(i) for i in self.inputs]
        self._structs = self._build_inputs()
        self.num_triangles = sum(i.num_triangles for i in self.inputs)
        self.handle = 0
        self._build(t.BuildOperation.BUILD)

    # -- inputs ------------------------------------------------------------------
    def _device_array(self, array: Any) -> Any:
        return array if is_device_array(array) else self.ctx.upload(array, self.stream)

    def _to_device(self, inp: TriangleInput) -> dict[str, Any]:
        arrays = {"vertices": self._device_array(inp.vertices)}
        if inp.indices is not None:
            arrays["indices"] = self._device_array(inp.indices)
        if inp.material_ids is not None:
            arrays["material_ids"] = self._device_array(inp.material_ids)
        return arrays

    def _build_inputs(self) -> Any:
        count = len(self.inputs)
        structs = (t.BuildInput * count)()
        self._keep: list[Any] = []  # ctypes arrays the structs point into
        for k, (inp, dev) in enumerate(zip(self.inputs, self._device, strict=True)):
            b = structs[k]
            b.type = t.BuildInputType.TRIANGLES
            tri = b.triangleArray
            vbuf = (ctypes.c_uint64 * 1)(device_pointer(dev["vertices"]))
            flags = (ctypes.c_uint * inp.num_sbt_records)(*([int(t.GeometryFlags.DISABLE_ANYHIT)] * inp.num_sbt_records))
            self._keep += [vbuf, flags]
            tri.vertexBuffers = ctypes.cast(vbuf, ctypes.POINTER(ctypes.c_uint64))
            tri.numVertices = inp.num_vertices
            tri.vertexFormat = t.VertexFormat.FLOAT3
            tri.vertexStrideInBytes = 12
            if "indices" in dev:
                tri.indexBuffer = device_pointer(dev["indices"])
                tri.numIndexTriplets = inp.num_triangles
                tri.indexFormat = t.IndicesFormat.UNSIGNED_INT3
                tri.indexStrideInBytes = 12
            tri.flags = ctypes.cast(flags, ctypes.POINTER(ctypes.c_uint))
            tri.numSbtRecords = inp.num_sbt_records
            if "material_ids" in dev:
                tri.sbtIndexOffsetBuffer = device_pointer(dev["material_ids"])
                tri.sbtIndexOffsetSizeInBytes = 4
                tri.sbtIndexOffsetStrideInBytes = 4
        return structs

    # -- build ---------------------------------------------------------------------
    def _build(self, operation: t.BuildOperation) -> None:
        ctx = self.ctx
        build_options = t.AccelBuildOptions()
        build_options.buildFlags = self.options.build_flags
        build_options.operation = int(operation)
        sizes = t.AccelBufferSizes()
        check(
            ctx.api.optixAccelComputeMemoryUsage(
                ctx.handle, ctypes.byref(build_options), self._structs, len(self.inputs), ctypes.byref(sizes)
            ),
            "optixAccelComputeMemoryUsage",
            api=ctx.api,
        )
        self.buffer_sizes = (sizes.outputSizeInBytes, sizes.tempSizeInBytes, sizes.tempUpdateSizeInBytes)
        temp_size = sizes.tempSizeInBytes if operation == t.BuildOperation.BUILD else sizes.tempUpdateSizeInBytes
        temp = ctx.memory.alloc(_aligned(temp_size), self.stream)
        if operation == t.BuildOperation.BUILD:
            self.buffer = ctx.memory.alloc(_aligned(sizes.outputSizeInBytes), self.stream)
            self.nbytes = int(sizes.outputSizeInBytes)
        handle = ctypes.c_uint64(self.handle)
        check(
            ctx.api.optixAccelBuild(
                ctx.handle, stream_handle(self.stream), ctypes.byref(build_options), self._structs, len(self.inputs),
                int(temp.ptr), _aligned(temp_size), int(self.buffer.ptr), self.nbytes, ctypes.byref(handle), None, 0,
            ),
            "optixAccelBuild",
            api=ctx.api,
        )
        self.handle = int(handle.value)
        # The temp buffer is freed in the order of the build stream: no host wait, no reuse before the build ends.
        del temp
        self.ready = ctx.deferred.after(self.stream)

    def close(self) -> None:
        self.buffer = None
        self._device = []
        self.handle = 0

    def __repr__(self) -> str:
        return f"<optixasync.GeometryAccel triangles={self.num_triangles} bytes={getattr(self, 'nbytes', 0)}>"


