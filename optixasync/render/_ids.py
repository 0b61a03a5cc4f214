"""Ids back to scene objects, and label maps that turn them into semantic segmentation.

The ``mesh_id`` output is an index into ``scene.meshes`` (0xFFFFFFFF where
nothing was hit), ``material_id`` an index into the scene's distinct
materials in order of first use (:func:`id_names` lists both), and
``primitive_id`` a triangle of its mesh. :func:`label_map` makes a lookup
table from mesh names (or indices) to class labels, and :func:`segment`
applies it to a ``mesh_id`` array, on the host (numpy) or on the GPU (CuPy,
or anything with DLPack, through CuPy: run it on the stream that reads the
outputs, ``with stream:``).

Blocking calls
--------------
:func:`segment` of a device array with a host table uploads the table
(``cupy.asarray``: a synchronous copy); give it the table as a CuPy array
(made once) and it only enqueues array operations on CuPy's current stream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..scene import Material, Mesh, Scene

__all__ = ["NO_ID", "id_names", "label_map", "segment"]

#: What the id outputs hold where the G-buffer sample hit nothing.
NO_ID = 0xFFFFFFFF


def _materials(scene: Scene) -> list[Material]:
    """The distinct materials in order of first use: the ``material_id`` order (``MaterialTable``'s)."""
    index: dict[Material, int] = {}
    for mesh in scene.meshes:
        index.setdefault(mesh.material, len(index))
    return list(index)


def id_names(scene: Scene) -> dict[str, list[Any]]:
    """What the ids of ``scene`` stand for: ``{"meshes": [name per mesh_id], "materials": [Material per
    material_id]}``."""
    return {"meshes": [m.name for m in scene.meshes], "materials": _materials(scene)}


def label_map(scene: Scene, labels: Mapping[str | int, int] | Callable[[int, Mesh], int], *,
              background: int = 0) -> np.ndarray:
    """A lookup table (len(scene.meshes) + 1,) uint32 from ``mesh_id`` to a class label; the last entry is a miss's.

    ``labels`` maps mesh names or indices to labels (meshes it does not name get ``background``), or is a
    function ``labels(index, mesh) -> label``.

    Raises
    ------
    KeyError, ValueError
        On a name no mesh has, an index out of range, or a label outside [0, 2**32).
    """
    count = len(scene.meshes)
    table = np.full(count + 1, background, np.int64)
    if callable(labels):
        table[:count] = [int(labels(k, m)) for k, m in enumerate(scene.meshes)]
    else:
        for key, label in labels.items():
            k = scene.find(key) if isinstance(key, str) else int(key)
            if not 0 <= k < count:
                raise ValueError(f"label_map: mesh index {k} out of range (the scene has {count} meshes)")
            table[k] = int(label)
    if (table < 0).any() or (table >= 2**32).any():
        raise ValueError("label_map: labels must be in [0, 2**32)")
    return table.astype(np.uint32)


def segment(mesh_ids: Any, table: Any) -> Any:
    """Class labels of a ``mesh_id`` array through ``table`` (:func:`label_map`): numpy in, numpy out; a device
    array in, a CuPy array out (CuPy's current stream)."""
    if isinstance(mesh_ids, np.ndarray):
        ids = mesh_ids.astype(np.int64)
        ids[ids == NO_ID] = len(table) - 1
        return np.asarray(table)[ids]
    import cupy

    ids = cupy.from_dlpack(mesh_ids) if not isinstance(mesh_ids, cupy.ndarray) else mesh_ids
    lut = cupy.asarray(table)
    return lut[cupy.minimum(ids, len(table) - 1).astype(cupy.int64)]
