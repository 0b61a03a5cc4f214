"""Triangle build inputs: the geometry of one build input, validated on the host before any GPU work.

The checks themselves live in :mod:`optixasync.validation`, shared with the
scene layer. Each array may be a numpy array or a device array of any
library (``__cuda_array_interface__``, or DLPack with a CUDA
``__dlpack_device__``: PyTorch, JAX, CuPy, Numba...): device arrays are
checked for dtype, shape and contiguity from their metadata, never read,
and later used in place by the build (:class:`~optixasync.accel.GeometryAccel`).

Blocking calls
--------------
None: host-side validation only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..validation import as_int, check_indices, check_vertices, describe_array

__all__ = ["TriangleInput"]


@dataclass
class TriangleInput:
    """One triangle build input: vertices, optional indices, optional per-triangle SBT offsets.

    Attributes
    ----------
    vertices : array (N, 3) float32
        Host (numpy) or device array, C-contiguous.
    indices : array (M, 3) int32 or uint32, optional
        Without indices, every three consecutive vertices form a triangle.
    material_ids : array (M,) uint32, optional
        Per-triangle index into this input's ``num_sbt_records`` hit records.
    num_sbt_records : int
        Number of SBT records this input uses (max material id + 1).
    any_hit : bool
        Run the hit group's any-hit program on this input's candidate hits
        (cut-out surfaces). False: OptiX skips it, as for opaque geometry.
    """

    vertices: Any
    indices: Any = None
    material_ids: Any = None
    num_sbt_records: int = 1
    any_hit: bool = False

    def __post_init__(self) -> None:
        self.num_sbt_records = as_int("num_sbt_records", self.num_sbt_records, 1)
        if not isinstance(self.any_hit, bool):
            raise TypeError(f"any_hit must be a bool, got {type(self.any_hit).__name__}")
        self.num_vertices = check_vertices(self.vertices)
        if self.indices is None:
            if self.num_vertices % 3:
                raise ValueError(f"without indices the vertex count must be a multiple of 3, got {self.num_vertices}")
            self.num_triangles = self.num_vertices // 3
        else:
            self.num_triangles = check_indices(self.indices, self.num_vertices)
        if self.material_ids is not None:
            shape, dtype, contiguous, on_device = describe_array(self.material_ids, "material_ids")
            if dtype != np.uint32 or shape != (self.num_triangles,) or not contiguous:
                raise ValueError(
                    f"material_ids must be a contiguous uint32 array of shape ({self.num_triangles},), "
                    f"got {dtype} {shape}"
                )
            if not on_device and self.material_ids.max() >= self.num_sbt_records:
                raise ValueError(
                    f"material_ids reach {int(self.material_ids.max())} but num_sbt_records is {self.num_sbt_records}"
                )
