"""The primitive kinds of OptiX by name: their ``OptixPrimitiveType``, pipeline flag, curve degree, first ABI.

One table shared by the build inputs (``optixasync.accel``: which type a
curve input is, how many control points a segment reads) and the built-in
intersection modules (``optixasync.program``: which module to ask for, and
which pipeline flag it needs). Facts of the OptiX headers, no policy.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _types as t

__all__ = ["CURVE_KINDS", "PRIMITIVE_KINDS", "PrimitiveKind", "primitive_kind"]


@dataclass(frozen=True)
class PrimitiveKind:
    """One primitive kind.

    Attributes
    ----------
    name : str
        optixasync's name (``"sphere"``, ``"cubic_bspline"``, ...).
    type : PrimitiveType
    flag : PrimitiveTypeFlags
        What ``PipelineOptions.primitive_type_flags`` must include to intersect it.
    degree : int or None
        Curves: the polynomial degree; a segment reads ``degree + 1`` consecutive control points.
    min_abi : int
        The first ABI that has it (87 unless noted).
    flat : bool
        A flat ribbon facing a normal (the flat quadratic B-spline) rather than a round tube.
    """

    name: str
    type: t.PrimitiveType
    flag: t.PrimitiveTypeFlags
    degree: int | None = None
    min_abi: int = 87
    flat: bool = False

    @property
    def is_curve(self) -> bool:
        return self.degree is not None

    @property
    def builtin(self) -> bool:
        """Whether OptiX intersects it with a built-in module (``optixBuiltinISModuleGet``): spheres and curves."""
        return self.type not in (t.PrimitiveType.TRIANGLE, t.PrimitiveType.CUSTOM)


_T, _F = t.PrimitiveType, t.PrimitiveTypeFlags
PRIMITIVE_KINDS: dict[str, PrimitiveKind] = {k.name: k for k in (
    PrimitiveKind("triangle", _T.TRIANGLE, _F.TRIANGLE),
    PrimitiveKind("custom", _T.CUSTOM, _F.CUSTOM),
    PrimitiveKind("sphere", _T.SPHERE, _F.SPHERE),
    PrimitiveKind("linear", _T.ROUND_LINEAR, _F.ROUND_LINEAR, degree=1),
    PrimitiveKind("quadratic_bspline", _T.ROUND_QUADRATIC_BSPLINE, _F.ROUND_QUADRATIC_BSPLINE, degree=2),
    PrimitiveKind("cubic_bspline", _T.ROUND_CUBIC_BSPLINE, _F.ROUND_CUBIC_BSPLINE, degree=3),
    PrimitiveKind("catmull_rom", _T.ROUND_CATMULLROM, _F.ROUND_CATMULLROM, degree=3),
    PrimitiveKind("bezier", _T.ROUND_CUBIC_BEZIER, _F.ROUND_CUBIC_BEZIER, degree=3),
    PrimitiveKind("flat_quadratic_bspline", _T.FLAT_QUADRATIC_BSPLINE, _F.FLAT_QUADRATIC_BSPLINE, degree=2,
                  flat=True),
    PrimitiveKind("quadratic_bspline_rocaps", _T.ROUND_QUADRATIC_BSPLINE_ROCAPS, _F.ROUND_QUADRATIC_BSPLINE_ROCAPS,
                  degree=2, min_abi=105),
    PrimitiveKind("cubic_bspline_rocaps", _T.ROUND_CUBIC_BSPLINE_ROCAPS, _F.ROUND_CUBIC_BSPLINE_ROCAPS, degree=3,
                  min_abi=105),
    PrimitiveKind("catmull_rom_rocaps", _T.ROUND_CATMULLROM_ROCAPS, _F.ROUND_CATMULLROM_ROCAPS, degree=3,
                  min_abi=105),
    PrimitiveKind("bezier_rocaps", _T.ROUND_CUBIC_BEZIER_ROCAPS, _F.ROUND_CUBIC_BEZIER_ROCAPS, degree=3,
                  min_abi=105),
)}
#: The curve kinds, by name.
CURVE_KINDS: dict[str, PrimitiveKind] = {name: k for name, k in PRIMITIVE_KINDS.items() if k.is_curve}


def primitive_kind(name: object, *, curves_only: bool = False) -> PrimitiveKind:
    """The kind called ``name``.

    Raises
    ------
    ValueError
        On an unknown name, listing the known ones.
    """
    table = CURVE_KINDS if curves_only else PRIMITIVE_KINDS
    if not isinstance(name, str) or name not in table:
        what = "curve kind" if curves_only else "primitive kind"
        raise ValueError(f"unknown {what} {name!r}; known: {', '.join(table)}")
    return table[name]
