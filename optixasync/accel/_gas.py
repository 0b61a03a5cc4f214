"""Geometry acceleration structures (GAS): triangles, spheres, curves or custom primitives, optionally moving.

A GAS holds primitives of one kind (OptiX forbids mixing them: triangles
with spheres, or two curve kinds, are two structures, instanced together in an
IAS). Motion blur: with ``AccelOptions.motion``, every input gives that many
keys of its moving array, and traces at a ``time`` see them interpolated.

Device arrays of other libraries (PyTorch, JAX, CuPy, Numba: anything with
``__cuda_array_interface__`` or DLPack) are used in place, without a copy:
:func:`~optixasync.cuda.consume_device_array` makes the build (or refit)
stream wait on the GPU for the producer's pending writes, as its protocol
states them, and the structure keeps the producer alive while it may read
the memory. optixasync's own device arrays (its uploads, ``RenderPipeline.vertices(i)``)
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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix import types as t
from .._optix._abi import abi_name
from ..cuda import consume_device_array, device_pointer, is_library_array
from ..validation import is_device_array
from ._base import AccelStructure
from ._curves import CurveInput
from ._inputs import CustomInput, SphereInput, TriangleInput
from ._pack import PACKERS

AnyInput = TriangleInput | SphereInput | CurveInput | CustomInput

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["GeometryAccel", "check_input_kinds"]

_INDEX_DTYPES = (np.int32, np.uint32)
_DTYPES = {"vertices": np.float32, "centers": np.float32, "radii": np.float32, "widths": np.float32,
           "aabbs": np.float32, "indices": _INDEX_DTYPES, "material_ids": np.uint32}


def _kind(inp: AnyInput) -> str:
    return inp.curve.name if isinstance(inp, CurveInput) else inp.primitive


def check_input_kinds(inputs: list[AnyInput], num_keys: int, abi: int) -> str:
    """The one primitive kind of ``inputs``; refuse what OptiX would refuse, before any GPU work.

    Raises
    ------
    TypeError
        Something that is not a build input.
    ValueError
        Several primitive kinds in one GAS, curves of several kinds or end-cap settings, motion keys that
        differ from ``AccelOptions.motion``, a curve kind newer than the context's ABI.
    """
    if not inputs or not all(isinstance(i, tuple(PACKERS)) for i in inputs):
        raise TypeError("inputs must be a TriangleInput, SphereInput, CurveInput or CustomInput, or a non-empty "
                        "sequence of them")
    kinds = sorted({_kind(i) for i in inputs})
    if len(kinds) > 1:
        raise ValueError(f"one GAS holds one primitive kind (OptiX forbids mixing them), got {', '.join(kinds)}: "
                         "build a GeometryAccel per kind and instance them in an InstanceAccel")
    if len({i.endcaps for i in inputs if isinstance(i, CurveInput)}) > 1:
        raise ValueError("the curve inputs of one GAS must all have end caps or all have none")
    for k, inp in enumerate(inputs):
        if inp.num_keys != num_keys:
            need = "AccelOptions.motion is not set" if num_keys == 1 else f"AccelOptions.motion has {num_keys} keys"
            raise ValueError(f"inputs[{k}] gives {inp.num_keys} motion key(s) but {need}: every input needs as "
                             "many keys as the motion options say")
        if isinstance(inp, CurveInput) and abi < inp.curve.min_abi:
            raise ValueError(f"{inp.kind!r} curves need OptiX ABI {abi_name(inp.curve.min_abi)} or newer; this "
                             f"context uses {abi_name(abi)}: create it with abi={inp.curve.min_abi} or abi='newest'")
    return kinds[0]


class GeometryAccel(AccelStructure):
    """A GAS over one or more build inputs of one primitive kind.

    Parameters
    ----------
    ctx : Context
    inputs : TriangleInput, SphereInput, CurveInput or CustomInput, or a sequence of one of them
        Each input gets its own range of SBT records (in order).
    options : AccelOptions or dict, optional
        With ``motion``, every input gives that many keys of its moving array.
    stream : stream, optional
        Build stream (default: the context's stream).

    Attributes
    ----------
    kind : str
        ``"triangle"``, ``"sphere"``, ``"custom"`` or the curve kind.
    num_primitives : int
        Triangles, spheres, curve segments or boxes.
    num_triangles : int
        Triangles (0 in a GAS of another kind).
    build_ms, refit_ms : float or None
        GPU times, known once the operation has finished.

    Raises
    ------
    TypeError, ValueError
        Bad inputs (see :func:`check_input_kinds`), before any GPU work.
    """

    def __init__(self, ctx: Context, inputs: AnyInput | Sequence[AnyInput], options: Any = None, *,
                 stream: Any = None) -> None:
        super().__init__(ctx, options, stream)
        self.inputs = [inputs] if isinstance(inputs, tuple(PACKERS)) else list(inputs)
        self.kind = check_input_kinds(self.inputs, self.options.num_keys, ctx.abi)
        self._device = [self._to_device(i, self.stream, k) for k, i in enumerate(self.inputs)]
        self._count = len(self.inputs)
        self._structs = self._build_inputs()
        self.num_primitives = sum(i.num_primitives for i in self.inputs)
        self.num_triangles = self.num_primitives if self.kind == "triangle" else 0
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

    def _to_device(self, inp: AnyInput, stream: Any, k: int) -> dict[str, Any]:
        """The input's arrays on the device: name -> array, or a list of arrays (one per motion key)."""
        prefix = f"inputs[{k}]." if len(self.inputs) > 1 else ""
        arrays: dict[str, Any] = {}
        for name, (attribute, keyed) in PACKERS[type(inp)][1].items():
            value = getattr(inp, attribute)
            if value is None:
                continue
            if keyed:
                labels = [f"{prefix}{name}[{j}]" if len(value) > 1 else f"{prefix}{name}" for j in range(len(value))]
                arrays[name] = [self._device_array(a, stream, label, _DTYPES[name])
                                for a, label in zip(value, labels, strict=True)]
            else:
                arrays[name] = self._device_array(value, stream, f"{prefix}{name}", _DTYPES[name])
        return arrays

    def _build_inputs(self) -> Any:
        structs = (t.BuildInput * self._count)()
        self._keep: list[Any] = []  # ctypes arrays the structs point into
        self._moving_pointers: list[Any] = []  # per input, the per-key addresses of its moving array
        for k, (inp, dev) in enumerate(zip(self.inputs, self._device, strict=True)):
            keep, moving = PACKERS[type(inp)][0](structs[k], inp, dev)
            self._keep += keep
            self._moving_pointers.append(moving)
        return structs

    def _release_inputs(self) -> None:
        arrays = [a for device in self._device for v in device.values() for a in (v if isinstance(v, list) else [v])]
        if arrays and not self.ready.done:  # a build or refit may still read them: held until it has passed
            self.ready.order(self.stream)
            self.ctx.deferred.after(self.stream, *arrays)
        self.inputs, self._device = [], []
        self._structs = None
        self._keep, self._moving_pointers = [], []

    def refit(self, vertices: Any | Sequence[Any], stream: Any = None) -> None:
        """Move the geometry and update the structure in place (``OPTIX_BUILD_OPERATION_UPDATE``).

        What moves is each input's moving array: a triangle input's vertices, a sphere input's centres (the
        radii stay), a curve input's control points (the widths stay), a custom input's boxes.

        With ``options.rebuild_every = K``, the call after K refits is a full
        rebuild instead (new buffers and ``handle``; see :class:`AccelOptions`),
        and the count starts again.

        Parameters
        ----------
        vertices : array, or one per input; with motion, a list of key arrays per input
            New positions, same counts as at build time: a host array (copied
            through pinned staging) or a device array written by a kernel
            (another library's is read in place after its producer, see the
            module docstring; optixasync's own in the order of ``stream``).
            A structure of one moving input also takes that input's key list alone.
        stream : stream, optional
            Where the upload and update are enqueued (default: the build stream).

        Raises
        ------
        ValueError
            If the structure was built without ``allow_update``, or on a
            wrong count, key count, dtype, shape or non-finite value; raised before any GPU work.
        """
        self._check_open()
        if not self.options.allow_update:
            raise ValueError("this structure was built without allow_update=True; it cannot be refitted")
        per_input = self._split_refit(vertices)
        if self._same_moving(per_input):  # written in place (a frame's vertex kernel): checked when first given
            self._update(self._use_stream(stream))
            return
        keys = [inp.check_moving(value, f"vertices[{k}]" if len(per_input) > 1 else "vertices")
                for k, (value, inp) in enumerate(zip(per_input, self.inputs, strict=True))]
        stream = self._use_stream(stream)
        moving = [inp.moving for inp in self.inputs]
        devices = [[self._device_array(a, stream, f"{name}[{k}]", np.float32) for a in key_arrays]
                   for k, (key_arrays, name) in enumerate(zip(keys, moving, strict=True))]
        replaced = []  # every array is on the device before the structure's inputs change
        for k, device in enumerate(devices):
            old = self._device[k][moving[k]]
            replaced += [a for a, b in zip(old, device, strict=True) if a is not b]
            self._device[k][moving[k]] = device
            for j, array in enumerate(device):
                self._moving_pointers[k][j] = device_pointer(array)
        self._update(stream)
        if replaced:  # the previous positions live until the work that may read them (enqueued so far) has passed
            self.ctx.deferred.after(stream, *replaced)

    def _same_moving(self, per_input: list[Any]) -> bool:
        """Whether every input's moving array is the one object it refits from already (no motion keys)."""
        for k, value in enumerate(per_input):
            current = self._device[k][self.inputs[k].moving]
            if len(current) != 1 or value is not current[0]:
                return False
        return True

    def _update(self, stream: Any) -> None:
        """The refit itself, or the refit policy's full rebuild (new buffers and handle)."""
        every = self.options.rebuild_every
        if every and self._refits_since_build >= every:
            self._build(t.BuildOperation.BUILD, stream)
            self.rebuilds += 1
        else:
            self._build(t.BuildOperation.UPDATE, stream)
            self._refits_since_build += 1
        self.refits += 1

    def _split_refit(self, vertices: Any) -> list[Any]:
        """``vertices`` as one entry per input (a single moving input may be given its key list alone)."""
        keyed = self.options.num_keys > 1
        if keyed and len(self.inputs) == 1 and isinstance(vertices, (list, tuple)) and vertices \
                and not isinstance(vertices[0], (list, tuple)):
            return [list(vertices)]
        per_input = list(vertices) if isinstance(vertices, (list, tuple)) else [vertices]
        if len(per_input) != len(self.inputs):
            raise ValueError(f"refit needs one vertex array per input ({len(self.inputs)}), got {len(per_input)}")
        return per_input

    def __repr__(self) -> str:
        if self.kind == "triangle":
            return f"<optixasync.GeometryAccel triangles={self.num_triangles} bytes={self.nbytes} compacted={self.compacted}>"
        return (f"<optixasync.GeometryAccel {self.kind} primitives={self.num_primitives} bytes={self.nbytes} "
                f"compacted={self.compacted}>")
