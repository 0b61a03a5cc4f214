"""The material scene and its procedural sky and textures: what they hold, that they are deterministic, and framed."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.scene import Environment, Scene, material_scene
from optixasync.scene.demo import SUN_DIRECTION, bumps_normal_map, checker_texture, leaf_texture, material_environment


@pytest.fixture(scope="module")
def scene() -> Scene:
    return material_scene(subdivisions=2)


def test_the_grid_holds_every_material_in_order(scene):
    names = [m.name for m in scene.meshes]
    assert names[0] == "ground" and names[-1] == "area light" and len(names) == 17
    materials = [m.material for m in scene.meshes[1:-1]]
    assert [m.bsdf for m in materials[:5]] == ["diffuse"] + ["conductor"] * 4
    assert [m.alpha for m in materials[1:5]] == [0.0, 0.05, 0.2, 0.5]
    assert [(m.bsdf, m.alpha) for m in materials[5:8]] == [("dielectric", 0.0), ("dielectric", 0.2), ("plastic", 0.1)]
    assert materials[8].reflectance_texture is not None and materials[9].normal_texture is not None
    assert materials[10].alpha_mode == "mask" and materials[10].two_sided
    assert [(m.metallic, m.roughness) for m in materials[11:]] == [(1.0, 0.2), (1.0, 0.6), (0.0, 0.2), (0.0, 0.6)]
    assert scene.emitters == [16]


def test_the_scene_is_deterministic(scene):
    again = material_scene(subdivisions=2)
    for a, b in zip(scene.meshes, again.meshes, strict=True):
        np.testing.assert_array_equal(a.vertices, b.vertices)
    np.testing.assert_array_equal(scene.environment.image, again.environment.image)


def test_the_camera_sees_every_object_and_the_light_faces_the_grid(scene):
    size = 512
    for mesh in scene.meshes[1:-1]:
        lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        pixels = scene.camera.project(corners, size, size)
        assert (pixels >= 0).all() and (pixels <= size).all(), mesh.name
    light = scene.meshes[-1]
    to_grid = -light.vertices.mean(axis=0)
    assert light.face_normals()[0] @ (to_grid / np.linalg.norm(to_grid)) > 0.9


def test_the_sky_is_brightest_at_the_sun_and_dark_below_the_horizon():
    env = material_environment(256)
    assert isinstance(env, Environment) and env.image.shape == (129, 256, 3)
    row, col = np.unravel_index(np.argmax(env.image.sum(axis=2)), env.image.shape[:2])
    theta, phi = np.pi * row / 128, 2 * np.pi * (col + 0.5) / 256  # the Environment's texel directions
    d = np.array([np.sin(phi) * np.sin(theta), np.cos(theta), -np.cos(phi) * np.sin(theta)])
    assert d @ np.asarray(SUN_DIRECTION) > np.cos(np.radians(3.0))
    assert env.image[-1].max() < 0.2 and env.image[0].min() > 0.05


def test_the_textures():
    checker = checker_texture()
    assert checker.srgb and checker.shape == (128, 256, 3)
    normals = bumps_normal_map().data.astype(np.float64) / 255.0 * 2.0 - 1.0
    np.testing.assert_allclose(np.linalg.norm(normals, axis=-1), 1.0, atol=0.02)
    assert (normals[..., 2] > 0.5).all() and normals[..., 0].min() < -0.3 and normals[..., 0].max() > 0.3
    leaf = leaf_texture()
    alpha = leaf.data[..., 3]
    assert leaf.shape == (256, 256, 4) and set(np.unique(alpha)) == {0, 255}
    assert 0.15 < (alpha == 255).mean() < 0.5
