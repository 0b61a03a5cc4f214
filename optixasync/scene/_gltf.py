"""Scenes from glTF 2.0 files (``.gltf`` with its buffers and images, or one ``.glb``).

:func:`read_gltf` decodes a file into a :class:`GltfAsset`: one object-space
:class:`Mesh` per primitive of every glTF mesh the scene uses, their
:class:`Material` objects, the node instances that place them (a primitive
key and a world matrix each) and the cameras. :func:`load_gltf` flattens an
asset into a :class:`Scene`: every instance becomes its own world-space mesh.
:func:`load_scene` picks the reader by the file's suffix (glTF or OBJ).

Reading needs the optional ``pygltflib`` package (``pip install
"optixasync[gltf]"``), imported only when a file is read; images are decoded
by Pillow. Everything is host-side numpy and every check runs before any GPU
work.

What is read
------------
* Geometry: triangle primitives (strips and fans become triangle lists;
  points and lines are skipped with a warning), indexed or not, with
  ``POSITION``, ``NORMAL``, ``TEXCOORD_0`` and ``TANGENT`` of any component
  type (normalized integers included, so ``KHR_mesh_quantization`` works),
  strided buffer views and sparse accessors. Nodes place meshes by ``matrix``
  or translation, rotation and scale down the node tree of the default scene
  (the first scene when none is named the default; every root node when the
  file has no scene), and ``EXT_mesh_gpu_instancing`` adds instances.
* Materials: glTF's metallic-roughness model (base colour, metallic,
  roughness, their textures, emission with ``KHR_materials_emissive_strength``,
  the normal map, alpha mode and cutoff, double-sidedness), with samplers
  (wrap modes, nearest or bilinear magnification) and ``KHR_texture_transform``.
  ``KHR_materials_transmission`` with ``KHR_materials_ior`` becomes a
  dielectric (see below). An image used by several materials with the same
  sampler, colour space and transform becomes one :class:`Texture` object.
* Cameras: perspective cameras, placed by their node (see :func:`load_gltf`).

Approximations
--------------
* Transmission: a material with ``transmissionFactor > 0.5`` becomes a
  smooth or rough dielectric (``int_ior`` from ``KHR_materials_ior``, GGX
  ``alpha = roughness**2``, two-sided): fully transmissive, its base colour
  tint, metallic factor and base colour and metallic-roughness textures
  dropped (with a warning when they are not the neutral values). A factor in
  (0, 0.5] is rounded to opaque, with a warning. ``transmissionTexture`` is
  ignored with a warning.
* ``KHR_materials_ior`` on an opaque material: the metallic-roughness model
  keeps glTF's F0 of 0.04 (index 1.5); another index is ignored with a warning.
* Vertex colours (``COLOR_0``), skins, morph targets and animations are
  ignored with a warning (the static, unskinned base geometry is used);
  ``occlusionTexture`` is ignored without one (the path tracer computes
  occlusion itself); ``texCoord`` other than 0 is ignored with a warning
  (``TEXCOORD_0`` is used).
* Orthographic cameras are skipped with a warning.
* Tangents missing where a normal map needs them are generated per vertex
  with Lengyel's method (:func:`generate_tangents`), not MikkTSpace, which
  glTF recommends: they agree on smooth, well-parametrised meshes and may
  differ slightly across UV seams.

Blocking calls
--------------
None: file reading and decoding on the host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import MissingExtraError
from ._camera import Camera
from ._frames import framing_camera
from ._gltf_data import GLTF_EXTENSIONS, GltfDocument, floats, number
from ._gltf_materials import GltfMaterials
from ._gltf_mesh import read_primitive
from ._material import Material
from ._mesh import Mesh, replace_fields
from ._scene import Scene

__all__ = ["GLTF_EXTENSIONS", "SCENE_SUFFIXES", "GltfAsset", "GltfCamera", "GltfInstance", "load_gltf", "load_scene",
           "read_gltf"]

#: File suffixes :func:`load_scene` reads (case-insensitive).
SCENE_SUFFIXES = (".gltf", ".glb", ".obj")


class GltfInstance(NamedTuple):
    """One placement of a primitive: ``key`` is (glTF mesh index, primitive index), ``matrix`` 4x4 object-to-world."""

    key: tuple[int, int]
    matrix: np.ndarray
    node: int


@dataclass(frozen=True)
class GltfCamera:
    """A camera node of the scene.

    Attributes
    ----------
    index : int
        The glTF camera (``cameras[index]``).
    node : int
        The node that places it.
    name : str
        The camera's name, else its node's, else ``"camera{index}"``.
    projection : str
        ``"perspective"`` or ``"orthographic"``.
    camera : Camera or None
        The world-space camera (None for an orthographic one, which is not supported).
    yfov : float or None
        glTF's vertical field of view, radians (perspective only).
    aspect_ratio : float or None
        The file's width / height, if it gives one (it only informs the fov conversion).
    """

    index: int
    node: int
    name: str
    projection: str
    camera: Camera | None
    yfov: float | None = None
    aspect_ratio: float | None = None


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
        Camera nodes of the scene, in node order.
    node_names : list of str
        Every node's name (``node{i}`` for an unnamed one), by node index.
    """

    path: Path
    meshes: dict[tuple[int, int], Mesh] = field(default_factory=dict)
    materials: dict[int | None, Material] = field(default_factory=dict)
    instances: list[GltfInstance] = field(default_factory=list)
    cameras: list[GltfCamera] = field(default_factory=list)
    node_names: list[str] = field(default_factory=list)

    def world_meshes(self) -> list[Mesh]:
        """One world-space :class:`Mesh` per instance, named ``"{node}/{primitive}"`` (node name or ``node{i}``)."""
        out = []
        for instance in self.instances:
            mesh = self.meshes[instance.key].transformed(instance.matrix)
            mesh.name = f"{self.node_names[instance.node]}/{mesh.name}"
            out.append(mesh)
        return out

    def camera(self, which: int | str | None = None) -> GltfCamera | None:
        """The camera ``which`` picks (a camera index or a camera/node name), or the first perspective one.

        Returns None when ``which`` is None and the scene has no perspective camera.

        Raises
        ------
        ValueError
            When ``which`` names no camera node of the scene, or an orthographic camera.
        """
        if which is None:
            return next((c for c in self.cameras if c.camera is not None), None)
        if isinstance(which, bool) or not isinstance(which, (int, str)):
            raise TypeError(f"camera must be a camera index, a name or None, got {type(which).__name__}")
        if isinstance(which, int):
            found = next((c for c in self.cameras if c.index == which), None)
        else:
            found = next((c for c in self.cameras if which in (c.name, self.node_names[c.node])), None)
        if found is None:
            known = [f"{c.index} ({c.name!r})" for c in self.cameras] or ["none"]
            raise ValueError(f"{self.path}: no camera {which!r} in the scene; its camera nodes: {', '.join(known)}")
        if found.camera is None:
            raise ValueError(f"{self.path}: camera {which!r} is {found.projection}; only perspective cameras are "
                             "supported")
        return found

    def scene_meshes(self, instancing: bool = True) -> list[Mesh]:
        """One :class:`Mesh` per instance, named as in :meth:`world_meshes`.

        ``instancing``: a primitive placed more than once gives instanced meshes (its arrays shared, each with
        its world ``transform``); the others are flattened. False: everything flattened (:meth:`world_meshes`).
        """
        if not instancing:
            return self.world_meshes()
        uses: dict[tuple[int, int], int] = {}
        for instance in self.instances:
            uses[instance.key] = uses.get(instance.key, 0) + 1
        out = []
        for instance in self.instances:
            base = self.meshes[instance.key]
            if uses[instance.key] > 1:
                mesh = replace_fields(base, transform=instance.matrix[:3])
            else:
                mesh = base.transformed(instance.matrix)
            mesh.name = f"{self.node_names[instance.node]}/{base.name}"
            out.append(mesh)
        return out

    def to_scene(self, camera: int | str | None = None, *, instancing: bool = True) -> Scene:
        """A :class:`Scene` of :meth:`scene_meshes` seen by :meth:`camera` (else :func:`framing_camera`)."""
        meshes = self.scene_meshes(instancing)
        if not meshes:
            raise ValueError(f"{self.path}: the scene contains no triangles")
        chosen = self.camera(camera)
        return Scene(meshes, chosen.camera if chosen is not None else framing_camera(meshes))


