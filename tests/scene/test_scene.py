"""Materials, meshes, placement and shapes: host-side checks with exact expectations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optixasync.scene import Camera, Material, Mesh, Scene, cube, rectangle, sphere
from optixasync.validation import as_affine


class FakeDeviceArray:
    """Only ``__cuda_array_interface__``: reading its data on the host would be a bug."""

    def __init__(self, shape, typestr):
        self._iface = {"shape": tuple(shape), "typestr": typestr, "data": (0, False), "version": 3, "strides": None}

    @property
    def __cuda_array_interface__(self):
        return dict(self._iface)

    def __array__(self, *args, **kwargs):
        raise AssertionError("device array data was read on the host")


def edge_counts(indices: np.ndarray) -> tuple[dict, dict]:
    """Directed edge multiplicities and undirected ones."""
    directed: dict[tuple[int, int], int] = {}
    for a, b, c in indices.tolist():
        for e in ((a, b), (b, c), (c, a)):
            directed[e] = directed.get(e, 0) + 1
    undirected: dict[tuple[int, int], int] = {}
    for (a, b), k in directed.items():
        key = (min(a, b), max(a, b))
        undirected[key] = undirected.get(key, 0) + k
    return directed, undirected


def assert_closed_and_consistent(mesh: Mesh) -> None:
    """Every edge is shared by exactly two triangles that walk it in opposite directions (watertight, oriented)."""
    directed, undirected = edge_counts(mesh.indices)
    assert set(undirected.values()) == {2}
    assert set(directed.values()) == {1}


def signed_volume(mesh: Mesh) -> float:
    v0, v1, v2 = mesh.corners()
    return float(np.einsum("ij,ij->i", v0, np.cross(v1, v2)).sum() / 6.0)


# --- materials ------------------------------------------------------------------------------------------------------


def test_material_defaults_and_normalisation():
    m = Material(reflectance=[0.5, 0.25, 1], emission=np.array([0, 2, 0.5]))
    assert m.reflectance == (0.5, 0.25, 1.0) and all(type(v) is float for v in m.reflectance)
    assert m.emission == (0.0, 2.0, 0.5)
    assert m.is_emissive and not Material().is_emissive
    assert Material().reflectance == (0.8, 0.8, 0.8) and Material().two_sided is False
    assert Material((0.5, 0.5, 0.5)) == Material([0.5, 0.5, 0.5])
    assert hash(Material((0.5, 0.5, 0.5))) == hash(Material([0.5, 0.5, 0.5]))


@pytest.mark.parametrize("kwargs, match", [
    ({"reflectance": (math.nan, 0.5, 0.5)}, "finite"),
    ({"reflectance": (0.5, math.inf, 0.5)}, "finite"),
    ({"reflectance": (0.5, 1.01, 0.5)}, r"\[0, 1\]"),
    ({"reflectance": (-0.1, 0.5, 0.5)}, r"\[0, 1\]"),
    ({"reflectance": (0.5, 0.5)}, "3 components"),
    ({"emission": (1.0, -1e-3, 0.0)}, ">= 0"),
    ({"emission": (1.0, math.nan, 0.0)}, "finite"),
    ({"emission": (1.0, 2.0, 3.0, 4.0)}, "3 components"),
])
def test_bad_material_is_a_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Material(**kwargs)


def test_material_type_errors():
    with pytest.raises(TypeError):
        Material(reflectance="red")
    with pytest.raises(TypeError, match="two_sided"):
        Material(two_sided=1)
    with pytest.raises(TypeError, match="alpha"):
        Material(alpha="rough")
    assert Material(reflectance=0.5).reflectance == (0.5, 0.5, 0.5)  # one number: grey


@pytest.mark.parametrize("fields, message", [
    (dict(bsdf="velvet"), "bsdf must be one of"),
    (dict(bsdf="conductor", alpha=1.5), "alpha must lie in"),
    (dict(bsdf="metallic_roughness", roughness=-0.1), "roughness must lie in"),
    (dict(bsdf="dielectric", int_ior=0.0), "int_ior must be > 0"),
    (dict(bsdf="dielectric", ext_ior=float("nan")), "ext_ior must be finite"),
    (dict(reflectance=(0.5, -0.1, 0.5)), r"reflectance must lie in \[0, 1\]"),
    (dict(emission=(1.0, -1.0, 0.0)), "emission must be >= 0"),
    (dict(bsdf="conductor", k=(-1.0, 1.0, 1.0)), "k must be >= 0"),
    (dict(bsdf="plastic", alpha=0.0), "plastic needs alpha > 0"),
    (dict(bsdf="plastic", alpha=0.1, int_ior=1.0, ext_ior=1.0), "int_ior != ext_ior"),
    (dict(alpha_mode="cutout"), "alpha_mode must be one of"),
    (dict(opacity=2.0), "opacity must lie in"),
])
def test_material_parameter_errors_name_the_material_and_field(fields, message):
    with pytest.raises(ValueError, match=message) as info:
        Material(name="brass", **fields)
    assert "'brass'" in str(info.value)


def test_material_texture_slots_take_textures_only():
    with pytest.raises(TypeError, match="normal_texture must be a Texture"):
        Material(normal_texture=np.zeros((2, 2, 3), np.uint8))


# --- meshes ---------------------------------------------------------------------------------------------------------


def test_mesh_counts_and_geometry():
    mesh = rectangle()
    assert (mesh.num_vertices, mesh.num_triangles) == (4, 2)
    np.testing.assert_allclose(mesh.face_normals(), [[0, 0, 1], [0, 0, 1]])
    np.testing.assert_allclose(mesh.areas(), [2.0, 2.0])


def test_mesh_validation_reuses_the_accel_checks():
    v = np.zeros((3, 3), np.float32)
    i = np.array([[0, 1, 2]], np.int32)
    with pytest.raises(ValueError, match="float32"):
        Mesh(v.astype(np.float64), i)
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        Mesh(np.zeros((3, 2), np.float32), i)
    with pytest.raises(ValueError, match="out of range"):
        Mesh(v, np.array([[0, 1, 3]], np.int32))
    with pytest.raises(ValueError, match="NaN or Inf"):
        Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, np.nan, 0]], np.float32), i)
    with pytest.raises(ValueError, match="contiguous"):
        Mesh(np.zeros((3, 6), np.float32)[:, ::2], i)
    with pytest.raises(ValueError, match="int32"):
        Mesh(v, i.astype(np.int64))
    with pytest.raises(TypeError, match="Material"):
        Mesh(v, i, material=(0.5, 0.5, 0.5))
    with pytest.raises(TypeError, match="dynamic"):
        Mesh(v, i, dynamic="yes")


def test_emissive_dynamic_mesh_is_refused():
    v, i = np.zeros((3, 3), np.float32), np.array([[0, 1, 2]], np.int32)
    Mesh(v, i, Material(emission=(1, 1, 1)))  # static: fine
    Mesh(v, i, Material(), dynamic=True)  # dynamic, not emitting: fine
    with pytest.raises(ValueError, match="emissive and dynamic"):
        Mesh(v, i, Material(emission=(1, 1, 1)), name="lamp", dynamic=True)


def test_device_arrays_are_checked_without_reading():
    mesh = Mesh(FakeDeviceArray((10, 3), "<f4"), FakeDeviceArray((4, 3), "<i4"), dynamic=True)
    assert (mesh.num_vertices, mesh.num_triangles, mesh.on_device) == (10, 4, True)
    with pytest.raises(ValueError, match="float32"):
        Mesh(FakeDeviceArray((10, 3), "<f8"), FakeDeviceArray((4, 3), "<i4"))
    with pytest.raises(TypeError, match="host"):
        mesh.transformed(np.eye(4))
    with pytest.raises(TypeError, match="host"):
        mesh.areas()


# --- placement ------------------------------------------------------------------------------------------------------


def test_as_affine_accepts_3x4_and_4x4():
    m = np.arange(12, dtype=np.float64).reshape(3, 4) + np.eye(3, 4) * 10
    np.testing.assert_array_equal(as_affine(m), m)
    np.testing.assert_array_equal(as_affine(np.vstack([m, [0, 0, 0, 1]])), m)


@pytest.mark.parametrize("matrix, match", [
    (np.eye(3), "3x4 or 4x4"),
    (np.diag([1.0, 1.0, 1.0, 2.0]), "last row"),
    (np.diag([1.0, 0.0, 1.0, 1.0]), "singular"),
    (np.full((4, 4), np.nan), "NaN"),
])
def test_as_affine_rejects(matrix, match):
    with pytest.raises(ValueError, match=match):
        as_affine(matrix)
    with pytest.raises(ValueError, match=f"^placement.*{match}"):  # the message names the transform
        as_affine(matrix, "placement")
    with pytest.raises(ValueError, match=f"^matrix.*{match}"):  # a mesh's placement, with the same rule
        cube().transformed(matrix)


def test_transformed_moves_the_vertices():
    m = np.array([[0, -2, 0, 1], [2, 0, 0, 2], [0, 0, 2, 3], [0, 0, 0, 1]], np.float64)  # rotate 90 about z, scale 2
    moved = rectangle(m)
    np.testing.assert_allclose(moved.vertices, [[3, 0, 3], [3, 4, 3], [-1, 4, 3], [-1, 0, 3]])
    np.testing.assert_allclose(moved.face_normals(), [[0, 0, 1], [0, 0, 1]], atol=1e-12)
    assert moved.vertices.dtype == np.float32 and moved.vertices.flags.c_contiguous


@pytest.mark.parametrize("seed", range(6))
def test_normals_follow_the_inverse_transpose_even_for_mirrors(seed):
    rng = np.random.default_rng(seed)
    linear = rng.normal(size=(3, 3))
    if seed % 2:  # make every other one a mirror
        linear[:, 0] *= -1 if np.linalg.det(linear) > 0 else 1
    else:
        linear[:, 0] *= -1 if np.linalg.det(linear) < 0 else 1
    assert (np.linalg.det(linear) < 0) == bool(seed % 2)
    matrix = np.hstack([linear, rng.normal(size=(3, 1))])
    for shape in (cube(), sphere(subdivisions=1), rectangle()):
        moved = shape.transformed(matrix)
        expected = shape.face_normals() @ np.linalg.inv(linear)  # rows of n @ M^-1 = (M^-T n)^T
        expected /= np.linalg.norm(expected, axis=1, keepdims=True)
        np.testing.assert_allclose(moved.face_normals(), expected, atol=1e-5)
        if shape.num_triangles > 2:
            assert signed_volume(moved) > 0  # still outward: a positive enclosed volume
            assert_closed_and_consistent_by_position(moved)


def test_mirror_keeps_material_name_and_dynamic():
    mesh = rectangle(None, Material((0.1, 0.2, 0.3), two_sided=True), "plate")
    mesh.dynamic = True
    moved = mesh.transformed(np.diag([-1.0, 1.0, 1.0, 1.0]))
    assert (moved.material, moved.name, moved.dynamic) == (mesh.material, "plate", True)
    np.testing.assert_array_equal(moved.indices, mesh.indices[:, [0, 2, 1]])
    np.testing.assert_allclose(moved.face_normals(), [[0, 0, 1], [0, 0, 1]])


# --- shapes ---------------------------------------------------------------------------------------------------------


def test_cube_is_closed_outward_and_exact():
    c = cube()
    assert (c.num_vertices, c.num_triangles) == (24, 12)
    assert_closed_and_consistent_by_position(c)
    assert signed_volume(c) == pytest.approx(8.0)
    centroids = np.mean(c.corners(), axis=0)
    normals = c.face_normals()
    # every face normal is an axis, pointing away from the centre
    assert np.allclose(np.abs(normals).max(axis=1), 1.0)
    assert (np.einsum("ij,ij->i", normals, centroids) > 0.99).all()
    assert np.abs(c.vertices).max() == 1.0


def assert_closed_and_consistent_by_position(mesh: Mesh) -> None:
    """Like ``assert_closed_and_consistent`` after merging vertices at the same position (the cube's faces are separate)."""
    _, inverse = np.unique(mesh.vertices, axis=0, return_inverse=True)
    merged = Mesh(mesh.vertices, np.ascontiguousarray(inverse.reshape(-1)[mesh.indices], dtype=np.int32))
    assert_closed_and_consistent(merged)


@pytest.mark.parametrize("subdivisions", [0, 1, 3])
def test_sphere_is_closed_with_vertices_on_the_sphere(subdivisions):
    s = sphere((1.0, -2.0, 0.5), 0.75, subdivisions=subdivisions)
    assert s.num_triangles == 20 * 4**subdivisions
    assert s.num_vertices == 10 * 4**subdivisions + 2
    np.testing.assert_allclose(np.linalg.norm(s.vertices - np.array([1.0, -2.0, 0.5], np.float32), axis=1), 0.75,
                               rtol=1e-6)
    assert_closed_and_consistent(s)
    centre = np.array([1.0, -2.0, 0.5])
    outward = np.einsum("ij,ij->i", s.face_normals(), np.mean(s.corners(), axis=0) - centre)
    assert (outward > 0).all()
    assert signed_volume(s) > 0


def test_inward_sphere_faces_its_centre_and_converges_to_the_sphere():
    s = sphere((0, 0, 0), 2.0, subdivisions=4, inward=True)
    assert (np.einsum("ij,ij->i", s.face_normals(), np.mean(s.corners(), axis=0)) < 0).all()
    assert signed_volume(s) < 0
    # a refined icosphere's area approaches 4 pi r^2 from below
    area = s.areas().sum()
    assert 0.99 * 16 * np.pi < area < 16 * np.pi


def test_sphere_rejects_bad_arguments():
    with pytest.raises(ValueError, match="radius"):
        sphere((0, 0, 0), 0.0)
    with pytest.raises(ValueError, match="center"):
        sphere((0, 0), 1.0)
    with pytest.raises(ValueError, match="subdivisions"):
        sphere((0, 0, 0), 1.0, subdivisions=9)


# --- scenes ---------------------------------------------------------------------------------------------------------


def test_scene_add_emitters_dynamic_find():
    camera = Camera((0, 0, 5), (0, 0, 0))
    scene = Scene([rectangle(name="a")], camera)
    lamp = scene.add(rectangle(None, Material(emission=(1, 1, 1)), "lamp"))
    scene.add(Mesh(np.zeros((3, 3), np.float32), np.array([[0, 1, 2]], np.int32), name="moving", dynamic=True))
    assert lamp is scene.meshes[1]
    assert scene.emitters == [1]
    assert scene.dynamic == [2]
    assert scene.num_triangles == 5
    assert scene.find("lamp") == 1
    with pytest.raises(KeyError):
        scene.find("nope")
    with pytest.raises(TypeError):
        scene.add("mesh")
    with pytest.raises(TypeError):
        Scene([rectangle()], camera="camera")
    with pytest.raises(TypeError, match="mesh 0"):
        Scene([None], camera)
