"""Motion transforms: a child structure moved between key matrices (or SRT keys) over a time range.

A motion transform is a traversable of its own: a small struct in device
memory (the child's handle, the motion options, the keys) turned into a
handle by ``optixConvertPointerToTraversableHandle``. An :class:`Instance` of
it in an IAS makes a motion instance; the pipeline then needs
``uses_motion_blur=True`` and the graph flags ``ALLOW_ANY`` (IAS, transform,
GAS: a graph of depth 3).

Blocking calls
--------------
None: the struct travels through pinned staging on the given stream; the
transform's ``ready`` is after that copy and after the child's last
operation.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix import check
from .._optix import types as t
from ..cuda import Readiness, as_cupy_stream, device_pointer
from ..validation import as_affine, coerce_options
from ._base import AccelStructure, MotionOptions

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["MatrixMotionTransform", "MotionTransform", "SRTMotionTransform", "srt_key"]

_ALIGN = t.TRANSFORM_BYTE_ALIGNMENT


def srt_key(scale: Any = (1.0, 1.0, 1.0), rotation: Any = (0.0, 0.0, 0.0, 1.0), translation: Any = (0.0, 0.0, 0.0),
            *, shear: Any = (0.0, 0.0, 0.0), pivot: Any = (0.0, 0.0, 0.0)) -> np.ndarray:
    """One SRT motion key as OptiX stores it: 16 float32 ``sx a b pvx sy c pvy sz pvz qx qy qz qw tx ty tz``.

    The key moves a point ``p`` to ``R (S p + pivot) + translation``, with ``S`` the upper-triangular scale
    and shear ``[[sx, a, b], [0, sy, c], [0, 0, sz]]`` and ``R`` the rotation of the quaternion
    ``rotation = (x, y, z, w)`` (normalised here). Between two keys OptiX interpolates every component and
    normalises the quaternion again: a rotation between keys turns smoothly, unlike a matrix key's.

    Raises
    ------
    ValueError
        On a non-finite value, a zero quaternion, or a zero scale.
    """
    sx, sy, sz = _vector(scale, 3, "scale")
    a, b, c = _vector(shear, 3, "shear")
    q = np.asarray(_vector(rotation, 4, "rotation"), np.float64)
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        raise ValueError("rotation must be a non-zero quaternion (x, y, z, w)")
    if 0.0 in (sx, sy, sz):
        raise ValueError(f"scale must have no zero component, got {(sx, sy, sz)}: it would flatten the child")
    px, py, pz = _vector(pivot, 3, "pivot")
    tx, ty, tz = _vector(translation, 3, "translation")
    return np.array([sx, a, b, px, sy, c, py, sz, pz, *(q / norm), tx, ty, tz], np.float32)


def _vector(value: Any, n: int, name: str) -> tuple[float, ...]:
    array = np.asarray(value, np.float64).ravel()
    if array.shape != (n,) or not np.isfinite(array).all():
        raise ValueError(f"{name} must be {n} finite numbers, got {value!r}")
    return tuple(float(x) for x in array)


class MotionTransform:
    """Base of the motion transforms: the struct on the device, its handle and readiness.

    Attributes
    ----------
    child : AccelStructure or MotionTransform
    handle : int
        The traversable handle, for an :class:`Instance` (0 once closed).
    motion : MotionOptions
    ready : Readiness
        After the upload of the struct and the child's last operation.
    """

    _type: t.TraversableType
    _key_floats: int

    def __init__(self, ctx: Context, child: Any, keys: Sequence[Any], motion: Any, stream: Any) -> None:
        ctx.require_open()
        if not isinstance(child, (AccelStructure, MotionTransform)):
            raise TypeError(f"the child of a motion transform must be an acceleration structure or a transform, got "
                            f"{type(child).__name__}")
        ctx.require_own(child, "the child of a motion transform")
        self.ctx = ctx
        self.child = child
        self.keys = self._check_keys(keys)
        self.motion = (MotionOptions(keys=len(self.keys)) if motion is None
                       else coerce_options(MotionOptions, motion))
        if self.motion.keys != len(self.keys):
            raise ValueError(f"the motion options say {self.motion.keys} keys but {len(self.keys)} were given")
        self.ready = Readiness()
        self.handle = 0
        self._buffer: Any = None
        self.child_handle = 0
        self.update(stream)
        ctx.track(self)

    def _check_keys(self, keys: Sequence[Any]) -> list[np.ndarray]:
        raise NotImplementedError

    def struct_bytes(self) -> np.ndarray:
        """The struct as OptiX reads it: the header of the ABI's two-key struct, then every key."""
        header = self._struct_class()()
        header.child = self.child.handle
        header.motionOptions = self.motion.to_struct()
        raw = np.frombuffer(bytes(header), np.uint8)[: ctypes.sizeof(header) - 2 * self._key_floats * 4]
        return np.concatenate([raw, np.concatenate(self.keys).astype(np.float32).view(np.uint8)])

    def _struct_class(self) -> type[ctypes.Structure]:
        raise NotImplementedError

    def update(self, stream: Any = None) -> None:
        """Write the struct again, with the child's current handle (after the child was rebuilt or compacted).

        The handle changes; rebuild the IAS over the transform afterwards.

        Raises
        ------
        ValueError
            If the child is closed.
        """
        if self.child.handle == 0:
            raise ValueError("the child of this motion transform is closed")
        stream = self.ctx.stream if stream is None else as_cupy_stream(stream)
        data = self.struct_bytes()
        self.child.ready.order(stream)  # traces through the transform need the child built
        storage = self.ctx.memory.empty((data.nbytes + _ALIGN,), np.uint8, stream)
        offset = -device_pointer(storage) % _ALIGN  # OptiX reads transforms 64-byte aligned
        target = storage[offset: offset + data.nbytes]
        self.ctx.upload_into(target, data, stream)
        if self._buffer is not None:
            self.ctx.deferred.after(stream, self._buffer)  # the old struct lives while traces may read it
        self._buffer = storage
        handle = ctypes.c_uint64()
        check(self.ctx.api.optixConvertPointerToTraversableHandle(self.ctx.handle, device_pointer(target),
                                                                  int(self._type), ctypes.byref(handle)),
              "optixConvertPointerToTraversableHandle", api=self.ctx.api)
        self.handle = int(handle.value)
        self.child_handle = self.child.handle
        self.ready.adopt(self.ctx.deferred.after(stream), stream)

    @property
    def stale(self) -> bool:
        """Whether the child's handle changed since the struct was written (call :meth:`update`)."""
        return self.child.handle != self.child_handle

    def close(self) -> None:
        """Release the struct (freed in stream order) and forget the handle."""
        self._buffer = None
        self.handle = 0

    def __repr__(self) -> str:
        return f"<optixasync.{type(self).__name__} keys={len(self.keys)} child={type(self.child).__name__}>"