def load_gltf(path: str | Path, *, camera: int | str | None = None, instancing: bool = True) -> Scene:
    """Read a glTF 2.0 file (``.gltf`` or ``.glb``) into a :class:`Scene`.

    Every node instance of every triangle primitive becomes one :class:`Mesh`
    (``read_gltf(path).to_scene(camera, instancing=instancing)``). A
    primitive placed by several nodes stays shared: its meshes hold the same
    arrays and a ``transform`` each, and the renderer builds its structure
    once (``instancing=False`` flattens every mesh to world space instead).

    Parameters
    ----------
    path : str or Path
    camera : int, str or None
        The camera: a glTF camera index, or the name of a camera or of its
        node. None: the first perspective camera node of the scene, else
        :func:`framing_camera` of the meshes.
    instancing : bool
        Keep primitives placed by several nodes shared (instanced meshes).

    Returns
    -------
    Scene
        Its camera's ``fov`` is glTF's vertical ``yfov`` in degrees, which
        :class:`Camera` applies to the smaller image axis: exact for images at
        least as wide as tall. When the file's ``aspectRatio`` is below 1 (a
        portrait camera) ``fov`` is the horizontal field of view at that
        aspect instead, so that an image of the file's shape sees exactly
        what the file describes.

    Raises
    ------
    FileNotFoundError
        A missing file, buffer or image (naming it, and for an image the material using it).
    ValueError
        Malformed JSON or GLB, a required extension this reader lacks, an
        accessor or buffer view outside its buffer, an index out of range, an
        undecodable image, a textured material on a primitive without
        ``TEXCOORD_0``, no triangles, or a camera that is not there; the
        message names the file and the element.
    MissingExtraError
        If pygltflib is not installed (an ``ImportError``).
    """
    return read_gltf(path).to_scene(camera, instancing=instancing)


