"""The pinhole camera: basis, field of view along the smaller axis, projection, and its inverse."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optixasync.scene import Camera


def test_basis_of_the_cornell_camera():
    cam = Camera((0, 0, 3.9), (0, 0, 0))
    eye, u, v, w = cam.basis(512, 512)
    t = math.tan(math.radians(39.3077) / 2)
    np.testing.assert_allclose(eye, [0, 0, 3.9])
    np.testing.assert_allclose(w, [0, 0, -1])
    np.testing.assert_allclose(u, [t, 0, 0], atol=1e-15)
    np.testing.assert_allclose(v, [0, t, 0], atol=1e-15)


@pytest.mark.parametrize("width, height", [(640, 480), (480, 640), (100, 100), (1, 7)])
def test_fov_spans_the_smaller_axis(width, height):
    cam = Camera((1, 2, 3), (-2, 0.5, -1), up=(0.1, 1, 0), fov=50.0)
    eye, u, v, w = cam.basis(width, height)
    assert abs(u @ v) < 1e-12 and abs(u @ w) < 1e-12 and abs(v @ w) < 1e-12
    assert np.linalg.norm(w) == pytest.approx(1.0)
    assert np.dot(np.cross(u, v), -w) > 0  # right-handed: x right, y up, looking along -z of the camera
    t = math.tan(math.radians(50.0) / 2)
    small, large = (np.linalg.norm(v), np.linalg.norm(u)) if width >= height else (np.linalg.norm(u), np.linalg.norm(v))
    assert small == pytest.approx(t)
    assert large == pytest.approx(t * max(width, height) / min(width, height))
    assert (u @ np.array(cam.up)) == pytest.approx(0.0, abs=1e-12)
    assert v @ np.array(cam.up) > 0


def test_project_known_points():
    cam = Camera((0, 0, 3.9), (0, 0, 0))
    t = math.tan(math.radians(39.3077) / 2)
    # the target is the image centre; a point at the edge of the field of view is the image's edge
    points = [[0, 0, 0], [3.9 * t, 0, 0], [0, 3.9 * t, 0], [-3.9 * t, -3.9 * t, 0], [0, 0, 5.0]]
    p = cam.project(points, 200, 100)
    np.testing.assert_allclose(p[0], [100, 50])
    np.testing.assert_allclose(p[1], [100 + 50, 50])  # the width is 2x the height: tan spans 2x along x
    np.testing.assert_allclose(p[2], [100, 0], atol=1e-12)  # top edge: row 0 is the top
    np.testing.assert_allclose(p[3], [50, 100])
    assert np.isnan(p[4]).all()  # behind the camera


def test_ray_directions_and_project_are_inverse():
    cam = Camera((0.3, -0.2, 2.0), (0.1, 0.4, -1.0), up=(0.2, 1.0, 0.1), fov=60.0)
    rng = np.random.default_rng(1)
    pixels = rng.uniform(0, [320, 240], size=(100, 2))
    d = cam.ray_directions(pixels, 320, 240)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0)
    points = np.asarray(cam.eye) + d * rng.uniform(0.5, 10, size=(100, 1))
    np.testing.assert_allclose(cam.project(points, 320, 240), pixels, atol=1e-9)


def test_pixel_corners_match_the_kernel_convention():
    # pixel (x, y) covers sx in [2x/w - 1, 2(x+1)/w - 1] and sy in [1 - 2(y+1)/h, 1 - 2y/h]
    cam = Camera((0, 0, 1), (0, 0, 0), fov=90.0)  # tan = 1: sx, sy are the ray's x, y at unit distance
    d = cam.ray_directions([[0, 0], [4, 2], [2, 1]], 4, 2)  # top-left corner, bottom-right corner, centre
    np.testing.assert_allclose(d[:, :2] / -d[:, 2:], [[-2, 1], [2, -1], [0, 0]], atol=1e-12)


def test_from_matrix_uses_the_opengl_convention():
    cam = Camera.from_matrix(np.eye(4))
    assert cam.eye == (0, 0, 0) and cam.target == (0, 0, -1) and cam.up == (0, 1, 0)
    # a camera turned 90 degrees about y looks along -x
    c, s = 0.0, 1.0
    m = np.array([[c, 0, s, 5], [0, 1, 0, 1], [-s, 0, c, 2], [0, 0, 0, 1]], np.float64)
    cam = Camera.from_matrix(m, fov=30)
    eye, u, v, w = cam.basis(10, 10)
    np.testing.assert_allclose(eye, [5, 1, 2])
    np.testing.assert_allclose(w, [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(u / np.linalg.norm(u), [0, 0, -1], atol=1e-12)
    assert cam.fov == 30
    round_trip = Camera.look_at((1, 2, 3), (1, 2, 0))
    assert round_trip == Camera((1, 2, 3), (1, 2, 0))


@pytest.mark.parametrize("kwargs, match", [
    ({"eye": (0, 0, 0), "target": (0, 0, 0)}, "coincide"),
    ({"eye": (0, 0, 1), "target": (0, 0, 0), "up": (0, 0, 2)}, "parallel"),
    ({"eye": (0, 0, 1), "target": (0, 0, 0), "fov": 180}, "fov"),
    ({"eye": (0, 0, 1), "target": (0, 0, 0), "fov": 0}, "fov"),
    ({"eye": (0, math.nan, 1), "target": (0, 0, 0)}, "finite"),
    ({"eye": (0, 1), "target": (0, 0, 0)}, "3 components"),
])
def test_bad_camera(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Camera(**kwargs)


def test_bad_image_size():
    with pytest.raises(ValueError, match="positive"):
        Camera((0, 0, 1), (0, 0, 0)).basis(0, 10)


# -- the orthographic camera ---------------------------------------------------------------------------------------
def test_orthographic_basis_rays_and_projection():
    cam = Camera.orthographic_at((1, 2, 10), (1, 2, 0), xmag=3.0, ymag=1.5, znear=2.0, zfar=7.0)
    assert cam.orthographic and cam.projection == "orthographic"
    basis = cam.basis(40, 20)
    eye, u, v, w = basis
    assert basis.orthographic and basis.ray_length == 5.0
    np.testing.assert_allclose(eye, [1, 2, 8])  # on the near plane
    np.testing.assert_allclose(u, [3, 0, 0], atol=1e-15)  # the half width, whatever the image's aspect
    np.testing.assert_allclose(v, [0, 1.5, 0], atol=1e-15)
    pixels = [[0, 0], [20, 10], [40, 20]]
    np.testing.assert_allclose(cam.ray_directions(pixels, 40, 20), [[0, 0, -1]] * 3)
    np.testing.assert_allclose(cam.ray_origins(pixels, 40, 20), [[-2, 3.5, 8], [1, 2, 8], [4, 0.5, 8]])
    np.testing.assert_allclose(cam.project([[-2, 3.5, 5], [1, 2, 3.5]], 40, 20), [[0, 0], [20, 10]])
    # before the near plane or past the far one: not seen
    assert np.isnan(cam.project([[1, 2, 9], [1, 2, 0.5]], 40, 20)).all()
    # a pinhole's rays all leave the eye
    np.testing.assert_allclose(Camera((0, 0, 1), (0, 0, 0)).ray_origins(pixels, 40, 20), [[0, 0, 1]] * 3)
    assert not Camera((0, 0, 1), (0, 0, 0)).basis(4, 4).orthographic


def test_an_orthographic_camera_from_a_matrix_and_pickled():
    import pickle

    m = np.eye(4)
    m[:3, 3] = [0, 0, 5]
    cam = Camera.from_matrix(m, xmag=2, ymag=1, znear=0.5, zfar=math.inf)
    assert (cam.projection, cam.xmag, cam.ymag, cam.znear, cam.zfar) == ("orthographic", 2.0, 1.0, 0.5, math.inf)
    assert cam.basis(8, 4).ray_length == 1e16  # no far plane: the kernel's longest ray
    assert pickle.loads(pickle.dumps(cam)) == cam
    basis = pickle.loads(pickle.dumps(cam.basis(8, 4)))
    assert basis.orthographic and len(basis) == 4


@pytest.mark.parametrize("fields, match", [
    (dict(projection="fisheye"), "projection must be one of"),
    (dict(projection="orthographic", xmag=0.0), "xmag must be a finite number > 0"),
    (dict(projection="orthographic", ymag=-1.0), "ymag must be a finite number > 0"),
    (dict(projection="orthographic", znear=3.0, zfar=2.0), "0 <= znear < zfar"),
    (dict(projection="orthographic", znear=-1.0), "0 <= znear < zfar"),
    (dict(projection="orthographic", xmag="2"), "xmag must be a number"),
    (dict(znear=1.0), "a perspective camera takes fov"),
])
def test_bad_orthographic_cameras_are_refused(fields, match):
    with pytest.raises(ValueError, match=match):
        Camera((0, 0, 1), (0, 0, 0), **fields)
