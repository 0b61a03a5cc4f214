"""GPU: glTF as the specification renders it, through the render pipeline (the host tests' twins).

The same files and closed forms as ``test_gltf_host.py``: a one-sided plane whose back is culled by the any-hit
program (built in only for such meshes), vertex colours, an orthographic camera, a spot light from
``KHR_lights_punctual`` and a node animation played by :class:`~optixasync.render.NodeMotion`, whose frames
rebuild the instance structure and rewrite the mesh records on the frame's stream.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gltf_scenes import SQUARE, SQUARE_FACES, coverage, lights, material, orthographic_node, square_node, write
from punctual import check_one_light, expected_radiance, plane_scene
from test_gltf_host import marker_file

from optixasync.render import NodeMotion, RenderOptions, RenderPipeline
from optixasync.scene import Environment, SpotLight, read_gltf
from optixasync.testing import GltfBuilder

pytestmark = pytest.mark.gpu


def render(ctx, scene, spp, **options):
    with RenderPipeline(ctx, scene, RenderOptions(spp=spp, **options)) as pipeline:
        return pipeline.render(spp)


def test_a_culled_plane_shows_the_marker_behind_it(ctx, tmp_path):
    w = h = 24
    scene = read_gltf(marker_file(tmp_path, double_sided=False)).to_scene()
    image = render(ctx, scene, 16, width=w, height=h, max_depth=1)
    inside, outside = coverage((-0.5, 0.5, -0.5, 0.5), w, h, tangent=math.tan(math.radians(20.0)), depth=3.0)
    np.testing.assert_allclose(image[inside], 1.0, rtol=1e-6)
    np.testing.assert_array_equal(image[outside], 0.0)
    hidden = read_gltf(marker_file(tmp_path, double_sided=True)).to_scene()
    np.testing.assert_array_equal(render(ctx, hidden, 16, width=w, height=h, max_depth=1), 0.0)


def test_vertex_colour_alpha_cuts_out_on_the_gpu(ctx, tmp_path):
    g = GltfBuilder()
    colours = np.array([[255, 255, 255, 0], [255, 255, 255, 255], [255, 255, 255, 255], [255, 255, 255, 0]],
                       np.uint8)
    prim = {"attributes": {"POSITION": g.accessor(SQUARE), "COLOR_0": g.accessor(colours, normalized=True)},
            "indices": g.accessor(SQUARE_FACES.reshape(-1)), "material": material(g, alphaMode="MASK")}
    mesh = g.add("meshes", {"primitives": [prim]})
    eye = orthographic_node(g, 0.8, 0.4, 0.0, 10.0, (0.025, 0.0, 5.0))
    scene = read_gltf(write(g, tmp_path / "alpha.gltf", g.node(mesh=mesh), eye)).to_scene()
    scene.environment = Environment(radiance=(0.25, 0.5, 0.75))
    image = render(ctx, scene, 16, width=16, height=8, max_depth=1)
    np.testing.assert_allclose(image[:, :7], np.broadcast_to(np.float32([0.25, 0.5, 0.75]), (8, 7, 3)), rtol=1e-6)
    np.testing.assert_array_equal(image[:, 8:], 0.0)


def test_orthographic_camera_footprint_on_the_gpu(ctx, tmp_path):
    g = GltfBuilder()
    glow = material(g, base=(0, 0, 0, 1), emissive=(1.0, 1.0, 1.0))
    centre = (0.325, -0.175)
    roots = [square_node(g, glow, scale=0.5), orthographic_node(g, 2.0, 1.0, 1.0, 10.0, (*centre, 5.0))]
    scene = read_gltf(write(g, tmp_path / "ortho.gltf", *roots)).to_scene()
    image = render(ctx, scene, 16, width=40, height=20, max_depth=1)
    inside, outside = coverage((-0.5, 0.5, -0.5, 0.5), 40, 20, centre, xmag=2.0, ymag=1.0)
    np.testing.assert_allclose(image[inside], 1.0, rtol=1e-6)
    np.testing.assert_array_equal(image[outside], 0.0)


def test_spot_light_from_a_gltf_file_on_the_gpu(ctx, tmp_path):
    g = GltfBuilder()
    (spot,) = lights(g, {"type": "spot", "color": [1.0, 0.5, 0.25], "intensity": 3.0 * 683.0,
                         "spot": {"innerConeAngle": math.radians(20.0), "outerConeAngle": math.radians(35.0)}})
    s = math.sqrt(0.5)
    node = g.node(translation=[-0.4, 1.5, 0.3], rotation=[-s, 0.0, 0.0, s],
                  extensions={"KHR_lights_punctual": {"light": spot}})
    root = square_node(g, material(g))
    (light,) = read_gltf(write(g, tmp_path / "spot.gltf", node, root)).to_scene().lights
    expected_light = SpotLight((-0.4, 1.5, 0.3), (0.0, -1.0, 0.0), (3.0, 1.5, 0.75), math.radians(20.0),
                               math.radians(35.0))
    spp = 256
    image = render(ctx, plane_scene(light), spp, width=64, height=64, max_depth=3, seed=2)
    check_one_light(image, spp, *expected_radiance(64, 64, expected_light))


def test_node_motion_frames_move_the_square(ctx, tmp_path):
    g = GltfBuilder()
    square = square_node(g, material(g), scale=0.25, xy=(0.0, 0.3))
    times = g.accessor(np.array([0.0, 1.0], np.float32))
    values = g.accessor(np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]], np.float32))
    g.add("animations", {"name": "slide", "samplers": [{"input": times, "output": values}],
                         "channels": [{"sampler": 0, "target": {"node": square, "path": "translation"}}]})
    eye = orthographic_node(g, 1.0, 1.0, 0.0, 10.0, (0.025, 0.025, 5.0))
    scene, animation = read_gltf(write(g, tmp_path / "slide.gltf", square, eye)).animated_scene("slide")
    scene.environment = Environment(radiance=(1.0, 1.0, 1.0))
    w = h = 20
    with RenderPipeline(ctx, scene, RenderOptions(width=w, height=h, max_depth=1), outputs=("radiance",),
                        frames_in_flight=2) as pipeline:
        images = []
        for result in pipeline.frames(5, 8, update=NodeMotion(animation, dt=0.25)):
            with result:
                images.append(np.array(result["radiance"][..., :3]))
    for k, image in enumerate(images):
        x = -0.5 + 0.25 * k
        inside, outside = coverage((x - 0.25, x + 0.25, -0.25, 0.25), w, h, (0.025, 0.025), xmag=1.0, ymag=1.0)
        np.testing.assert_array_equal(image[inside], 0.0)
        np.testing.assert_allclose(image[outside], 1.0, rtol=1e-6)