def read_gltf(path: str | Path) -> GltfAsset:
    """Decode a glTF 2.0 file into a :class:`GltfAsset` (object-space primitives, materials, instances, cameras).

    Raises
    ------
    FileNotFoundError, ValueError, MissingExtraError
        As :func:`load_gltf`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"glTF file not found: {str(path)!r}" if not path.exists()
                                else f"not a file: {str(path)!r}")
    if path.suffix.lower() not in (".gltf", ".glb"):
        raise ValueError(f"{str(path)!r} is not a glTF file: its suffix must be .gltf or .glb")
    pygltflib = _import_pygltflib()
    return _Reader(GltfDocument(path, pygltflib)).read()


def load_scene(path: str | Path, **kwargs: Any) -> Scene:
    """Read a scene file, the reader chosen by suffix: ``.gltf``/``.glb`` :func:`load_gltf`, ``.obj`` :func:`load_obj`.

    ``kwargs`` go to the reader (``camera=`` for glTF).

    Raises
    ------
    ValueError
        On another suffix (the message lists :data:`SCENE_SUFFIXES`), and as the reader raises.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".gltf", ".glb"):
        return load_gltf(path, **kwargs)
    if suffix == ".obj":
        from ._obj import load_obj  # here: glTF files need no OBJ reader

        return load_obj(path, **kwargs)
    raise ValueError(f"unsupported scene format {path.suffix or 'no suffix'!r} for {str(path)!r}: use one of "
                     f"{', '.join(SCENE_SUFFIXES)}")


def _import_pygltflib() -> Any:
    try:
        import pygltflib
    except ImportError as exc:
        raise MissingExtraError("loading glTF scenes", "pygltflib", "gltf") from exc
    return pygltflib


# --- the scene graph and the geometry ------------------------------------------------------------------------


