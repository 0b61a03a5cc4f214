"""A scene on the device: geometry, acceleration structure, materials, textures, lights and SBT.

:class:`DeviceScene` turns a host :class:`~optixasync.scene.Scene` into
what the kernel reads and keeps it there: vertex, index and per-vertex
attribute buffers, one GAS (build input ``i`` = mesh ``i``; cut-out meshes
with their any-hit program enabled) or, when meshes are instanced, one GAS
per distinct geometry under an instance structure (not compacted), the per-mesh and per-material records,
the textures (:class:`~optixasync.render.DeviceTextures`), the environment
(:class:`~optixasync.render.DeviceEnvironment`), the emitter table for light
sampling and the shader binding table. It knows nothing of images or
samples; the renderer (:class:`~optixasync.render.PathTracer`) launches over
it. New per-scene device data (materials, textures, lights) belongs here.

Meshes may hold device arrays of any library (PyTorch, JAX, CuPy, Numba:
``__cuda_array_interface__`` or DLPack). They are used in place, without a
copy: :func:`~optixasync.cuda.consume_device_array` gives a CuPy view with
the set-up stream ordered after the producer on the GPU, and the scene keeps
the views (and through them the producers) until :meth:`DeviceScene.close`.
The kernel reads them at every launch: the producer must not rewrite them
while launches may run, except as the dynamic-mesh protocol says
(:meth:`DeviceScene.vertices`, then :meth:`DeviceScene.refit`).

Blocking calls
--------------
* Creating a :class:`DeviceScene` reads back, once, the vertices of
  emissive meshes given as device arrays (the emitter table needs their
  world positions on the host): set-up time.
* :meth:`DeviceScene.compact` with ``wait=True`` waits for the compacted
  size (offline rendering).
* Textures: one CUDA array per texture (``cudaMallocArray``, not
  stream-ordered) at creation; :meth:`DeviceScene.close` destroys the
  texture objects and frees the arrays, which waits for the device (measured:
  it waited for a 400 ms kernel queued on the set-up stream).
Everything else enqueues asynchronous work: uploads through pinned staging,
the build, refits, and stream ordering on the GPU (device arrays of other
libraries included: an event record and a stream wait, or the producer's
``__dlpack__`` given the set-up stream).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..accel import AccelOptions, GeometryAccel, Instance, InstanceAccel, TriangleInput
from ..cuda import Readiness, as_cupy_stream, consume_device_array, is_library_array
from ..scene import Material, Scene
from ..validation import is_device_array
from ._emitters import EmitterTable, build_emitter_table, is_light_sampled
from ._environment import DeviceEnvironment
from ._layout import MATERIAL_RECORD
from ._params import material_record, mesh_records, plastic_table
from ._textures import DeviceTextures

if TYPE_CHECKING:
    from ..cuda import Context
    from ._program import PathTracerProgram

__all__ = ["DeviceScene", "check_scene", "environment_probability", "host_emitter_table"]


def check_scene(scene: Any) -> Scene:
    """``scene`` if it is a renderable :class:`Scene`; TypeError/ValueError otherwise."""
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be an optixasync.scene.Scene, got {type(scene).__name__}")
    if not scene.meshes:
        raise ValueError("the scene has no meshes: there is nothing to render")
    from ..scene import Environment

    if scene.environment is not None and not isinstance(scene.environment, Environment):
        raise TypeError(f"scene environment must be an Environment or None, got {type(scene.environment).__name__}")
    for k, mesh in enumerate(scene.meshes):  # meshes are mutable: their material may have changed since
        mesh.check_material(f"mesh {k} ({mesh.name!r})")
    if not scene.emitters and (scene.environment is None or not scene.environment.power > 0):
        raise ValueError("the scene has no light: no emissive mesh and no environment, or a black one (give a "
                         "material an emission, or set scene.environment to an Environment with radiance)")
    if scene.dynamic and scene.instanced:
        raise ValueError("the scene has dynamic meshes and instanced meshes (with a transform): refits need one "
                         "GAS for the whole scene, instances an instance structure; give the instances world-space "
                         "vertices (Mesh.flattened) or make no mesh dynamic")
    return scene


def host_emitter_table(scene: Scene) -> EmitterTable | None:
    """The emitter table of ``scene`` from its host vertices; None when an emissive mesh lives on the device.

    Host-only, so a scene whose emitters have no area fails here, before any GPU work.
    """
    if any(m.on_device and is_light_sampled(m) for m in scene.meshes):
        return None
    return build_emitter_table(scene.meshes)


#: Bounds of :func:`environment_probability` when both kinds of light exist.
ENVIRONMENT_PROBABILITY_RANGE = (0.25, 0.75)


def environment_probability(scene: Scene, emitters: EmitterTable) -> float:
    """The probability that light sampling picks the environment rather than an emissive triangle.

    Proportional to power: the environment's is that of its radiance arriving on a disc as large as the
    scene (``pi r^2`` times the radiance integrated over the sphere, ``r`` the radius of the scene's bounds),
    the triangles' is :attr:`EmitterTable.power`, then bounded to :data:`ENVIRONMENT_PROBABILITY_RANGE`. The
    bound is there because the environment's estimate counts light through the whole bounding sphere, most of
    which never reaches what the camera sees: with a large ground plane it sent 99% of the light samples to
    the sky, and the area lights' light came out very noisy. 1 without triangles, 0 without an environment.
    """
    if scene.environment is None:
        return 0.0
    if len(emitters) == 0:
        return 1.0
    power = scene.environment.scene_power(scene_radius(scene))
    low, high = ENVIRONMENT_PROBABILITY_RANGE
    return float(np.clip(power / (power + emitters.power), low, high)) if power > 0 else 0.0


def scene_radius(scene: Scene) -> float:
    """Half the diagonal of the bounding box of the scene's host meshes (1 when none is on the host)."""
    corners = []
    for m in scene.meshes:
        if m.on_device:
            continue
        low, high = m.vertices.min(axis=0).astype(np.float64), m.vertices.max(axis=0).astype(np.float64)
        if m.transform is not None:  # the 8 corners of the object's box, placed
            box = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
            placed = box @ m.transform[:, :3].T + m.transform[:, 3]
            low, high = placed.min(axis=0), placed.max(axis=0)
        corners.append(np.stack([low, high]))
    if not corners:
        return 1.0
    box = np.concatenate(corners)
    return max(float(np.linalg.norm(box.max(axis=0) - box.min(axis=0))) / 2.0, 1e-6)


class DeviceScene:
    """The device side of a :class:`Scene` for one :class:`PathTracerProgram`.

    Parameters
    ----------
    ctx : Context
    scene : Scene
        Read at creation: later changes to the scene's meshes are not seen
        (move dynamic meshes through :meth:`vertices` and :meth:`refit`).
    program : PathTracerProgram
        Its program groups make the SBT's records.
    stream : cupy.cuda.Stream
        The set-up stream (uploads, build, SBT).
    emitters : EmitterTable, optional
        The scene's :func:`host_emitter_table`, when the caller made it already.

    Attributes
    ----------
    scene : Scene
    accel : GeometryAccel or InstanceAccel
        What rays are traced against. Without instanced meshes: one GAS,
        build input ``i`` = mesh ``i``; built with ``allow_update`` when a mesh
        is dynamic, with ``allow_compaction`` otherwise. With instanced meshes
        (a :attr:`Mesh.transform`): an instance structure over every mesh,
        instance id = mesh index.
    geometries : list of GeometryAccel
        The GAS: ``[accel]`` without instances, else one per distinct geometry
        (instances that share their arrays share one).
    instanced : bool
        Whether ``accel`` is an instance structure.
    emitters : EmitterTable
        The emitter table as built on the host (the device's copy has every
        pdf times ``1 - environment_probability``).
    sbt, sbt_aovs : ShaderBindingTable
        The scene's records behind the plain raygen and behind the one that writes the denoiser's inputs.
    ready : Readiness
        The end of the set-up; :meth:`order` puts a stream after it and after the structure's last operation.
    """

    def __init__(self, ctx: Context, scene: Scene, program: PathTracerProgram, stream: Any,
                 emitters: EmitterTable | None = None) -> None:
        import cupy

        self.ctx = ctx
        self.scene = check_scene(scene)
        self.instanced = bool(scene.instanced)
        if self.instanced != program.instanced:
            raise ValueError(f"the program traces {'instances' if program.instanced else 'one GAS'} but the scene "
                             f"{'has' if self.instanced else 'has no'} instanced meshes: create it with "
                             f"PathTracerProgram(ctx, instanced={self.instanced})")
        stream = as_cupy_stream(stream)
        if emitters is None:
            emitters = host_emitter_table(scene)  # before any GPU work: zero emissive area raises here
        labels = [f"mesh {k} ({m.name!r})" if m.name else f"mesh {k}" for k, m in enumerate(scene.meshes)]
        self._uploaded: dict[int, tuple[Any, Any]] = {}  # id(host array) -> (host array, device array): once each
        self._vertices = [self._to_device(m.vertices, stream, f"{label} vertices", np.float32)
                          for m, label in zip(scene.meshes, labels, strict=True)]
        self._indices = [self._to_device(m.indices, stream, f"{label} indices", (np.int32, np.uint32))
                         for m, label in zip(scene.meshes, labels, strict=True)]
        if emitters is None:  # set-up only: the emitter table needs the emitters' triangles on the host
            def host(arrays: list[Any]) -> list[Any]:
                return [cupy.asnumpy(arrays[k], stream=stream) if is_light_sampled(scene.meshes[k]) else None
                        for k in range(len(scene.meshes))]

            emitters = build_emitter_table(scene.meshes, host(self._vertices), host(self._indices))
        self.emitters = emitters
        self.accel, self.geometries = self._build_structures(stream)
        self._attributes = [tuple(None if a is None else self._to_device(a, stream, "attribute", np.float32)
                                  for a in (m.normals, m.uvs, m.tangents)) for m in scene.meshes]
        material_pointers = self._upload_materials(stream)
        self.environment = DeviceEnvironment(ctx, scene.environment, stream) if scene.environment is not None else None
        self.environment_probability = environment_probability(scene, self.emitters)
        records = mesh_records(scene, [int(v.data.ptr) for v in self._vertices],
                               [int(i.data.ptr) for i in self._indices], self.emitters.offsets, material_pointers,
                               [tuple(0 if a is None else int(a.data.ptr) for a in attrs) for attrs in self._attributes])
        self._records = self._upload_struct(records, stream)
        self._emitter_table = (self._upload_struct(self.emitters.selected(1.0 - self.environment_probability), stream)
                               if len(self.emitters) else None)
        # One hit record per build input of the one GAS; instances all use record 0 (their GAS have one input
        # each and sbt offset 0): the hit programs find the mesh from the instance id.
        records_needed = 1 if self.instanced else len(scene.meshes)
        self.sbt = program.shader_binding_table(records_needed, stream)
        self.sbt_aovs = program.shader_binding_table(records_needed, stream, aovs=True)
        self.ready = Readiness()
        self.ready.record(stream)  # later streams wait for the set-up on the GPU, never the host
        ctx.track(self)

    def _build_structures(self, stream: Any) -> tuple[Any, list[GeometryAccel]]:
        """The structure rays are traced against, and the GAS under it.

        Without instances: one GAS, build input ``k`` = mesh ``k`` (refittable when a mesh is dynamic, else
        compactable). With instances: one GAS per distinct geometry (vertices and indices arrays, and whether
        its any-hit program runs) and an instance structure over all meshes, instance id = mesh index.
        """
        scene = self.scene
        cutout = [m.material.alpha_mode != "opaque" for m in scene.meshes]
        if not self.instanced:
            dynamic = bool(scene.dynamic)
            gas = GeometryAccel(
                self.ctx, [TriangleInput(v, i, any_hit=c)
                           for v, i, c in zip(self._vertices, self._indices, cutout, strict=True)],
                AccelOptions(allow_update=dynamic, allow_compaction=not dynamic), stream=stream)
            return gas, [gas]
        shared: dict[tuple[int, int, bool], GeometryAccel] = {}
        instances = []
        for k, mesh in enumerate(scene.meshes):
            key = (id(self._vertices[k]), id(self._indices[k]), cutout[k])
            if key not in shared:
                shared[key] = GeometryAccel(self.ctx, [TriangleInput(self._vertices[k], self._indices[k],
                                                                     any_hit=cutout[k])], stream=stream)
            placement = mesh.transform if mesh.transform is not None else np.eye(3, 4)
            instances.append(Instance(shared[key], placement, instance_id=k))
        return InstanceAccel(self.ctx, instances, stream=stream), list(shared.values())

    def _upload_materials(self, stream: Any) -> list[int]:
        """Upload the textures, plastic tables and material records; the device address of each mesh's record."""
        materials: dict[Material, int] = {}
        for mesh in self.scene.meshes:
            materials.setdefault(mesh.material, len(materials))
        self.textures = DeviceTextures(self.ctx, [t for m in materials for t in m.textures.values()], stream)
        self._plastic = {m: self.ctx.upload(plastic_table(m), stream) for m in materials if m.bsdf == "plastic"}
        records = np.stack([material_record(m, self.textures.handle,
                                            int(self._plastic[m].data.ptr) if m in self._plastic else 0)
                            for m in materials])
        self._materials = self._upload_struct(records, stream)
        base, size = int(self._materials.data.ptr), MATERIAL_RECORD.itemsize
        return [base + size * materials[mesh.material] for mesh in self.scene.meshes]

    @property
    def environment_pointer(self) -> int:
        """Device address of the ``EnvironmentRecord`` (0 without an environment)."""
        return self.environment.pointer if self.environment is not None else 0

    def _to_device(self, array: Any, stream: Any, name: str, dtype: Any) -> Any:
        """A mesh array on the device: uploaded from the host, or the caller's device memory used in place.

        A foreign device array becomes a CuPy view, ``stream`` ordered after its producer on the GPU (never
        ``cupy.asarray``, which waits on the host for a CAI producer's stream); the view holds the producer.
        """
        if is_library_array(array):
            return array  # optixasync's own memory: in the order of the stream its writer used
        if not is_device_array(array):
            if not self.instanced:  # every mesh its own copy: a dynamic mesh's writes move no other mesh
                return self.ctx.upload(np.ascontiguousarray(array), stream)
            # Instances share their arrays: each host array is uploaded once (the entry keeps it alive, so
            # that its id is not reused by another array during the set-up).
            if id(array) not in self._uploaded:
                self._uploaded[id(array)] = (array, self.ctx.upload(np.ascontiguousarray(array), stream))
            return self._uploaded[id(array)][1]
        return consume_device_array(array, stream, name=name, device=self.ctx.device_id, dtype=dtype).array

    def _upload_struct(self, array: np.ndarray, stream: Any) -> Any:
        """Upload a structured array as raw bytes (the device side only needs the address)."""
        return self.ctx.upload(np.frombuffer(np.ascontiguousarray(array).tobytes(), np.uint8), stream)

    # -- what the kernel reads -------------------------------------------------------------------------------
    @property
    def records_pointer(self) -> int:
        """Device address of the ``MeshRecord`` array."""
        return int(self._records.data.ptr)

    @property
    def emitters_pointer(self) -> int:
        """Device address of the emitter table (0 when nothing emits)."""
        return int(self._emitter_table.data.ptr) if self._emitter_table is not None else 0

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
        index = int(mesh_index)
        if not 0 <= index < len(self._vertices):
            raise IndexError(f"mesh index {mesh_index} out of range: the scene has {len(self._vertices)} meshes")
        if stream is not None:
            self.order(stream)
        return self._vertices[index]

    def refit(self, stream: Any) -> None:
        """Refit the structure to the dynamic meshes' current vertices, on ``stream``."""
        if not self.scene.dynamic:
            raise ValueError("the scene has no dynamic mesh: nothing to refit (create meshes with dynamic=True)")
        self.order(stream)
        self.accel.refit(self._vertices, stream)

    def compact(self, stream: Any, wait: bool = False) -> None:
        """Compact the structure on ``stream`` once its size is known (``wait``: wait for it); no-op if not compactable."""
        if self.accel.options.allow_compaction and not self.accel.compacted:
            self.accel.compact(wait=wait, stream=stream)

    def close(self) -> None:
        """Release the structure, the SBT and the buffers (the caller waited for the launches that read them)."""
        self.sbt.close()
        self.sbt_aovs.close()
        self.accel.close()
        for gas in self.geometries:
            gas.close()  # idempotent: without instances, the one GAS is self.accel
        self.textures.close()
        if self.environment is not None:
            self.environment.close()
        self._vertices, self._indices, self._records, self._emitter_table = [], [], None, None
        self._attributes, self._materials, self._plastic, self._uploaded = [], None, {}, {}
