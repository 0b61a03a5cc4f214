"""A glTF node animation as a scene's frames: where each mesh (and the camera) is at a time.

:meth:`GltfAsset.animated_scene <optixasync.scene.GltfAsset.animated_scene>`
makes a :class:`~optixasync.scene.Scene` whose meshes the animation moves are
instances (a ``transform`` each), and the :class:`NodeAnimation` that gives
their world transforms at any time: the renderer's frame update
(``optixasync.render.NodeMotion``) writes them into the instance structure
and the mesh records on each frame's stream, so no vertex moves and nothing
is rebuilt but the instance structure. Host-side numpy only.

What the animation does not move: emissive meshes (the light sampler holds
their world triangles; they stay in their rest pose, with a warning) and the
lights of ``KHR_lights_punctual`` (likewise). A camera placed under an
animated node moves with it.

Blocking calls
--------------
None: numpy on the host (the frame update that uses it lists its own).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._camera import Camera
from ._gltf_animation import GltfAnimation
from ._gltf_cameras import GltfCamera
from ._gltf_nodes import Placements

__all__ = ["NodeAnimation", "moved_placements"]


def moved_placements(placements: Placements, nodes: list[int]) -> np.ndarray:
    """(P,) bool: which placements an animation of ``nodes`` moves (the node itself, or any ancestor, animated)."""
    moved = np.isin(placements.node, np.asarray(nodes, np.int64))
    for p in np.argsort(placements.depth, kind="stable").tolist():  # parents before their children
        parent = int(placements.parent[p])
        if parent >= 0 and moved[parent]:
            moved[p] = True
    return moved


@dataclass(frozen=True, eq=False)
class NodeAnimation:
    """The meshes of one scene, and its camera, at any time of one glTF animation.

    Attributes
    ----------
    animation : GltfAnimation
    placements : Placements
        Every placement of the scene's nodes.
    node_matrices : numpy.ndarray
        (N, 4, 4) every node's local matrix at rest.
    mesh_placements : numpy.ndarray
        (M,) int64: the placement of each scene mesh.
    mesh_locals : tuple of numpy.ndarray or None
        Per scene mesh, its ``EXT_mesh_gpu_instancing`` matrix after the placement (None without).
    rest : numpy.ndarray
        (M, 3, 4) float64: each scene mesh's ``transform`` (the identity for a mesh in world space).
    moving : numpy.ndarray
        (M,) bool: the meshes the animation moves (instances: they have a ``transform``).
    camera : GltfCamera or None
        The scene's glTF camera when the animation moves it.
    """

    animation: GltfAnimation
    placements: Placements
    node_matrices: np.ndarray
    mesh_placements: np.ndarray
    mesh_locals: tuple[np.ndarray | None, ...]
    rest: np.ndarray
    moving: np.ndarray
    camera: GltfCamera | None = None

    @property
    def start(self) -> float:
        """The animation's first keyframe time, seconds."""
        return self.animation.start

    @property
    def end(self) -> float:
        """The animation's last keyframe time, seconds."""
        return self.animation.end

    def worlds(self, time: float) -> np.ndarray:
        """(P, 4, 4) world matrices of every placement at ``time`` seconds.

        Raises
        ------
        ValueError
            When an animated world transform is not finite.
        """
        local = self.node_matrices.copy()
        for node, matrix in self.animation.sample(float(time)).items():
            local[node] = matrix
        world = self.placements.worlds(local)
        if not np.isfinite(world).all():
            raise ValueError(f"animation {self.animation.name!r} at {time} s: a world transform is not finite")
        return world

    def mesh_matrices(self, time: float, world: np.ndarray | None = None) -> np.ndarray:
        """(M, 4, 4) object-to-world matrices of every scene mesh's placement at ``time`` (``world``: of :meth:`worlds`)."""
        world = self.worlds(time) if world is None else world
        out = world[self.mesh_placements] if len(self.mesh_placements) else np.empty((0, 4, 4))
        for k, local in enumerate(self.mesh_locals):
            if local is not None:
                out[k] = out[k] @ local
        return out

    def transforms(self, time: float) -> np.ndarray:
        """(M, 3, 4) float64 ``transform`` of every scene mesh at ``time`` (:attr:`rest` for those not moving).

        Raises
        ------
        ValueError
            When a moved mesh's transform is not finite or not invertible (a node scaled to zero).
        """
        out = self.rest.copy()
        if self.moving.any():
            out[self.moving] = self.mesh_matrices(time)[self.moving, :3]
        if self.moving.any() and not (np.abs(np.linalg.det(out[self.moving, :, :3])) > 0.0).all():
            raise ValueError(f"animation {self.animation.name!r} at {time} s scales a mesh to zero: it cannot be "
                             "placed (an instance needs an invertible transform)")
        return out

    def camera_at(self, time: float) -> Camera | None:
        """The camera at ``time`` when the animation moves it, else None (the scene's camera stays)."""
        if self.camera is None:
            return None
        return self.camera.placed(self.worlds(time)[self.camera.placement])
