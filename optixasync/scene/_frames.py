"""Frames from loaded geometry: tangent frames for normal maps, and a camera that frames a set of meshes.

Shared by the scene-file readers (glTF, OBJ). Host-side numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._camera import DEFAULT_FOV, Camera
from ._mesh import Mesh

__all__ = ["framing_camera", "generate_tangents"]

#: Points :func:`framing_camera` transforms in one batch.
_POINTS_AT_ONCE = 1 << 22


def framing_camera(meshes: Sequence[Mesh], fov: float = DEFAULT_FOV) -> Camera:
    """A camera on the +z side of the meshes' bounding box, looking along -z, that sees the whole box.

    glTF puts an asset's front towards +z, so this looks at its front. The
    eye stands back so that the box's bounding sphere fits the field of view.
    Instances sharing their vertex array are transformed together, a few
    million points at a time.
    """
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    shared: dict[int, tuple[Any, list[np.ndarray]]] = {}
    for mesh in meshes:
        if mesh.transform is None:
            vertices = np.asarray(mesh.vertices, dtype=np.float64).reshape(-1, 3)
            lo, hi = np.minimum(lo, vertices.min(axis=0)), np.maximum(hi, vertices.max(axis=0))
        else:
            shared.setdefault(id(mesh.vertices), (mesh.vertices, []))[1].append(mesh.transform)
    for array, transforms in shared.values():
        vertices = np.asarray(array, dtype=np.float64).reshape(-1, 3)
        matrices = np.asarray(transforms, np.float64).reshape(-1, 3, 4)
        step = max(1, _POINTS_AT_ONCE // max(len(vertices), 1))
        for start in range(0, len(matrices), step):
            chunk = matrices[start:start + step]
            points = np.einsum("gij,vj->gvi", chunk[:, :, :3], vertices) + chunk[:, None, :, 3]
            lo, hi = np.minimum(lo, points.min(axis=(0, 1))), np.maximum(hi, points.max(axis=(0, 1)))
    center = (lo + hi) / 2.0
    radius = float(np.linalg.norm(hi - lo)) / 2.0
    if not radius > 0.0:
        radius = 1.0  # a single point: any distance shows it
    distance = radius / math.sin(math.radians(fov) / 2.0)
    eye = center + np.array([0.0, 0.0, distance])
    return Camera(tuple(eye), tuple(center), (0.0, 1.0, 0.0), fov)


def generate_tangents(vertices: Any, indices: Any, uvs: Any, normals: Any = None) -> np.ndarray:
    """Per-vertex tangents (V, 4) float32 for normal mapping, by Lengyel's method.

    Each triangle's ``dP/du`` and ``dP/dv`` (from its positions and UVs) are
    summed at its corners; the sum of ``dP/du`` is made orthogonal to the
    vertex normal (Gram-Schmidt) and normalised. ``w`` is the handedness in
    glTF's convention: the bitangent is ``cross(normal, tangent) * w`` and
    points to the top of the image, i.e. along ``-dP/dv`` (UVs have
    ``v = 0`` at the top row), so a mirrored UV layout gets ``w = -1``.

    Parameters
    ----------
    vertices : array (V, 3)
    indices : array (F, 3)
    uvs : array (V, 2)
    normals : array (V, 3), optional
        Default: area-weighted averages of the face normals.

    Returns
    -------
    numpy array (V, 4) float32
        Unit tangents and w = +-1. Where the UVs give no direction
        (degenerate UV triangles, unused vertices) the tangent is any unit
        vector orthogonal to the normal.
    """
    p = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    f = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
    uv = np.asarray(uvs, dtype=np.float64).reshape(-1, 2)
    e1 = p[f[:, 1]] - p[f[:, 0]]
    e2 = p[f[:, 2]] - p[f[:, 0]]
    d1 = uv[f[:, 1]] - uv[f[:, 0]]
    d2 = uv[f[:, 2]] - uv[f[:, 0]]
    det = d1[:, 0] * d2[:, 1] - d2[:, 0] * d1[:, 1]
    ok = np.abs(det) > 1e-20
    inv = np.divide(1.0, det, out=np.zeros_like(det), where=ok)[:, None]
    sdir = (e1 * d2[:, 1:2] - e2 * d1[:, 1:2]) * inv  # dP/du
    tdir = (e2 * d1[:, 0:1] - e1 * d2[:, 0:1]) * inv  # dP/dv
    tan1 = np.zeros_like(p)
    tan2 = np.zeros_like(p)
    for corner in range(3):
        np.add.at(tan1, f[:, corner], sdir)
        np.add.at(tan2, f[:, corner], tdir)
    if normals is None:
        face = np.cross(e1, e2)  # length = twice the area: area weighting
        n = np.zeros_like(p)
        for corner in range(3):
            np.add.at(n, f[:, corner], face)
    else:
        n = np.asarray(normals, dtype=np.float64).reshape(-1, 3).copy()
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, length, out=np.zeros_like(n), where=length > 0)
    n[length[:, 0] <= 0] = (0.0, 0.0, 1.0)  # no normal at all: any frame will do
    t = tan1 - n * np.einsum("ij,ij->i", n, tan1)[:, None]
    length = np.linalg.norm(t, axis=1)
    bad = ~(length > 1e-12 * np.maximum(np.linalg.norm(tan1, axis=1), 1e-300))
    if bad.any():  # any unit vector orthogonal to n: cross with the axis least aligned with it
        axis = np.eye(3)[np.argmin(np.abs(n[bad]), axis=1)]
        t[bad] = np.cross(n[bad], axis)
        length = np.linalg.norm(t, axis=1)
    t /= length[:, None]
    # The normal map's green axis points up the image, against +v: its bitangent is -dP/dv.
    w = np.where(np.einsum("ij,ij->i", np.cross(n, t), -tan2) < 0.0, -1.0, 1.0)
    return np.ascontiguousarray(np.concatenate([t, w[:, None]], axis=1), dtype=np.float32)
