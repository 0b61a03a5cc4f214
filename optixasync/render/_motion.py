"""Motion blur on the device: the moving meshes' key table, and their structures (motion GAS, motion transforms).

A scene with moving meshes (:attr:`~optixasync.scene.Mesh.motion`) is
traced through an instance structure. A moving instance is its static GAS
under a :class:`~optixasync.accel.MatrixMotionTransform` of its keys; a
deforming mesh is a GAS with motion options (its build input gives every
vertex key); both are instances of the scene's IAS, instance id = mesh
index. The kernel shades a hit where the mesh is at the ray's time, from
its ``MeshMotion`` record (``kernels/pathtracer/motion.h``, mirrored by
:data:`MESH_MOTION`): the same keys, interpolated as OptiX interpolates
them. The scene record carries the table and the shutter interval.

Blocking calls
--------------
None here: uploads go through the placement; the structures' builds are
asynchronous, on the set-up stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._structs import struct_dtype
from ..accel import AccelOptions, GeometryAccel, MatrixMotionTransform, MotionOptions, TriangleInput
from ..scene import Scene
from ._params import runs_any_hit

if TYPE_CHECKING:
    from ..cuda import Context
    from ._placement import Placement

__all__ = ["MESH_MOTION", "MotionTable", "check_scene_motion", "motion_options", "moving_structure"]

#: ``MeshMotion``: one per mesh record (zero for a static mesh).
MESH_MOTION: np.dtype = struct_dtype([
    ("transforms", "ptr"), ("vertex_keys", "ptr"), ("num_keys", "uint"), ("time_begin", "float"),
    ("time_end", "float"), ("pad", "uint"),
])


def check_scene_motion(scene: Scene) -> None:
    """Refuse, before any GPU work, moving meshes the renderer cannot draw (materials may have changed since).

    Raises
    ------
    ValueError
        A moving emissive mesh, or one that is also dynamic.
    """
    from ..scene._motion import check_shutter

    scene.shutter = check_shutter(scene.shutter)
    for k in scene.moving:
        mesh = scene.meshes[k]
        mesh.motion.check(mesh, f"mesh {k} ({mesh.name!r})")


def motion_options(motion: Any) -> MotionOptions:
    """The OptiX motion options of a :class:`~optixasync.scene.MeshMotion` (keys clamped outside their times)."""
    begin, end = motion.times
    return MotionOptions(keys=motion.num_keys, time_begin=begin, time_end=end)


class MotionTable:
    """The ``MeshMotion`` records of a scene (one per mesh) and the placed vertex keys of deforming meshes.

    Attributes
    ----------
    vertex_keys : dict of int to list
        Per deforming mesh, its placed vertex arrays (the keys its motion GAS is built from).
    pointer : int
        The records' address (0 when nothing moves).
    """

    def __init__(self, scene: Scene, placement: Placement) -> None:
        self.vertex_keys: dict[int, list[Any]] = {}
        self.pointer = 0
        if not scene.moving:
            return
        records = np.zeros(len(scene.meshes), MESH_MOTION)
        for k in scene.moving:
            motion = scene.meshes[k].motion
            label = f"mesh {k} motion"
            records[k]["num_keys"] = motion.num_keys
            records[k]["time_begin"], records[k]["time_end"] = motion.times
            if motion.moves:
                keys = np.stack([np.asarray(m, np.float32) for m in motion.transforms])
                records[k]["transforms"] = placement.upload(keys, f"{label} transforms")
            else:
                placed = [placement.mesh_array(v, f"{label} key {j}", np.float32, False)
                          for j, v in enumerate(motion.vertices)]
                self.vertex_keys[k] = placed
                addresses = np.array([placement.address(v) for v in placed], np.uint64)
                records[k]["vertex_keys"] = placement.upload(addresses, f"{label} keys")
        self.pointer = placement.upload(records, "mesh motion records")


def moving_structure(ctx: Context, scene: Scene, table: MotionTable, k: int, indices: Any, static: Any,
                     stream: Any) -> tuple[Any, list[Any]]:
    """What instance ``k`` of a moving mesh instances, and the structures to close with the scene.

    ``static`` is the mesh's placed vertex array (a moving instance's GAS is built over it); ``indices`` its
    placed indices.
    """
    mesh = scene.meshes[k]
    motion, cutout = mesh.motion, runs_any_hit(mesh)  # cut-outs and culled back faces
    options = motion_options(motion)
    if motion.moves:
        gas = GeometryAccel(ctx, [TriangleInput(static, indices, any_hit=cutout)], stream=stream)
        try:
            transform = MatrixMotionTransform(ctx, gas, motion.transforms, options, stream=stream)
        except BaseException:
            gas.close()
            raise
        return transform, [gas, transform]
    gas = GeometryAccel(ctx, [TriangleInput(table.vertex_keys[k], indices, any_hit=cutout)],
                        AccelOptions(motion=options), stream=stream)
    return gas, [gas]