def _node_matrix(node: Any, what: str) -> np.ndarray:
    """The node's local 4x4 (row-major) from ``matrix`` (column-major in the file) or T * R * S."""
    if node.matrix is not None:
        m = floats(node.matrix, 16, f"{what} matrix").reshape(4, 4).T
        if not np.allclose(m[3], (0.0, 0.0, 0.0, 1.0), atol=1e-6):
            raise ValueError(f"{what}: matrix is not affine (its last row is {m[3].tolist()})")
        m[3] = (0.0, 0.0, 0.0, 1.0)
        return m
    t = floats(node.translation, 3, f"{what} translation") if node.translation is not None else np.zeros(3)
    q = floats(node.rotation, 4, f"{what} rotation") if node.rotation is not None else np.array([0, 0, 0, 1.0])
    s = floats(node.scale, 3, f"{what} scale") if node.scale is not None else np.ones(3)
    m = np.eye(4)
    m[:3, :3] = _quaternion_matrix(q, what) * s[None, :]
    m[:3, 3] = t
    return m


def _quaternion_matrix(q: np.ndarray, what: str) -> np.ndarray:
    """The rotation of the quaternion ``(x, y, z, w)`` (normalised first: files round them)."""
    norm = float(np.linalg.norm(q))
    if not norm > 0.0:
        raise ValueError(f"{what}: rotation quaternion is zero")
    x, y, z, w = q / norm
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _singular(matrix: np.ndarray) -> bool:
    linear = matrix[:3, :3]
    return abs(np.linalg.det(linear)) <= 1e-12 * max(float(np.abs(linear).max()), 1e-300) ** 3


