"""Many worlds: B copies of a scene that differ in the poses of some of its meshes, as one instance structure.

:class:`Worlds` says how many copies and which meshes move (``movable``);
the other meshes (and every light source) are the same in each world. A
pipeline made with ``worlds=`` builds each distinct geometry once, places
world w's copy of every mesh in a cell of its own (:class:`WorldLayout`: the
cell's box in the scene's coordinates and each world's offset), and at each
step reads the movable meshes' transforms from a device array (a torch
tensor of shape (worlds, movable, 4, 4) or (..., 3, 4), float32): one kernel
writes the instance records and the mesh records on the frame's stream, and
one update of the instance structure follows (:mod:`._device_worlds`).

A world's rays never leave its cell (the kernel clips them to its box), so
worlds cannot see each other; a movable mesh must stay inside the cell (the
default cell is the scene's bounding box grown by half its size each way;
give ``extent`` for more room). Lights and emissive meshes do not move (an
emissive mesh cannot be movable: light sampling reads the scene's emitter
table). The ``mesh_id`` output is the mesh's index in the scene; the world
is the view's (``Views(..., worlds=...)``).

The placement here is the host's: pure numpy, the initial records (every
mesh at its scene placement) and the layout. :func:`place_host` is the
numpy twin of the device's ``place_world_mesh``
(``kernels/pathtracer/worlds.h``), used for the static meshes.

Blocking calls
--------------
None: numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..accel import INSTANCE_DTYPE
from ..scene import Scene
from ..validation import as_int
from ._layout import MESH_INSTANCED, MESH_MIRRORED

__all__ = ["MAX_WORLD_INSTANCES", "MAX_WORLDS", "WorldLayout", "Worlds", "place_host"]

#: The most worlds of a pipeline.
MAX_WORLDS = 2**20
#: worlds x meshes at most: OptiX's instances per structure on current GPUs (2**24; instance ids go to 2**28).
MAX_WORLD_INSTANCES = 2**24


@dataclass(frozen=True)
class Worlds:
    """B copies of the scene whose ``movable`` meshes take per-world transforms (see the module documentation).

    Attributes
    ----------
    count : int
        The number of worlds, in [1, :data:`MAX_WORLDS`].
    movable : tuple of int or str
        The meshes (indices into ``scene.meshes`` or names) whose transform each world sets at every step, in
        the order of the transforms array's second axis.
    extent : pair of 3 floats, optional
        The cell of a world, (low corner, high corner) in the scene's coordinates (default: the scene's
        bounding box grown by half its size on every side).
    """

    count: int
    movable: tuple[int | str, ...] = ()
    extent: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "count", as_int("worlds.count", self.count, 1, MAX_WORLDS))
        movable = (self.movable,) if isinstance(self.movable, (int, str)) else tuple(self.movable)
        object.__setattr__(self, "movable", movable)
        if self.extent is not None:
            box = np.asarray(self.extent, np.float64)
            if box.shape != (2, 3) or not np.isfinite(box).all() or not (box[1] > box[0]).all():
                raise ValueError(f"worlds.extent must be (low, high) corners with low < high, got {self.extent!r}")
            object.__setattr__(self, "extent", (tuple(box[0]), tuple(box[1])))

    def resolve(self, scene: Scene) -> list[int]:
        """The movable meshes' indices in ``scene``, checked.

        Raises
        ------
        ValueError, KeyError, TypeError
            On an index out of range or a name no mesh has, a repeat, an emissive mesh, more instances than
            :data:`MAX_WORLD_INSTANCES`, or a scene with dynamic meshes.
        """
        count = len(scene.meshes)
        if self.count * count > MAX_WORLD_INSTANCES:
            raise ValueError(f"worlds: {self.count} worlds x {count} meshes = {self.count * count} instances exceed "
                             f"the {MAX_WORLD_INSTANCES} of one instance structure (instance ids would overflow)")
        if scene.dynamic:
            raise ValueError("worlds need a scene without dynamic meshes (refits need one GAS for the whole scene)")
        indices: list[int] = []
        for item in self.movable:
            if isinstance(item, str):
                k = scene.find(item)
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                k = int(item)
                if not 0 <= k < count:
                    raise ValueError(f"worlds.movable: mesh index {k} out of range (the scene has {count} meshes)")
            else:
                raise TypeError(f"worlds.movable holds mesh indices or names, got {item!r}")
            if k in indices:
                raise ValueError(f"worlds.movable names mesh {k} twice")
            if scene.meshes[k].material.is_emissive:
                raise ValueError(f"worlds.movable: mesh {k} is emissive; lights do not move per world")
            indices.append(k)
        return indices


def place_host(matrix: np.ndarray, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(to_world (12,), normal_to_world (9,), mirrored) of a mesh placed by ``matrix`` (3x4) in a cell at ``offset``.

    The numpy twin of ``place_world_mesh``: the translation plus the offset, the inverse transpose of the 3x3 part.
    """
    m = np.asarray(matrix, np.float32).reshape(3, 4)
    placed = m.copy()
    placed[:, 3] += np.asarray(offset, np.float32)[:3]
    linear = m[:, :3].astype(np.float64)
    det = float(np.linalg.det(linear))
    normal = np.linalg.inv(linear).T if det != 0.0 else np.zeros((3, 3))
    return placed.reshape(12), normal.astype(np.float32).reshape(9), det < 0.0


