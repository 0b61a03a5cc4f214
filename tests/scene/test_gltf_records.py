"""What the glTF reader keeps beside the meshes, as plain host data: vertex colours, lights, orthographic cameras,
node animations, and every extension's JSON. The expected values are the specification's.

CPU only; every file is written here.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from optixasync.scene import (
    WATTS_PER_LUMEN,
    DirectionalLight,
    GltfAnimation,
    GltfLight,
    Mesh,
    PointLight,
    SpotLight,
    load_gltf,
    read_gltf,
)
from optixasync.testing import GltfBuilder

TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)


def quaternion(axis, angle):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return [*(axis * math.sin(angle / 2)), math.cos(angle / 2)]


def rotation_y(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def coloured(g, colors, **accessor):
    position = g.accessor(TRIANGLE)
    color = g.accessor(colors, **accessor)
    mesh = g.add("meshes", {"primitives": [{"attributes": {"POSITION": position, "COLOR_0": color}}]})
    g.scene(g.node(mesh=mesh))
    return g


# -- vertex colours ------------------------------------------------------------------------------------------------


def test_color_0_float_rgb_gets_an_opaque_alpha(tmp_path):
    colors = np.array([[1, 0, 0], [0, 0.5, 0], [0.25, 0.25, 1]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # vertex colours are read now: no warning
        (mesh,) = load_gltf(coloured(GltfBuilder(), colors).write_glb(tmp_path / "c.glb")).meshes
    assert mesh.colors.dtype == np.float32 and mesh.colors.shape == (3, 4)
    np.testing.assert_array_equal(mesh.colors[:, :3], colors)
    np.testing.assert_array_equal(mesh.colors[:, 3], 1.0)


@pytest.mark.parametrize("dtype, top", [(np.uint8, 255), (np.uint16, 65535)])
def test_color_0_normalized_integers_rgba(tmp_path, dtype, top):
    raw = np.array([[top, 0, 0, top], [0, top, 0, top // 2], [0, 0, top, 0]], dtype)
    (mesh,) = load_gltf(coloured(GltfBuilder(), raw, normalized=True).write_glb(tmp_path / "c.glb")).meshes
    np.testing.assert_allclose(mesh.colors, raw / top, rtol=0, atol=1e-7)  # glTF: c / (2^n - 1)


def test_color_0_of_unnormalized_integers_is_refused(tmp_path):
    g = coloured(GltfBuilder(), np.array([[255, 0, 0]] * 3, np.uint8))
    with pytest.raises(ValueError, match="COLOR_0 must be float, or normalized unsigned bytes or shorts"):
        load_gltf(g.write_glb(tmp_path / "c.glb"))


def test_mesh_colors_from_python_are_validated_and_kept_by_transforms():
    colors = np.array([[0.1, 0.2, 0.3], [1, 1, 1], [0, 0, 0]])
    mesh = Mesh(TRIANGLE.copy(), np.array([[0, 1, 2]], np.int32), colors=colors)
    assert mesh.colors.shape == (3, 4) and mesh.colors.dtype == np.float32
    moved = mesh.transformed(np.diag([2.0, 2.0, 2.0, 1.0]))
    np.testing.assert_array_equal(moved.colors, mesh.colors)
    for bad, match in ((np.ones((2, 3)), r"shape \(3, 3\) or \(3, 4\)"), (np.full((3, 3), np.nan), "NaN or Inf"),
                       (-np.ones((3, 4)), ">= 0"), (np.ones((3, 3), np.int32), "float dtype")):
        with pytest.raises(ValueError, match=match):
            Mesh(TRIANGLE.copy(), np.array([[0, 1, 2]], np.int32), colors=bad)


# -- KHR_lights_punctual -------------------------------------------------------------------------------------------


def lights_file(tmp_path, lights, nodes):
    g = GltfBuilder()
    mesh = g.mesh(TRIANGLE)
    g.doc["extensionsUsed"] = ["KHR_lights_punctual"]
    g.doc["extensions"] = {"KHR_lights_punctual": {"lights": lights}}
    roots = [g.node(mesh=mesh)] + [g.node(**node) for node in nodes]
    g.scene(*roots)
    return g.write_glb(tmp_path / "lights.glb")


def light_node(index, **node):
    return {"extensions": {"KHR_lights_punctual": {"light": index}}, **node}


def test_point_spot_and_directional_lights_with_their_world_transforms(tmp_path):
    lights = [{"type": "point", "color": [1.0, 0.5, 0.25], "intensity": 40.0, "range": 12.0, "name": "bulb"},
              {"type": "spot", "intensity": 500.0, "spot": {"innerConeAngle": 0.2, "outerConeAngle": 0.6}},
              {"type": "directional", "intensity": 3.0, "range": 5.0},
              {"type": "spot"}]
    turn = quaternion([0, 1, 0], math.pi / 2)  # a quarter turn about +y: the node's -z becomes -x
    path = lights_file(tmp_path, lights, [light_node(0, translation=[1, 2, 3]),
                                          light_node(1, translation=[0, 5, 0], rotation=turn),
                                          light_node(2, rotation=quaternion([1, 0, 0], -math.pi / 2)),
                                          light_node(3)])
    with pytest.warns(UserWarning, match=r"light 0 \('bulb'\) has range 12.0: not applied") as record:
        asset = read_gltf(path)
    assert len(record) == 1  # once per file: the directional light's range is not one
    point, spot, sun, default = asset.lights
    assert all(isinstance(light, GltfLight) for light in asset.lights)
    assert (point.type, point.name, point.color, point.intensity, point.range) == ("point", "bulb",
                                                                                  (1.0, 0.5, 0.25), 40.0, 12.0)
    np.testing.assert_allclose(point.position, [1, 2, 3])
    assert point.inner_cone_angle is None and point.outer_cone_angle is None
    assert (spot.type, spot.color, spot.range) == ("spot", (1.0, 1.0, 1.0), None)  # white, infinite by default
    assert (spot.inner_cone_angle, spot.outer_cone_angle) == (0.2, 0.6)
    np.testing.assert_allclose(spot.position, [0, 5, 0])
    np.testing.assert_allclose(spot.direction, [-1, 0, 0], atol=1e-12)
    assert sun.type == "directional" and sun.range is None  # range is not for directional lights
    np.testing.assert_allclose(sun.direction, [0, -1, 0], atol=1e-12)  # -z turned down by -90 degrees about x
    assert (default.intensity, default.inner_cone_angle, default.outer_cone_angle) == (1.0, 0.0, math.pi / 4)
    assert asset.json["extensions"]["KHR_lights_punctual"]["lights"][0]["name"] == "bulb"  # the JSON stays
    # The scene's lights: colour * intensity / 683 (candela -> W/sr, lux -> W/m^2), placed by their nodes.
    bulb, cone, distant, plain = asset.to_scene().lights
    assert isinstance(bulb, PointLight) and isinstance(cone, SpotLight) and isinstance(distant, DirectionalLight)
    np.testing.assert_allclose(bulb.intensity, np.array([1.0, 0.5, 0.25]) * 40.0 / 683.0, rtol=1e-12)
    np.testing.assert_allclose(bulb.position, [1, 2, 3])
    np.testing.assert_allclose(cone.intensity, [500.0 / 683.0] * 3, rtol=1e-12)
    assert (cone.inner_angle, cone.outer_angle) == (0.2, 0.6)
    np.testing.assert_allclose(cone.direction, [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(distant.irradiance, [3.0 / 683.0] * 3, rtol=1e-12)
    np.testing.assert_allclose(distant.direction, [0, -1, 0], atol=1e-12)
    assert (plain.inner_angle, plain.outer_angle) == (0.0, math.pi / 4)
    assert WATTS_PER_LUMEN == 1.0 / 683.0
    # light_scale=1 reads candela and lux as the renderer's units (a viewer's exposure 1)
    with pytest.warns(UserWarning, match="has range"):
        raw = load_gltf(path, light_scale=1.0).lights
    np.testing.assert_allclose(raw[0].intensity, [40.0, 20.0, 10.0])
    with pytest.raises(ValueError, match="light scale must be a finite number >= 0"):
        asset.scene_lights(-1.0)


def test_a_light_under_a_parent_uses_the_world_matrix(tmp_path):
    g = GltfBuilder()
    g.doc["extensions"] = {"KHR_lights_punctual": {"lights": [{"type": "point"}]}}
    child = g.node(**light_node(0, translation=[1, 0, 0]))
    g.scene(g.node(mesh=g.mesh(TRIANGLE)), g.node(translation=[0, 0, 10], scale=[2, 2, 2], children=[child]))
    (light,) = read_gltf(g.write_glb(tmp_path / "l.glb")).lights
    np.testing.assert_allclose(light.position, [2, 0, 10])


@pytest.mark.parametrize("light, match", [
    ({"type": "area"}, "type must be point, spot or directional"),
    ({"type": "spot", "spot": {"innerConeAngle": 0.7, "outerConeAngle": 0.6}}, "innerConeAngle < outerConeAngle"),
    ({"type": "spot", "spot": {"outerConeAngle": 2.0}}, r"outerConeAngle <= pi/2"),
    ({"type": "point", "intensity": -1}, "intensity must be >= 0"),
    ({"type": "point", "color": [2, 0, 0]}, r"color must be 3 numbers in \[0, 1\]"),
    ({"type": "point", "range": 0}, "range must be positive"),
])
def test_bad_lights_name_the_light(tmp_path, light, match):
    path = lights_file(tmp_path, [light], [light_node(0)])
    with pytest.raises(ValueError, match=rf"KHR_lights_punctual light 0 .*{match}"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read_gltf(path)


def test_a_light_index_out_of_range(tmp_path):
    path = lights_file(tmp_path, [{"type": "point"}], [light_node(3)])
    with pytest.raises(ValueError, match="light 3 is out of range: the file has 1 lights"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the extension's warning comes first
        read_gltf(path)


# -- cameras -------------------------------------------------------------------------------------------------------


def test_an_orthographic_camera_becomes_a_camera_with_its_data(tmp_path):
    g = GltfBuilder()
    g.add("cameras", {"type": "orthographic", "name": "plan",
                      "orthographic": {"xmag": 2.5, "ymag": 1.5, "znear": 0.01, "zfar": 100.0}})
    g.add("cameras", {"type": "perspective", "perspective": {"yfov": 0.7, "znear": 0.1, "zfar": 50.0}})
    g.add("cameras", {"type": "orthographic", "orthographic": {"xmag": -2.0, "ymag": 1.0, "znear": 0, "zfar": 9}})
    g.scene(g.node(mesh=g.mesh(TRIANGLE)), g.node(camera=0, translation=[0, 0, 5]), g.node(camera=1),
            g.node(camera=2))
    path = g.write_glb(tmp_path / "cams.glb")
    with pytest.warns(UserWarning, match="camera 2 .* negative xmag or ymag .* their magnitudes are used") as record:
        asset = read_gltf(path)
    assert len(record) == 1
    ortho, persp, mirrored = asset.cameras
    assert (ortho.projection, ortho.xmag, ortho.ymag, ortho.znear, ortho.zfar) == ("orthographic", 2.5, 1.5, 0.01,
                                                                                    100.0)
    assert ortho.yfov is None and ortho.placement == 1
    camera = ortho.camera
    assert (camera.projection, camera.xmag, camera.ymag, camera.znear, camera.zfar) == ("orthographic", 2.5, 1.5,
                                                                                        0.01, 100.0)
    np.testing.assert_allclose(camera.eye, [0, 0, 5])
    np.testing.assert_allclose(camera.target, [0, 0, 4])  # looking down its node's -z
    np.testing.assert_allclose(ortho.matrix[:3, 3], [0, 0, 5])
    assert (persp.projection, persp.znear, persp.zfar, persp.xmag) == ("perspective", 0.1, 50.0, None)
    assert (mirrored.camera.xmag, mirrored.xmag) == (2.0, -2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_gltf(path).camera == camera  # the first camera node, whatever its projection
        assert load_gltf(path, camera=1).camera.fov == pytest.approx(math.degrees(0.7))
        assert load_gltf(path, camera="plan").camera.orthographic


@pytest.mark.parametrize("params, match", [({"xmag": 0, "ymag": 1, "znear": 0, "zfar": 1}, "finite and not zero"),
                                           ({"xmag": 1, "ymag": 1, "znear": 2, "zfar": 1}, "0 <= znear < zfar")])
def test_bad_orthographic_cameras(tmp_path, params, match):
    g = GltfBuilder()
    g.add("cameras", {"type": "orthographic", "orthographic": params})
    g.scene(g.node(mesh=g.mesh(TRIANGLE)), g.node(camera=0))
    with pytest.raises(ValueError, match=match):
        read_gltf(g.write_glb(tmp_path / "bad.glb"))


# -- animations ----------------------------------------------------------------------------------------------------


def animated(tmp_path, channels, *, node=None, parent=None):
    """A triangle node (optionally under a parent) animated by ``channels``: (path, times, values, interpolation)."""
    g = GltfBuilder()
    target = g.node(mesh=g.mesh(TRIANGLE), **(node or {}))
    g.scene(g.node(children=[target], **parent) if parent is not None else target)
    samplers, chans = [], []
    for path, times, values, interpolation in channels:
        samplers.append({"input": g.accessor(np.asarray(times, np.float32)),
                         "output": g.accessor(np.asarray(values, np.float32)), "interpolation": interpolation})
        chans.append({"sampler": len(samplers) - 1, "target": {"node": target, "path": path}})
    g.add("animations", {"name": "move", "samplers": samplers, "channels": chans})
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        asset = read_gltf(g.write_glb(tmp_path / "anim.glb"))
    assert not record  # animations play now (GltfAsset.animated_scene): nothing to warn about
    return asset, target


def test_linear_translation_holds_before_and_after_its_keyframes(tmp_path):
    asset, node = animated(tmp_path, [("translation", [1.0, 3.0], [[0, 0, 0], [4, -2, 8]], "LINEAR")])
    (animation,) = asset.animations
    assert isinstance(animation, GltfAnimation) and animation.name == "move"
    assert (animation.start, animation.end, animation.nodes) == (1.0, 3.0, [node])
    for time, expected in ((0.0, [0, 0, 0]), (1.0, [0, 0, 0]), (2.5, [3, -1.5, 6]), (3.0, [4, -2, 8]),
                           (9.0, [4, -2, 8])):
        np.testing.assert_allclose(animation.sample(time)[node][:3, 3], expected, atol=1e-6)
    np.testing.assert_array_equal(asset.instances[0].matrix, np.eye(4))  # the rest pose is what is rendered


def test_step_interpolation_jumps_at_keyframes(tmp_path):
    asset, node = animated(tmp_path, [("scale", [0.0, 1.0, 2.0], [[1, 1, 1], [2, 2, 2], [3, 3, 3]], "STEP")])
    sample = asset.animations[0].sample
    np.testing.assert_allclose(np.diag(sample(0.99)[node])[:3], [1, 1, 1])
    np.testing.assert_allclose(np.diag(sample(1.0)[node])[:3], [2, 2, 2])
    np.testing.assert_allclose(np.diag(sample(1.7)[node])[:3], [2, 2, 2])


def test_linear_rotation_is_a_slerp_on_the_shorter_arc(tmp_path):
    start, end = quaternion([0, 1, 0], 0.0), quaternion([0, 1, 0], math.pi / 2)
    end_far = [-c for c in end]  # the same rotation written with the other sign: still the short way round
    asset, node = animated(tmp_path, [("rotation", [0.0, 1.0], [start, end_far], "LINEAR")])
    np.testing.assert_allclose(asset.animations[0].sample(0.5)[node][:3, :3], rotation_y(math.pi / 4), atol=1e-6)
    np.testing.assert_allclose(asset.animations[0].sample(0.25)[node][:3, :3], rotation_y(math.pi / 8), atol=1e-6)


def test_cubic_spline_follows_the_hermite_formula(tmp_path):
    times = [0.0, 2.0]
    # per keyframe: in-tangent, value, out-tangent
    values = [[9, 9, 9], [0, 0, 0], [1, 0, 3], [-2, 4, 1], [10, 20, 30], [7, 7, 7]]
    asset, node = animated(tmp_path, [("translation", times, values, "CUBICSPLINE")])
    v0, b0 = np.array(values[1]), np.array(values[2])
    a1, v1 = np.array(values[3]), np.array(values[4])
    t, span = 0.25, 2.0  # time 0.5 of an interval of 2 s
    expected = ((2 * t**3 - 3 * t**2 + 1) * v0 + span * (t**3 - 2 * t**2 + t) * b0
                + (-2 * t**3 + 3 * t**2) * v1 + span * (t**3 - t**2) * a1)
    np.testing.assert_allclose(asset.animations[0].sample(0.5)[node][:3, 3], expected, rtol=1e-6)
    np.testing.assert_allclose(asset.animations[0].sample(5.0)[node][:3, 3], v1)  # the last value, not a tangent


def test_pose_gives_the_instances_world_matrices(tmp_path):
    asset, node = animated(tmp_path, [("translation", [0.0, 1.0], [[0, 0, 0], [2, 0, 0]], "LINEAR")],
                           node={"scale": [3, 3, 3]}, parent={"translation": [0, 10, 0]})
    (matrix,) = asset.pose(0.5)
    expected = np.eye(4)
    expected[:3, :3] *= 3  # the animation replaces the translation only; the node's scale stays
    expected[:3, 3] = [1, 10, 0]  # under the parent's translation
    np.testing.assert_allclose(matrix, expected, atol=1e-12)
    np.testing.assert_allclose(asset.pose(0.0, "move")[0], asset.instances[0].matrix)
    with pytest.raises(ValueError, match="no animation 'walk'"):
        asset.pose(0.0, "walk")


@pytest.mark.parametrize("times, values, interpolation, match", [
    ([0.0, 0.0], [[0, 0, 0], [1, 1, 1]], "LINEAR", "strictly increasing"),
    ([0.0, 1.0], [[0, 0, 0]], "LINEAR", "1 output values for 2 keyframes"),
    ([0.0, 1.0], [[0, 0, 0], [1, 1, 1]], "CUBICSPLINE", r"CUBICSPLINE needs 6"),
    ([0.0, 1.0], [[0, 0, 0], [1, 1, 1]], "SMOOTH", "interpolation must be LINEAR, STEP or CUBICSPLINE"),
])
def test_bad_samplers_name_the_animation(tmp_path, times, values, interpolation, match):
    with pytest.raises(ValueError, match=rf"animation 0 \('move'\) channel 0 .*{match}"):
        animated(tmp_path, [("translation", times, values, interpolation)])


def test_skins_morph_targets_and_weight_channels_warn_once(tmp_path):
    g = GltfBuilder()
    position = g.accessor(TRIANGLE)
    mesh = g.add("meshes", {"primitives": [{"attributes": {"POSITION": position}, "targets": [{"POSITION": position}]},
                                           {"attributes": {"POSITION": position}, "targets": [{"POSITION": position}]}]})
    a, b = g.node(mesh=mesh, skin=0), g.node(mesh=mesh, skin=0)
    g.add("skins", {"joints": [a]})
    g.scene(a, b)
    times = g.accessor(np.array([0.0, 1.0], np.float32))
    weights = g.accessor(np.array([0.0, 1.0], np.float32))
    g.add("animations", {"samplers": [{"input": times, "output": weights}],
                         "channels": [{"sampler": 0, "target": {"node": a, "path": "weights"}},
                                      {"sampler": 0, "target": {"node": b, "path": "weights"}}]})
    with pytest.warns(UserWarning) as record:
        asset = read_gltf(g.write_glb(tmp_path / "skinned.glb"))
    messages = [str(w.message) for w in record]
    for topic in ("skins are not supported", "morph targets (first on", "morph target weights: ignored"):
        assert sum(topic in m for m in messages) == 1, (topic, messages)
    assert asset.animations[0].channels == ()
    assert len(asset.instances) == 4
