"""Curves: hair, fur, streamlines; round tubes along polynomial segments, drawn by the path tracer.

Host-side data. A :class:`Curves` holds strands of control points laid end
to end, a radius per control point, and the segments (OptiX's curve
primitives) that read them. The path tracer builds one GAS per curve kind
(OptiX holds one kind per GAS) and shades the tubes with the same materials
and BSDFs as meshes.

Blocking calls
--------------
None: host-side data (device arrays are described, never read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import ShapeError
from ..validation import describe_array
from ._material import Material
from ._shapes import (
    shape_bounds,
    shape_colors,
    shape_label,
    shape_material_ids,
    shape_materials,
    shape_points,
    shape_radii,
)

__all__ = ["CURVE_DEGREES", "Curves", "strand_segments"]

#: The round curve kinds the path tracer draws, and their degree (a segment reads degree + 1 control points).
CURVE_DEGREES: dict[str, int] = {"linear": 1, "quadratic_bspline": 2, "cubic_bspline": 3, "catmull_rom": 3,
                                 "bezier": 3}


def _degree(kind: Any) -> int:
    if not isinstance(kind, str) or kind not in CURVE_DEGREES:
        raise ShapeError(f"curve kind must be one of {', '.join(CURVE_DEGREES)} (the round kinds the path tracer "
                         f"draws), got {kind!r}")
    return CURVE_DEGREES[kind]


def strand_segments(strand_lengths: Sequence[int], kind: str) -> np.ndarray:
    """The first control point of every segment of strands laid end to end (uint32).

    A strand of ``n`` control points has ``n - degree`` segments, one starting at each of its first
    ``n - degree`` points, except Bezier strands, whose segments share only their end points: ``n = 3 k + 1``
    points make ``k`` segments, starting every third point.

    Raises
    ------
    ShapeError
        An unknown kind, a strand with fewer control points than one segment reads (or a Bezier strand whose
        count is not 3 k + 1).
    """
    degree = _degree(kind)
    starts, first = [], 0
    for k, n in enumerate(strand_lengths):
        n = int(n)
        if n < degree + 1:
            raise ShapeError(f"strand {k} has {n} control point(s); a {kind!r} segment reads {degree + 1}")
        if kind == "bezier":
            if (n - 1) % 3:
                raise ShapeError(f"strand {k} has {n} control points; a Bezier strand has 3 k + 1 (segments share "
                                 "their end points)")
            starts.append(np.arange(first, first + n - 1, 3, dtype=np.uint32))
        else:
            starts.append(np.arange(first, first + n - degree, dtype=np.uint32))
        first += n
    return np.concatenate(starts) if starts else np.zeros(0, np.uint32)


@dataclass(eq=False)
class Curves:
    """Round curves: tubes of varying radius along segments of control points (hair, fur, streamlines).

    Build one from strands with :meth:`from_strands`. The tube's outside is its front (emission leaves it);
    the normal is that of the sphere swept along the curve, at the point the ray hits. Texture coordinates are
    (the segment's curve parameter, 0). Emissive curves are not light-sampled (reached by BSDF sampling only).

    Attributes
    ----------
    points : array (N, 3)
        Control points (host arrays of any float dtype stored as float32; device arrays used in place).
    radii : float or array (N,)
        The tube's radius at each control point (OptiX calls it the width), interpolated with the curve's basis;
        finite and >= 0.
    segments : array (S,) of ints, or None
        The first control point of each segment (a segment reads ``degree + 1`` consecutive points); None: the
        points are one strand.
    kind : str
        ``"linear"``, ``"quadratic_bspline"``, ``"cubic_bspline"``, ``"catmull_rom"`` or ``"bezier"``
        (:data:`CURVE_DEGREES`).
    colors : array (N, 3) or None
        Linear RGB per control point (>= 0), interpolated like the points, multiplying the reflectance.
    material : Material or sequence of Material
    material_ids : array (S,) of ints or None
        The index of each segment's material in ``material``.
    name : str

    Raises
    ------
    ShapeError
        An unknown kind, too few control points for one segment, a segment reading past the last point, a NaN
        or negative radius, material ids past the materials, a cut-out or normal-mapped material.
    """

    points: Any
    radii: Any
    segments: Any = None
    kind: str = "cubic_bspline"
    colors: Any = None
    material: Any = field(default_factory=Material)
    material_ids: Any = None
    name: str = ""

    #: The primitive kind of OptiX; for curves, ``kind`` names the curve kind.
    primitive: ClassVar[str] = "curve"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"curves name must be a str, got {type(self.name).__name__}")
        label = self.label
        self.degree = _degree(self.kind)
        self.points = shape_points(self.points, label, "points")
        self.num_points = int(self.points.shape[0])
        if self.num_points < self.degree + 1:
            raise ShapeError(f"{label}: {self.num_points} control point(s) are too few for a {self.kind!r} segment, "
                             f"which reads {self.degree + 1}")
        if self.segments is None:
            self.segments = strand_segments([self.num_points], self.kind)
        self.segments = self._check_segments(self.segments)
        self.num_segments = int(self.segments.shape[0])
        self.radii = shape_radii(self.radii, self.num_points, label)
        self.colors = shape_colors(self.colors, self.num_points, label)
        self.check_materials()

    @property
    def label(self) -> str:
        return shape_label(f"{self.kind} curves", self.name)

    def _check_segments(self, segments: Any) -> Any:
        if isinstance(segments, np.ndarray) and segments.dtype.kind in "iu":
            if segments.ndim != 1 or not len(segments):
                raise ShapeError(f"{self.label}: segments must be a non-empty (S,) array, got shape {segments.shape}")
            low, high, last = int(segments.min()), int(segments.max()), self.num_points - 1 - self.degree
            if low < 0 or high > last:
                raise ShapeError(f"{self.label}: segments span [{low}, {high}] but a {self.kind!r} segment reads "
                                 f"{self.degree + 1} control points from its first: with {self.num_points} points the "
                                 f"last segment may start at {last}")
            return np.ascontiguousarray(segments, np.uint32)
        shape, dtype, contiguous, on_device = describe_array(segments, f"{self.label} segments")
        if not on_device:
            raise ShapeError(f"{self.label}: segments must be an integer array, got {dtype}")
        if dtype not in (np.int32, np.uint32) or len(shape) != 1 or not contiguous or not shape[0]:
            raise ShapeError(f"{self.label}: device segments must be a non-empty contiguous (S,) int32 or uint32 "
                             f"array, got {dtype} {shape}")
        return segments

    def check_materials(self) -> None:
        """Check the materials and material ids (again: ``material`` may have been replaced since)."""
        self.materials = shape_materials(self.material, self.label)
        self.material_ids = shape_material_ids(self.material_ids, self.num_segments, len(self.materials),
                                               self.label, "segment")

    @classmethod
    def from_strands(cls, strands: Sequence[Any], radii: Any, kind: str = "cubic_bspline", *,
                     colors: Sequence[Any] | None = None, **options: Any) -> Curves:
        """Strands of control points laid end to end.

        Parameters
        ----------
        strands : sequence of array (n_k, 3)
            Each strand's control points.
        radii : float, or sequence of array (n_k,)
            One radius for all, or one array per strand.
        kind : str
        colors : sequence of array (n_k, 3), optional
            Per strand, a linear RGB per control point.
        **options
            ``material``, ``material_ids`` (one per segment), ``name``.

        Raises
        ------
        ShapeError
            A strand too short for one segment of ``kind``, or radii or colours that do not match the strands.
        """
        points = [np.asarray(s, np.float32).reshape(-1, 3) for s in strands]
        if not points:
            raise ShapeError("Curves.from_strands needs at least one strand")
        lengths = [len(p) for p in points]
        segments = strand_segments(lengths, kind)
        if not np.isscalar(radii):
            radii = _per_strand(radii, lengths, "radii", ())
        if colors is not None:
            colors = _per_strand(colors, lengths, "colors", (3,))
        return cls(np.concatenate(points), radii, segments, kind, colors, **options)

    @property
    def num_primitives(self) -> int:
        return self.num_segments

    @property
    def on_device(self) -> bool:
        """Whether the points, radii or segments are device arrays (used in place)."""
        return not all(isinstance(a, np.ndarray) or np.isscalar(a) for a in (self.points, self.radii, self.segments))

    @property
    def is_emissive(self) -> bool:
        return any(m.is_emissive for m in self.materials)

    def bounds(self) -> np.ndarray | None:
        """The (2, 3) box around the control points grown by the largest radius (None on the device)."""
        return shape_bounds(self.points, self.radii)

    def __repr__(self) -> str:
        return f"<optixasync.scene.Curves {self.label}: {self.num_segments:,} segments, {self.num_points:,} points>"


def _per_strand(values: Sequence[Any], lengths: list[int], what: str, tail: tuple[int, ...]) -> np.ndarray:
    """One array per strand, each of its strand's length, concatenated."""
    arrays = [np.asarray(v, np.float64).reshape(-1, *tail) for v in values]
    if [len(a) for a in arrays] != lengths:
        raise ShapeError(f"Curves.from_strands: {what} must give one entry per control point of each strand "
                         f"({lengths}), got {[len(a) for a in arrays]}")
    return np.concatenate(arrays).astype(np.float32)
