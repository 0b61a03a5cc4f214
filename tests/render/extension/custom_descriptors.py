"""A custom primitive type from this folder only: axis-aligned boxes, added through the public registry.

:func:`register` adds it (a test removes it after); nothing under ``optixasync/`` or ``kernels/`` knows it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from optixasync.errors import ShapeError
from optixasync.scene import CustomPrimitiveType, register_custom_primitive

HERE = Path(__file__).resolve().parent


class TestBoxType(CustomPrimitiveType):
    name = "test_box"
    header = str(HERE / "custom_box.h")
    struct = "TestBoxPrimitive"
    floats = 6

    def check(self, data: np.ndarray, label: str) -> None:
        if (data[:, :3] > data[:, 3:]).any():
            raise ShapeError(f"{label}: a box's minimum exceeds its maximum")

    def bounds(self, data: np.ndarray) -> np.ndarray:
        return data.astype(np.float32)


def register() -> TestBoxType:
    """Register the type (the caller removes it)."""
    return register_custom_primitive(TestBoxType())