class _Reader:
    """Walks one file's scene: node transforms, cameras, and the primitives the nodes place."""

    def __init__(self, doc: GltfDocument) -> None:
        self.doc = doc
        self.file = doc.file
        self.gltf = doc.gltf
        self.materials = GltfMaterials(doc)

    def read(self) -> GltfAsset:
        gltf = self.gltf
        self.doc.check_extensions()
        nodes = gltf.nodes or []
        asset = GltfAsset(self.doc.path, node_names=[n.name if n.name else f"node{k}" for k, n in enumerate(nodes)])
        for k, node in enumerate(nodes):
            for child in node.children or []:
                self.doc.idx(child, nodes, f"node {k} child")
        if gltf.scene is not None:
            roots = gltf.scenes[self.doc.idx(gltf.scene, gltf.scenes, "scene")].nodes or []
        elif gltf.scenes:
            roots = gltf.scenes[0].nodes or []
        else:  # no scene: show every root node
            children = {c for n in nodes for c in n.children or []}
            roots = [k for k in range(len(nodes)) if k not in children]
        stack = [(self.doc.idx(r, nodes, "scene node"), np.eye(4), ()) for r in reversed(list(roots))]
        while stack:  # depth first, children in file order; a path lists the ancestors to catch cycles
            k, parent, path = stack.pop()
            if k in path:
                raise ValueError(f"{self.file}: the node tree has a cycle through node {k}")
            node = nodes[k]
            world = parent @ _node_matrix(node, f"{self.file}: node {k} ({asset.node_names[k]!r})")
            self.place(asset, k, node, world)
            for child in reversed(node.children or []):
                stack.append((child, world, (*path, k)))
        asset.materials = dict(self.materials.materials)
        return asset

    def place(self, asset: GltfAsset, k: int, node: Any, world: np.ndarray) -> None:
        label = f"node {k} ({asset.node_names[k]!r})"
        if node.camera is not None:
            asset.cameras.append(self.camera(self.doc.idx(node.camera, self.gltf.cameras, f"{label}: camera"), k, world,
                                             node.name))
        if node.mesh is None:
            return
        mesh_index = self.doc.idx(node.mesh, self.gltf.meshes, f"{label}: mesh")
        if node.skin is not None:
            self.doc.warn_once("skin", f"{label} is skinned: skins are ignored, the mesh is placed by its node as "
                               "it is")
        matrices = [world]
        gpu_instancing = self.doc.extension(node, "EXT_mesh_gpu_instancing", label)
        if gpu_instancing is not None:
            matrices = [world @ local for local in self.gpu_instances(gpu_instancing, label)]
        visible = [m for m in matrices if not _singular(m)]
        if len(visible) < len(matrices):  # a zero scale is a common way to hide a node
            self.doc.warn_once(f"singular:{k}", f"{label} has a singular world transform (a zero scale): "
                               f"{len(matrices) - len(visible)} instance(s) of its mesh are invisible and skipped")
        if not visible:
            return
        matrices = visible
        gltf_mesh = self.gltf.meshes[mesh_index]
        for p in range(len(gltf_mesh.primitives or [])):
            key = (mesh_index, p)
            if key not in asset.meshes:
                mesh = read_primitive(self.doc, self.materials, mesh_index, p)
                if mesh is None:
                    continue
                asset.meshes[key] = mesh
            for matrix in matrices:
                asset.instances.append(GltfInstance(key, matrix, k))

    def gpu_instances(self, extension: dict[str, Any], label: str) -> list[np.ndarray]:
        attributes = extension.get("attributes") or {}
        what = f"{label} EXT_mesh_gpu_instancing"
        columns = {}
        for name, types in (("TRANSLATION", ("VEC3",)), ("ROTATION", ("VEC4",)), ("SCALE", ("VEC3",))):
            if name in attributes:
                columns[name] = self.doc.accessor(attributes[name], f"{what} {name}", types)
        if not columns:
            raise ValueError(f"{self.file}: {what} has no TRANSLATION, ROTATION or SCALE attribute")
        counts = {len(v) for v in columns.values()}
        if len(counts) != 1:
            raise ValueError(f"{self.file}: {what}: its attributes have different counts {sorted(counts)}")
        out = []
        for i in range(counts.pop()):
            m = np.eye(4)
            rotation = (_quaternion_matrix(columns["ROTATION"][i], f"{self.file}: {what}") if "ROTATION" in columns
                        else np.eye(3))
            m[:3, :3] = rotation * (columns["SCALE"][i][None, :] if "SCALE" in columns else 1.0)
            if "TRANSLATION" in columns:
                m[:3, 3] = columns["TRANSLATION"][i]
            out.append(m)
        return out

    def camera(self, index: int, node: int, world: np.ndarray, node_name: str | None) -> GltfCamera:
        cam = self.gltf.cameras[index]
        name = cam.name or node_name or f"camera{index}"
        label = f"{self.file}: camera {index} ({name!r})"
        if cam.type == "orthographic" or (cam.type != "perspective" and cam.perspective is None):
            self.doc.warn_once(f"ortho:{index}", f"camera {index} ({name!r}) is {cam.type or 'of no type'}: "
                               "only perspective cameras are supported, it is skipped")
            return GltfCamera(index, node, name, str(cam.type or "unknown"), None)
        if cam.perspective is None:
            raise ValueError(f"{label} is perspective but has no perspective object")
        yfov = number(cam.perspective.yfov, math.nan, f"{label} yfov")
        if not 0.0 < yfov < math.pi:
            raise ValueError(f"{label}: yfov must be in (0, pi) radians, got {cam.perspective.yfov!r}")
        aspect = cam.perspective.aspectRatio
        aspect = None if aspect is None else number(aspect, 1.0, f"{label} aspectRatio")
        if aspect is not None and not aspect > 0.0:
            raise ValueError(f"{label}: aspectRatio must be positive, got {aspect}")
        # Camera's fov spans the smaller image axis: glTF's yfov for landscape images, the horizontal one for portrait.
        fov = yfov if aspect is None or aspect >= 1.0 else 2.0 * math.atan(math.tan(yfov / 2.0) * aspect)
        try:
            camera = Camera.from_matrix(world, math.degrees(fov))
        except ValueError as exc:
            raise ValueError(f"{label}, node {node}: {exc}") from None
        return GltfCamera(index, node, name, "perspective", camera, yfov, aspect)
