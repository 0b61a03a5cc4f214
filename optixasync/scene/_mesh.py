"""Triangle meshes, affine placement, and the basic shapes (rectangle, cube, icosphere).

Everything here is host-side numpy; nothing touches the GPU. A mesh may also
hold device arrays (anything with ``__cuda_array_interface__``): those are
checked for dtype, shape and contiguity only, never read back.

The front side of a triangle is the side of its winding normal
``cross(v1 - v0, v2 - v0)``. A placement with a negative determinant (a
mirror) would turn that normal inwards, so :meth:`Mesh.transformed` swaps two
corners of every triangle: the front side stays the side the transformed
normal (the inverse transpose applied to the old one) points to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..validation import as_affine, check_indices, check_vertices, is_device_array
from ._material import Material
from ._motion import MeshMotion

__all__ = ["Mesh", "cube", "placed", "rectangle", "sphere"]


@dataclass(eq=False)
class Mesh:
    """A triangle mesh with one material.

    Attributes
    ----------
    vertices : array (V, 3) float32
        Host (numpy) or device (``__cuda_array_interface__``) array, C-contiguous.
    indices : array (F, 3) int32 or uint32
        Corners of each triangle; their order gives the front side
        (``cross(v1 - v0, v2 - v0)``).
    material : Material
    name : str
    dynamic : bool
        The vertices will move (the path tracer builds its structure for
        refits). Emissive meshes must be static: the emitter table holds
        their world positions.
    normals : array (V, 3) float32 or None
        Per-vertex shading normals (smooth shading), interpolated across
        each triangle; None: the flat triangle normal. Host arrays.
    uvs : array (V, 2) float32 or None
        Per-vertex texture coordinates (glTF's: (0, 0) at the image's top
        left); needed by textured materials.
    transform : array (3, 4) or (4, 4) or None
        Object-to-world placement (row-major affine). Meshes that share
        their ``vertices`` and ``indices`` host arrays (the same numpy
        objects) and have transforms are instances: the renderer stores
        their geometry once (one GAS) and places it by an instance
        acceleration structure. (Device arrays are consumed per mesh: their
        instances get a GAS each.) None: the vertices are in world space.
    tangents : array (V, 4) float32 or None
        Per-vertex tangents, w = the bitangent's handedness (glTF's); for
        normal maps. None: a normal map is oriented by the UVs' directions
        on each triangle (u along the tangent, decreasing v along the bitangent).
    colors : array (V, 3) or (V, 4) of floats, or None
        Per-vertex linear colours (glTF's ``COLOR_0``), which multiply the
        material's base colour (RGB) and opacity (A): finite and >= 0. Stored
        as (V, 4) float32, alpha 1 where the array gives 3 channels; the
        renderer interpolates them across each triangle.
    motion : MeshMotion or None
        Motion blur: transforms (a moving instance) or vertex arrays (a
        deforming mesh) at motion keys; None: the mesh is static.

    Raises
    ------
    ValueError
        On a wrong dtype, shape, contiguity, an out-of-range index or a
        non-finite vertex (host arrays are checked completely), or an
        emissive dynamic mesh.
    TypeError
        On a material that is not a :class:`Material`.
    """

    vertices: Any
    indices: Any
    material: Material = field(default_factory=Material)
    name: str = ""
    dynamic: bool = False
    normals: Any = None
    uvs: Any = None
    tangents: Any = None
    transform: Any = None
    colors: Any = None
    motion: Any = None

    def __post_init__(self) -> None:
        label = f"mesh {self.name!r}" if self.name else "mesh"
        if not isinstance(self.material, Material):
            raise TypeError(f"{label}: material must be a Material, got {type(self.material).__name__}")
        if not isinstance(self.name, str):
            raise TypeError(f"mesh name must be a str, got {type(self.name).__name__}")
        if not isinstance(self.dynamic, bool):
            raise TypeError(f"{label}: dynamic must be a bool, got {type(self.dynamic).__name__}")
        self.num_vertices = check_vertices(self.vertices, name=f"{label} vertices")
        self.num_triangles = check_indices(self.indices, self.num_vertices, name=f"{label} indices")
        for attribute, width in (("normals", 3), ("uvs", 2), ("tangents", 4)):
            setattr(self, attribute, check_attribute(getattr(self, attribute), self.num_vertices, width,
                                                     f"{label} {attribute}"))
        self.colors = check_colors(self.colors, self.num_vertices, f"{label} colors")
        if self.dynamic and (self.normals is not None or self.tangents is not None):
            raise ValueError(f"{label} is dynamic and has normals or tangents: they would stay as they are while "
                             "the vertices move (give a dynamic mesh neither; it is shaded flat)")
        if self.transform is not None:
            self.transform = as_affine(self.transform, f"{label} transform")
            if self.dynamic:
                raise ValueError(f"{label} is dynamic and has a transform: instances cannot be refitted (give the "
                                 "dynamic mesh world-space vertices)")
        self.check_material(label)
        if self.motion is not None:
            if not isinstance(self.motion, MeshMotion):
                raise TypeError(f"{label}: motion must be a MeshMotion or None, got {type(self.motion).__name__}")
            self.motion.check(self, label)
        if self.dynamic and self.material.is_emissive:
            raise ValueError(f"{label} is emissive and dynamic: emitters must be static (the emitter table "
                             "holds their world positions)")

    def check_material(self, label: str | None = None) -> None:
        """Raise ValueError when the material has textures and the mesh has no UVs to look them up with.

        Run at creation, and again by the renderer: a mesh's material may be replaced after it was made.
        """
        if self.material.textures and self.uvs is None:
            label = label or (f"mesh {self.name!r}" if self.name else "mesh")
            raise ValueError(f"{label}: its material has textures ({', '.join(self.material.textures)}) "
                             "but the mesh has no uvs")

    @property
    def on_device(self) -> bool:
        """Whether the vertices or indices are device arrays."""
        return is_device_array(self.vertices) or is_device_array(self.indices)

    def _host(self, what: str) -> tuple[np.ndarray, np.ndarray]:
        if self.on_device:
            raise TypeError(f"{what} needs host (numpy) arrays; mesh {self.name!r} holds device arrays")
        return self.vertices, self.indices

    @property
    def instanced(self) -> bool:
        """Whether the mesh has a transform (its vertices are in object space)."""
        return self.transform is not None

    @property
    def mirrored(self) -> bool:
        """Whether the transform mirrors (negative determinant): the winding of the world corners is reversed."""
        return self.transform is not None and bool(np.linalg.det(self.transform[:, :3]) < 0)

    def flattened(self) -> Mesh:
        """The mesh in world space: itself without a transform, else a copy with the transform applied."""
        if self.transform is None:
            return self
        return replace_fields(self, transform=None).transformed(self.transform)

    def corners(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The three corners of every triangle in world space, each (F, 3) float64 (host arrays only)."""
        vertices, indices = self._host("corners()")
        v = vertices.astype(np.float64)
        if self.transform is not None:
            v = v @ self.transform[:, :3].T + self.transform[:, 3]
        idx = indices.astype(np.int64)
        return v[idx[:, 0]], v[idx[:, 1]], v[idx[:, 2]]

    def face_normals(self) -> np.ndarray:
        """Unit winding normals (F, 3) float64 (zero for degenerate triangles; host arrays only)."""
        v0, v1, v2 = self.corners()
        n = np.cross(v1 - v0, v2 - v0)
        if self.mirrored:  # the front side is the side the transformed front normal points to
            n = -n
        length = np.linalg.norm(n, axis=1, keepdims=True)
        return np.divide(n, length, out=np.zeros_like(n), where=length > 0)

    def areas(self) -> np.ndarray:
        """Triangle areas (F,) float64 (host arrays only)."""
        v0, v1, v2 = self.corners()
        return 0.5 * np.linalg.norm(np.cross(v1 - v0, v2 - v0), axis=1)

    def transformed(self, matrix: Any) -> Mesh:
        """A copy placed by ``matrix`` (3x4 or 4x4 row-major affine; host arrays only).

        A mirroring transform (negative determinant) also swaps two corners
        of every triangle, so the front side stays the transformed front side.
        An instance (a mesh with a ``transform``) stays one, sharing its
        arrays: the placements compose.
        """
        vertices, indices = self._host("transformed()")
        m = as_affine(matrix, "matrix")
        if self.transform is not None:  # an instance stays one: the placements compose
            composed = np.vstack([m, [0, 0, 0, 1]]) @ np.vstack([self.transform, [0, 0, 0, 1]])
            return replace_fields(self, transform=composed[:3])
        moved = vertices.astype(np.float64) @ m[:, :3].T + m[:, 3]
        new_indices = np.array(indices, copy=True)
        if np.linalg.det(m[:, :3]) < 0:
            new_indices = np.ascontiguousarray(new_indices[:, [0, 2, 1]])
        normals, tangents = self.normals, self.tangents
        if normals is not None:  # normals transform by the inverse transpose
            normals = normals.astype(np.float64) @ np.linalg.inv(m[:, :3])
            normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-30)
            normals = normals.astype(np.float32)
        if tangents is not None:
            moved_t = tangents[:, :3].astype(np.float64) @ m[:, :3].T
            moved_t /= np.maximum(np.linalg.norm(moved_t, axis=1, keepdims=True), 1e-30)
            sign = tangents[:, 3:] * (-1.0 if np.linalg.det(m[:, :3]) < 0 else 1.0)
            tangents = np.concatenate([moved_t, sign], axis=1).astype(np.float32)
        return Mesh(np.ascontiguousarray(moved, dtype=np.float32), new_indices, self.material, self.name, self.dynamic,
                    normals, self.uvs, tangents, colors=self.colors)


