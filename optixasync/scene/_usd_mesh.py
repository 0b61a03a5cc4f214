"""``UsdGeomMesh`` as triangles: fan triangulation, primvars by interpolation, ``GeomSubset`` pieces.

A mesh's polygons (``faceVertexCounts``, ``faceVertexIndices``, less its
``holeIndices``) are split into fans, vectorised over every face;
``orientation = "leftHanded"`` reverses their winding, so the front side is
always the side of the winding normal the renderer uses. Normals (the
``normals`` primvar before the ``normals`` attribute), ``st`` and
``displayColor`` are read with their interpolation (constant, uniform,
vertex, varying, faceVarying, indexed or not): when any is uniform or
face-varying the mesh is unwelded to one vertex per face corner. Texture
coordinates turn from USD's (0, 0) at the image's bottom left to the
renderer's (0, 0) at its top left (``v = 1 - t``). A subdivision surface
(``subdivisionScheme`` other than ``none``) is drawn as its control cage,
shaded smooth by area-weighted vertex normals when it gives none. Material
``GeomSubset`` families (``familyName = "materialBind"``) split the mesh
into one piece per subset, and the faces no subset lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._usd_stage import UsdDocument

__all__ = ["MeshPiece", "read_mesh"]


@dataclass
class MeshPiece:
    """Object-space triangles of one mesh that share a material binding.

    Attributes
    ----------
    vertices : numpy.ndarray
        (V, 3) float32.
    indices : numpy.ndarray
        (F, 3) int32.
    normals, uvs, colors : numpy.ndarray or None
        (V, 3), (V, 2), (V, 3) float32.
    binding : pxr.Usd.Prim
        The prim whose bound material the piece takes (the mesh, or its subset).
    name : str
    """

    vertices: np.ndarray
    indices: np.ndarray
    normals: np.ndarray | None
    uvs: np.ndarray | None
    colors: np.ndarray | None
    binding: Any
    name: str


def _array(value: Any, dtype: Any, width: int | None = None) -> np.ndarray:
    out = np.asarray(value if value is not None else [], dtype=dtype)
    return out.reshape(-1, width) if width else out.reshape(-1)


def _primvar(doc: UsdDocument, prim: Any, name: str, time: Any, width: int) -> tuple[np.ndarray, str] | None:
    """A primvar's flattened values and interpolation (None when not authored)."""
    from pxr import UsdGeom

    primvar = UsdGeom.PrimvarsAPI(prim).GetPrimvar(name)
    if not primvar or not primvar.HasAuthoredValue():
        return None
    values = primvar.ComputeFlattened(time)
    if values is None:
        return None
    return _array(values, np.float32, width), str(primvar.GetInterpolation())


def _corners(doc: UsdDocument, label: str, what: str, values: np.ndarray, interpolation: str, counts: np.ndarray,
             fvi: np.ndarray, num_points: int) -> np.ndarray:
    """``values`` spread to one per face corner by ``interpolation``; ValueError naming the prim on a wrong count."""
    expected = {"constant": 1, "uniform": len(counts), "vertex": num_points, "varying": num_points,
                "faceVarying": len(fvi)}.get(interpolation)
    if expected is None:
        raise ValueError(f"{doc.file}: {label}: {what} has unknown interpolation {interpolation!r}")
    if len(values) != expected:
        raise ValueError(f"{doc.file}: {label}: {what} ({interpolation}) has {len(values)} values, the mesh needs "
                         f"{expected}")
    if interpolation == "constant":
        return np.broadcast_to(values, (len(fvi), values.shape[1]))
    if interpolation == "uniform":
        return np.repeat(values, counts, axis=0)
    if interpolation == "faceVarying":
        return values
    return values[fvi]


