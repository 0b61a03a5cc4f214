"""The walk over a composed USD stage: prims to meshes, shapes, lights and a camera, instancing kept.

Prims are visited depth first in namespace order, each counted against
``max_nodes``. A subtree is pruned at a prim whose ``visibility`` is
``invisible``, and at materials and shaders; a prim whose computed
``purpose`` (its own, else its nearest ancestor's) is ``guide`` or ``proxy``
is not drawn (the render purposes are ``default`` and ``render``).
World transforms come from ``UsdGeom.XformCache``, which applies
``resetXformStack``. An instanceable prim's prototype is read once, in its
own space, and each instance places it: its meshes become instances (a
``transform`` each, sharing their arrays: one acceleration structure for
all). ``PointInstancer`` prims do the same for each of their
``protoIndices`` (honouring ``invisibleIds`` and the prototype root's own
transform). Instances nested inside prototypes are placed too; every
placement counts against ``max_instances`` before it is made. Spheres,
curves and lights inside prototypes are copied to each placement.

Meshes that no time sample moves are flattened to world space; moving ones
stay instances, for frames (:class:`UsdAnimation`) and motion blur.

Blocking calls
--------------
None: host-side reading.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._camera import Camera
from ._environment import Environment
from ._material import Material
from ._mesh import Mesh, placed
from ._motion import MeshMotion
from ._usd_lights import LIGHT_TYPES, read_camera, read_light
from ._usd_materials import UsdMaterials
from ._usd_mesh import read_mesh
from ._usd_motion import MAX_TIME_SAMPLES, UsdAnimation
from ._usd_shapes import shape_item, tessellate
from ._usd_stage import UsdDocument

__all__ = ["UsdAsset", "UsdReader"]

_SKIP = {"Material", "Shader", "NodeGraph", "GeomSubset", "RenderSettings", "RenderProduct", "RenderVar"}
_TESSELLATED = {"Cube", "Cylinder", "Cone", "Capsule"}
#: The prim types that make something: geometry, lights, cameras.
_VISITED = {"Mesh", *_TESSELLATED, "Sphere", "Points", "BasisCurves", "Camera", *LIGHT_TYPES}
#: Most motion keys per mesh over the shutter.
_MAX_BLUR_KEYS = 9


def _matrix(gf: Any) -> np.ndarray:
    """A ``Gf.Matrix4d`` (row vectors) as a 4x4 float64 array acting on column vectors."""
    return np.array(gf, dtype=np.float64).reshape(4, 4).T


@dataclass
class UsdAsset:
    """What :func:`read_usd` read: the scene and, when time samples move it, its animation.

    Attributes
    ----------
    scene : Scene
    animation : UsdAnimation or None
    cameras : list of str
        The paths of the stage's cameras, in traversal order.
    time : float
        The time code the scene shows.
    """

    scene: Any
    animation: UsdAnimation | None
    cameras: list[str]
    time: float


@dataclass
class Prototype:
    """A prototype read in its own space: meshes, other items (copied per placement) and nested instances."""

    meshes: list[Mesh] = field(default_factory=list)
    items: list[tuple[str, Any, np.ndarray]] = field(default_factory=list)  # (kind, prim, matrix in its space)
    nested: list[tuple[Prototype, np.ndarray, str]] = field(default_factory=list)


class UsdReader:
    """Reads a composed stage into a :class:`UsdAsset`."""

    def __init__(self, doc: UsdDocument, time: float | None, camera: str | None, motion_blur: bool) -> None:
        from pxr import Usd, UsdGeom

        self.doc = doc
        self.stage = doc.stage
        if time is None:
            time = self.stage.GetStartTimeCode() if self.stage.HasAuthoredTimeCodeRange() else None
        self.time_value = 0.0 if time is None else float(time)
        if not math.isfinite(self.time_value):
            raise ValueError(f"{doc.file}: time must be a finite time code, got {time}")
        self.time = Usd.TimeCode.Default() if time is None else Usd.TimeCode(self.time_value)
        self.sample_time = Usd.TimeCode.EarliestTime() if time is None else self.time
        self.xf = UsdGeom.XformCache(self.sample_time)
        self.camera_name = camera
        self.motion_blur = motion_blur
        self.materials = UsdMaterials(doc, self.sample_time)
        self.prims = 0
        self.placements = 0
        self.prototypes: dict[str, Prototype] = {}
        self.meshes: list[Mesh] = []
        self.drivers: list[tuple[Any, np.ndarray] | None] = []  # per scene mesh: (prim moving it, matrix after)
        self.shapes: list[Any] = []
        self.lights: list[Any] = []
        self.environment: Environment | None = None
        self.cameras: list[Any] = []
        self.world_cache: dict[str, np.ndarray] = {}
        self.any_purpose = False

    # -- the walk -------------------------------------------------------------------------------------------------

    def world(self, prim: Any) -> np.ndarray:
        key = str(prim.GetPath())
        if key not in self.world_cache:
            m = _matrix(self.xf.GetLocalToWorldTransform(prim))
            if not np.isfinite(m).all():
                raise ValueError(f"{self.doc.file}: prim {prim.GetPath()}: its world transform is not finite")
            self.world_cache[key] = m
        return self.world_cache[key]

    def count(self, prim: Any) -> None:
        self.prims += 1
        if self.prims > self.doc.limits.max_nodes:
            self.doc.budget.check(self.prims, "max_nodes", "the prims of the stage")

    def pruned(self, prim: Any, kind: str) -> bool:
        if kind in _SKIP:
            return True
        names = prim.GetAuthoredPropertyNames()  # one call; the attributes only where authored
        if "visibility" in names and str(prim.GetAttribute("visibility").Get(self.sample_time)) == "invisible":
            return True
        if "purpose" in names:
            self.any_purpose = True  # from here on (descendants come later) visited prims compute theirs
        return False

    def hidden_purpose(self, prim: Any) -> bool:
        """Whether ``prim``'s computed purpose (its own authored one, else its nearest ancestor's) is a guide or a
        proxy: the render purposes are ``default`` and ``render``."""
        if not self.any_purpose:
            return False
        from pxr import UsdGeom

        return str(UsdGeom.Imageable(prim).ComputePurpose()) in ("guide", "proxy")

    def walk(self, root: Any, proto: Prototype | None, base: np.ndarray | None) -> None:
        """Visit ``root``'s subtree; into ``proto`` (matrices relative to ``base``) or the scene (world space).

        USD's own traversal (active, loaded, defined, non-abstract prims; instances not entered) in namespace
        order, pruned where :meth:`pruned` says.
        """
        from pxr import Usd

        inverse = np.linalg.inv(base) if base is not None else None
        stage_walk = proto is None
        prims = iter(Usd.PrimRange(root))
        if stage_walk:
            next(prims)  # the pseudo-root
        for prim in prims:
            self.count(prim)
            kind = prim.GetTypeName()
            if self.pruned(prim, kind):
                prims.PruneChildren()
                continue
            if prim.IsInstance() or kind == "PointInstancer":
                prims.PruneChildren()
                if self.hidden_purpose(prim):
                    continue
                if prim.IsInstance():
                    self.instance(prim, proto, self.placement(prim, inverse))
                else:
                    self.point_instancer(prim, proto, self.placement(prim, inverse))
            elif kind in _VISITED and not self.hidden_purpose(prim):
                self.visit(prim, kind, proto, self.placement(prim, inverse))

    def placement(self, prim: Any, inverse: np.ndarray | None) -> np.ndarray:
        """``prim``'s world matrix, or relative to the prototype whose root's world is ``inverse``'s inverse."""
        return self.world(prim) if inverse is None else inverse @ self.world(prim)

    def visit(self, prim: Any, kind: str, proto: Prototype | None, m: np.ndarray) -> None:
        if kind == "Mesh" or kind in _TESSELLATED:
            meshes = self.gprim_meshes(prim, kind)
            if proto is not None:
                proto.meshes.extend(mesh.transformed(m) for mesh in meshes)
            else:
                for mesh in meshes:
                    self.add_mesh(mesh, prim, m)
        elif kind == "Camera":
            if proto is None:
                self.cameras.append(prim)
        elif proto is not None:
            proto.items.append((kind, prim, m))
        else:
            self.item(kind, prim, m)

    # -- geometry -------------------------------------------------------------------------------------------------

    def gprim_meshes(self, prim: Any, kind: str) -> list[Mesh]:
        """The object-space meshes of a gprim, one per material piece, with their sides."""
        double = prim.GetAttribute("doubleSided")
        two_sided = bool(double.Get()) if double else False
        if kind == "Mesh":
            pieces = read_mesh(self.doc, prim, self.sample_time)
        else:
            from ._usd_mesh import MeshPiece

            v, t, n = tessellate(self.doc, prim, self.sample_time)
            pieces = [MeshPiece(v, t, n, None, None, prim, prim.GetName())]
        out = []
        for piece in pieces:
            material, bound = self.materials.bound(piece.binding)
            colors = piece.colors
            if not bound:
                material = self.display_material(prim, material)
            material = self.sided(material, two_sided)
            if material.textures and piece.uvs is None:
                raise ValueError(f"{self.doc.file}: prim {prim.GetPath()}: its material {material.name} has "
                                 "textures but the mesh has no st primvar")
            self.doc.budget.charge(piece.vertices.nbytes * 3 + piece.indices.nbytes, f"prim {prim.GetPath()}")
            out.append(Mesh(piece.vertices, piece.indices, material, str(piece.binding.GetPath()),
                            normals=piece.normals, uvs=piece.uvs, colors=colors))
        return out

    def display_material(self, prim: Any, material: Material) -> Material:
        """The default material coloured by a constant ``displayColor`` (Hydra's look of an unbound gprim)."""
        from pxr import UsdGeom

        primvar = UsdGeom.PrimvarsAPI(prim).GetPrimvar("displayColor")
        if primvar and primvar.HasAuthoredValue() and str(primvar.GetInterpolation()) == "constant":
            value = primvar.ComputeFlattened(self.sample_time)
            if value is not None and len(value):
                rgb = tuple(min(1.0, max(0.0, float(c))) for c in value[0])
                return dataclasses.replace(material, reflectance=rgb, name=f"{prim.GetPath()} displayColor")
        return material

    @staticmethod
    def sided(material: Material, two_sided: bool) -> Material:
        """``doubleSided`` on: both sides reflect; off: back faces culled (as Hydra draws it)."""
        if material.transmits:
            return material
        if two_sided:
            return material if material.two_sided else dataclasses.replace(material, two_sided=True, cull_back=False)
        return material if material.cull_back else dataclasses.replace(material, two_sided=False, cull_back=True)

    def add_mesh(self, mesh: Mesh, driver: Any, m: np.ndarray) -> None:
        """A scene mesh: flattened to world space, or an instance when time samples move its prim."""
        if self.moves(driver) and not mesh.material.is_emissive:
            material = dataclasses.replace(mesh.material, cull_back=False) if mesh.material.cull_back else None
            self.meshes.append(Mesh(mesh.vertices, mesh.indices, material or mesh.material, mesh.name,
                                    normals=mesh.normals, uvs=mesh.uvs, colors=mesh.colors, transform=m[:3]))
            self.drivers.append((driver, np.linalg.inv(self.world(driver)) @ m))
        else:
            self.meshes.append(mesh.transformed(m))
            self.drivers.append(None)

    def item(self, kind: str, prim: Any, m: np.ndarray) -> None:
        """A sphere, point cloud, curves or light placed by ``m``."""
        if kind in LIGHT_TYPES:
            found = read_light(self.doc, prim, m, self.sample_time)
            if found is None:
                return
            what, value = found
            if what == "light":
                self.lights.append(value)
            elif what == "mesh":
                self.meshes.append(value)
                self.drivers.append(None)
            elif self.environment is None:
                self.environment = value
            else:
                self.doc.warn_once("domes", f"more than one dome light: {prim.GetPath()} is dropped")
            return
        material, bound = self.materials.bound(prim)
        if not bound:
            material = self.display_material(prim, material)
        material = dataclasses.replace(material, cull_back=False) if material.cull_back else material
        shape = shape_item(self.doc, kind, prim, m, material, self.sample_time)
        if shape is not None:
            self.shapes.append(shape)

    # -- instancing -----------------------------------------------------------------------------------------------

    def prototype(self, prim: Any, base: np.ndarray) -> Prototype:
        key = str(prim.GetPath())
        if key not in self.prototypes:
            proto = Prototype()
            self.prototypes[key] = proto
            self.walk(prim, proto, base)
        return self.prototypes[key]

    def instance(self, prim: Any, proto: Prototype | None, m: np.ndarray) -> None:
        source = prim.GetPrototype()
        inner = self.prototype(source, self.world(source))
        self.place(inner, m, proto, prim, str(prim.GetPath()))

    def point_instancer(self, prim: Any, proto: Prototype | None, m: np.ndarray) -> None:
        from pxr import UsdGeom

        instancer = UsdGeom.PointInstancer(prim)
        label = f"{self.doc.file}: point instancer {prim.GetPath()}"
        indices = np.asarray(instancer.GetProtoIndicesAttr().Get(self.sample_time) or [], np.int64)
        self.doc.budget.check(self.placements + len(indices), "max_instances", f"the instances of {prim.GetPath()}")
        targets = instancer.GetPrototypesRel().GetTargets()
        if len(indices) and (indices.min() < 0 or indices.max() >= len(targets)):
            raise ValueError(f"{label}: a protoIndex lies outside its {len(targets)} prototypes")
        if not len(indices):
            return
        xforms = instancer.ComputeInstanceTransformsAtTime(self.sample_time, self.sample_time,
                                                           UsdGeom.PointInstancer.ExcludeProtoXform,
                                                           UsdGeom.PointInstancer.IgnoreMask)
        if len(xforms) != len(indices):
            raise ValueError(f"{label}: its positions, orientations or scales do not match its {len(indices)} "
                             "protoIndices")
        matrices = np.array(xforms, np.float64).reshape(-1, 4, 4).transpose(0, 2, 1)
        mask = np.asarray(instancer.ComputeMaskAtTime(self.sample_time) or [True] * len(indices), bool)
        for k, target in enumerate(targets):
            target_prim = self.stage.GetPrimAtPath(target)
            if not target_prim:
                raise ValueError(f"{label}: prototype {target} is not a prim of the stage")
            parent = _matrix(self.xf.GetParentToWorldTransform(target_prim))
            inner = self.prototype(target_prim, parent)
            which = np.flatnonzero((indices == k) & mask)
            for j in which.tolist():
                self.place(inner, m @ matrices[j], proto, prim, f"{prim.GetPath()}[{j}]")

    def place(self, inner: Prototype, m: np.ndarray, proto: Prototype | None, driver: Any, name: str) -> None:
        """Place a prototype by ``m``: into ``proto`` (nested) or into the scene."""
        self.placements += 1
        self.doc.budget.check(self.placements, "max_instances", "the instance placements")
        if proto is not None:
            proto.nested.append((inner, m, name))
            return
        self.pending.append((inner, m, driver, name))

    def flush(self) -> None:
        """Turn the pending placements into instance meshes (one ``placed`` call per prototype mesh)."""
        groups: dict[int, tuple[Mesh, list[np.ndarray], list[str], list[Any]]] = {}
        stack = list(reversed(self.pending))
        while stack:
            inner, m, driver, name = stack.pop()
            for k, mesh in enumerate(inner.meshes):
                group = groups.setdefault(id(mesh), (mesh, [], [], []))
                group[1].append(m[:3])
                group[2].append(f"{name}/{mesh.name.rsplit('/', 1)[-1]}" if len(inner.meshes) > 1 or k else name)
                group[3].append((driver, np.linalg.inv(self.world(driver)) @ m))
            for kind, prim, local in inner.items:
                self.item(kind, prim, m @ local)
            for nested, local, nested_name in inner.nested:
                self.placements += 1
                self.doc.budget.check(self.placements, "max_instances", "the instance placements")
                stack.append((nested, m @ local, driver, f"{name}/{nested_name.rsplit('/', 1)[-1]}"))
        for mesh, transforms, names, drivers in groups.values():
            if mesh.material.is_emissive or len(transforms) == 1 and not self.moves(drivers[0][0]):
                for transform in transforms:
                    self.meshes.append(mesh.transformed(transform))
                    self.drivers.append(None)
                continue
            if mesh.material.cull_back and any(self.moves(d[0]) for d in drivers):
                mesh = Mesh(mesh.vertices, mesh.indices, dataclasses.replace(mesh.material, cull_back=False),
                            mesh.name, normals=mesh.normals, uvs=mesh.uvs, colors=mesh.colors)
            self.doc.budget.charge(len(transforms) * 200, "the instance meshes")
            matrices = np.ascontiguousarray(np.array(transforms, np.float64).reshape(-1, 3, 4))
            if not (np.abs(np.linalg.det(matrices[:, :, :3])) > 0).all():
                raise ValueError(f"{self.doc.file}: an instance of {mesh.name} is scaled to zero")
            self.meshes.extend(placed(mesh, matrices, names))
            self.drivers.extend(d if self.moves(d[0]) else None for d in drivers)

    # -- time -----------------------------------------------------------------------------------------------------

    def moves(self, prim: Any) -> bool:
        """Whether time samples move ``prim``'s world transform (its own or an ancestor's)."""
        key = str(prim.GetPath())
        if key not in self.moving_cache:
            from pxr import UsdGeom

            parent = prim.GetParent()
            own = prim.IsA(UsdGeom.Xformable) and UsdGeom.Xformable(prim).TransformMightBeTimeVarying()
            self.moving_cache[key] = bool(own) or (bool(parent) and not parent.IsPseudoRoot() and self.moves(parent))
        return self.moving_cache[key]

    def sample_times(self, prims: list[Any]) -> list[float]:
        from pxr import UsdGeom

        times: set[float] = set()
        for prim in prims:
            p = prim
            while p and not p.IsPseudoRoot():
                if p.IsA(UsdGeom.Xformable):
                    times.update(UsdGeom.Xformable(p).GetTimeSamples())
                p = p.GetParent()
            if len(times) > MAX_TIME_SAMPLES:
                break
        return sorted(times)[:MAX_TIME_SAMPLES]

    def worlds_at(self, drivers: list[tuple[Any, np.ndarray]], code: float) -> np.ndarray:
        from pxr import Usd, UsdGeom

        cache = UsdGeom.XformCache(Usd.TimeCode(code))
        out = np.empty((len(drivers), 3, 4))
        seen: dict[str, np.ndarray] = {}
        for k, (prim, after) in enumerate(drivers):
            key = str(prim.GetPath())
            if key not in seen:
                seen[key] = _matrix(cache.GetLocalToWorldTransform(prim))
            out[k] = (seen[key] @ after)[:3]
        return out

    def animation(self, camera: Any) -> UsdAnimation | None:
        moving = np.array([d is not None for d in self.drivers], bool)
        camera_moves = camera is not None and self.moves(camera)
        if not moving.any() and not camera_moves:
            return None
        drivers = [d for d in self.drivers if d is not None]
        codes = self.sample_times([d[0] for d in drivers] + ([camera] if camera_moves else []))
        if not codes:
            return None
        self.doc.budget.charge(len(codes) * (len(drivers) + 1) * 96, "the animation's samples")
        keys = np.stack([self.worlds_at(drivers, c) for c in codes]) if drivers else np.zeros((len(codes), 0, 3, 4))
        rest = np.array([m.transform if m.transform is not None else np.eye(4)[:3] for m in self.meshes],
                        np.float64).reshape(-1, 3, 4)
        camera_keys = None
        if camera_moves:
            from pxr import Usd, UsdGeom

            camera_keys = np.stack([_matrix(UsdGeom.XformCache(Usd.TimeCode(c)).GetLocalToWorldTransform(camera))
                                    for c in codes])
        tcps = float(self.stage.GetTimeCodesPerSecond()) or 24.0
        return UsdAnimation(np.asarray(codes, np.float64) / tcps, keys, moving, rest, camera_keys,
                            self.scene_camera, self.doc.file)

    def blur(self, camera: Any) -> tuple[float, float] | None:
        """Motion keys over the camera's shutter for the moving meshes; the scene's shutter (None: no blur)."""
        from pxr import UsdGeom

        if camera is None or not self.motion_blur:
            return None
        cam = UsdGeom.Camera(camera)
        opened, closed = float(cam.GetShutterOpenAttr().Get() or 0.0), float(cam.GetShutterCloseAttr().Get() or 0.0)
        if not (math.isfinite(opened) and math.isfinite(closed) and closed > opened):
            return None
        moving = [k for k, d in enumerate(self.drivers) if d is not None]
        if not moving:
            return None
        inside = [c for c in self.sample_times([self.drivers[k][0] for k in moving])
                  if self.time_value + opened < c < self.time_value + closed]
        count = min(_MAX_BLUR_KEYS, 2 + len(inside))
        codes = np.linspace(self.time_value + opened, self.time_value + closed, count)
        keys = np.stack([self.worlds_at([self.drivers[k] for k in moving], float(c)) for c in codes])
        for j, k in enumerate(moving):
            mesh = self.meshes[k]
            self.meshes[k] = Mesh(mesh.vertices, mesh.indices, mesh.material, mesh.name, normals=mesh.normals,
                                  uvs=mesh.uvs, colors=mesh.colors,
                                  motion=MeshMotion(transforms=list(keys[:, j]), times=(opened, closed)))
            self.drivers[k] = None
        return opened, closed

    # -- the whole ------------------------------------------------------------------------------------------------

    def read(self) -> UsdAsset:
        from ._frames import framing_camera
        from ._scene import Scene

        self.pending: list[tuple[Prototype, np.ndarray, Any, str]] = []
        self.moving_cache: dict[str, bool] = {}
        self.walk(self.stage.GetPseudoRoot(), None, None)
        self.flush()
        camera_prim = self.choose_camera()
        if camera_prim is not None:
            self.scene_camera = read_camera(self.doc, camera_prim, self.world(camera_prim), self.sample_time)
        else:
            self.scene_camera = framing_camera(self.meshes) if self.meshes else Camera((0.0, 0.0, 5.0),
                                                                                      (0.0, 0.0, 0.0))
        shutter = self.blur(camera_prim)
        animation = None if shutter is not None else self.animation(camera_prim)
        scene = Scene(self.meshes, self.scene_camera, self.environment, self.lights, self.shapes, shutter)
        return UsdAsset(scene, animation, [str(c.GetPath()) for c in self.cameras], self.time_value)

    def choose_camera(self) -> Any:
        if self.camera_name is None:
            return self.cameras[0] if self.cameras else None
        for prim in self.cameras:
            if self.camera_name in (str(prim.GetPath()), prim.GetName()):
                return prim
        raise ValueError(f"{self.doc.file}: no camera {self.camera_name!r}; the stage has "
                         f"{[str(c.GetPath()) for c in self.cameras]}")
