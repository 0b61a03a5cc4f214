"""Build inputs, one class per primitive kind: triangles, spheres, curves, custom primitives (AABBs).

Each input is validated on the host before any GPU work; the checks
themselves live in :mod:`optixasync.validation`, shared with the scene layer.
Each array may be a numpy array or a device array of any library
(``__cuda_array_interface__``, or DLPack with a CUDA ``__dlpack_device__``:
PyTorch, JAX, CuPy, Numba...): device arrays are checked for dtype, shape and
contiguity from their metadata, never read, and later used in place by the
build (:class:`~optixasync.accel.GeometryAccel`).

Motion blur: the array that moves (a triangle input's vertices, a sphere
input's centres and radii, a curve input's control points and widths, a
custom input's boxes) may be given as a list of arrays, one per motion key,
all of the same count; the structure's ``AccelOptions.motion`` says how
many keys and over which time range.

Blocking calls
--------------
None: host-side validation only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..validation import as_int, check_aabbs, check_indices, check_radii, check_vertices, describe_array

__all__ = ["CustomInput", "SphereInput", "TriangleInput", "motion_keys"]


def motion_keys(value: Any, name: str, check: Callable[[Any, str], int]) -> tuple[list[Any], int]:
    """``value`` as its motion keys (itself, or the arrays of a list or tuple), and their common count.

    ``check(array, name)`` validates one key and returns its count.

    Raises
    ------
    ValueError
        No key, or keys of different counts ("motion keys of different counts"), naming ``name``.
    """
    keys = list(value) if isinstance(value, (list, tuple)) else [value]
    if not keys:
        raise ValueError(f"{name}: an empty list has no motion key; give an array, or one array per key")
    counts = [check(key, f"{name}[{k}]" if len(keys) > 1 else name) for k, key in enumerate(keys)]
    if len(set(counts)) > 1:
        raise ValueError(f"{name}: the motion keys have different counts {counts}; every key needs the same")
    return keys, counts[0]


def _check_sbt(self: Any, count: int, what: str) -> None:
    """The per-record checks of the inputs with several SBT records (triangles, spheres, custom primitives)."""
    self.num_sbt_records = as_int("num_sbt_records", self.num_sbt_records, 1)
    if not isinstance(self.any_hit, bool):
        raise TypeError(f"any_hit must be a bool, got {type(self.any_hit).__name__}")
    if self.material_ids is None:
        return
    shape, dtype, contiguous, on_device = describe_array(self.material_ids, "material_ids")
    if dtype != np.uint32 or shape != (count,) or not contiguous:
        raise ValueError(f"material_ids must be a contiguous uint32 array of shape ({count},), one per {what}, "
                         f"got {dtype} {shape}")
    if not on_device and self.material_ids.max() >= self.num_sbt_records:
        raise ValueError(
            f"material_ids reach {int(self.material_ids.max())} but num_sbt_records is {self.num_sbt_records}"
        )


@dataclass
class TriangleInput:
    """One triangle build input: vertices, optional indices, optional per-triangle SBT offsets.

    Attributes
    ----------
    vertices : array (N, 3) float32, or a list of them (one per motion key)
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

    primitive: ClassVar[str] = "triangle"
    moving: ClassVar[str] = "vertices"

    def __post_init__(self) -> None:
        self.keys, self.num_vertices = motion_keys(self.vertices, "vertices", check_vertices)
        if self.indices is None:
            if self.num_vertices % 3:
                raise ValueError(f"without indices the vertex count must be a multiple of 3, got {self.num_vertices}")
            self.num_triangles = self.num_vertices // 3
        else:
            self.num_triangles = check_indices(self.indices, self.num_vertices)
        _check_sbt(self, self.num_triangles, "triangle")

    @property
    def num_keys(self) -> int:
        return len(self.keys)

    @property
    def num_primitives(self) -> int:
        return self.num_triangles

    def check_moving(self, value: Any, name: str) -> list[Any]:
        """New vertex keys for a refit: the same count of keys and of vertices."""
        keys, count = motion_keys(value, name, check_vertices)
        _same_shape(name, len(keys), self.num_keys, count, self.num_vertices, "vertex")
        return keys