def replace_fields(mesh: Mesh, **changes: Any) -> Mesh:
    """A :class:`Mesh` like ``mesh`` (its arrays shared, not copied) with ``changes`` to its fields."""
    fields = {name: getattr(mesh, name) for name in ("vertices", "indices", "material", "name", "dynamic", "normals",
                                                      "uvs", "tangents", "transform", "colors")}
    fields.update(changes)
    return Mesh(**fields)


def placed(mesh: Mesh, transforms: np.ndarray, names: list[str]) -> list[Mesh]:
    """Instances of ``mesh`` (its arrays shared, none checked again), one per transform, named by ``names``.

    For readers placing one checked primitive many times: ``transforms`` must
    be a C-contiguous float64 (N, 3, 4) array of affine matrices whose linear
    parts are finite and invertible (what :func:`~optixasync.validation.as_affine`
    accepts), and ``mesh`` a static mesh without a transform. Each instance's
    ``transform`` is a view of ``transforms``. A fraction of
    :func:`replace_fields`' cost, which checks every array again.
    """
    if mesh.transform is not None or mesh.dynamic:
        raise ValueError(f"mesh {mesh.name!r}: only a static mesh without a transform is placed this way")
    if transforms.ndim != 3 or transforms.shape[1:] != (3, 4) or transforms.dtype != np.float64 or len(
            transforms) != len(names) or not transforms.flags.c_contiguous:
        raise ValueError(f"mesh {mesh.name!r}: transforms must be a C-contiguous (N, 3, 4) float64 array, one per "
                         f"name; got {transforms.shape} {transforms.dtype} for {len(names)} names")
    fields = mesh.__dict__
    new = object.__new__
    out = []
    for transform, name in zip(transforms, names, strict=True):
        instance = new(Mesh)
        instance.__dict__ = {**fields, "transform": transform, "name": name}
        out.append(instance)
    return out


