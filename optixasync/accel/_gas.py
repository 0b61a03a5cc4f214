"""Geometry acceleration structures (GAS) over triangle meshes.

Device arrays of other libraries (PyTorch, JAX, CuPy, Numba: anything with
``__cuda_array_interface__`` or DLPack) are used in place, without a copy:
:func:`~optixasync.cuda.consume_device_array` makes the build (or refit)
stream wait on the GPU for the producer's pending writes, as its protocol
states them, and the structure keeps the producer alive while it may read
the memory. optixasync's own device arrays (its uploads, ``PathTracer.vertices``)
are read in the order of the stream passed, where their writer enqueued them.

Blocking calls
--------------
None. Host inputs reach the device through pinned staging on the build
stream; device arrays are used in place, ordered after their producers by
GPU-side waits (an event record and ``cudaStreamWaitEvent``, or the
producer's ``__dlpack__`` given our stream); temporary and output buffers
come from the stream-ordered pool; ``optixAccelBuild`` returns at once
(unless validation mode is on).

Refits are ordered on the stream they are given: enqueue them on the stream
the structure is traced on (``frame.stream`` inside a frame), and every
earlier trace of the structure has finished before the refit rewrites it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix import types as t
from ..cuda import consume_device_array, device_pointer, is_library_array
from ..validation import check_vertices, is_device_array
from ._base import AccelStructure
from ._inputs import TriangleInput

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["GeometryAccel"]

_INDEX_DTYPES = (np.int32, np.uint32)


class GeometryAccel(AccelStructure):
    """A GAS over one or more triangle inputs.

    Parameters
    ----------
    ctx : Context
    inputs : TriangleInput or sequence of TriangleInput
        Each input gets its own range of SBT records (in order).
    options : AccelOptions or dict, optional
    stream : stream, optional
        Build stream (default: the context's stream).

    Attributes
    ----------
    num_triangles : int
    build_ms, refit_ms : float or None
        GPU times, known once the operation has finished.
    """

    def __init__(self, ctx: Context, inputs: TriangleInput | Sequence[TriangleInput], options: Any = None, *,
                 stream: Any = None) -> None:
        super().__init__(ctx, options, stream)
        self.inputs = [inputs] if isinstance(inputs, TriangleInput) else list(inputs)
        if not self.inputs or not all(isinstance(i, TriangleInput) for i in self.inputs):
            raise TypeError("inputs must be a TriangleInput or a non-empty sequence of them")
        self._device = [self._to_device(i, self.stream, k) for k, i in enumerate(self.inputs)]
        self._count = len(self.inputs)
        self._structs = self._build_inputs()
        self.num_triangles = sum(i.num_triangles for i in self.inputs)
        self._build(t.BuildOperation.BUILD, self.stream)

    def _device_array(self, array: Any, stream: Any, name: str, dtype: Any) -> Any:
        """``array`` on the device: host arrays uploaded on ``stream``, device arrays read in place.

        A foreign device array becomes a CuPy view ordered after its producer on ``stream`` (the view holds
        the producer); optixasync's own arrays are used as they are, once they are known to be on this
        context's device.

        Raises
        ------
        ValueError
            Naming ``name``: an array of another device (read there, it would be an illegal address).
        """
        if is_library_array(array):
            found = int(array.data.device_id)  # the label of its memory: no CUDA call
            if found != self.ctx.device_id:
                raise ValueError(f"{name} is on CUDA device {found}, but the optixasync context is on device "
                                 f"{self.ctx.device_id}: move it there first")
            return array
        if not is_device_array(array):
            return self.ctx.upload(array, stream)
        return consume_device_array(array, stream, name=name, device=self.ctx.device_id, dtype=dtype).array

    def _to_device(self, inp: TriangleInput, stream: Any, k: int) -> dict[str, Any]:
        prefix = f"inputs[{k}]." if len(self.inputs) > 1 else ""
        arrays = {"vertices": self._device_array(inp.vertices, stream, f"{prefix}vertices", np.float32)}
        if inp.indices is not None:
            arrays["indices"] = self._device_array(inp.indices, stream, f"{prefix}indices", _INDEX_DTYPES)
        if inp.material_ids is not None:
            arrays["material_ids"] = self._device_array(inp.material_ids, stream, f"{prefix}material_ids", np.uint32)
        return arrays

    def _build_inputs(self) -> Any:
        structs = (t.BuildInput * self._count)()
        self._keep: list[Any] = []  # ctypes arrays the structs point into
        self._vertex_pointers: list[Any] = []  # per input, the one-element array OptiX reads the vertex address from
        for k, (inp, dev) in enumerate(zip(self.inputs, self._device, strict=True)):
            b = structs[k]
            b.type = t.BuildInputType.TRIANGLES
            tri = b.triangleArray
            vbuf = (ctypes.c_uint64 * 1)(device_pointer(dev["vertices"]))
            geometry_flags = t.GeometryFlags.NONE if inp.any_hit else t.GeometryFlags.DISABLE_ANYHIT
            flags = (ctypes.c_uint * inp.num_sbt_records)(*([int(geometry_flags)] * inp.num_sbt_records))
            self._keep += [vbuf, flags]
            self._vertex_pointers.append(vbuf)
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

    def _release_inputs(self) -> None:
        arrays = [a for device in self._device for a in device.values()]
        if arrays and not self.ready.done:  # a build or refit may still read them: held until it has passed
            self.ready.order(self.stream)
            self.ctx.deferred.after(self.stream, *arrays)
        self.inputs, self._device = [], []
        self._structs = None
        self._keep, self._vertex_pointers = [], []

    def refit(self, vertices: Any | Sequence[Any], stream: Any = None) -> None:
        """Move the vertices and update the structure in place (``OPTIX_BUILD_OPERATION_UPDATE``).

        With ``options.rebuild_every = K``, the call after K refits is a full
        rebuild instead (new buffers and ``handle``; see :class:`AccelOptions`),
        and the count starts again.

        Parameters
        ----------
        vertices : array (N, 3) float32, or one per input
            New positions, same count as at build time: a host array (copied
            through pinned staging) or a device array written by a kernel
            (another library's is read in place after its producer, see the
            module docstring; optixasync's own in the order of ``stream``).
        stream : stream, optional
            Where the upload and update are enqueued (default: the build stream).

        Raises
        ------
        ValueError
            If the structure was built without ``allow_update``, or on a
            wrong vertex count, dtype, shape or non-finite value; raised before any GPU work.
        """
        self._check_open()
        if not self.options.allow_update:
            raise ValueError("this structure was built without allow_update=True; it cannot be refitted")
        per_input = list(vertices) if isinstance(vertices, (list, tuple)) else [vertices]
        if len(per_input) != len(self.inputs):
            raise ValueError(f"refit needs one vertex array per input ({len(self.inputs)}), got {len(per_input)}")
        for k, (array, inp) in enumerate(zip(per_input, self.inputs, strict=True)):
            count = check_vertices(array, name=f"vertices[{k}]" if len(per_input) > 1 else "vertices")
            if count != inp.num_vertices:
                raise ValueError(f"refit changes the vertex count of input {k}: built with {inp.num_vertices}, got {count}")
        stream = self._use_stream(stream)
        names = [f"vertices[{k}]" if len(per_input) > 1 else "vertices" for k in range(len(per_input))]
        devices = [self._device_array(a, stream, n, np.float32) for a, n in zip(per_input, names, strict=True)]
        replaced = []  # every array is on the device before the structure's inputs change
        for k, device in enumerate(devices):
            if device is not self._device[k]["vertices"]:
                replaced.append(self._device[k]["vertices"])
            self._device[k]["vertices"] = device
            self._vertex_pointers[k][0] = device_pointer(device)
        every = self.options.rebuild_every
        if every and self._refits_since_build >= every:
            self._build(t.BuildOperation.BUILD, stream)  # the policy's full rebuild: new buffers and handle
            self.rebuilds += 1
        else:
            self._build(t.BuildOperation.UPDATE, stream)
            self._refits_since_build += 1
        self.refits += 1
        if replaced:  # the previous positions live until the work that may read them (enqueued so far) has passed
            self.ctx.deferred.after(stream, *replaced)

    def __repr__(self) -> str:
        return f"<optixasync.GeometryAccel triangles={self.num_triangles} bytes={self.nbytes} compacted={self.compacted}>"
