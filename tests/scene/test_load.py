"""Mesh files (OBJ, PLY, STL, GLB) read into Meshes, with node and user transforms; placement in the Cornell box.

CPU only: the files are written here, by hand or with trimesh.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from optixasync.errors import MissingExtraError
from optixasync.scene import (
    MESH_SUFFIXES,
    Material,
    cornell_box,
    cornell_room,
    fit_matrix,
    fit_to_box,
    load_into_cornell_box,
    load_mesh,
)
from optixasync.scene._load import check_mesh_path
from optixasync.validation import as_affine

trimesh = pytest.importorskip("trimesh", reason="trimesh (the 'mesh' extra) is needed to read mesh files")

TETRA_V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]], np.float32)
TETRA_F = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], np.int32)


def write_obj(path, vertices, faces, extra: str = "") -> None:
    lines = [f"v {float(x)!r} {float(y)!r} {float(z)!r}" for x, y, z in np.asarray(vertices, np.float64)]
    lines += ["f " + " ".join(str(int(i) + 1) for i in face) for face in faces]
    path.write_text(extra + "\n".join(lines) + "\n")


def write_ascii_ply(path, vertices, faces) -> None:
    header = ["ply", "format ascii 1.0", f"element vertex {len(vertices)}", "property float x", "property float y",
              "property float z", f"element face {len(faces)}", "property list uchar int vertex_indices", "end_header"]
    body = [" ".join(repr(float(c)) for c in v) for v in vertices]
    body += [f"{len(f)} " + " ".join(str(int(i)) for i in f) for f in faces]
    path.write_text("\n".join(header + body) + "\n")


def triangle_areas(vertices, indices) -> np.ndarray:
    tri = np.asarray(vertices, np.float64)[np.asarray(indices)]
    return 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)


# -- formats ---------------------------------------------------------------------------------------------------------


def test_obj_triangles_exact(tmp_path):
    path = tmp_path / "tetra.obj"
    write_obj(path, TETRA_V, TETRA_F)
    (mesh,) = load_mesh(path)
    assert mesh.vertices.dtype == np.float32 and mesh.vertices.shape == (4, 3)
    assert mesh.indices.dtype == np.int32 and mesh.indices.shape == (4, 3)
    np.testing.assert_array_equal(mesh.vertices, TETRA_V)
    np.testing.assert_array_equal(mesh.indices, TETRA_F)
    assert mesh.name == "tetra"
    assert mesh.material == Material()
    assert not mesh.dynamic


def test_obj_quads_are_triangulated(tmp_path):
    cube = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], np.float32)  # index = x + 2y + 4z
    quads = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]]
    path = tmp_path / "cube.obj"
    path.write_text("".join(f"v {x} {y} {z}\n" for x, y, z in cube) +
                    "".join("f " + " ".join(str(i + 1) for i in q) + "\n" for q in quads))
    (mesh,) = load_mesh(path)
    np.testing.assert_array_equal(mesh.vertices, cube)
    assert mesh.indices.shape == (12, 3)
    # every triangle lies in one quad, and the 12 of them cover the cube's 6 unit faces exactly
    quad_sets = [set(q) for q in quads]
    assert all(any(set(t.tolist()) <= q for q in quad_sets) for t in mesh.indices)
    np.testing.assert_allclose(triangle_areas(mesh.vertices, mesh.indices), 0.5)
    assert triangle_areas(mesh.vertices, mesh.indices).sum() == pytest.approx(6.0)


@pytest.mark.parametrize("writer", ["ascii", "binary"])
def test_ply(tmp_path, writer):
    path = tmp_path / "tetra.ply"
    if writer == "ascii":
        write_ascii_ply(path, TETRA_V, TETRA_F)
    else:
        trimesh.Trimesh(TETRA_V, TETRA_F, process=False).export(path)
    (mesh,) = load_mesh(path, name="t")
    np.testing.assert_array_equal(mesh.vertices, TETRA_V)
    np.testing.assert_array_equal(mesh.indices, TETRA_F)
    assert mesh.name == "t"


def test_stl_keeps_three_vertices_per_triangle(tmp_path):
    path = tmp_path / "tetra.stl"
    trimesh.Trimesh(TETRA_V, TETRA_F, process=False).export(path)
    (mesh,) = load_mesh(path)
    assert mesh.vertices.shape == (12, 3) and mesh.indices.shape == (4, 3)
    # the same four triangles, corner for corner
    np.testing.assert_array_equal(mesh.vertices[mesh.indices], TETRA_V[TETRA_F])


def test_glb_scene_graph_is_flattened_with_node_transforms(tmp_path):
    geometry = trimesh.Trimesh(TETRA_V, TETRA_F, process=False)
    scene = trimesh.Scene()
    move = np.eye(4)
    move[:3, 3] = (10.0, 0.0, -2.0)
    turn = np.array([[0.0, -1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 5.0], [0.0, 0.0, 0.0, 1.0]])
    scene.add_geometry(geometry, node_name="moved", geom_name="tetra", transform=move)
    scene.add_geometry(geometry, node_name="turned", geom_name="tetra", transform=turn)
    path = tmp_path / "two.glb"
    scene.export(path)
    meshes = load_mesh(path, name="pair")
    by_name = {m.name.split("/")[0]: m for m in meshes}
    assert sorted(by_name) == ["pair:moved", "pair:turned"]
    np.testing.assert_allclose(by_name["pair:moved"].vertices, TETRA_V + (10.0, 0.0, -2.0), atol=1e-6)
    expected = TETRA_V @ turn[:3, :3].T + turn[:3, 3]
    np.testing.assert_allclose(by_name["pair:turned"].vertices, expected, atol=1e-6)
    for mesh in meshes:
        np.testing.assert_array_equal(mesh.indices, TETRA_F)
        assert mesh.vertices.dtype == np.float32 and mesh.indices.dtype == np.int32


def test_user_transform_applies_after_node_transforms(tmp_path):
    geometry = trimesh.Trimesh(TETRA_V, TETRA_F, process=False)
    scene = trimesh.Scene()
    node = np.eye(4)
    node[:3, 3] = (1.0, 2.0, 3.0)
    scene.add_geometry(geometry, node_name="n", transform=node)
    path = tmp_path / "one.glb"
    scene.export(path)
    scale = np.diag([2.0, 2.0, 2.0, 1.0])
    (mesh,) = load_mesh(path, transform=scale)
    # scale(node(v)) = 2 v + 2 (1, 2, 3), not node(scale(v)) = 2 v + (1, 2, 3)
    np.testing.assert_allclose(mesh.vertices, 2 * TETRA_V + (2.0, 4.0, 6.0), atol=1e-6)


def test_transform_3x4_and_material(tmp_path):
    path = tmp_path / "tetra.obj"
    write_obj(path, TETRA_V, TETRA_F)
    matrix = np.array([[0.0, 0.0, 1.0, 0.5], [0.0, 1.0, 0.0, -1.0], [-1.0, 0.0, 0.0, 0.0]])  # 90 degrees about y
    glow = Material(reflectance=(0.0, 0.0, 0.0), emission=(3.0, 2.0, 1.0), two_sided=True)
    (mesh,) = load_mesh(path, glow, matrix)
    np.testing.assert_allclose(mesh.vertices, TETRA_V @ matrix[:, :3].T + matrix[:, 3], atol=1e-7)
    assert mesh.material == glow


# -- bad input ----------------------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_mesh(tmp_path / "nope.obj")


@pytest.mark.parametrize("name", ["model.fbx", "model", "model.obj.gz"])
def test_unsupported_format(tmp_path, name):
    path = tmp_path / name
    path.write_text("x")
    with pytest.raises(ValueError, match="unsupported mesh format"):
        load_mesh(path)


def test_format_check_comes_before_the_existence_check(tmp_path):
    with pytest.raises(ValueError, match="unsupported mesh format '.3ds'"):
        check_mesh_path(tmp_path / "missing.3ds")


def test_mesh_suffixes():
    assert MESH_SUFFIXES == (".obj", ".ply", ".glb", ".gltf", ".stl")


def test_directory_is_not_a_mesh(tmp_path):
    folder = tmp_path / "dir.obj"
    folder.mkdir()
    with pytest.raises(ValueError, match="not a file"):
        load_mesh(folder)


def test_points_only_ply_has_no_triangles(tmp_path):
    path = tmp_path / "points.ply"
    write_ascii_ply(path, TETRA_V, [])
    with pytest.raises(ValueError, match="no triangles"):
        load_mesh(path)


def test_obj_without_faces_has_no_triangles(tmp_path):
    path = tmp_path / "points.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    with pytest.raises(ValueError, match="contains no faces"):
        load_mesh(path)


def test_non_finite_vertices(tmp_path):
    path = tmp_path / "nan.ply"
    bad = TETRA_V.copy()
    bad[2, 1] = np.nan
    write_ascii_ply(path, bad, TETRA_F)
    with pytest.raises(ValueError, match=r"NaN or Inf \(first at vertex 2\b") as info:
        load_mesh(path)
    assert str(info.value).startswith(f"{str(path)!r} (node ")  # the file and the node come first


def test_garbage_file_is_a_value_error(tmp_path):
    path = tmp_path / "broken.glb"
    path.write_bytes(b"this is not a glTF container at all" * 4)
    with pytest.raises(ValueError, match="broken.glb: not a GLB file: magic b'this'"):
        load_mesh(path)


def test_garbage_ply_is_a_value_error(tmp_path):
    path = tmp_path / "broken.ply"
    path.write_bytes(b"this is not a PLY file at all" * 4)
    with pytest.raises(ValueError, match="cannot read mesh file"):
        load_mesh(path)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [(np.eye(3), "3x4 or 4x4"), (np.zeros((3, 4)), "singular"), (np.full((4, 4), np.nan), "NaN or Inf"),
     (np.ones((4, 4)), "last row")],
)
def test_bad_transform(tmp_path, matrix, message):
    path = tmp_path / "tetra.obj"
    write_obj(path, TETRA_V, TETRA_F)
    with pytest.raises(ValueError, match=message):
        load_mesh(path, transform=matrix)


def test_missing_trimesh_names_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "tetra.ply"
    write_ascii_ply(path, TETRA_V, TETRA_F)
    monkeypatch.setitem(sys.modules, "trimesh", None)  # makes `import trimesh` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'optixasync\[mesh\]'") as info:
        load_mesh(path)
    assert isinstance(info.value, MissingExtraError)
    assert (info.value.package, info.value.extra) == ("trimesh", "mesh")


def test_obj_and_gltf_need_no_trimesh_and_open_no_material_file(tmp_path, monkeypatch):
    """One reader per format: OBJ and glTF go through the project's readers, which open no MTL or image here."""
    obj = tmp_path / "tetra.obj"
    (tmp_path / "missing.mtl").unlink(missing_ok=True)
    obj.write_text("mtllib missing.mtl\nusemtl red\n" + "".join(f"v {x} {y} {z}\n" for x, y, z in TETRA_V)
                   + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in TETRA_F))
    monkeypatch.setitem(sys.modules, "trimesh", None)
    glow = Material(emission=(1.0, 2.0, 3.0))
    (mesh,) = load_mesh(obj, glow)
    assert mesh.material is glow and mesh.name == "tetra" and mesh.num_triangles == len(TETRA_F)
    np.testing.assert_allclose(mesh.corners()[0], TETRA_V[TETRA_F[:, 0]], atol=1e-6)


