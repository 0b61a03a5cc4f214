"""Motion blur in a scene: how a mesh moves while the camera's shutter is open.

A :class:`MeshMotion` on a :class:`~optixasync.scene.Mesh` (``mesh.motion``)
gives motion keys spread evenly over ``times``: object-to-world transforms
(a moving instance: its vertices stay as they are, the keys place them) or
vertex arrays (a deforming mesh: the positions at each key). Between keys
the renderer interpolates linearly (matrices entry by entry, vertices point
by point), as OptiX does; before the first key and after the last the mesh
stays at the first or last one. :attr:`Scene.shutter
<optixasync.scene.Scene.shutter>` is the interval the camera's exposure
spans; every camera path samples one time in it. Motion is off by default:
without a ``motion``, a mesh is static, and a scene with no moving mesh
renders exactly as it would without this module.

Host-side data only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..validation import as_affine, check_vertices

__all__ = ["MAX_MESH_MOTION_KEYS", "MeshMotion", "check_shutter"]

#: The most motion keys a mesh may have (OptiX's limit is 65535; every key of a deforming mesh is a vertex array).
MAX_MESH_MOTION_KEYS = 1024


def _times(value: Any, what: str) -> tuple[float, float]:
    try:
        begin, end = (float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be two numbers (begin, end), got {value!r}") from exc
    if not (math.isfinite(begin) and math.isfinite(end)):
        raise ValueError(f"{what} must be finite, got ({begin}, {end})")
    return begin, end


def check_shutter(shutter: Any) -> tuple[float, float] | None:
    """A scene's shutter (open, close) as two floats with open <= close, or None (no motion blur)."""
    if shutter is None:
        return None
    opened, closed = _times(shutter, "Scene.shutter")
    if closed < opened:
        raise ValueError(f"Scene.shutter closes before it opens: ({opened}, {closed})")
    return opened, closed


@dataclass(eq=False)
class MeshMotion:
    """Motion keys of one mesh, spread evenly over ``times``.

    Attributes
    ----------
    transforms : sequence of array (3, 4) or (4, 4), or None
        Object-to-world placements at the keys (at least 2): the mesh is a moving instance. Its own
        ``transform`` must then be None (the keys replace it).
    vertices : sequence of array (V, 3) float32, or None
        The vertex positions at the keys (at least 2, each as many as the mesh's): the mesh deforms. Host or
        device arrays. The mesh may have no per-vertex normals or tangents (they would not follow).
    times : (float, float)
        The times of the first and the last key (begin < end).

    Raises
    ------
    ValueError, TypeError
        Neither or both kinds of keys, fewer than 2 keys, keys of different counts, a transform that is not
        affine and invertible, times that are not finite or out of order.
    """

    transforms: Any = None
    vertices: Any = None
    times: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self) -> None:
        if (self.transforms is None) == (self.vertices is None):
            raise ValueError("MeshMotion takes transforms (a moving instance) or vertices (a deforming mesh), one "
                             "of them")
        keys = self.transforms if self.transforms is not None else self.vertices
        if not isinstance(keys, Sequence) or isinstance(keys, np.ndarray):
            raise TypeError("MeshMotion keys must be a list of arrays, one per key")
        if not 2 <= len(keys) <= MAX_MESH_MOTION_KEYS:
            raise ValueError(f"MeshMotion needs 2 to {MAX_MESH_MOTION_KEYS} keys, got {len(keys)}")
        begin, end = _times(self.times, "MeshMotion.times")
        if not end > begin:
            raise ValueError(f"MeshMotion.times needs end > begin, got ({begin}, {end})")
        self.times = (begin, end)
        if self.transforms is not None:
            self.transforms = [as_affine(k, f"MeshMotion.transforms[{j}]") for j, k in enumerate(self.transforms)]
        else:
            counts = [check_vertices(k, f"MeshMotion.vertices[{j}]") for j, k in enumerate(self.vertices)]
            if len(set(counts)) > 1:
                raise ValueError(f"MeshMotion.vertices: the keys have different counts {counts}; every key needs "
                                 "the same")
            self.vertices = list(self.vertices)

    @property
    def num_keys(self) -> int:
        return len(self.transforms if self.transforms is not None else self.vertices)

    @property
    def moves(self) -> bool:
        """Whether the keys are transforms (a moving instance) rather than vertices (a deforming mesh)."""
        return self.transforms is not None

    def check(self, mesh: Any, label: str) -> MeshMotion:
        """``self`` if it fits ``mesh`` (a Mesh); ValueError naming ``label`` otherwise."""
        if mesh.dynamic:
            raise ValueError(f"{label} is dynamic and has motion keys: refits and motion keys are two ways of "
                             "moving a mesh; give it one")
        if mesh.material.is_emissive:
            raise ValueError(f"{label} is emissive and has motion keys: emitters must be static (the emitter "
                             "table holds their world positions)")
        if mesh.material.cull_back:
            raise ValueError(f"{label} culls its back faces and has motion keys: the any-hit program that culls "
                             "them sees the mesh where it rests, not where it moved (give the material "
                             "cull_back=False)")
        if self.moves and mesh.transform is not None:
            raise ValueError(f"{label} has a transform and motion transforms: the keys place it (give "
                             "transform=None, or fold it into every key)")
        if not self.moves:
            if len(self.vertices[0]) != mesh.num_vertices:
                raise ValueError(f"{label}: MeshMotion.vertices have {len(self.vertices[0])} vertices per key but "
                                 f"the mesh has {mesh.num_vertices}")
            if mesh.normals is not None or mesh.tangents is not None:
                raise ValueError(f"{label} deforms and has normals or tangents: they would not follow the vertices "
                                 "(give it neither; it is shaded flat)")
        return self

    def key_time(self, k: int) -> float:
        """The time of key ``k``."""
        begin, end = self.times
        return begin + (end - begin) * k / (self.num_keys - 1)
