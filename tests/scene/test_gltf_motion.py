"""A glTF node animation as a scene's frames: which meshes become instances, and where they are at each time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optixasync.scene import NodeAnimation, read_gltf
from optixasync.testing import GltfBuilder

TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)


def slide_file(tmp_path, *, emissive_mover=False, camera_child=False, interpolation="LINEAR"):
    """A parent node sliding along x from 0 to 4 over 2 s, a child triangle under it, a still triangle beside."""
    g = GltfBuilder()
    glow = g.add("materials", {"emissiveFactor": [1.0, 1.0, 1.0]}) if emissive_mover else None
    child = g.node(mesh=g.mesh(TRIANGLE, material=glow), translation=[0.0, 1.0, 0.0], name="child")
    children = [child]
    if camera_child:
        camera = g.add("cameras", {"type": "perspective", "perspective": {"yfov": 0.8}})
        children.append(g.node(camera=camera, translation=[0.0, 0.0, 5.0], name="eye"))
    parent = g.node(children=children, scale=[2.0, 2.0, 2.0], name="parent")
    still = g.node(mesh=g.mesh(TRIANGLE), translation=[0.0, 0.0, -3.0], name="still")
    times = g.accessor(np.array([0.0, 2.0], np.float32))
    values = g.accessor(np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 0.0]], np.float32))
    g.add("animations", {"name": "slide", "samplers": [{"input": times, "output": values,
                                                        "interpolation": interpolation}],
                         "channels": [{"sampler": 0, "target": {"node": parent, "path": "translation"}}]})
    g.scene(parent, still)
    return read_gltf(g.write_glb(tmp_path / "slide.glb"))


def test_the_moving_meshes_become_instances_placed_at_every_time(tmp_path):
    asset = slide_file(tmp_path)
    scene, motion = asset.animated_scene("slide")
    assert isinstance(motion, NodeAnimation) and (motion.start, motion.end) == (0.0, 2.0)
    assert scene.instanced == [0] and motion.moving.tolist() == [True, False]
    assert scene.meshes[1].transform is None  # nothing moves it: flattened to world space
    np.testing.assert_allclose(motion.rest[1], np.eye(3, 4))
    for time, x in ((0.0, 0.0), (0.5, 1.0), (2.0, 4.0), (9.0, 4.0)):  # the last value past the last keyframe
        transforms = motion.transforms(time)
        expected = np.array([[2.0, 0, 0, x], [0, 2.0, 0, 2.0], [0, 0, 2.0, 0]])  # the parent's scale, the child's y
        np.testing.assert_allclose(transforms[0], expected, atol=1e-12)
        np.testing.assert_allclose(transforms[1], np.eye(3, 4))
        np.testing.assert_allclose(asset.pose(time)[0][:3], expected, atol=1e-12)  # the records' pose agrees
    assert motion.camera_at(1.0) is None  # no camera under the animated node
    # the still scene keeps its usual form: the primitive placed once is flattened
    assert read_gltf(asset.path).to_scene().instanced == []


def test_step_interpolation_holds_until_the_next_keyframe(tmp_path):
    _, motion = slide_file(tmp_path, interpolation="STEP").animated_scene()
    assert motion.transforms(1.99)[0][0, 3] == 0.0 and motion.transforms(2.0)[0][0, 3] == 4.0


def test_a_camera_under_an_animated_node_moves_with_it(tmp_path):
    scene, motion = slide_file(tmp_path, camera_child=True).animated_scene()
    np.testing.assert_allclose(scene.camera.eye, [0.0, 0.0, 10.0])  # the parent's scale 2 on the child's 5
    moved = motion.camera_at(1.0)
    np.testing.assert_allclose(moved.eye, [2.0, 0.0, 10.0])
    assert moved.fov == pytest.approx(math.degrees(0.8)) and moved.projection == "perspective"


def test_emissive_meshes_stay_in_their_rest_pose_with_a_warning(tmp_path):
    asset = slide_file(tmp_path, emissive_mover=True)
    with pytest.warns(UserWarning, match=r"1 emissive mesh\(es\) moved by animation 'slide' stay in their rest pose"):
        scene, motion = asset.animated_scene()
    assert scene.instanced == [] and not motion.moving.any()
    np.testing.assert_allclose(motion.transforms(1.0), np.tile(np.eye(3, 4), (2, 1, 1)))


def test_a_zero_scale_key_cannot_be_placed(tmp_path):
    g = GltfBuilder()
    node = g.node(mesh=g.mesh(TRIANGLE))
    times = g.accessor(np.array([0.0, 1.0], np.float32))
    values = g.accessor(np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]], np.float32))
    g.add("animations", {"samplers": [{"input": times, "output": values}],
                         "channels": [{"sampler": 0, "target": {"node": node, "path": "scale"}}]})
    g.scene(node)
    _, motion = read_gltf(g.write_glb(tmp_path / "vanish.glb")).animated_scene()
    motion.transforms(0.5)
    with pytest.raises(ValueError, match="scales a mesh to zero"):
        motion.transforms(1.0)


def test_no_such_animation(tmp_path):
    with pytest.raises(ValueError, match="no animation 'walk'"):
        slide_file(tmp_path).animated_scene("walk")


def test_the_frame_update_depends_on_the_index_alone_and_pickles(tmp_path):
    """NodeMotion goes to the farm's workers: picklable, and frame k is the same pose wherever it is rendered."""
    import pickle

    from optixasync.render import NodeMotion

    _, motion = slide_file(tmp_path, camera_child=True).animated_scene()
    update = NodeMotion(motion, dt=0.5, start=0.25)
    copy = pickle.loads(pickle.dumps(update))
    assert [copy.time_of(k) for k in range(3)] == [0.25, 0.75, 1.25]
    np.testing.assert_array_equal(copy.animation.transforms(0.75), motion.transforms(0.75))
    assert copy.animation.camera_at(0.75) == motion.camera_at(0.75)

    class Pipeline:
        camera = None
        placed: list = []

        def place(self, transforms, stream):
            self.placed.append((transforms, stream))

    pipeline = Pipeline()
    update(pipeline, 2, "frame 2")
    ((transforms, stream),) = pipeline.placed
    assert stream == "frame 2" and transforms[0][0, 3] == 2.5
    np.testing.assert_allclose(pipeline.camera.eye, [2.5, 0.0, 10.0])
    with pytest.raises(ValueError, match="dt must be a positive number"):
        NodeMotion(motion, dt=0.0)