def test_transforms_are_read_as_3x4_or_4x4_affine():
    """The one rule for every transform: a 3x4 and its 4x4 with the row 0 0 0 1 are the same transform."""
    m = as_affine([[1, 0, 0, 4], [0, 2, 0, 5], [0, 0, 3, 6]])
    assert m.dtype == np.float64 and m.shape == (3, 4)
    np.testing.assert_array_equal(m, [[1, 0, 0, 4], [0, 2, 0, 5], [0, 0, 3, 6]])
    np.testing.assert_array_equal(as_affine([[1, 0, 0, 4], [0, 2, 0, 5], [0, 0, 3, 6], [0, 0, 0, 1]]), m)


# -- placement -----------------------------------------------------------------------------------------------------


def _bounds(meshes):
    allv = np.concatenate([np.asarray(m.vertices, np.float64) for m in meshes])
    return allv.min(axis=0), allv.max(axis=0)


def test_fit_to_box_scales_uniformly_and_centres(tmp_path):
    path = tmp_path / "tetra.obj"
    write_obj(path, TETRA_V, TETRA_F)  # extents 1 x 2 x 3
    meshes = load_mesh(path)
    fitted = fit_to_box(meshes, center=(0.1, -0.2, 0.3), size=1.5)
    lo, hi = _bounds(fitted)
    np.testing.assert_allclose(hi - lo, [0.5, 1.0, 1.5], atol=1e-6)  # proportions kept, largest side 1.5
    np.testing.assert_allclose((lo + hi) / 2, [0.1, -0.2, 0.3], atol=1e-6)
    np.testing.assert_array_equal(fitted[0].indices, meshes[0].indices)
    assert fitted[0].material == meshes[0].material and fitted[0].name == meshes[0].name
    np.testing.assert_array_equal(meshes[0].vertices, TETRA_V)  # the input is not modified