class MatrixMotionTransform(MotionTransform):
    """A child moved between 3x4 (or 4x4) affine key matrices, interpolated linearly entry by entry.

    Parameters
    ----------
    ctx : Context
    child : GeometryAccel, InstanceAccel or MotionTransform
    keys : sequence of array (3, 4) or (4, 4)
        Object-to-world transforms at the keys, at least 2 (each checked by
        :func:`~optixasync.validation.as_affine`).
    motion : MotionOptions or dict, optional
        The time range and vanish flags (default: ``keys=len(keys)`` over [0, 1]).
    stream : stream, optional
    """

    _type = t.TraversableType.MATRIX_MOTION_TRANSFORM
    _key_floats = 12

    def __init__(self, ctx: Context, child: Any, keys: Sequence[Any], motion: Any = None, *,
                 stream: Any = None) -> None:
        super().__init__(ctx, child, keys, motion, stream)

    def _check_keys(self, keys: Sequence[Any]) -> list[np.ndarray]:
        keys = list(keys)
        if len(keys) < 2:
            raise ValueError(f"a motion transform needs at least 2 keys, got {len(keys)}")
        return [as_affine(k, f"keys[{j}]").astype(np.float32).ravel() for j, k in enumerate(keys)]

    def _struct_class(self) -> type[ctypes.Structure]:
        return t.MatrixMotionTransform


class SRTMotionTransform(MotionTransform):
    """A child moved between scale-rotation-translation keys (see :func:`srt_key`).

    Parameters
    ----------
    ctx : Context
    child : GeometryAccel, InstanceAccel or MotionTransform
    keys : sequence of array (16,)
        :func:`srt_key` values, at least 2.
    motion : MotionOptions or dict, optional
    stream : stream, optional
    """

    _type = t.TraversableType.SRT_MOTION_TRANSFORM
    _key_floats = 16

    def __init__(self, ctx: Context, child: Any, keys: Sequence[Any], motion: Any = None, *,
                 stream: Any = None) -> None:
        super().__init__(ctx, child, keys, motion, stream)

    def _check_keys(self, keys: Sequence[Any]) -> list[np.ndarray]:
        keys = [np.asarray(k, np.float32).ravel() for k in keys]
        if len(keys) < 2:
            raise ValueError(f"a motion transform needs at least 2 keys, got {len(keys)}")
        for j, key in enumerate(keys):
            if key.shape != (16,) or not np.isfinite(key).all():
                raise ValueError(f"keys[{j}] must be 16 finite numbers (an srt_key), got shape {key.shape}")
            if not np.isclose(np.linalg.norm(key[9:13]), 1.0, atol=1e-4):
                raise ValueError(f"keys[{j}]: the quaternion (entries 9 to 12) must have unit length; build keys "
                                 "with srt_key")
        return keys

    def _struct_class(self) -> type[ctypes.Structure]:
        return t.SRTMotionTransform