def check_colors(array: Any, num_vertices: int, name: str) -> np.ndarray | None:
    """Per-vertex colours (V, 3) or (V, 4) as a (V, 4) float32 host array (alpha 1 added), or None."""
    if array is None:
        return None
    if isinstance(array, np.ndarray) and array.shape not in ((num_vertices, 3), (num_vertices, 4)):
        raise ValueError(f"{name} must have shape ({num_vertices}, 3) or ({num_vertices}, 4) (one per vertex), got "
                         f"{array.shape}")
    if isinstance(array, np.ndarray) and array.shape[1] == 3:
        colors = check_attribute(array, num_vertices, 3, name)
        assert colors is not None
        colors = np.concatenate([colors, np.ones((num_vertices, 1), np.float32)], axis=1)
    else:
        colors = check_attribute(array, num_vertices, 4, name)
        assert colors is not None
    if (colors < 0).any():
        bad = int(np.argwhere((colors < 0).any(axis=1))[0, 0])
        raise ValueError(f"{name} must be >= 0 (linear colour multipliers), got {colors[bad].tolist()} at vertex {bad}")
    return colors


def check_attribute(array: Any, num_vertices: int, width: int, name: str) -> np.ndarray | None:
    """A per-vertex attribute as a C-contiguous (V, width) float32 host array, or None; ValueError/TypeError naming it."""
    if array is None:
        return None
    if is_device_array(array) or not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy array (host), got {type(array).__name__}")
    if array.dtype.kind != "f":
        raise ValueError(f"{name} must have a float dtype, got {array.dtype}")
    if array.shape != (num_vertices, width):
        raise ValueError(f"{name} must have shape ({num_vertices}, {width}) (one per vertex), got {array.shape}")
    if not np.isfinite(array).all():
        bad = int(np.argwhere(~np.isfinite(array).all(axis=1))[0, 0])
        raise ValueError(f"{name} contains NaN or Inf (first at vertex {bad})")
    return np.ascontiguousarray(array, dtype=np.float32)