def _triangles(counts: np.ndarray, skip: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(T, 3) corner indices of every face's fan, and (T,) the face of each triangle."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    per_face = np.maximum(counts.astype(np.int64) - 2, 0)
    if skip is not None:
        per_face[skip] = 0
    face = np.repeat(np.arange(len(counts), dtype=np.int64), per_face)
    first_tri = np.concatenate([[0], np.cumsum(per_face)[:-1]])
    k = np.arange(len(face), dtype=np.int64) - first_tri[face] + 1
    a = starts[face]
    return np.stack([a, a + k, a + k + 1], axis=1), face


def _smooth_normals(vertices: np.ndarray, tris: np.ndarray) -> np.ndarray:
    v = vertices.astype(np.float64)
    n = np.cross(v[tris[:, 1]] - v[tris[:, 0]], v[tris[:, 2]] - v[tris[:, 0]])
    out = np.zeros_like(v)
    for c in range(3):
        np.add.at(out, tris[:, c], n)
    length = np.linalg.norm(out, axis=1, keepdims=True)
    out = np.divide(out, length, out=np.zeros_like(out), where=length > 0)
    out[length[:, 0] == 0] = (0.0, 0.0, 1.0)
    return out.astype(np.float32)


def read_mesh(doc: UsdDocument, prim: Any, time: Any, points: np.ndarray | None = None) -> list[MeshPiece]:
    """The pieces of the mesh ``prim`` at ``time`` (``points``: these positions instead of the authored ones).

    Raises
    ------
    ValueError
        Naming the file and prim: counts that do not add up, an index past the points, non-finite points, a
        primvar of the wrong length.
    LoadLimitError
        Over ``max_accessor_count`` or the byte budget.
    """
    from pxr import UsdGeom

    mesh = UsdGeom.Mesh(prim)
    label = f"prim {prim.GetPath()}"
    if points is None:
        points = _array(mesh.GetPointsAttr().Get(time), np.float32, 3)
    counts = _array(mesh.GetFaceVertexCountsAttr().Get(time), np.int64)
    fvi = _array(mesh.GetFaceVertexIndicesAttr().Get(time), np.int64)
    for what, n in (("points", len(points)), ("faceVertexIndices", len(fvi)), ("faceVertexCounts", len(counts))):
        doc.budget.check(n, "max_accessor_count", f"{label} {what}")
    if not len(points) or not len(counts):
        return []
    if (counts < 0).any() or int(counts.sum()) != len(fvi):
        raise ValueError(f"{doc.file}: {label}: faceVertexCounts add up to {int(counts.sum())} but there are "
                         f"{len(fvi)} faceVertexIndices")
    if len(fvi) and (fvi.min() < 0 or fvi.max() >= len(points)):
        raise ValueError(f"{doc.file}: {label}: a faceVertexIndex lies outside the {len(points)} points")
    if not np.isfinite(points).all():
        raise ValueError(f"{doc.file}: {label}: points are not all finite")
    doc.budget.charge(len(fvi) * 64, f"{label} triangles")
    holes = _array(mesh.GetHoleIndicesAttr().Get(time), np.int64)
    holes = holes[(holes >= 0) & (holes < len(counts))] if len(holes) else None
    if (counts < 3).any():
        doc.warn_once(f"degenerate:{label}", f"{label}: faces of fewer than 3 vertices are skipped")
    tris, face = _triangles(counts, holes)
    if str(mesh.GetOrientationAttr().Get(time)) == "leftHanded":
        tris = tris[:, [0, 2, 1]]
    normals = _primvar(doc, prim, "normals", time, 3)
    if normals is None and mesh.GetNormalsAttr().HasAuthoredValue():
        normals = (_array(mesh.GetNormalsAttr().Get(time), np.float32, 3), str(mesh.GetNormalsInterpolation()))
    st = _primvar(doc, prim, "st", time, 2)
    color = _primvar(doc, prim, "displayColor", time, 3)
    attributes = {name: value for name, value in (("normals", normals), ("uvs", st), ("colors", color))
                  if value is not None and not (name == "colors" and value[1] == "constant")}
    unweld = any(interp in ("uniform", "faceVarying") for _, interp in attributes.values())
    if unweld:
        vertices, corner_tris = points[fvi], tris
        spread = {name: _corners(doc, label, name, values, interp, counts, fvi, len(points))
                  for name, (values, interp) in attributes.items()}
    else:
        vertices, corner_tris = points, fvi[tris]
        spread = {}
        for name, (values, interp) in attributes.items():
            expected = 1 if interp == "constant" else len(points)
            if len(values) != expected:
                raise ValueError(f"{doc.file}: {label}: {name} ({interp}) has {len(values)} values, the mesh needs "
                                 f"{expected}")
            spread[name] = np.broadcast_to(values, (len(points), values.shape[1])) if interp == "constant" else values
    if "normals" not in spread and str(mesh.GetSubdivisionSchemeAttr().Get()) != "none" and len(corner_tris):
        spread["normals"] = _smooth_normals(vertices, corner_tris)
    if "uvs" in spread:
        uv = np.array(spread["uvs"], np.float32)
        uv[:, 1] = 1.0 - uv[:, 1]
        spread["uvs"] = uv
    if "normals" in spread:
        n = np.asarray(spread["normals"], np.float64)
        length = np.linalg.norm(n, axis=1, keepdims=True)
        n = np.divide(n, length, out=np.tile([0.0, 0.0, 1.0], (len(n), 1)), where=length > 0)
        spread["normals"] = n.astype(np.float32)
    return _pieces(doc, prim, face, corner_tris, vertices, spread, time)


def _pieces(doc: UsdDocument, prim: Any, face: np.ndarray, tris: np.ndarray, vertices: np.ndarray,
            spread: dict[str, np.ndarray], time: Any) -> list[MeshPiece]:
    """The triangles split by material subsets (one piece for the faces no subset lists)."""
    from pxr import UsdShade

    subsets = UsdShade.MaterialBindingAPI(prim).GetMaterialBindSubsets() if prim.GetChildren() else []
    groups: list[tuple[np.ndarray, Any, str]] = []
    taken = np.zeros(int(face.max(initial=-1)) + 1, bool)
    name = prim.GetName()
    for subset in subsets:
        if str(subset.GetElementTypeAttr().Get()) != "face":
            continue
        faces = _array(subset.GetIndicesAttr().Get(time), np.int64)
        faces = faces[(faces >= 0) & (faces < len(taken))]
        mask = np.zeros(len(taken), bool)
        mask[faces] = True
        mask &= ~taken
        taken |= mask
        groups.append((mask[face], subset.GetPrim(), f"{name}/{subset.GetPrim().GetName()}"))
    rest = ~taken[face] if len(taken) else np.ones(len(face), bool)
    groups.insert(0, (rest, prim, name))
    pieces = []
    for which, binding, piece_name in groups:
        if not which.any():
            continue
        chosen = tris[which]
        used, inverse = np.unique(chosen, return_inverse=True)
        if len(used) == len(vertices):
            used, indices = None, chosen
        else:
            indices = inverse.reshape(-1, 3)
        picked = {key: _pick(value, used) for key, value in spread.items()}
        pieces.append(MeshPiece(_pick(vertices, used), np.ascontiguousarray(indices, np.int32),
                                picked.get("normals"), picked.get("uvs"), picked.get("colors"), binding, piece_name))
    return pieces


def _pick(values: np.ndarray, used: np.ndarray | None) -> np.ndarray:
    """``values`` (of every vertex) at the vertices ``used`` (None: all), as C-contiguous float32."""
    return np.ascontiguousarray(values if used is None else np.asarray(values)[used], np.float32)
