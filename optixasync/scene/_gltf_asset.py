"""A decoded glTF scene (:class:`GltfAsset`): primitives, materials, the instances placing them, and the rest.

Host data only. :meth:`GltfAsset.to_scene` makes the :class:`Scene` the
renderer draws (its meshes, camera and ``KHR_lights_punctual`` lights);
:meth:`GltfAsset.animated_scene` makes one whose animated meshes are
instances, with the :class:`~optixasync.scene.NodeAnimation` that places them
at any time. The records (cameras, lights, animations) stay beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .._warnings import warn
from ._frames import framing_camera
from ._gltf_animation import GltfAnimation
from ._gltf_cameras import WATTS_PER_LUMEN, GltfCamera, GltfLight
from ._gltf_motion import NodeAnimation, moved_placements
from ._gltf_nodes import Placements
from ._material import Material
from ._mesh import Mesh, placed
from ._scene import Scene

__all__ = ["GltfAsset", "GltfInstance"]


class GltfInstance(NamedTuple):
    """One placement of a primitive: ``key`` is (glTF mesh index, primitive index), ``matrix`` 4x4 object-to-world.

    ``node`` places it; ``placement`` is that node's placement in :attr:`GltfAsset.placements` (a node
    under several parents is placed once per path), and ``local`` the ``EXT_mesh_gpu_instancing``
    matrix applied after the node's world matrix (None without the extension).
    """

    key: tuple[int, int]
    matrix: np.ndarray
    node: int
    placement: int = -1
    local: np.ndarray | None = None


@dataclass(eq=False)
class GltfAsset:
    """A decoded glTF scene: object-space primitives, their materials, the instances placing them, cameras.

    Meshes used by several nodes are stored once here (as in the file).
    :meth:`to_scene` keeps them shared: every placement of a primitive used
    more than once becomes an instanced :class:`Mesh` (the primitive's arrays
    and a ``transform``), which the renderer stores once and places by an
    instance acceleration structure; primitives used once are flattened to
    world space.

    Attributes
    ----------
    path : Path
    meshes : dict of (int, int) to Mesh
        Per (glTF mesh index, primitive index), in object space, with its
        material. Only primitives of the scene's nodes, and only triangles.
    materials : dict of int or None to Material
        Per glTF material index (None: glTF's default material) of those primitives.
    instances : list of GltfInstance
        Every placement of every primitive, in node order (depth first).
    cameras : list of GltfCamera
        Camera nodes of the scene, in node order: perspective and orthographic.
    node_names : list of str
        Every node's name (``node{i}`` for an unnamed one), by node index.
    lights : list of GltfLight
        ``KHR_lights_punctual`` lights placed by the scene's nodes, in node order.
    animations : list of GltfAnimation
        The file's node animations (translation, rotation, scale); see :meth:`pose`.
    json : dict
        The whole glTF document as parsed: every extension's and extra's JSON.
    placements : Placements or None
        Every placement of the scene's nodes (node, parent placement, depth, world matrix).
    node_matrices : numpy.ndarray or None
        (N, 4, 4) every node's local matrix at rest.
    """

    path: Path
    meshes: dict[tuple[int, int], Mesh] = field(default_factory=dict)
    materials: dict[int | None, Material] = field(default_factory=dict)
    instances: list[GltfInstance] = field(default_factory=list)
    cameras: list[GltfCamera] = field(default_factory=list)
    node_names: list[str] = field(default_factory=list)
    lights: list[GltfLight] = field(default_factory=list)
    animations: list[GltfAnimation] = field(default_factory=list)
    json: dict[str, Any] = field(default_factory=dict)
    placements: Placements | None = None
    node_matrices: np.ndarray | None = None

    def world_meshes(self) -> list[Mesh]:
        """One world-space :class:`Mesh` per instance, named ``"{node}/{primitive}"`` (node name or ``node{i}``)."""
        out = []
        for instance in self.instances:
            mesh = self.meshes[instance.key].transformed(instance.matrix)
            mesh.name = f"{self.node_names[instance.node]}/{mesh.name}"
            out.append(mesh)
        return out

    def camera(self, which: int | str | None = None) -> GltfCamera | None:
        """The camera ``which`` picks (a camera index or a camera/node name), or the scene's first camera node.

        Returns None when ``which`` is None and the scene has no camera.

        Raises
        ------
        ValueError
            When ``which`` names no camera node of the scene.
        """
        if which is None:
            return self.cameras[0] if self.cameras else None
        if isinstance(which, bool) or not isinstance(which, (int, str)):
            raise TypeError(f"camera must be a camera index, a name or None, got {type(which).__name__}")
        if isinstance(which, int):
            found = next((c for c in self.cameras if c.index == which), None)
        else:
            found = next((c for c in self.cameras if which in (c.name, self.node_names[c.node])), None)
        if found is None:
            known = [f"{c.index} ({c.name!r})" for c in self.cameras[:20]] or ["none"]
            raise ValueError(f"{self.path}: no camera {which!r} in the scene; its camera nodes: {', '.join(known)}")
        return found

    def scene_meshes(self, instancing: bool = True, keep: np.ndarray | None = None) -> list[Mesh]:
        """One :class:`Mesh` per instance, named as in :meth:`world_meshes`.

        ``instancing``: a primitive placed more than once gives instanced meshes (its arrays shared, each with
        its world ``transform``); the others are flattened. False: everything flattened (:meth:`world_meshes`).
        ``keep`` (I,) bool: instances that stay instanced meshes however often their primitive is placed.
        """
        if not instancing and keep is None:
            return self.world_meshes()
        uses: dict[tuple[int, int], int] = {}
        for instance in self.instances:
            uses[instance.key] = uses.get(instance.key, 0) + 1
        shared: dict[tuple[int, int], list[int]] = {}  # key -> positions of its instances kept instanced
        for position, instance in enumerate(self.instances):
            if (instancing and uses[instance.key] > 1) or (keep is not None and keep[position]):
                shared.setdefault(instance.key, []).append(position)
        out: list[Mesh | None] = [None] * len(self.instances)
        for key, positions in shared.items():
            base = self.meshes[key]
            # one contiguous (I, 3, 4) array per primitive: each instance's transform is a view of it
            transforms = np.ascontiguousarray(np.array([self.instances[k].matrix[:3] for k in positions]))
            names = [f"{self.node_names[self.instances[k].node]}/{base.name}" for k in positions]
            for k, mesh in zip(positions, placed(base, transforms, names), strict=True):
                out[k] = mesh
        for k, instance in enumerate(self.instances):
            if out[k] is None:
                base = self.meshes[instance.key]
                mesh = base.transformed(instance.matrix)
                mesh.name = f"{self.node_names[instance.node]}/{base.name}"
                out[k] = mesh
        return out  # type: ignore[return-value]

    def scene_lights(self, scale: float = WATTS_PER_LUMEN) -> list[Any]:
        """The renderer's lights of :attr:`lights` (:meth:`GltfLight.scene_light`: ``color * intensity * scale``)."""
        return [light.scene_light(scale) for light in self.lights]

    def to_scene(self, camera: int | str | None = None, *, instancing: bool = True,
                 light_scale: float = WATTS_PER_LUMEN) -> Scene:
        """A :class:`Scene` of :meth:`scene_meshes` and :meth:`scene_lights`, seen by :meth:`camera`.

        Without a camera in the file, :func:`framing_camera` of the meshes. ``light_scale`` converts the lights'
        candela and lux (see :mod:`optixasync.scene._gltf_cameras`).
        """
        return self._scene(self.scene_meshes(instancing), camera, light_scale)

    def _scene(self, meshes: list[Mesh], camera: int | str | None, light_scale: float) -> Scene:
        if not meshes:
            raise ValueError(f"{self.path}: the scene contains no triangles")
        chosen = self.camera(camera)
        return Scene(meshes, chosen.camera if chosen is not None else framing_camera(meshes),
                     lights=self.scene_lights(light_scale))

    def animated_scene(self, animation: int | str = 0, camera: int | str | None = None, *, instancing: bool = True,
                       light_scale: float = WATTS_PER_LUMEN) -> tuple[Scene, NodeAnimation]:
        """A :class:`Scene` whose meshes ``animation`` moves are instances, and the animation that places them.

        As :meth:`to_scene`, but every mesh the animation moves keeps a ``transform`` (its rest pose), which
        :meth:`NodeAnimation.transforms` gives at any time; emissive meshes stay in their rest pose (a
        warning says so) and are flattened, as are the meshes nothing moves (unless shared).

        Raises
        ------
        ValueError
            When there is no such animation, and as :meth:`to_scene`.
        """
        chosen = self.animation(animation)
        moved = moved_placements(self.placements, chosen.nodes) if self.placements is not None else np.zeros(0, bool)
        placement_of = np.array([i.placement for i in self.instances], np.int64)
        moving = moved[placement_of] if len(placement_of) else np.zeros(0, bool)
        emissive = np.array([self.meshes[i.key].material.is_emissive for i in self.instances], bool)
        if (moving & emissive).any():
            warn(f"{self.path}: {int((moving & emissive).sum())} emissive mesh(es) moved by animation "
                 f"{chosen.name!r} stay in their rest pose (the light sampler holds their world triangles)")
        moving &= ~emissive
        meshes = self.scene_meshes(instancing, keep=moving)
        scene = self._scene(meshes, camera, light_scale)
        gltf_camera = self.camera(camera)
        moves_camera = gltf_camera is not None and bool(moved[gltf_camera.placement])
        motion = NodeAnimation(chosen, self.placements, self.node_matrices, placement_of,
                               tuple(i.local for i in self.instances),
                               np.array([np.eye(3, 4) if m.transform is None else m.transform for m in meshes],
                                        np.float64).reshape(-1, 3, 4), moving,
                               gltf_camera if moves_camera else None)
        return scene, motion

    def animation(self, which: int | str = 0) -> GltfAnimation:
        """The animation ``which`` picks: an index into :attr:`animations` or a name.

        Raises
        ------
        ValueError
            When there is no such animation.
        """
        if isinstance(which, str):
            found = next((a for a in self.animations if a.name == which), None)
        elif isinstance(which, int) and not isinstance(which, bool) and 0 <= which < len(self.animations):
            found = self.animations[which]
        else:
            found = None
        if found is None:
            names = ", ".join(repr(a.name) for a in self.animations[:20]) or "none"
            raise ValueError(f"{self.path}: no animation {which!r}; the file has {names}")
        return found

    def pose(self, time: float, animation: int | str = 0) -> np.ndarray:
        """(I, 4, 4) object-to-world matrices of :attr:`instances` at ``time`` seconds of ``animation``.

        Nodes the animation does not move keep their rest transforms; an instance's matrix is its
        placement's animated world matrix, times its ``EXT_mesh_gpu_instancing`` matrix.

        Raises
        ------
        ValueError
            When there is no such animation, or an animated transform is not finite.
        """
        chosen = self.animation(animation)
        assert self.placements is not None and self.node_matrices is not None
        count = len(self.instances)
        motion = NodeAnimation(chosen, self.placements, self.node_matrices,
                               np.array([i.placement for i in self.instances], np.int64),
                               tuple(i.local for i in self.instances), np.zeros((count, 3, 4)), np.zeros(count, bool))
        return motion.mesh_matrices(time)