def test_fit_matrix_floor():
    mesh = load_mesh_from_arrays(TETRA_V + 7.0)
    matrix = fit_matrix([mesh], center=(0.0, 0.0, 0.0), size=0.6, floor=-1.0)
    moved = TETRA_V.astype(np.float64) + 7.0
    moved = moved @ matrix[:3, :3].T + matrix[:3, 3]
    assert moved[:, 1].min() == pytest.approx(-1.0)
    assert (moved.max(axis=0) - moved.min(axis=0)).max() == pytest.approx(0.6)
    assert (moved.max(axis=0) + moved.min(axis=0))[[0, 2]] == pytest.approx([0.0, 0.0], abs=1e-12)


def load_mesh_from_arrays(vertices):
    from optixasync.scene import Mesh

    return Mesh(np.asarray(vertices, np.float32), TETRA_F)


def test_fit_rejects_degenerate_input():
    with pytest.raises(ValueError, match="coincide"):
        fit_matrix([load_mesh_from_arrays(np.zeros((4, 3)))])
    with pytest.raises(ValueError, match="positive"):
        fit_matrix([load_mesh_from_arrays(TETRA_V)], size=0.0)
    with pytest.raises(ValueError, match="at least one vertex"):
        fit_matrix([])


def test_cornell_room_drops_the_blocks_only():
    full = cornell_box()
    room = cornell_room()

    def same(a, b):
        va, vb = np.asarray(a.vertices), np.asarray(b.vertices)
        return va.shape == vb.shape and np.array_equal(va, vb) and a.material == b.material

    kept = [m for m in full.meshes if any(same(m, r) for r in room.meshes)]
    dropped = [m for m in full.meshes if not any(same(m, r) for r in room.meshes)]
    assert len(kept) == len(room.meshes) and dropped, "cornell_room should keep some meshes and drop the blocks"
    for mesh in dropped:  # the removed meshes stand inside the room and do not emit
        v = np.asarray(mesh.vertices, np.float64)
        assert (np.abs(v).max(axis=1) < 0.98).any(), mesh.name
        assert not any(float(c) > 0 for c in mesh.material.emission)
    for mesh in kept:  # walls (every vertex on a wall) or the light
        v = np.asarray(mesh.vertices, np.float64)
        emits = any(float(c) > 0 for c in mesh.material.emission)
        assert emits or (np.abs(v).max(axis=1) >= 0.98).all(), mesh.name
    assert any(any(float(c) > 0 for c in m.material.emission) for m in room.meshes), "the light went missing"
    np.testing.assert_allclose(room.camera.eye, full.camera.eye)


def test_load_into_cornell_box(tmp_path):
    path = tmp_path / "tetra.ply"
    write_ascii_ply(path, TETRA_V * 40.0, TETRA_F)  # a large model, in other units
    scene = load_into_cornell_box(path, size=1.2)
    room = cornell_room()
    assert len(scene.meshes) == len(room.meshes) + 1
    model = scene.meshes[-1]
    assert model.material.two_sided  # model files mix windings: both sides reflect by default
    lo, hi = _bounds([model])
    assert (hi - lo).max() == pytest.approx(1.2, abs=1e-6)
    assert lo[1] == pytest.approx(-1.0 + 1e-3, abs=1e-6)  # standing on the floor
    assert (np.abs(lo) < 1).all() and (np.abs(hi) < 1).all()
    with pytest.raises(ValueError, match="size"):
        load_into_cornell_box(path, size=2.5)
