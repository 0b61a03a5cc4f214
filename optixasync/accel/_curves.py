"""Curve build inputs: control points, a radius per control point, segments, and the curve kind.

A curve input is a set of polynomial segments (OptiX's primitives) over
shared control points: segment ``k`` reads the ``degree + 1`` consecutive
control points starting at ``indices[k]``. One input holds one kind
(``"linear"``, ``"quadratic_bspline"``, ``"cubic_bspline"``, ``"catmull_rom"``,
``"bezier"``, the ribbon ``"flat_quadratic_bspline"``, and from ABI 105 the
``_rocaps`` forms of the round quadratic and cubic ones), and a GAS holds
curves of one kind.

Blocking calls
--------------
None: host-side validation only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._optix._primitives import PrimitiveKind, primitive_kind
from ..validation import check_radii, check_vertices, describe_array
from ._inputs import _same_shape, motion_keys

__all__ = ["CurveInput", "curve_segments"]


def curve_segments(strand_lengths: Sequence[int], kind: str) -> np.ndarray:
    """The segment indices of strands of control points laid end to end (one strand after the other).

    A strand of ``n`` control points has ``n - degree`` segments.

    Raises
    ------
    ValueError
        A strand with fewer control points than one segment of ``kind`` reads.
    """
    curve = primitive_kind(kind, curves_only=True)
    starts, first = [], 0
    for k, n in enumerate(strand_lengths):
        if n < curve.degree + 1:
            raise ValueError(f"strand {k} has {n} control point(s); a {curve.name!r} segment reads {curve.degree + 1}")
        starts.append(np.arange(first, first + n - curve.degree, dtype=np.uint32))
        first += n
    return np.concatenate(starts) if starts else np.zeros(0, np.uint32)


@dataclass
class CurveInput:
    """One curve build input.

    Hit programs that read the control points back (``oa::round_curve_hit``, the ``oa::*_vertex_data`` helpers)
    need the GAS built with ``AccelOptions(random_vertex_access=True)``, and the
    :class:`~optixasync.BuiltinModule` asked for with the GAS's ``options.build_flags``.

    Attributes
    ----------
    vertices : array (N, 3) float32, or a list of them (one per motion key)
        Control points.
    widths : array (N,) float32, or a list of them (one per motion key)
        The curve's radius at each control point (OptiX calls it the width); finite and >= 0.
    indices : array (S,) uint32 or int32, optional
        The first control point of each segment; every ``index + degree`` must be a control point. Without
        indices the control points are one strand (``N - degree`` segments).
    kind : str
        The curve kind (basis and degree), see the module docstring.
    endcaps : bool
        Flat caps at both ends of quadratic and cubic segments (``OPTIX_CURVE_ENDCAP_ON``); linear
        curves always have round caps. The built-in module must be asked for with the same setting.
    any_hit : bool
        Run the any-hit program on this input's candidate hits.
    """

    vertices: Any
    widths: Any
    indices: Any = None
    kind: str = "cubic_bspline"
    endcaps: bool = False
    any_hit: bool = False

    primitive: ClassVar[str] = "curve"  # the kind of GAS; ``curve.name`` is the curve kind
    moving: ClassVar[str] = "vertices"
    num_sbt_records: ClassVar[int] = 1  # a curve input has one SBT record
    material_ids: ClassVar[None] = None

    def __post_init__(self) -> None:
        self.curve: PrimitiveKind = primitive_kind(self.kind, curves_only=True)
        for name in ("endcaps", "any_hit"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__}")
        if self.endcaps and self.curve.degree == 1:
            raise ValueError("end caps are for quadratic and cubic curves: linear curves always have round caps")
        self.keys, self.num_vertices = motion_keys(self.vertices, "vertices", check_vertices)
        self.width_keys, _ = motion_keys(self.widths, "widths", self._check_widths)
        if len(self.width_keys) != len(self.keys):
            raise ValueError(f"widths have {len(self.width_keys)} motion key(s) but vertices {len(self.keys)}")
        degree = self.curve.degree
        if self.num_vertices < degree + 1:
            raise ValueError(f"{self.num_vertices} control point(s) are too few for a {self.kind!r} segment, "
                             f"which reads {degree + 1}")
        if self.indices is None:
            self.indices = np.arange(self.num_vertices - degree, dtype=np.uint32)
        self.num_segments = self._check_indices(self.indices)

    def _check_widths(self, widths: Any, name: str) -> int:
        """One width key: a radius per control point, finite and >= 0."""
        check_radii(widths, self.num_vertices, name)
        return self.num_vertices

    def _check_indices(self, indices: Any) -> int:
        shape, dtype, contiguous, on_device = describe_array(indices, "indices")
        if dtype not in (np.int32, np.uint32) or len(shape) != 1 or not contiguous:
            raise ValueError(f"indices must be a contiguous int32 or uint32 array of shape (S,), one per segment, "
                             f"got {dtype} {shape}")
        if shape[0] == 0:
            raise ValueError("indices is empty: a curve input needs at least one segment")
        if not on_device:
            low, high = int(indices.min()), int(indices.max())
            last = self.num_vertices - 1 - self.curve.degree
            if low < 0 or high > last:
                raise ValueError(f"indices span [{low}, {high}] but a {self.kind!r} segment reads "
                                 f"{self.curve.degree + 1} control points from its index: with "
                                 f"{self.num_vertices} control points the last segment may start at {last}")
        return int(shape[0])

    @property
    def num_keys(self) -> int:
        return len(self.keys)

    @property
    def num_primitives(self) -> int:
        return self.num_segments

    def check_moving(self, value: Any, name: str) -> list[Any]:
        keys, count = motion_keys(value, name, check_vertices)
        _same_shape(name, len(keys), self.num_keys, count, self.num_vertices, "control point")
        return keys

    @classmethod
    def from_strands(cls, strands: Sequence[Any], widths: Any, kind: str = "cubic_bspline", **options: Any) -> CurveInput:
        """Strands (hair, streamlines) laid end to end into one input.

        Parameters
        ----------
        strands : sequence of array (n_k, 3)
            The control points of each strand.
        widths : float, or sequence of array (n_k,)
            One radius for every control point, or one array per strand.
        kind : str
        **options
            ``endcaps``, ``any_hit``.

        Raises
        ------
        ValueError
            A strand too short for one segment of ``kind``, or widths that do not match the strands.
        """
        points = [np.ascontiguousarray(s, dtype=np.float32).reshape(-1, 3) for s in strands]
        if not points:
            raise ValueError("from_strands needs at least one strand")
        indices = curve_segments([len(p) for p in points], kind)
        vertices = np.concatenate(points)
        if np.isscalar(widths):
            radii = np.full(len(vertices), float(widths), np.float32)  # type: ignore[arg-type]
        else:
            per_strand = [np.ascontiguousarray(w, dtype=np.float32).ravel() for w in widths]
            if [len(w) for w in per_strand] != [len(p) for p in points]:
                raise ValueError("widths must give one radius per control point of each strand "
                                 f"({[len(p) for p in points]}), got {[len(w) for w in per_strand]}")
            radii = np.concatenate(per_strand)
        return cls(vertices, radii, indices, kind=kind, **options)