@dataclass
class WorldLayout:
    """Where the worlds sit in the one instance structure, and their initial records.

    Attributes
    ----------
    count, meshes : int
        Worlds, and meshes per world (the scene's).
    movable : list of int
    cell_lo, cell_hi : numpy.ndarray
        (3,) a world's cell in its own coordinates.
    offsets : numpy.ndarray
        (count, 4) float32: world w's cell sits at ``offsets[w, :3]`` (w = 0 unused, for float4 loads).
    """

    count: int
    meshes: int
    movable: list[int]
    cell_lo: np.ndarray
    cell_hi: np.ndarray
    offsets: np.ndarray = field(repr=False)

    @classmethod
    def of(cls, scene: Scene, worlds: Worlds) -> WorldLayout:
        """The layout of ``worlds`` copies of ``scene``: cells on a cubic grid, a quarter of a cell apart."""
        movable = worlds.resolve(scene)
        if worlds.extent is not None:
            lo, hi = (np.asarray(c, np.float64) for c in worlds.extent)
        else:
            lo, hi = _scene_box(scene)
            grow = 0.5 * np.maximum(hi - lo, 1e-3 * max(float(np.max(hi - lo)), 1.0))
            lo, hi = lo - grow, hi + grow
        side = math.ceil(round(worlds.count ** (1.0 / 3.0), 9))
        while side**3 < worlds.count:
            side += 1
        pitch = 1.25 * (hi - lo)
        w = np.arange(worlds.count)
        grid = np.stack([w % side, (w // side) % side, w // (side * side)], axis=1).astype(np.float64)
        offsets = np.zeros((worlds.count, 4), np.float32)
        offsets[:, :3] = (grid - (side - 1) / 2.0) * pitch
        return cls(worlds.count, len(scene.meshes), movable, lo.astype(np.float32), hi.astype(np.float32), offsets)

    def records(self, base: np.ndarray, scene: Scene) -> np.ndarray:
        """The (count * meshes) mesh records: ``base`` (the scene's) tiled, each placed at its scene pose."""
        records = np.tile(base, self.count).reshape(self.count, self.meshes)
        shifts = np.zeros((self.count, 12), np.float32)
        shifts[:, 3::4] = self.offsets[:, :3]
        for m, mesh in enumerate(scene.meshes):  # one placement per mesh; the worlds differ in the offset alone
            to_world, normal, mirrored = place_host(mesh.transform if mesh.transform is not None else np.eye(3, 4),
                                                    np.zeros(3))
            column = records[:, m]
            column["to_world"] = to_world[None] + shifts
            column["normal_to_world"] = normal
            flags = (int(base[m]["flags"]) & ~MESH_MIRRORED) | MESH_INSTANCED
            column["flags"] = flags | (MESH_MIRRORED if mirrored else 0)
            records[:, m] = column
        return records.reshape(-1)

    def instances(self, records: np.ndarray, handles: Sequence[int], flags: Sequence[int]) -> np.ndarray:
        """The (count * meshes) ``OptixInstance`` records: the placements of ``records``, instance id = record index."""
        out = np.zeros(len(records), INSTANCE_DTYPE)
        out["transform"] = records["to_world"].reshape(-1, 3, 4)
        out["instance_id"] = np.arange(len(records))
        out["visibility_mask"] = 0xFF
        out["flags"] = np.tile(np.asarray(flags, np.uint32), self.count)
        out["handle"] = np.tile(np.asarray(handles, np.uint64), self.count)
        return out

    def check_transforms_shape(self, shape: tuple[int, ...]) -> int:
        """The stride (12 or 16 floats) of a transforms array of ``shape``; ValueError naming ``transforms``."""
        want = (self.count, len(self.movable))
        if len(shape) != 4 or tuple(shape[:2]) != want or tuple(shape[2:]) not in ((3, 4), (4, 4)):
            raise ValueError(f"transforms must be ({want[0]}, {want[1]}, 4, 4) or ({want[0]}, {want[1]}, 3, 4) "
                             f"(worlds, movable meshes, matrix), got shape {tuple(shape)}")
        return 12 if shape[2] == 3 else 16


def _scene_box(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    """The bounding box of the scene's host meshes at their placements."""
    lows, highs = [], []
    for mesh in scene.meshes:
        if mesh.on_device:
            continue
        v = np.asarray(mesh.vertices, np.float64)
        if mesh.transform is not None:
            v = v @ mesh.transform[:, :3].T + mesh.transform[:, 3]
        lows.append(v.min(axis=0))
        highs.append(v.max(axis=0))
    if not lows:
        return np.full(3, -1.0), np.full(3, 1.0)
    return np.min(lows, axis=0), np.max(highs, axis=0)
