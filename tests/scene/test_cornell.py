"""The built-in Cornell box matches the reference scene: placement, orientation, materials, camera."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.scene import cornell_box
from optixasync.scene.demo import CORNELL_COLORS, CORNELL_LIGHT_RADIANCE, CORNELL_TRANSFORMS

WALLS = ["floor", "ceiling", "back", "green_wall", "red_wall"]


@pytest.fixture(scope="module")
def scene():
    return cornell_box()


def mesh(scene, name):
    return scene.meshes[scene.find(name)]


def test_mesh_order_and_counts(scene):
    assert [m.name for m in scene.meshes] == WALLS + ["small_box", "large_box", "light"]
    assert [m.num_triangles for m in scene.meshes] == [2, 2, 2, 2, 2, 12, 12, 2]
    assert scene.emitters == [7]
    assert scene.dynamic == []
    assert all(np.linalg.det(t[:3, :3]) > 0 for t in CORNELL_TRANSFORMS.values())


@pytest.mark.parametrize("name, normal, plane", [
    ("floor", (0, 1, 0), ("y", -1.0)),
    ("ceiling", (0, -1, 0), ("y", 1.0)),
    ("back", (0, 0, 1), ("z", -1.0)),
    ("green_wall", (-1, 0, 0), ("x", 1.0)),
    ("red_wall", (1, 0, 0), ("x", -1.0)),
])
def test_walls_face_the_interior(scene, name, normal, plane):
    m = mesh(scene, name)
    np.testing.assert_allclose(m.face_normals(), [normal, normal], atol=1e-12)
    axis = "xyz".index(plane[0])
    np.testing.assert_array_equal(m.vertices[:, axis], plane[1])
    # each wall spans [-1, 1] along its other two axes
    others = [a for a in range(3) if a != axis]
    np.testing.assert_array_equal(np.sort(np.unique(m.vertices[:, others])), [-1.0, 1.0])
    # front side towards the box centre
    centroid = m.vertices.mean(axis=0)
    assert np.dot(-centroid, normal) > 0


def test_light_faces_down_under_the_ceiling(scene):
    light = mesh(scene, "light")
    np.testing.assert_allclose(light.face_normals(), [[0, -1, 0], [0, -1, 0]], atol=1e-7)
    expected = np.array([(-0.23, 0.99, -0.18), (0.23, 0.99, -0.18), (0.23, 0.99, 0.2), (-0.23, 0.99, 0.2)])
    np.testing.assert_allclose(light.vertices, expected, atol=1e-7)  # the unit square's corners, in order
    assert light.areas().sum() == pytest.approx(0.46 * 0.38, rel=1e-6)
    assert light.material.emission == CORNELL_LIGHT_RADIANCE
    assert light.material.reflectance == CORNELL_COLORS["white"]
    assert not light.material.two_sided


def test_boxes_stand_on_the_floor(scene):
    small, large = mesh(scene, "small_box"), mesh(scene, "large_box")
    assert small.vertices[:, 1].min() == pytest.approx(-1.0, abs=1e-7)
    assert small.vertices[:, 1].max() == pytest.approx(-0.4, abs=1e-7)
    assert large.vertices[:, 1].min() == pytest.approx(-1.01, abs=1e-7)  # the reference's tall box sinks 1 cm
    assert large.vertices[:, 1].max() == pytest.approx(0.21, abs=1e-7)
    # a known corner of each: (+1, +1, +1) of the unit cube
    corner = CORNELL_TRANSFORMS["small_box"] @ np.array([1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(corner[:3], [0.335 + 0.286891 - 0.0877115, -0.4, 0.38 + 0.0877115 + 0.286891])
    assert np.min(np.linalg.norm(small.vertices - corner[:3].astype(np.float32), axis=1)) < 1e-6
    for box in (small, large):
        assert np.abs(box.vertices[:, [0, 2]]).max() < 1.0  # inside the walls
        centre = box.vertices.astype(np.float64).mean(axis=0)
        v0, v1, v2 = box.corners()
        outward = np.einsum("ij,ij->i", box.face_normals(), (v0 + v1 + v2) / 3 - centre)
        assert (outward > 0).all()


def test_box_sizes_match_the_reference(scene):
    # edge lengths of the placed cubes: the columns of the transforms times 2
    for name, (sx, sy, sz) in {"small_box": (0.6, 0.6, 0.6), "large_box": (0.6, 1.22, 0.6)}.items():
        t = CORNELL_TRANSFORMS[name][:3, :3]
        np.testing.assert_allclose(2 * np.linalg.norm(t, axis=0), (sx, sy, sz), rtol=1e-5)
        assert mesh(scene, name).areas().sum() == pytest.approx(2 * (sx * sy + sy * sz + sx * sz), rel=1e-5)


def test_materials(scene):
    white, red, green = (CORNELL_COLORS[c] for c in ("white", "red", "green"))
    expected = {"floor": white, "ceiling": white, "back": white, "small_box": white, "large_box": white,
                "red_wall": red, "green_wall": green, "light": white}
    for m in scene.meshes:
        assert m.material.reflectance == expected[m.name]
        assert m.material.is_emissive == (m.name == "light")
        assert m.material.two_sided is False


def test_camera(scene):
    cam = scene.camera
    assert cam.eye == (0.0, 0.0, 3.9)
    assert cam.up == (0.0, 1.0, 0.0)
    assert cam.fov == pytest.approx(39.3077)
    np.testing.assert_allclose(np.subtract(cam.target, cam.eye) / np.linalg.norm(np.subtract(cam.target, cam.eye)),
                               [0, 0, -1])


def test_red_wall_left_green_wall_right_light_on_top(scene):
    cam = scene.camera
    red = cam.project(mesh(scene, "red_wall").vertices, 512, 512)
    green = cam.project(mesh(scene, "green_wall").vertices, 512, 512)
    assert red[:, 0].max() < 256 < green[:, 0].min()
    light_centre = cam.project([[0.0, 0.99, 0.01]], 512, 512)[0]
    assert light_centre[0] == pytest.approx(256.0, abs=1e-9)
    assert 40 < light_centre[1] < 100  # near the top of the picture (row 0 is the top)
    floor_centre = cam.project([[0.0, -1.0, 0.0]], 512, 512)[0]
    assert floor_centre[1] > 400
