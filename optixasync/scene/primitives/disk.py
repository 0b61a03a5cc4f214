"""``"disk"``: oriented disks (surfels, splats), intersected by ``kernels/pathtracer/custom_disk.h``.

One primitive is 7 floats: the centre (3), the normal (3, any length but 0: its direction is the front side) and
the radius (>= 0).
"""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from .._custom import CustomPrimitiveType

__all__ = ["DiskPrimitive"]


class DiskPrimitive(CustomPrimitiveType):
    name = "disk"
    header = "pathtracer/custom_disk.h"
    struct = "DiskPrimitive"
    floats = 7

    def check(self, data: np.ndarray, label: str) -> None:
        lengths = np.linalg.norm(data[:, 3:6], axis=1)
        if (lengths == 0).any():
            raise ShapeError(f"{label}: disk {int(np.argmax(lengths == 0))} has a zero normal")
        if (data[:, 6] < 0).any():
            first = int(np.argmax(data[:, 6] < 0))
            raise ShapeError(f"{label}: disk radii must be >= 0: disk {first} has {float(data[first, 6])}")

    def bounds(self, data: np.ndarray) -> np.ndarray:
        """Tight boxes: along axis i a disk of unit normal n reaches r sqrt(1 - n_i^2) from its centre."""
        n = data[:, 3:6] / np.linalg.norm(data[:, 3:6], axis=1, keepdims=True)
        reach = data[:, 6:7] * np.sqrt(np.clip(1.0 - n * n, 0.0, 1.0)) * 1.0001 + 1e-7
        return np.concatenate([data[:, :3] - reach, data[:, :3] + reach], axis=1).astype(np.float32)
