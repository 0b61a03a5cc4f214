"""Validation of geometry inputs, done on the host before any GPU work.

Host arrays are checked completely (dtype, shape, contiguity, finite
vertices, index range). Device arrays (``__cuda_array_interface__``) are
checked for dtype, shape and contiguity only: reading their values back
would stall the host, which is what this library exists to avoid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TriangleInput", "check_vertices", "check_indices", "is_device_array"]


def is_device_array(array: Any) -> bool:
    return hasattr(array, "__cuda_array_interface__")


def _describe(array: Any) -> tuple[tuple[int, ...], np.dtype, bool, bool]:
    """Shape, dtype, C-contiguity and whether it lives on the device, without touching the data."""
    if isinstance(array, np.ndarray):
        return array.shape, array.dtype, bool(array.flags.c_contiguous), False
    iface = getattr(array, "__cuda_array_interface__", None)  # CuPy builds this dict on every access: read it once
    if iface is None:
        raise TypeError(f"expected a numpy array or a device array, got {type(array).__name__}")
    shape = tuple(iface["shape"])
    dtype = np.dtype(iface["typestr"])
    strides = iface.get("strides")
    contiguous = strides is None or tuple(strides) == tuple(
        int(np.prod(shape[i + 1 :], dtype=np.int64)) * dtype.itemsize for i in range(len(shape))
    )
    return shape, dtype, contiguous, True


def check_vertices(vertices: Any, name: str = "vertices") -> int:
    """Validate an (N, 3) float32 vertex array; return N."""
    shape, dtype, contiguous, on_device = _describe(vertices)
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
    """Validate an (M, 3) int32/uint32 index array whose values are < num_vertices; return M."""
    shape, dtype, contiguous, on_device = _describe(indices)
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


@dataclass
class TriangleInput:
    """One triangle build input: vertices, optional indices, optional per-triangle SBT offsets.

    Attributes
    ----------
    vertices : array (N, 3) float32
    indices : array (M, 3) int32, optional
        Without indices, every three consecutive vertices form a triangle.
    material_ids : array (M,) uint32, optional
        Per-triangle index into this input's ``num_sbt_records`` hit records.
    num_sbt_records : int
        Number of SBT records this input uses (max material id + 1).
    """

    vertices: Any
    indices: Any = None
    material_ids: Any = None
    num_sbt_records: int = 1

    def __post_init__(self) -> None:
        self.num_vertices = check_vertices(self.vertices)
        if self.indices is None:
            if self.num_vertices % 3:
                raise ValueError(f"without indices the vertex count must be a multiple of 3, got {self.num_vertices}")
            self.num_triangles = self.num_vertices // 3
        else:
            self.num_triangles = check_indices(self.indices, self.num_vertices)
        if self.material_ids is not None:
            shape, dtype, contiguous, on_device = _describe(self.material_ids)
            if dtype != np.uint32 or shape != (self.num_triangles,) or not contiguous:
                raise ValueError(
                    f"material_ids must be a contiguous uint32 array of shape ({self.num_triangles},), "
                    f"got {dtype} {shape}"
                )
            if not on_device and self.material_ids.max() >= self.num_sbt_records:
                raise ValueError(
                    f"material_ids reach {int(self.material_ids.max())} but num_sbt_records is {self.num_sbt_records}"
                )
        if not 1 <= self.num_sbt_records:
            raise ValueError(f"num_sbt_records must be at least 1, got {self.num_sbt_records}")