# --- shapes ---------------------------------------------------------------------------------------------------------

_SQUARE = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
_SQUARE_TRIANGLES = np.array([[0, 1, 2], [0, 2, 3]], np.int32)  # winding normal +z


def rectangle(matrix: Any = None, material: Material | None = None, name: str = "") -> Mesh:
    """The square [-1, 1]^2 in the plane z = 0 (front side +z), placed by ``matrix`` (identity if None)."""
    mesh = Mesh(_SQUARE.copy(), _SQUARE_TRIANGLES.copy(), material if material is not None else Material(), name)
    return mesh if matrix is None else mesh.transformed(matrix)


def _cube_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The cube [-1, 1]^3 as 6 faces of 4 vertices each (24 vertices, 12 triangles), fronts outwards."""
    vertices, indices = [], []
    for axis in range(3):
        u = np.eye(3)[(axis + 1) % 3]
        v = np.eye(3)[(axis + 2) % 3]  # u x v = +axis
        for sign in (1.0, -1.0):
            centre = sign * np.eye(3)[axis]
            base = len(vertices)
            vertices += [centre - u - v, centre + u - v, centre + u + v, centre - u + v]
            quad = [[0, 1, 2], [0, 2, 3]] if sign > 0 else [[0, 2, 1], [0, 3, 2]]
            indices += [[base + a, base + b, base + c] for a, b, c in quad]
    return np.array(vertices, np.float32), np.array(indices, np.int32)


_CUBE = _cube_arrays()


def cube(matrix: Any = None, material: Material | None = None, name: str = "") -> Mesh:
    """The cube [-1, 1]^3 with outward front sides, placed by ``matrix`` (identity if None)."""
    mesh = Mesh(_CUBE[0].copy(), _CUBE[1].copy(), material if material is not None else Material(), name)
    return mesh if matrix is None else mesh.transformed(matrix)


def _icosahedron() -> tuple[np.ndarray, np.ndarray]:
    phi = (1.0 + 5.0**0.5) / 2.0
    v = np.array([[-1, phi, 0], [1, phi, 0], [-1, -phi, 0], [1, -phi, 0], [0, -1, phi], [0, 1, phi],
                  [0, -1, -phi], [0, 1, -phi], [phi, 0, -1], [phi, 0, 1], [-phi, 0, -1], [-phi, 0, 1]], np.float64)
    f = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2],
                  [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5],
                  [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]], np.int64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    # Orient every face outwards by construction rather than trusting a hand-written table.
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    inward = np.einsum("ij,ij->i", n, v[f].mean(axis=1)) < 0
    f[inward] = f[inward][:, [0, 2, 1]]
    return v, f


def _subdivide(v: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split every triangle in four; shared edges share their midpoint (the mesh stays watertight)."""
    edges = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    unique, inverse = np.unique(np.sort(edges, axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    mid = v[unique[:, 0]] + v[unique[:, 1]]
    mid /= np.linalg.norm(mid, axis=1, keepdims=True)
    m = len(v) + inverse.reshape(3, -1)  # midpoint index of edge (0,1), (1,2), (2,0) of every face
    a, b, c = f[:, 0], f[:, 1], f[:, 2]
    ab, bc, ca = m[0], m[1], m[2]
    faces = np.concatenate([np.stack([a, ab, ca], 1), np.stack([ab, b, bc], 1), np.stack([ca, bc, c], 1),
                            np.stack([ab, bc, ca], 1)])
    return np.concatenate([v, mid]), faces


def sphere(center: Any = (0.0, 0.0, 0.0), radius: float = 1.0, material: Material | None = None, *,
           subdivisions: int = 4, inward: bool = False, smooth: bool = False, name: str = "") -> Mesh:
    """An icosphere: ``20 * 4**subdivisions`` triangles with vertices on the sphere.

    Parameters
    ----------
    center : 3 floats
    radius : float
        Positive.
    material : Material, optional
    subdivisions : int
        0 gives the icosahedron; 4 gives 5120 triangles.
    inward : bool
        Flip the winding so that the front sides face the centre (a closed
        room seen from inside, as in a furnace test).
    smooth : bool
        Give the mesh per-vertex normals (the sphere's, on the front side)
        and UVs (latitude-longitude: ``u`` around +y, 0.5 towards -z and the seam
        (0 and 1) towards +z; ``v`` from the
        top, 0, to the bottom, 1), for smooth shading and textures.
    name : str
    """
    c = np.asarray(center, dtype=np.float64)
    if c.shape != (3,) or not np.isfinite(c).all():
        raise ValueError(f"center must be 3 finite numbers, got {center!r}")
    radius = float(radius)
    if not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a positive number, got {radius}")
    subdivisions = int(subdivisions)
    if not 0 <= subdivisions <= 8:
        raise ValueError(f"subdivisions must be in [0, 8], got {subdivisions}")
    v, f = _icosahedron()
    for _ in range(subdivisions):
        v, f = _subdivide(v, f)
    if inward:
        f = f[:, [0, 2, 1]]
    vertices = np.ascontiguousarray(v * radius + c, dtype=np.float32)
    normals = uvs = None
    if smooth:
        normals = np.ascontiguousarray(-v if inward else v, dtype=np.float32)
        uvs = np.stack([0.5 + np.arctan2(v[:, 0], -v[:, 2]) / (2.0 * np.pi),
                        np.arccos(np.clip(v[:, 1], -1.0, 1.0)) / np.pi], axis=1).astype(np.float32)
    return Mesh(vertices, np.ascontiguousarray(f, dtype=np.int32), material if material is not None else Material(),
                name, normals=normals, uvs=uvs)
