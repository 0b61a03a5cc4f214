"""Triangle meshes from files (OBJ, PLY, glTF/GLB, STL), and placing them in the Cornell box.

One reader per format: OBJ and glTF/GLB go through the project's own readers
(:mod:`~optixasync.scene._obj`, :mod:`~optixasync.scene._gltf`), which here
open no material library and decode no image, because the caller gives the
material; PLY and STL need the optional ``trimesh`` package
(``pip install "optixasync[mesh]"``), imported only when such a file is
loaded. A file holding a scene graph (glTF, an OBJ with several materials) is
flattened: each geometry instance becomes one :class:`Mesh` in world space.
trimesh would read the files a mesh file names through a resolver of ours
that reads only inside the mesh file's folder
(:class:`~optixasync.scene._files.AssetFiles`); every file is bounded by
``LoadLimits.max_file_bytes``.

Nothing here talks to CUDA; every array is a host numpy array.

Blocking calls
--------------
None: file reading on the host.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MissingExtraError
from ..validation import as_affine
from ._files import AssetFiles
from ._limits import LoadLimits, as_limits
from ._mesh import replace_fields

if TYPE_CHECKING:
    from ._material import Material
    from ._mesh import Mesh
    from ._scene import Scene

__all__ = [
    "MESH_SUFFIXES",
    "check_mesh_path",
    "contained_resolver",
    "cornell_room",
    "fit_matrix",
    "fit_to_box",
    "load_into_cornell_box",
    "load_mesh",
]

#: File suffixes :func:`load_mesh` reads (case-insensitive).
MESH_SUFFIXES = (".obj", ".ply", ".glb", ".gltf", ".stl")



def check_mesh_path(path: str | Path) -> Path:
    """``path`` as a :class:`~pathlib.Path`, after checking that it is a file of a supported format.

    Raises
    ------
    ValueError
        If the file does not exist, is not a file, or its suffix is not one of :data:`MESH_SUFFIXES`.
    """
    path = Path(path)
    if path.suffix.lower() not in MESH_SUFFIXES:
        shown = path.suffix or "no suffix"
        raise ValueError(f"unsupported mesh format {shown!r} for {str(path)!r}: use one of {', '.join(MESH_SUFFIXES)}")
    if not path.exists():
        kind = "glTF file" if path.suffix.lower() in (".gltf", ".glb") else "mesh file"
        raise ValueError(f"{kind} not found: {str(path)!r}")
    if not path.is_file():
        raise ValueError(f"not a file: {str(path)!r}")
    return path


def _apply(matrix: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    return (vertices.astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3]).astype(np.float32)


def _import_trimesh() -> Any:
    try:
        import trimesh
    except ImportError as exc:
        raise MissingExtraError("loading mesh files", "trimesh", "mesh") from exc
    return trimesh


def contained_resolver(trimesh: Any, files: AssetFiles) -> Any:
    """A trimesh resolver that reads the files a mesh file names only inside its folder (through ``files``).

    Refused names raise :class:`~optixasync.errors.AssetPathError` to trimesh, which skips what it could
    not read (a material) or fails the load.
    """

    class ContainedResolver(trimesh.resolvers.Resolver):
        def __init__(self) -> None:
            pass

        def get(self, name: str) -> bytes:
            return files.read_named(str(name).strip().replace("\\", "/"), "a file it names")

        def write(self, name: str, data: Any) -> None:
            raise PermissionError("loading a mesh writes no file")

        def namespaced(self, namespace: str) -> Any:
            raise PermissionError("loading a mesh reads only its own folder")

        def keys(self) -> list[str]:
            return []

    return ContainedResolver()


def load_mesh(
    path: str | Path,
    material: Material | None = None,
    transform: Any = None,
    *,
    name: str | None = None,
    limits: LoadLimits | dict[str, Any] | None = None,
) -> list[Mesh]:
    """Read the triangles of a mesh file as a list of :class:`Mesh`.

    Parameters
    ----------
    path : str or Path
        An ``.obj``, ``.ply``, ``.glb``, ``.gltf`` or ``.stl`` file.
    material : Material, optional
        Material of every mesh (default ``Material()``); materials in the file are ignored.
    transform : array_like, optional
        A 3x4 or 4x4 affine matrix applied after the file's own node transforms.
    name : str, optional
        Name of the meshes (default: the file's stem). With several meshes each
        is named ``"{name}:{part}"``: ``part`` is the node for PLY and STL,
        ``"{node}/{mesh}"`` (``_{primitive}`` after a mesh of several) for
        glTF, and the ``usemtl`` name for OBJ.
    limits : LoadLimits, dict or None
        ``max_file_bytes`` bounds the file; ``allowed_folders`` widens where the files it names may lie.

    Returns
    -------
    list of Mesh
        One per geometry instance of the file, in the file's node order, with
        float32 ``(V, 3)`` vertices and int32 ``(F, 3)`` indices. Vertices are
        kept as the file stores them (not merged), so an STL has 3 per triangle.

    Raises
    ------
    ValueError
        If the file is missing, of an unsupported format, unreadable, holds
        no triangles, or has non-finite vertices or out-of-range indices;
        if ``transform`` is not an invertible affine matrix.
    MissingExtraError
        For a PLY or STL file when trimesh is not installed (the message says what to install; an ``ImportError``).
    """
    from ._material import Material

    path = check_mesh_path(path)
    user = as_affine(transform, "transform") if transform is not None else None
    material = Material() if material is None else material
    limits = as_limits(limits)
    suffix = path.suffix.lower()
    if suffix == ".obj":  # the project's OBJ reader, with no MTL file opened: the material is given
        from ._obj import read_obj_meshes

        meshes = read_obj_meshes(path, limits, material)
    elif suffix in (".gltf", ".glb"):  # the project's glTF reader, with no image decoded
        from ._gltf import read_gltf_meshes

        meshes = read_gltf_meshes(path, limits, material)
    else:
        meshes = _read_with_trimesh(path, limits, material)
    base = name if name is not None else path.stem
    out = []
    for mesh in meshes:
        part = mesh.name.split(":", 1)[1] if ":" in mesh.name else mesh.name
        mesh = replace_fields(mesh, name=base if len(meshes) == 1 else f"{base}:{part}")
        if user is not None:
            try:  # Mesh checks finite vertices again after the transform (float32 overflow too)
                mesh = mesh.transformed(user)
            except ValueError as exc:
                raise ValueError(f"{str(path)!r} ({mesh.name!r}): {exc}") from None
        out.append(mesh)
    return out


def _read_with_trimesh(path: Path, limits: LoadLimits, material: Material) -> list[Mesh]:
    """The meshes of a PLY or STL file, read by trimesh (the formats the project has no reader of its own for)."""
    from ._mesh import Mesh

    trimesh = _import_trimesh()
    files = AssetFiles(path, limits)
    files.check_size(path.stat().st_size, "the file")
    try:
        # process=False keeps the file's vertices and triangle order exactly (no merging or cleaning).
        loaded = trimesh.load(str(path), force="scene", process=False, resolver=contained_resolver(trimesh, files))
    except Exception as exc:  # each format's parser raises its own exception types
        raise ValueError(f"cannot read mesh file {str(path)!r}: {type(exc).__name__}: {exc}") from exc

    def has_faces(node: str) -> bool:  # point clouds, paths and empty meshes carry no triangles
        faces = getattr(loaded.geometry[loaded.graph[node][1]], "faces", None)
        return faces is not None and len(faces) > 0

    nodes = [node for node in loaded.graph.nodes_geometry if has_faces(node)]
    if not nodes:
        raise ValueError(f"mesh file {str(path)!r} contains no triangles")
    meshes = []
    for node in nodes:
        node_matrix, geometry_name = loaded.graph[node]
        geometry = loaded.geometry[geometry_name]
        matrix = np.asarray(node_matrix, dtype=np.float64)
        indices = np.asarray(geometry.faces)
        try:
            # Mesh checks shapes, finite vertices (after the transform: float32 overflow too) and index range.
            meshes.append(Mesh(_apply(matrix, np.asarray(geometry.vertices, dtype=np.float64)),
                               indices.astype(np.int32) if indices.ndim == 2 else indices, material=material,
                               name=f"{path.stem}:{node}"))
        except ValueError as exc:
            raise ValueError(f"{str(path)!r} (node {node!r}): {exc}") from None
    return meshes


def _host_vertices(mesh: Mesh) -> np.ndarray:
    vertices = mesh.vertices
    if hasattr(vertices, "__cuda_array_interface__") and not isinstance(vertices, np.ndarray):
        raise TypeError(f"mesh {mesh.name!r} has device vertices; fit_to_box works on host (numpy) meshes")
    return np.asarray(vertices, dtype=np.float32).reshape(-1, 3)


def fit_matrix(
    meshes: Sequence[Mesh],
    center: Sequence[float] = (0.0, 0.0, 0.0),
    size: float = 1.0,
    *,
    floor: float | None = None,
) -> np.ndarray:
    """The 4x4 uniform scale and translation that fits ``meshes`` into a box.

    The largest side of the meshes' joint bounding box becomes ``size`` and
    its centre moves to ``center``; with ``floor`` the lowest point instead
    rests at ``y = floor`` (x and z still centred).

    Raises
    ------
    ValueError
        If there are no vertices, ``size`` is not positive, or all vertices coincide.
    """
    if not size > 0:
        raise ValueError(f"size must be positive, got {size}")
    points = [_host_vertices(m) for m in meshes]
    points = [p for p in points if len(p)]
    if not points:
        raise ValueError("fit_matrix needs at least one vertex")
    allv = np.concatenate(points).astype(np.float64)
    lo, hi = allv.min(axis=0), allv.max(axis=0)
    extent = float((hi - lo).max())
    if extent <= 0:
        raise ValueError("all vertices coincide: nothing to scale")
    scale = size / extent
    target = np.asarray(center, dtype=np.float64).reshape(3).copy()
    middle = (lo + hi) / 2
    matrix = np.eye(4)
    matrix[:3, :3] *= scale
    matrix[:3, 3] = target - scale * middle
    if floor is not None:
        matrix[1, 3] = float(floor) - scale * lo[1]
    return matrix


def fit_to_box(
    meshes: Sequence[Mesh],
    center: Sequence[float] = (0.0, 0.0, 0.0),
    size: float = 1.0,
    *,
    floor: float | None = None,
) -> list[Mesh]:
    """Copies of ``meshes`` scaled and moved together by :func:`fit_matrix` (proportions kept)."""
    matrix = fit_matrix(meshes, center, size, floor=floor)
    return [dataclasses.replace(m, vertices=_apply(matrix, _host_vertices(m))) for m in meshes]


def _on_walls(vertices: np.ndarray, tolerance: float = 0.02) -> bool:
    return bool((np.abs(vertices).max(axis=1) >= 1.0 - tolerance).all())


def cornell_room() -> Scene:
    """The Cornell box of :func:`cornell_box` without its two blocks: walls, light and camera.

    A mesh is kept when it emits light or when every vertex lies on the
    walls (a coordinate at +-1); the blocks stand inside the room.
    """
    from ._cornell import cornell_box

    scene = cornell_box()
    kept = []
    for mesh in scene.meshes:
        emits = any(float(c) > 0 for c in np.ravel(mesh.material.emission))
        if emits or _on_walls(_host_vertices(mesh)):
            kept.append(mesh)
    scene.meshes = kept
    return scene


def load_into_cornell_box(
    path: str | Path,
    material: Material | None = None,
    transform: Any = None,
    *,
    size: float = 1.2,
    center_xz: tuple[float, float] = (0.0, 0.0),
) -> Scene:
    """The Cornell room (:func:`cornell_room`) with the model of ``path`` standing on its floor.

    The model (after ``transform``) is scaled so that its largest side is
    ``size`` (the room is 2 wide) and placed on the floor at ``center_xz``.
    The default material is light grey and two-sided: model files often mix
    triangle windings, and a one-sided surface is black from the back.
    """
    from ._material import Material

    if not 0 < size <= 1.9:
        raise ValueError(f"size must be in (0, 1.9] to fit the room (2 wide), got {size}")
    material = Material(reflectance=(0.8, 0.8, 0.8), two_sided=True) if material is None else material
    meshes = load_mesh(path, material, transform)
    scene = cornell_room()
    floor = -1.0 + 1e-3  # a hair above the floor so the two surfaces never coincide
    for mesh in fit_to_box(meshes, (center_xz[0], 0.0, center_xz[1]), size, floor=floor):
        scene.add(mesh)
    return scene
