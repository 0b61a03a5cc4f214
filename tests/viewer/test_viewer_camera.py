"""The orbit camera: poses as plain tuples, orbit/pan/zoom/keys, and agreement with ``optixasync.scene.Camera``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optixasync.viewer import KEYS, CameraPose, OrbitCamera, pose_from_scene_camera, to_scene_camera


def distance(a, b) -> float:
    return float(np.linalg.norm(np.subtract(a, b)))


def test_pose_round_trips_through_look_at():
    camera = OrbitCamera((1.0, 2.0, 6.0), (0.5, 0.5, 0.0), fov=33.0)
    pose = camera.pose()
    assert isinstance(pose, CameraPose)
    assert all(isinstance(v, float) for v in (*pose.eye, *pose.target, *pose.up, pose.fov))
    np.testing.assert_allclose(pose.eye, (1.0, 2.0, 6.0), atol=1e-12)
    assert pose.target == (0.5, 0.5, 0.0) and pose.up == (0.0, 1.0, 0.0) and pose.fov == 33.0


def test_orbit_keeps_distance_and_target_and_turns_by_the_drag():
    camera = OrbitCamera((0.0, 0.0, 5.0), (0.0, 0.0, 0.0))
    camera.orbit(0.5, 0.0)  # half the view height: 90 degrees about up
    eye = camera.pose().eye
    assert distance(eye, (0, 0, 0)) == pytest.approx(5.0)
    np.testing.assert_allclose(eye, (-5.0, 0.0, 0.0), atol=1e-9)
    camera.orbit(0.0, 10.0)  # pitch is clamped short of straight up
    assert camera.pitch == pytest.approx(math.radians(89.0))
    assert distance(camera.pose().eye, (0, 0, 0)) == pytest.approx(5.0)


def test_pan_moves_eye_and_target_together_in_the_image_plane():
    camera = OrbitCamera((0.0, 0.0, 5.0), (0.0, 0.0, 0.0), fov=90.0)
    before = camera.pose()
    camera.pan(0.0, 0.5)  # half the view height up the image: 0.5 * 2 * 5 * tan(45 deg) = 5
    after = camera.pose()
    np.testing.assert_allclose(np.subtract(after.target, before.target), (0.0, 5.0, 0.0), atol=1e-9)
    np.testing.assert_allclose(np.subtract(after.eye, before.eye), (0.0, 5.0, 0.0), atol=1e-9)


def test_zoom_scales_the_distance_and_stays_bounded():
    camera = OrbitCamera((0.0, 0.0, 5.0), (0.0, 0.0, 0.0))
    camera.zoom(-1.0)
    assert camera.distance == pytest.approx(5.0 / 1.1)
    for _ in range(100):
        camera.zoom(-100.0)
    assert camera.distance >= 1e-3 and math.isfinite(camera.distance)


def test_keys_move_and_reset():
    camera = OrbitCamera((0.0, 0.0, 5.0), (0.0, 0.0, 0.0))
    assert camera.key("w")
    assert camera.pose().target[2] < 0.0  # forward is -z here
    assert camera.key("arrowleft")
    assert not camera.key("f13")
    assert set(KEYS) >= {"w", "a", "s", "d", "r"}
    camera.key("r")
    np.testing.assert_allclose(camera.pose().eye, (0.0, 0.0, 5.0), atol=1e-12)


def test_z_up_world_orbits_about_z():
    camera = OrbitCamera((5.0, 0.0, 1.0), (0.0, 0.0, 1.0), up=(0.0, 0.0, 1.0))
    camera.orbit(0.25, 0.0)
    eye = camera.pose().eye
    assert eye[2] == pytest.approx(1.0)
    assert distance(eye, (0.0, 0.0, 1.0)) == pytest.approx(5.0)


def test_invalid_poses_are_refused_and_leave_the_camera_unchanged():
    camera = OrbitCamera((0.0, 0.0, 5.0), (0.0, 0.0, 0.0))
    before = camera.pose()
    with pytest.raises(ValueError):
        camera.look_at((1.0, 1.0, 1.0), (1.0, 1.0, 1.0))
    with pytest.raises(ValueError):
        camera.look_at((float("nan"), 0.0, 0.0), (0.0, 0.0, 0.0))
    assert camera.pose() == before


def test_pose_builds_an_equivalent_scene_camera():
    camera = OrbitCamera((0.0, 2.0, 7.0), (0.0, 0.5, 0.0), fov=39.3077)
    camera.orbit(0.1, -0.05)
    pose = camera.pose()
    scene_camera = to_scene_camera(pose)
    assert tuple(scene_camera.eye) == pytest.approx(pose.eye)
    assert tuple(scene_camera.target) == pytest.approx(pose.target)
    assert scene_camera.fov == pytest.approx(pose.fov)
    assert pose_from_scene_camera(scene_camera) == pose
    # the orbit camera's own image axes agree with the scene camera's basis
    _, u, v, w = scene_camera.basis(64, 64)
    forward, right, up = camera.axes()
    np.testing.assert_allclose(w, forward, atol=1e-9)
    np.testing.assert_allclose(u / np.linalg.norm(u), right, atol=1e-9)
    np.testing.assert_allclose(v / np.linalg.norm(v), up, atol=1e-9)
