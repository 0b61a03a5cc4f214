"""Acceleration structures: triangle GAS (and, built on it, instancing, compaction and refit)."""

from ._gas import AccelOptions, GeometryAccel
from ._inputs import TriangleInput, check_indices, check_vertices

__all__ = ["AccelOptions", "GeometryAccel", "TriangleInput", "check_indices", "check_vertices"]
