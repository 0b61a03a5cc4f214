"""The emitter table: every triangle of every emissive mesh, for light sampling.

Light sampling picks one triangle with probability proportional to its
power, ``area * luminance(radiance)`` (over all emissive meshes together),
then a uniform point on it. The pdf of a light point per unit area is
therefore ``selection probability / area`` = ``luminance / total`` on each
triangle; the table stores it per entry, so the kernel's MIS weight does not
depend on the selection rule. When an environment shares light sampling,
every entry's pdf is scaled by the probability of picking a triangle at all
(:meth:`EmitterTable.selected`).

Meshes whose emission is textured are not in the table: their radiance
varies over the surface, which the table cannot hold; nor are cut-out
emitters (alpha mask or blend), whose holes light sampling cannot see. BSDF sampling finds
them, with full weight (the kernel's ``MESH_LIGHT_SAMPLED`` flag is clear). A
BSDF-sampled ray that hits triangle ``j`` of emissive mesh ``m`` finds its
entry at ``offsets[m] + j``.

Selection uses an alias table (Walker, built by Vose's method): one 32-bit
random number gives an entry and a fraction; the entry is kept when the
fraction is below its ``alias_q``, else its ``alias`` is taken. Constant time
for any number of triangles.

Host-side numpy only; no GPU calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..scene import Mesh
from ..scene._environment import LUMINANCE_WEIGHTS
from ._layout import EMITTER_TRIANGLE

__all__ = ["EmitterTable", "alias_table", "alias_probabilities", "build_emitter_table", "is_light_sampled",
           "luminance"]

#: Luminance weights of linear RGB: the same as the environment's (:data:`~optixasync.scene.Environment.power`),
#: so that the two kinds of light are weighed alike.
LUMINANCE = np.array(LUMINANCE_WEIGHTS, np.float64)


def luminance(rgb: np.ndarray) -> np.ndarray:
    """Luminance of linear RGB values (..., 3), by :data:`LUMINANCE`."""
    return np.asarray(rgb, np.float64) @ LUMINANCE


def is_light_sampled(mesh: Mesh) -> bool:
    """Whether ``mesh`` is in the emitter table: emissive, opaque, with an emission that is not textured.

    A cut-out emitter is left to BSDF sampling too: light sampling would pick points in its holes (the shadow
    ray stops short of the light and never meets its any-hit program).
    """
    material = mesh.material
    return material.is_emissive and material.emission_texture is None and material.alpha_mode == "opaque"


def alias_table(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table of non-negative ``weights`` (not all zero): ``(q float32, alias uint32)``.

    Entry ``i`` is chosen with probability ``(q[i] + sum over j with alias[j] == i of (1 - q[j])) / n``,
    which equals ``weights[i] / weights.sum()`` (up to float32 rounding of ``q``).
    """
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    n = len(w)
    if n == 0 or not np.isfinite(w).all() or (w < 0).any() or not w.sum() > 0:
        raise ValueError("alias_table needs finite, non-negative weights that are not all zero")
    scaled = w * (n / w.sum())
    q = np.ones(n, np.float64)
    alias = np.arange(n, dtype=np.int64)
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        q[s], alias[s] = scaled[s], g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    # Whatever is left holds probability 1 up to rounding: keep itself.
    for i in small + large:
        q[i], alias[i] = 1.0, i
    return q.astype(np.float32), alias.astype(np.uint32)


def alias_probabilities(q: np.ndarray, alias: np.ndarray) -> np.ndarray:
    """The selection probability of every entry implied by an alias table (float64)."""
    q = np.asarray(q, np.float64)
    n = len(q)
    p = q.copy()
    np.add.at(p, np.asarray(alias, np.int64), 1.0 - q)
    return p / n


class EmitterTable:
    """The emitter triangles of a scene, ready to upload.

    Attributes
    ----------
    entries : numpy array of EMITTER_TRIANGLE
        One per emissive triangle, meshes in scene order.
    offsets : numpy array (num_meshes,) uint32
        Entry of each mesh's first triangle (0 for meshes that do not emit).
    total_area : float
        Emissive area of the table's meshes (0 when nothing emits).
    power : float
        Their emitted power, ``pi * sum(area * luminance)`` (one-sided Lambertian emitters).
    """

    def __init__(self, entries: np.ndarray, offsets: np.ndarray, total_area: float, power: float = 0.0) -> None:
        self.entries = entries
        self.offsets = offsets
        self.total_area = total_area
        self.power = power

    def __len__(self) -> int:
        return len(self.entries)

    def selected(self, probability: float) -> np.ndarray:
        """The entries with every pdf times ``probability``: that of light sampling picking a triangle at all."""
        entries = self.entries.copy()
        entries["pdf"] *= np.float32(probability)
        return entries


def build_emitter_table(meshes: Sequence[Mesh], vertices: Sequence[np.ndarray] | None = None,
                        indices: Sequence[np.ndarray] | None = None) -> EmitterTable:
    """The emitter table of ``meshes``.

    Parameters
    ----------
    meshes : sequence of Mesh
    vertices : sequence of (V, 3) arrays, optional
        Host copies of the vertices, for meshes that hold device arrays
        (entries of non-emissive meshes are not read; default: the meshes' own).
    indices : sequence of (T, 3) arrays, optional
        Host copies of the indices, likewise.

    Raises
    ------
    ValueError
        If the emissive meshes have zero total area.
    """
    parts, offsets, count = [], np.zeros(len(meshes), np.uint32), 0
    for k, mesh in enumerate(meshes):
        if not is_light_sampled(mesh):
            continue
        v = np.asarray(vertices[k] if vertices is not None else mesh.vertices, np.float64)
        idx = np.asarray(indices[k] if indices is not None else mesh.indices, np.int64)
        if mesh.transform is not None:  # an instance: its triangles in world space, fronts kept (Mesh.flattened)
            v = v @ mesh.transform[:, :3].T + mesh.transform[:, 3]
            if mesh.mirrored:
                idx = idx[:, [0, 2, 1]]
        p0, p1, p2 = v[idx[:, 0]], v[idx[:, 1]], v[idx[:, 2]]
        offsets[k] = count
        count += len(idx)
        parts.append((p0, p1 - p0, p2 - p0, mesh.material.emission))
    entries = np.zeros(count, EMITTER_TRIANGLE)
    if count == 0:
        return EmitterTable(entries, offsets, 0.0)
    p0 = np.concatenate([p[0] for p in parts])
    e1 = np.concatenate([p[1] for p in parts])
    e2 = np.concatenate([p[2] for p in parts])
    radiance = np.concatenate([np.tile(p[3], (len(p[0]), 1)) for p in parts])
    area = 0.5 * np.linalg.norm(np.cross(e1, e2), axis=1)
    total = float(area.sum())
    if not total > 0:
        raise ValueError("the emissive meshes have zero total area: nothing could emit")
    weight = area * luminance(radiance)
    q, alias = alias_table(weight)
    entries["p0"], entries["e1"], entries["e2"], entries["radiance"] = p0, e1, e2, radiance
    entries["area"] = area
    # pdf per unit area = (weight / total weight) / area; zero-area triangles are never chosen and keep 0.
    entries["pdf"] = np.where(area > 0, luminance(radiance) / weight.sum(), 0.0)
    entries["alias_q"], entries["alias"] = q, alias
    return EmitterTable(entries, offsets, total, float(np.pi * weight.sum()))