def _same_shape(name: str, keys: int, want_keys: int, count: int, want_count: int, what: str) -> None:
    if keys != want_keys:
        raise ValueError(f"{name}: the structure was built with {want_keys} motion key(s), got {keys}")
    if count != want_count:
        raise ValueError(f"refit changes the {what} count: built with {want_count}, got {count}")


def _check_radius_key(count: int) -> Callable[[Any, str], int]:
    """The check of one radius key: a number (one radius for all) or an array of ``count``; returns its count."""
    def check(value: Any, name: str) -> int:
        if np.isscalar(value) and not isinstance(value, (str, bytes)):
            radius = float(value)  # type: ignore[arg-type]
            if not (np.isfinite(radius) and radius >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {radius}")
            return 1
        check_radii(value, count, name)
        return count
    return check


@dataclass
class SphereInput:
    """One sphere build input: centres and radii (one for all, or one per sphere).

    Hit programs that read the spheres back (``oa::sphere_data``, ``oa::sphere_hit``) need the GAS built with
    ``AccelOptions(random_vertex_access=True)``, and the :class:`~optixasync.BuiltinModule` asked for with the
    GAS's ``options.build_flags``.

    Attributes
    ----------
    centers : array (N, 3) float32, or a list of them (one per motion key)
    radii : float, or array (N,) float32, or a list of either (one per motion key)
        Finite and >= 0 (a NaN or negative radius is refused on the host).
    material_ids : array (N,) uint32, optional
        Per-sphere index into this input's ``num_sbt_records`` hit records.
    num_sbt_records : int
    any_hit : bool
        Run the any-hit program on this input's candidate hits.
    """

    centers: Any
    radii: Any
    material_ids: Any = None
    num_sbt_records: int = 1
    any_hit: bool = False

    primitive: ClassVar[str] = "sphere"
    moving: ClassVar[str] = "centers"

    def __post_init__(self) -> None:
        self.keys, self.num_spheres = motion_keys(self.centers, "centers", check_vertices)
        self.radius_keys, count = motion_keys(self.radii, "radii", _check_radius_key(self.num_spheres))
        self.single_radius = count == 1 and np.isscalar(self.radius_keys[0])
        if len(self.radius_keys) != len(self.keys):
            raise ValueError(f"radii have {len(self.radius_keys)} motion key(s) but centers {len(self.keys)}; "
                             "give both one per key, or one each (per-sphere radii are one float32 array, not a "
                             "list)")
        self.radius_keys = [np.array([float(r)], np.float32) if np.isscalar(r) else r for r in self.radius_keys]
        _check_sbt(self, self.num_spheres, "sphere")

    @property
    def num_keys(self) -> int:
        return len(self.keys)

    @property
    def num_primitives(self) -> int:
        return self.num_spheres

    def check_moving(self, value: Any, name: str) -> list[Any]:
        keys, count = motion_keys(value, name, check_vertices)
        _same_shape(name, len(keys), self.num_keys, count, self.num_spheres, "sphere")
        return keys


@dataclass
class CustomInput:
    """One custom-primitive build input: a box per primitive, intersected by an ``__intersection__`` program.

    Attributes
    ----------
    aabbs : array (N, 6) float32, or a list of them (one per motion key)
        ``min x, y, z, max x, y, z`` of each primitive (its intersection program must report hits inside).
    material_ids : array (N,) uint32, optional
    num_sbt_records : int
    any_hit : bool
    """

    aabbs: Any
    material_ids: Any = None
    num_sbt_records: int = 1
    any_hit: bool = False

    primitive: ClassVar[str] = "custom"
    moving: ClassVar[str] = "aabbs"

    def __post_init__(self) -> None:
        self.keys, self.num_boxes = motion_keys(self.aabbs, "aabbs", check_aabbs)
        _check_sbt(self, self.num_boxes, "box")

    @property
    def num_keys(self) -> int:
        return len(self.keys)

    @property
    def num_primitives(self) -> int:
        return self.num_boxes

    def check_moving(self, value: Any, name: str) -> list[Any]:
        keys, count = motion_keys(value, name, check_aabbs)
        _same_shape(name, len(keys), self.num_keys, count, self.num_boxes, "box")
        return keys
