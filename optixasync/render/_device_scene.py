"""A scene on the device: its tables (geometry, materials, lights) and the acceleration structure over them.

:class:`DeviceScene` places a checked :class:`~optixasync.scene.Scene` in
device memory through the scene tables (:mod:`._tables`, one code path with
the host build of the kernel) and builds what rays are traced against: one
GAS (build input ``i`` = mesh ``i``; cut-out meshes and meshes whose back
faces are culled with their any-hit program enabled) or, when meshes are
instanced, move (motion blur: :mod:`._motion`) or the scene has spheres,
curves or custom primitives, one GAS per distinct mesh geometry and one per
shape kind (:mod:`._shape_accel`) under an instance structure (not
compacted). It knows nothing of
images, samples or programs: integrators launch over its
:attr:`DeviceScene.record` and take the number of hit records it needs.

Meshes may hold device arrays of any library; they are used in place (see
:mod:`._placement`). The kernel reads them at every launch: the producer
must not rewrite them while launches may run, except as the dynamic-mesh
protocol says (:meth:`DeviceScene.vertices`, then :meth:`DeviceScene.refit`).

Blocking calls
--------------
* Creating a :class:`DeviceScene` reads back, once, the vertices of
  emissive meshes given as device arrays (the emitter table needs their
  world positions on the host), and allocates one CUDA array per texture:
  set-up time.
* :meth:`DeviceScene.compact` with ``wait=True`` waits for the compacted
  size (offline rendering).
* :meth:`DeviceScene.close` destroys the texture objects and frees their
  arrays, which waits for the device (measured: it waited for a 400 ms
  kernel queued on the set-up stream).
Everything else enqueues asynchronous work: uploads through pinned staging,
the build, refits, the instance structure's rebuilds (:meth:`DeviceScene.place`),
and stream ordering on the GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..accel import AccelOptions, GeometryAccel, Instance, InstanceAccel, TriangleInput
from ..cuda import Readiness, as_cupy_stream
from ..scene import Scene
from ._emitters import EmitterTable, build_emitter_table, is_light_sampled
from ._motion import check_scene_motion, moving_structure
from ._params import runs_any_hit
from ._placement import DevicePlacement
from ._shape_accel import check_scene_shapes, hit_kinds, shape_instances
from ._table_updates import TableUpdate, TableUpdates
from ._tables import SceneTables, needs_instances

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["DeviceScene", "check_scene", "host_emitter_table", "placement_matrices"]


def check_scene(scene: Any) -> Scene:
    """``scene`` if it is a renderable :class:`Scene`; TypeError/ValueError otherwise."""
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be an optixasync.scene.Scene, got {type(scene).__name__}")
    if not scene.meshes and not scene.shapes:
        raise ValueError("the scene has no meshes and no shapes (spheres, curves): there is nothing to render")
    from ..scene import Environment

    if scene.environment is not None and not isinstance(scene.environment, Environment):
        raise TypeError(f"scene environment must be an Environment or None, got {type(scene.environment).__name__}")
    for k, mesh in enumerate(scene.meshes):  # meshes are mutable: their material may have changed since
        mesh.check_material(f"mesh {k} ({mesh.name!r})")
    check_scene_shapes(scene)
    check_scene_motion(scene)
    punctual = _check_lights(scene)
    glowing = scene.emitters or any(shape.is_emissive for shape in scene.shapes)
    if not glowing and not punctual and (scene.environment is None or not scene.environment.power > 0):
        raise ValueError("the scene has no light: no emissive mesh or shape, no light in scene.lights and no "
                         "environment, or a black one (give a material an emission, add a light, or set "
                         "scene.environment to an Environment with radiance)")
    if scene.dynamic and scene.instanced:
        raise ValueError("the scene has dynamic meshes and instanced meshes (with a transform): refits need one "
                         "GAS for the whole scene, instances an instance structure; give the instances world-space "
                         "vertices (Mesh.flattened) or make no mesh dynamic")
    return scene


def _check_lights(scene: Scene) -> int:
    """The number of scene.lights with any power; TypeError for a light no registered light type renders."""
    from ._tables import scene_radius
    from .lights import PunctualLightType, light_types

    kinds = {t.kind: t for t in light_types() if isinstance(t, PunctualLightType)}
    lit = 0
    radius = None
    for k, light in enumerate(scene.lights):
        kind = kinds.get(type(light))
        if kind is None:
            raise TypeError(f"scene light {k} is a {type(light).__name__}, which no registered light type renders "
                            f"(registered: {', '.join(t.__name__ for t in kinds)})")
        radius = scene_radius(scene) if radius is None else radius
        lit += kind.power(light, radius) > 0
    return lit


def placement_matrices(transforms: Any, count: int) -> np.ndarray:
    """``transforms`` as (count, 3, 4) float64 affine matrices, finite with invertible linear parts; ValueError else."""
    try:
        matrices = np.asarray(transforms, np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"transforms must be numbers, (meshes, 3, 4): {exc}") from None
    if matrices.ndim == 3 and matrices.shape[1:] == (4, 4):
        matrices = matrices[:, :3]
    if matrices.shape != (count, 3, 4):
        raise ValueError(f"transforms must be ({count}, 3, 4) (or 4x4 each), one per mesh; got {matrices.shape}")
    if not np.isfinite(matrices).all():
        raise ValueError("transforms must be finite")
    singular = ~(np.abs(np.linalg.det(matrices[:, :, :3])) > 0.0)
    if singular.any():
        raise ValueError(f"transform of mesh {int(np.argmax(singular))} is not invertible (a zero scale)")
    return np.ascontiguousarray(matrices)


def host_emitter_table(scene: Scene) -> EmitterTable | None:
    """The emitter table of ``scene`` from its host vertices; None when an emissive mesh lives on the device.

    Host-only, so a scene whose emitters have no area fails here, before any GPU work.
    """
    if any(m.on_device and is_light_sampled(m) for m in scene.meshes):
        return None
    return build_emitter_table(scene.meshes)


class DeviceScene:
    """A checked :class:`Scene` on the device: its tables and the structure rays are traced against.

    Parameters
    ----------
    ctx : Context
    scene : Scene
        Checked (:func:`check_scene`) and read at creation: later changes to its meshes are not seen (move
        dynamic meshes through :meth:`vertices` and :meth:`refit`).
    stream : stream
        The set-up stream (uploads, tables, the build).
    emitters : EmitterTable, optional
        The scene's :func:`host_emitter_table`, when the caller made it already.
    instances : bool
        Build one instance per mesh (an instance structure over a GAS per distinct geometry) even when no mesh
        has a transform: what many worlds place (:mod:`._device_worlds`).
    checked : bool
        The scene was checked by the caller just now (``check_scene``): not checked again.

    Attributes
    ----------
    scene : Scene
    tables : SceneTables
        Geometry, materials and lights, placed in device memory.
    accel : GeometryAccel or InstanceAccel
        Without instanced meshes or shapes: one GAS, build input ``i`` = mesh ``i``; built with ``allow_update``
        when a mesh is dynamic, with ``allow_compaction`` otherwise. With instanced meshes (a
        :attr:`Mesh.transform`) or shapes: an instance structure over every mesh (instance id = mesh index) and
        one GAS per shape kind (instance id = the table index of its first shape).
    geometries : list of GeometryAccel
        The GAS: ``[accel]`` without instances, else one per distinct mesh geometry (instances that share their
        arrays share one) and one per shape kind.
    instanced : bool
        Whether :attr:`accel` is an instance structure.
    moving : bool
        Whether meshes move (motion blur: the pipeline traces with motion).
    updates : TableUpdates
        The materials' colours and the lights' strength, rewritten in place (:meth:`update_tables`).
    emitters : EmitterTable
        The emitter table as built on the host (the device's copy has every pdf times its selection probability).
    hit_records : int
        Hit-group records an integrator's SBT needs: one per build input of the one GAS, or, with instances, 1
        for the meshes (their GAS have one input each and SBT offset 0; the hit programs find the mesh from the
        instance id) and one per shape (its kind's GAS has SBT offset the kind's first record).
    hit_kinds : tuple of str
        The primitive kind of each hit record: ``"triangle"``, ``"sphere"`` or a curve kind (the hit group an
        integrator puts there).
    ready : Readiness
        The end of the set-up; :meth:`order` puts a stream after it and after the structure's last operation.
    stream : cupy.cuda.Stream
        The set-up stream.
    generation : int
        The tables' generation: one more whenever a table is placed anew. Frame graphs capture the addresses
        their work reads (the vertex arrays a refit and a vertex kernel use), so their key holds it. The tables
        are placed once, at creation: nothing increments it yet.
    """

    def __init__(self, ctx: Context, scene: Scene, stream: Any, emitters: EmitterTable | None = None, *,
                 instances: bool = False, checked: bool = False) -> None:
        self.ctx = ctx
        self.scene = scene if checked else check_scene(scene)  # checked: the caller just did (RenderPipeline)
        self.instanced = needs_instances(scene) or bool(instances)
        self.moving = bool(scene.moving)
        self._transforms: list[Any] = []
        self.stream = stream = as_cupy_stream(stream)
        if emitters is None:
            emitters = host_emitter_table(scene)  # before any GPU work: zero emissive area raises here
        self._placement = DevicePlacement(ctx, stream)
        try:
            self.tables = SceneTables(scene, self._placement, emitters)
            self.accel, self.geometries = self._build_structures(stream)
        except BaseException:
            self._placement.release()
            raise
        self.emitters = self.tables.lights.emitters
        self.updates: TableUpdates | None = TableUpdates(self.tables, self._placement)
        self.hit_kinds = hit_kinds(self.instanced, len(scene.meshes), self.tables.shapes)
        self.hit_records = len(self.hit_kinds)
        self._record = self.tables.record.copy()
        self._record["instanced"] = int(self.instanced)
        self._record_handle = -1  # the handle written into the record (a numpy field write costs a microsecond)
        self.generation = 0
        self.ready = Readiness()
        self.ready.record(stream)  # later streams wait for the set-up on the GPU, never the host
        ctx.track(self)

    def _build_structures(self, stream: Any) -> tuple[Any, list[GeometryAccel]]:
        """The structure rays are traced against, and the GAS under it.

        Without instances: one GAS, build input ``k`` = mesh ``k`` (refittable when a mesh is dynamic, else
        compactable). With instances: one GAS per distinct geometry (vertices and indices arrays, and whether
        its any-hit program runs) and an instance structure over all meshes, instance id = mesh index; and the
        shapes' GAS and instances (:func:`~._shape_accel.shape_instances`).
        """
        scene, geometry = self.scene, self.tables.geometry
        cutout = [runs_any_hit(m) for m in scene.meshes]  # cut-outs and culled back faces
        if not self.instanced:
            dynamic = bool(scene.dynamic)
            gas = GeometryAccel(
                self.ctx, [TriangleInput(v, i, any_hit=c)
                           for v, i, c in zip(geometry.vertices, geometry.indices, cutout, strict=True)],
                AccelOptions(allow_update=dynamic, allow_compaction=not dynamic), stream=stream)
            return gas, [gas]
        shared: dict[tuple[int, int, bool], GeometryAccel] = {}
        instances = []
        for k, mesh in enumerate(scene.meshes):
            if mesh.motion is not None:  # its own structure: a motion transform or a motion GAS
                child, made = moving_structure(self.ctx, scene, self.tables.motions, k, geometry.indices[k],
                                               geometry.vertices[k], stream)
                self._transforms += made
                instances.append(Instance(child, mesh.transform if mesh.transform is not None else np.eye(3, 4),
                                          instance_id=k))
                continue
            key = (id(geometry.vertices[k]), id(geometry.indices[k]), cutout[k])
            if key not in shared:
                shared[key] = GeometryAccel(self.ctx, [TriangleInput(geometry.vertices[k], geometry.indices[k],
                                                                     any_hit=cutout[k])], stream=stream)
            placement = mesh.transform if mesh.transform is not None else np.eye(3, 4)
            instances.append(Instance(shared[key], placement, instance_id=k))
        shape_gas, shape_placed = shape_instances(self.ctx, self.tables.shapes, 1, stream)
        try:
            accel = InstanceAccel(self.ctx, instances + shape_placed, stream=stream)
        except BaseException:
            for gas in [*shared.values(), *shape_gas, *self._transforms]:
                gas.close()
            raise
        return accel, [*shared.values(), *shape_gas]

    # -- what integrators read ----------------------------------------------------------------------------------
    @property
    def record(self) -> np.ndarray:
        """The ``SceneRecord`` of the launch parameters, with the structure's current handle."""
        handle = self.accel.handle
        if handle != self._record_handle:  # compaction and rebuilds change it
            self._record["handle"] = self._record_handle = handle
        return self._record

    @property
    def handle(self) -> int:
        """The traversable handle of the scene's structure."""
        return self.accel.handle

    def order(self, stream: Any) -> int:
        """Make ``stream`` wait (on the GPU) for the set-up and the structure's last operation; returns its handle."""
        self.ready.order(stream)
        return self.accel.ready.order(stream)

    # -- changes ---------------------------------------------------------------------------------------------
    def vertices(self, mesh_index: int, stream: Any = None) -> Any:
        """The device vertex array (V, 3) float32 of mesh ``mesh_index``, read by the GAS and the shading.

        Pass the ``stream`` that will write it to order it after the set-up (the initial upload) first.
        """
        if self.tables is None:
            raise RuntimeError("the device scene is closed")
        vertices = self.tables.geometry.vertices
        index = int(mesh_index)
        if not 0 <= index < len(vertices):
            raise IndexError(f"mesh index {mesh_index} out of range: the scene has {len(vertices)} meshes")
        if stream is not None:
            self.order(stream)
        return vertices[index]

    def refit(self, stream: Any) -> None:
        """Refit the structure to the dynamic meshes' current vertices, on ``stream``."""
        if not self.scene.dynamic:
            raise ValueError("the scene has no dynamic mesh: nothing to refit (create meshes with dynamic=True)")
        self.order(stream)
        self.accel.refit(self.tables.geometry.vertices, stream)

    def place(self, transforms: Any, stream: Any) -> None:
        """Move the instanced meshes to the object-to-world ``transforms`` (M, 3, 4), one per mesh, on ``stream``.

        Their mesh records are rewritten (through pinned staging) and the instance structure is rebuilt over
        the new transforms; no GAS changes, no vertex moves. Rows of meshes without a transform (in world
        space) are ignored. Launches ordered after ``stream`` see the new placement.

        Raises
        ------
        ValueError
            Without instanced meshes, or on transforms of another shape, not finite or not invertible
            (before any GPU work).
        """
        placed = self.scene.instanced  # the meshes with a transform (shapes and moving meshes need instances too)
        if not placed:
            raise ValueError("the scene has no instanced meshes (with a transform): nothing to place (give the "
                             "meshes to move a transform, e.g. GltfAsset.animated_scene)")
        matrices = placement_matrices(transforms, len(self.scene.meshes))
        self.order(stream)
        self.tables.place(matrices, stream)
        for k in placed:  # instance k is mesh k; the shapes' instances follow the meshes'
            self.accel.instances[k].transform = matrices[k].astype(np.float32)
        self.accel.rebuild(stream=stream)

    def update_tables(self, update: TableUpdate, stream: Any) -> None:
        """Rewrite the materials and lights as ``update`` says (:meth:`TableUpdates.check`), on ``stream``.

        Ordered after the set-up; launches ordered after ``stream`` read the new values. No structure changes.
        """
        if self.updates is None:
            raise RuntimeError("the device scene is closed")
        self.order(stream)
        self.updates.apply(update, stream)

    def compact(self, stream: Any, wait: bool = False) -> None:
        """Compact the structure on ``stream`` once its size is known (``wait``: wait for it); no-op if not compactable."""
        if self.accel.options.allow_compaction and not self.accel.compacted:
            self.accel.compact(wait=wait, stream=stream)

    def close(self) -> None:
        """Release the structures and the tables (the caller waited for the launches that read them)."""
        self.accel.close()
        for gas in [*self.geometries, *self._transforms]:
            gas.close()  # idempotent: without instances, the one GAS is self.accel
        self._placement.release()
        self.tables = None  # its geometry lists hold the vertex and index arrays: none outlives the close
        self.updates = None  # it holds the tables too
        self.geometries = []
