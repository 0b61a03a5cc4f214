"""USD's implicit gprims as triangles (Cube, Cylinder, Cone, Capsule), and Sphere, Points and BasisCurves.

``UsdGeomCube`` (``size``), ``UsdGeomCylinder`` and ``UsdGeomCone``
(``radius``, ``height``, ``axis``; a cone's apex at ``+height / 2``) and
``UsdGeomCapsule`` (``radius``, ``height`` of the cylinder between its two
hemispheres, ``axis``) are tessellated in object space with
:data:`SEGMENTS` segments around the axis and smooth normals on their curved
parts. ``UsdGeomSphere`` becomes one sphere of the renderer's
:class:`Spheres` (exact, not tessellated), ``UsdGeomPoints`` a sphere per
point (radius half of ``widths``), ``UsdGeomBasisCurves`` round
:class:`Curves` (``linear``, or ``cubic`` with the ``bspline``,
``catmullRom`` or ``bezier`` basis; ``periodic`` curves are drawn open, with
a warning).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._usd_stage import UsdDocument

__all__ = ["SEGMENTS", "curve_strands", "shape_item", "tessellate"]

#: Segments around the axis of a tessellated cylinder, cone or capsule.
SEGMENTS = 64
_AXES = {"X": (1, 2, 0), "Y": (2, 0, 1), "Z": (0, 1, 2)}  # (u, v, axis) columns: the axis becomes local z


def _orient(v: np.ndarray, axis: str) -> np.ndarray:
    """Points built along +z turned to ``axis`` (X, Y or Z), keeping the frame right-handed."""
    out = np.empty_like(v)
    u, w, a = _AXES.get(axis, _AXES["Z"])
    out[:, u], out[:, w], out[:, a] = v[:, 0], v[:, 1], v[:, 2]
    return out


def _revolve(profile: np.ndarray, normals: np.ndarray, segments: int) -> tuple[np.ndarray, ...]:
    """A surface of revolution about z: ``profile`` (P, 2) of (radius, z) from bottom to top, with its normals."""
    phi = np.linspace(0.0, 2.0 * math.pi, segments + 1)[:-1]
    c, s = np.cos(phi), np.sin(phi)
    r, z = profile[:, 0], profile[:, 1]
    nr, nz = normals[:, 0], normals[:, 1]
    v = np.stack([r[:, None] * c, r[:, None] * s, np.broadcast_to(z[:, None], (len(r), segments))], -1)
    n = np.stack([nr[:, None] * c, nr[:, None] * s, np.broadcast_to(nz[:, None], (len(r), segments))], -1)
    p, k = np.meshgrid(np.arange(len(r) - 1), np.arange(segments), indexing="ij")
    a = p * segments + k
    b = p * segments + (k + 1) % segments
    quads = np.stack([a, b, b + segments, a + segments], -1).reshape(-1, 4)
    tris = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    return v.reshape(-1, 3), tris, n.reshape(-1, 3)


def _cap(z: float, radius: float, up: bool, segments: int) -> tuple[np.ndarray, ...]:
    phi = np.linspace(0.0, 2.0 * math.pi, segments + 1)[:-1]
    ring = np.stack([radius * np.cos(phi), radius * np.sin(phi), np.full(segments, z)], 1)
    v = np.vstack([[0.0, 0.0, z], ring])
    k = np.arange(segments)
    tris = np.stack([np.zeros(segments, np.int64), 1 + k, 1 + (k + 1) % segments], 1)
    if not up:
        tris = tris[:, [0, 2, 1]]
    return v, tris, np.tile([0.0, 0.0, 1.0 if up else -1.0], (len(v), 1))


def _join(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    vs, ts, ns, base = [], [], [], 0
    for v, t, n in parts:
        vs.append(v)
        ts.append(t + base)
        ns.append(n)
        base += len(v)
    return np.vstack(vs), np.vstack(ts), np.vstack(ns)


def tessellate(doc: UsdDocument, prim: Any, time: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices, triangles, normals) of a Cube, Cylinder, Cone or Capsule prim in its object space.

    Raises
    ------
    ValueError
        On a size, radius or height that is not finite and positive (naming the file and prim).
    """
    kind = prim.GetTypeName()
    label = f"{doc.file}: prim {prim.GetPath()}"

    def number(name: str, default: float) -> float:
        attr = prim.GetAttribute(name)
        value = attr.Get(time) if attr else None
        value = default if value is None else float(value)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{label}: {name} must be a finite number > 0, got {value}")
        return value

    axis = str(prim.GetAttribute("axis").Get(time) or "Z") if prim.GetAttribute("axis") else "Z"
    n = SEGMENTS
    if kind == "Cube":
        h = number("size", 2.0) / 2.0
        faces = []
        for a in range(3):
            for sign in (1.0, -1.0):
                u, w = (a + 1) % 3, (a + 2) % 3
                quad = np.zeros((4, 3))
                quad[:, a] = sign * h
                quad[:, u] = np.array([-h, h, h, -h])
                quad[:, w] = np.array([-h, -h, h, h])
                normal = np.zeros(3)
                normal[a] = sign
                tri = np.array([[0, 1, 2], [0, 2, 3]]) if sign > 0 else np.array([[0, 2, 1], [0, 3, 2]])
                faces.append((quad, tri, np.tile(normal, (4, 1))))
        v, t, nn = _join(faces)
        return _contiguous(v, t, nn)
    r = number("radius", 0.5 if kind == "Capsule" else 1.0)
    height = number("height", 1.0 if kind == "Capsule" else 2.0)
    z0, z1 = -height / 2.0, height / 2.0
    if kind == "Cylinder":
        parts = [_revolve(np.array([[r, z0], [r, z1]]), np.array([[1.0, 0.0], [1.0, 0.0]]), n),
                 _cap(z1, r, True, n), _cap(z0, r, False, n)]
    elif kind == "Cone":
        slope = math.hypot(r, height)
        normal = np.array([height / slope, r / slope])
        parts = [_revolve(np.array([[r, z0], [1e-9, z1]]), np.array([normal, normal]), n), _cap(z0, r, False, n)]
    else:  # Capsule: two hemispheres joined by a cylinder
        theta = np.linspace(-math.pi / 2, math.pi / 2, n // 2 + 1)
        lower = theta[theta <= 0]
        upper = theta[theta >= 0]
        profile = np.concatenate([np.stack([r * np.cos(lower), z0 + r * np.sin(lower)], 1),
                                  np.stack([r * np.cos(upper), z1 + r * np.sin(upper)], 1)])
        normals = np.concatenate([np.stack([np.cos(lower), np.sin(lower)], 1),
                                  np.stack([np.cos(upper), np.sin(upper)], 1)])
        profile[0, 0] = profile[-1, 0] = 1e-9
        parts = [_revolve(profile, normals, n)]
    v, t, nn = _join(parts)
    return _contiguous(_orient(v, axis), t, _orient(nn, axis))


def _contiguous(v: np.ndarray, t: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.ascontiguousarray(v, np.float32), np.ascontiguousarray(t, np.int32),
            np.ascontiguousarray(n, np.float32))


#: USD's cubic bases as the renderer's curve kinds.
_CUBIC = {"bspline": "cubic_bspline", "catmullRom": "catmull_rom", "bezier": "bezier"}


def curve_strands(doc: UsdDocument, prim: Any, time: Any) -> tuple[str, list[np.ndarray], np.ndarray]:
    """(curve kind, object-space strands, radius per control point) of a BasisCurves prim.

    Raises
    ------
    ValueError
        On counts that do not add up to the points, an unknown basis, or widths of the wrong count.
    """
    from pxr import UsdGeom

    curves = UsdGeom.BasisCurves(prim)
    label = f"{doc.file}: prim {prim.GetPath()}"
    points = np.asarray(curves.GetPointsAttr().Get(time) or [], np.float32).reshape(-1, 3)
    counts = np.asarray(curves.GetCurveVertexCountsAttr().Get(time) or [], np.int64)
    doc.budget.check(len(points), "max_accessor_count", f"prim {prim.GetPath()} points")
    if (counts < 0).any() or int(counts.sum()) != len(points):
        raise ValueError(f"{label}: curveVertexCounts add up to {int(counts.sum())}, there are {len(points)} points")
    kind = "linear" if str(curves.GetTypeAttr().Get(time)) == "linear" else _CUBIC.get(
        str(curves.GetBasisAttr().Get(time)))
    if kind is None:
        raise ValueError(f"{label}: unknown curve basis {curves.GetBasisAttr().Get(time)!r}")
    if str(curves.GetWrapAttr().Get(time)) == "periodic":
        doc.warn_once(f"periodic:{prim.GetPath()}", f"prim {prim.GetPath()}: periodic curves are drawn open")
    widths = np.asarray(curves.GetWidthsAttr().Get(time) or [1.0], np.float32).reshape(-1)
    if len(widths) == 1:
        radii = np.full(len(points), widths[0] / 2.0, np.float32)
    elif len(widths) == len(points):
        radii = widths / 2.0
    else:
        doc.warn_once(f"widths:{prim.GetPath()}", f"prim {prim.GetPath()}: {len(widths)} widths for "
                      f"{len(points)} points: their mean is used")
        radii = np.full(len(points), float(widths.mean()) / 2.0, np.float32)
    ends = np.cumsum(counts)
    strands = [points[e - c:e] for c, e in zip(counts.tolist(), ends.tolist(), strict=True)]
    return kind, strands, radii


def shape_item(doc: UsdDocument, kind: str, prim: Any, m: np.ndarray, material: Any, time: Any) -> Any:
    """The :class:`Spheres` of a Sphere or Points prim, or the :class:`Curves` of a BasisCurves prim, placed by
    ``m`` (4x4, world space; radii scaled by its mean scale); None for one without points.

    Raises
    ------
    ValueError
        On a radius that is not finite and >= 0, widths of the wrong count, or as :func:`curve_strands`.
    """
    from pxr import UsdGeom

    from ._curves import Curves
    from ._spheres import Spheres

    label = f"{doc.file}: prim {prim.GetPath()}"
    scale = abs(float(np.linalg.det(m[:3, :3]))) ** (1.0 / 3.0)
    if kind == "Sphere":
        radius = float(UsdGeom.Sphere(prim).GetRadiusAttr().Get(time))
        if not (math.isfinite(radius) and radius >= 0):
            raise ValueError(f"{label}: radius must be finite and >= 0, got {radius}")
        return Spheres(m[:3, 3][None], radius * scale, material=material, name=str(prim.GetPath()))
    if kind == "Points":
        points = np.asarray(UsdGeom.Points(prim).GetPointsAttr().Get(time) or [], np.float64)
        doc.budget.check(len(points), "max_accessor_count", f"prim {prim.GetPath()} points")
        if not len(points):
            return None
        widths = np.asarray(UsdGeom.Points(prim).GetWidthsAttr().Get(time) or [1.0], np.float64)
        if len(widths) not in (1, len(points)):
            raise ValueError(f"{label}: {len(widths)} widths for {len(points)} points")
        centers = points.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
        radii = widths / 2.0 * scale if len(widths) > 1 else float(widths[0]) / 2.0 * scale
        return Spheres(centers, radii, material=material, name=str(prim.GetPath()))
    curve_kind, strands, radii = curve_strands(doc, prim, time)
    if not strands:
        return None
    moved = [(s.astype(np.float64) @ m[:3, :3].T + m[:3, 3]).astype(np.float32) for s in strands]
    ends = np.cumsum([len(s) for s in strands])
    per_strand = [radii[e - len(s):e] * scale for s, e in zip(strands, ends.tolist(), strict=True)]
    return Curves.from_strands(moved, per_strand, curve_kind, material=material, name=str(prim.GetPath()))
