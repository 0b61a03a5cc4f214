"""Validation of user input, done on the host before any GPU work: arrays, transforms, option objects.

Every layer that takes geometry, a transform or an options object checks it
here, so one input gets one rule and one message wherever it enters.

Host arrays are checked completely (dtype, shape, contiguity, finite
values, index range). Device arrays (``__cuda_array_interface__``) are
checked for dtype, shape and contiguity only: reading their values back
would stall the host, which is what this library exists to avoid.

Blocking calls
--------------
None: host-side numpy only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple, TypeVar

import numpy as np

__all__ = [
    "ArrayInfo",
    "as_affine",
    "check_indices",
    "check_vertices",
    "coerce_options",
    "describe_array",
    "is_device_array",
]

T = TypeVar("T")

#: How far the last row of a 4x4 affine transform may be from ``0 0 0 1``.
AFFINE_ROW_TOLERANCE = 1e-12
#: A 3x3 part whose determinant is below this times its largest entry cubed counts as singular.
SINGULAR_TOLERANCE = 1e-12


class ArrayInfo(NamedTuple):
    """What :func:`describe_array` reads from an array without touching its data."""

    shape: tuple[int, ...]
    dtype: np.dtype
    contiguous: bool
    on_device: bool


def is_device_array(array: Any) -> bool:
    """Whether ``array`` lives in device memory (it exposes ``__cuda_array_interface__``)."""
    return hasattr(array, "__cuda_array_interface__")


def describe_array(array: Any, name: str = "array") -> ArrayInfo:
    """Shape, dtype, C-contiguity and location of a numpy or device array, without reading its data.

    Raises
    ------
    TypeError
        If ``array`` is neither a numpy array nor a device array.
    """
    if isinstance(array, np.ndarray):
        return ArrayInfo(array.shape, array.dtype, bool(array.flags.c_contiguous), False)
    interface = getattr(array, "__cuda_array_interface__", None)  # CuPy builds this dict on every access
    if interface is None:
        raise TypeError(f"{name} must be a numpy array or a device array, got {type(array).__name__}")
    shape = tuple(int(s) for s in interface["shape"])
    dtype = np.dtype(interface["typestr"])
    strides = interface.get("strides")
    contiguous = strides is None or tuple(strides) == tuple(
        int(np.prod(shape[i + 1 :], dtype=np.int64)) * dtype.itemsize for i in range(len(shape))
    )
    return ArrayInfo(shape, dtype, contiguous, True)


def check_vertices(vertices: Any, name: str = "vertices") -> int:
    """Validate an (N, 3) float32 C-contiguous vertex array (finite, when on the host); return N.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` and what is wrong.
    """
    shape, dtype, contiguous, on_device = describe_array(vertices, name)
    if dtype != np.float32:
        raise ValueError(f"{name} must have dtype float32, got {dtype}")
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3), got {shape}")
    if shape[0] == 0:
        raise ValueError(f"{name} is empty: a mesh needs at least 3 vertices")
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous (use numpy.ascontiguousarray)")
    if not on_device and not np.isfinite(vertices).all():
        bad = int(np.argwhere(~np.isfinite(vertices).all(axis=1))[0, 0])
        raise ValueError(f"{name} contains NaN or Inf (first at vertex {bad}: {vertices[bad].tolist()})")
    return int(shape[0])


def check_indices(indices: Any, num_vertices: int, name: str = "indices") -> int:
    """Validate an (M, 3) int32/uint32 index array whose values are < ``num_vertices``; return M.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` and what is wrong.
    """
    shape, dtype, contiguous, on_device = describe_array(indices, name)
    if dtype not in (np.int32, np.uint32):
        raise ValueError(f"{name} must have dtype int32 or uint32, got {dtype}")
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(f"{name} must have shape (M, 3), got {shape}")
    if shape[0] == 0:
        raise ValueError(f"{name} is empty: a mesh needs at least one triangle")
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous (use numpy.ascontiguousarray)")
    if not on_device:
        low, high = int(indices.min()), int(indices.max())
        if low < 0 or high >= num_vertices:
            raise ValueError(f"{name} out of range: values span [{low}, {high}] but there are {num_vertices} vertices")
    return int(shape[0])


def as_affine(matrix: Any, name: str = "transform") -> np.ndarray:
    """A 3x4 or 4x4 row-major affine transform as a float64 (3, 4) array.

    The one rule for every transform optixasync takes (mesh placement, loaded
    files, instances): finite entries, a 4x4's last row ``0 0 0 1``, and an
    invertible linear part (a singular one would flatten geometry, and OptiX
    inverts instance transforms to trace them).

    Raises
    ------
    ValueError
        On another shape, a non-finite entry, a 4x4 whose last row is not
        ``0 0 0 1`` (within :data:`AFFINE_ROW_TOLERANCE`), or a singular 3x3 part.
    """
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 3x4 or 4x4 affine transform of numbers: {exc}") from None
    if m.shape not in ((3, 4), (4, 4)):
        raise ValueError(f"{name} must be a 3x4 or 4x4 affine transform, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"{name} contains NaN or Inf")
    if m.shape == (4, 4):
        if not np.allclose(m[3], (0.0, 0.0, 0.0, 1.0), rtol=0.0, atol=AFFINE_ROW_TOLERANCE):
            raise ValueError(f"{name}: the last row of a 4x4 affine transform must be 0 0 0 1, got {m[3].tolist()}")
        m = m[:3]
    scale = max(float(np.abs(m[:, :3]).max()), 1e-300)
    if abs(np.linalg.det(m[:, :3])) <= SINGULAR_TOLERANCE * scale**3:
        raise ValueError(f"{name} is singular (its 3x3 part has determinant ~0): it would flatten the geometry")
    return np.ascontiguousarray(m)


def coerce_options(cls: type[T], value: Any) -> T:
    """``value`` as an instance of the options dataclass ``cls``.

    ``None`` gives the defaults, an instance is returned as it is, a mapping
    gives ``cls(**value)``.

    Raises
    ------
    TypeError
        On unknown keys (naming them and the accepted ones) or another type.
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(value) - names)
        if unknown:
            raise TypeError(f"unknown {cls.__name__} option(s) {unknown}; accepted: {sorted(names)}")
        return cls(**value)
    raise TypeError(f"expected {cls.__name__}, dict or None, got {type(value).__name__}")
