"""glTF as the specification renders it, pixel by pixel, through the host build of the kernel.

Each test writes a small glTF file (``gltf_scenes``), reads it with the library's reader and renders it on the
CPU through ``pathtracer_host.cpp``: a one-sided plane whose back is culled, vertex colours, an orthographic
camera, a spot light's cone from ``KHR_lights_punctual`` and the frames of a two-keyframe node animation. The
expected images are the specification's outcome in closed form. Skipped without a C++ compiler.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gltf_scenes import (
    SQUARE,
    SQUARE_FACES,
    SQUARE_FACES_BACK,
    coverage,
    lights,
    material,
    orthographic_node,
    perspective_node,
    square_node,
    write,
)
from host_build import HostTracer, build_pathtracer_library, compiler, host_render
from punctual import check_one_light, expected_radiance, plane_scene

from optixasync.render import NodeMotion, RenderOptions
from optixasync.scene import (
    Camera,
    Environment,
    Material,
    Mesh,
    PointLight,
    Scene,
    SpotLight,
    read_gltf,
    rectangle,
    sphere,
)
from optixasync.testing import GltfBuilder

ALL = 15  # every output: the albedo guide is the first hit's colour


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("gltf_host"), (0, 1, ALL))


# -- sides ---------------------------------------------------------------------------------------------------------
def marker_file(tmp_path, double_sided: bool):
    """A glowing marker at z = 0 behind a plane at z = 1 that shows the camera its back (its front faces -z)."""
    g = GltfBuilder()
    glow = material(g, base=(0.0, 0.0, 0.0, 1.0), emissive=(1.0, 1.0, 1.0))
    plane = material(g, base=(0.8, 0.8, 0.8, 1.0), double_sided=double_sided)
    roots = [square_node(g, glow, scale=0.5, name="marker"),
             square_node(g, plane, z=1.0, faces=SQUARE_FACES_BACK, name="plane"),
             perspective_node(g, 3.0, 40.0)]
    return write(g, tmp_path / f"marker_{double_sided}.gltf", *roots)


def test_a_one_sided_plane_seen_from_behind_shows_the_marker_behind_it(host_kernel, tmp_path):
    w = h = 24
    scene = read_gltf(marker_file(tmp_path, double_sided=False)).to_scene()
    assert scene.meshes[1].material.sidedness == "cull_back"
    image = host_render(host_kernel, scene, 16, width=w, height=h, max_depth=1)
    inside, outside = coverage((-0.5, 0.5, -0.5, 0.5), w, h, tangent=math.tan(math.radians(20.0)), depth=3.0)
    assert inside.sum() >= 16 and outside.sum() > 0.5 * w * h
    np.testing.assert_array_equal(image[inside], 1.0)   # the marker's emission, through the culled back
    np.testing.assert_array_equal(image[outside], 0.0)  # nothing else emits
    # The same plane double-sided hides the marker: black (it emits nothing; max depth 1 reflects nothing).
    hidden = read_gltf(marker_file(tmp_path, double_sided=True)).to_scene()
    assert hidden.meshes[1].material.sidedness == "two_sided"
    np.testing.assert_array_equal(host_render(host_kernel, hidden, 16, width=w, height=h, max_depth=1), 0.0)


def test_rays_pass_through_culled_backs(host_kernel):
    """A culled plate above a lit floor, its back to the floor and to the camera below it: camera, path and shadow
    rays all pass through, and the image is the bare floor's bit for bit (the same hits, the same random numbers).
    The same plate with a black back instead casts its shadow."""
    light = PointLight((0.3, 1.2, -0.2), intensity=(2.0, 2.0, 2.0))
    camera = Camera((0.0, 0.3, 2.5), (0.0, 0.0, 0.0), fov=50.0)
    matrix = np.array([[0.6, 0, 0, 0.1], [0, 0, 0.6, 0.6], [0, 0.6, 0, -0.1]])
    w, h, spp = 32, 24, 16

    def render(*extra):
        scene = plane_scene(light)
        scene.camera = camera
        for mesh in extra:
            scene.add(mesh)
        return host_render(host_kernel, scene, spp, width=w, height=h, max_depth=3, seed=5)

    culled = rectangle(matrix, Material((0.5, 0.5, 0.5), cull_back=True), "plate")
    assert culled.face_normals()[0][1] > 0.99  # its front faces up, away from the floor and the camera
    bare = render()
    assert bare.max() > 0.05
    np.testing.assert_array_equal(render(culled), bare)
    shadowed = render(rectangle(matrix, Material((0.5, 0.5, 0.5)), "black back"))
    assert (shadowed <= bare).all() and (shadowed < 0.5 * bare).sum() > 20


# -- vertex colours ------------------------------------------------------------------------------------------------
TRIANGLE = np.array([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
RGB = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.2, 0.4, 1.0]], np.float32)


def test_vertex_colours_multiply_the_base_colour(host_kernel, tmp_path):
    """COLOR_0 (RGB float) times baseColorFactor, interpolated: the first hit's albedo, pixel by pixel (ortho)."""
    g = GltfBuilder()
    base = np.array([0.5, 0.8, 1.0])
    mesh = g.mesh(TRIANGLE, np.array([0, 1, 2], np.uint32), material=material(g, base=(*base, 1.0)), COLOR_0=RGB)
    path = write(g, tmp_path / "colours.gltf", g.node(mesh=mesh), orthographic_node(g, 1.0, 1.0, 0.0, 10.0))
    scene = read_gltf(path).to_scene()
    scene.environment = Environment(radiance=(1e-3,) * 3)
    w = h = 16
    spp = 64
    tracer = HostTracer(host_kernel, scene, RenderOptions(width=w, height=h, spp=spp, max_depth=1))
    tracer.render(spp, variant=ALL)
    albedo = tracer.outputs["albedo"][..., :3].astype(np.float64)
    # Pixel centres in world units and their barycentrics: p = b0 v0 + b1 v1 + b2 v2.
    x, y = np.meshgrid(-1.0 + 2.0 * (np.arange(w) + 0.5) / w, 1.0 - 2.0 * (np.arange(h) + 0.5) / h)
    b2 = (y + 1.0) / 2.0
    b1 = (x + 1.0 - b2) / 2.0
    b0 = 1.0 - b1 - b2
    half = 1.0 / w  # half a pixel
    inside = np.all([(y + dy >= -1.0) & (np.abs(x + dx) <= (1.0 - (y + dy)) / 2.0)
                     for dx in (-half, half) for dy in (-half, half)], axis=0)
    assert inside.sum() > 40
    expected = (b0[..., None] * RGB[0] + b1[..., None] * RGB[1] + b2[..., None] * RGB[2]) * base
    # The mean of spp uniform points of a pixel is the centre's value, give or take the colour's spread over it:
    # per pixel, d/dx = base (c1 - c0) / 2 * (2 / w), d/dy = base ((c2 - c0) / 2 - (c1 - c0) / 4) * (2 / h).
    gx = base * (RGB[1] - RGB[0]) / w
    gy = base * ((RGB[2] - RGB[0]) / 2.0 - (RGB[1] - RGB[0]) / 4.0) * 2.0 / h
    tolerance = 6.0 * np.sqrt((gx**2 + gy**2) / (12.0 * spp)) + 1e-5
    error = np.abs(albedo[inside] - expected[inside])
    assert (error <= tolerance).all(), (error / tolerance).max()


def test_vertex_colour_alpha_cuts_out_with_the_mask(host_kernel, tmp_path):
    """COLOR_0 as normalized RGBA bytes: its alpha times the base alpha is the opacity (alphaMode MASK)."""
    g = GltfBuilder()
    colours = np.array([[255, 255, 255, 0], [255, 255, 255, 255], [255, 255, 255, 255], [255, 255, 255, 0]],
                       np.uint8)  # alpha 0 on the left edge (x = -1), 1 on the right one
    mask = material(g, alphaMode="MASK", alphaCutoff=0.5)
    prim = {"attributes": {"POSITION": g.accessor(SQUARE), "COLOR_0": g.accessor(colours, normalized=True)},
            "indices": g.accessor(SQUARE_FACES.reshape(-1)), "material": mask}
    mesh = g.add("meshes", {"primitives": [prim]})
    # pixels of 0.1 whose column edges miss x = 0 by a quarter of one (column 7 holds x = 0)
    eye = orthographic_node(g, 0.8, 0.4, 0.0, 10.0, (0.025, 0.0, 5.0))
    scene = read_gltf(write(g, tmp_path / "alpha.gltf", g.node(mesh=mesh), eye)).to_scene()
    np.testing.assert_array_equal(scene.meshes[0].colors[:, 3], [0.0, 1.0, 1.0, 0.0])
    sky = (0.25, 0.5, 0.75)
    scene.environment = Environment(radiance=sky)
    image = host_render(host_kernel, scene, 16, width=16, height=8, max_depth=1)
    # opacity (x + 1) / 2 < 0.5 left of x = 0: the sky shows there; the surface (black at max depth 1) right of it
    left, right = image[:, :7], image[:, 8:]
    np.testing.assert_array_equal(left, np.broadcast_to(np.float32(sky), left.shape))
    np.testing.assert_array_equal(right, 0.0)


def test_vertex_colours_enter_the_bsdf(host_kernel):
    """An inward furnace sphere (albedo a, emission 1) with colours c: radiance sum_k (a c)^k per channel."""
    room = sphere((0, 0, 0), 1.0, Material((0.5,) * 3, (1.0,) * 3), subdivisions=1, inward=True)
    c = np.array([1.0, 0.5, 0.25], np.float32)
    coloured = Mesh(room.vertices, room.indices, room.material, colors=np.tile(c, (room.num_vertices, 1)))
    scene = Scene([coloured], Camera((0.1, -0.05, 0.2), (0.3, 0.2, -1.0), fov=70.0))
    depth = 4
    image = host_render(host_kernel, scene, 64, width=16, height=16, max_depth=depth, rr_depth=depth)
    ac = 0.5 * c.astype(np.float64)
    expected = (1 - ac**depth) / (1 - ac)
    pixels = image.reshape(-1, 3).astype(np.float64)
    mean, stderr = pixels.mean(axis=0), pixels.std(axis=0) / math.sqrt(len(pixels)) + 1e-7
    assert (np.abs(mean - expected) < 6 * stderr + 1e-3 * expected).all(), (mean, expected)
    assert (np.diff(mean) < 0).all()  # red, then green, then blue: the colours took effect


# -- orthographic camera -------------------------------------------------------------------------------------------
def test_orthographic_camera_footprint_and_clipping(host_kernel, tmp_path):
    """glTF's orthographic camera: xmag and ymag are the image's half extents; nothing nearer than znear or
    farther than zfar is seen (a glowing square in front of the near plane, another past the far one)."""
    g = GltfBuilder()
    glow = material(g, base=(0, 0, 0, 1), emissive=(1.0, 1.0, 1.0))
    bright = material(g, base=(0, 0, 0, 1), emissive=(1.0, 1.0, 1.0),
                      extensions={"KHR_materials_emissive_strength": {"emissiveStrength": 5.0}})
    centre = (0.325, -0.175)  # pixel edges a quarter of a pixel (0.1) off the squares' edges
    roots = [square_node(g, glow, scale=0.5, name="seen"),
             square_node(g, bright, scale=0.4, z=4.5, name="too near"),      # depth 0.5 < znear 1
             square_node(g, bright, scale=0.3, z=-6.0, xy=(1.5, 0.3), name="too far"),  # depth 11 > zfar 10
             orthographic_node(g, 2.0, 1.0, 1.0, 10.0, (centre[0], centre[1], 5.0))]
    g.doc["extensionsUsed"] = ["KHR_materials_emissive_strength"]
    scene = read_gltf(write(g, tmp_path / "ortho.gltf", *roots)).to_scene()
    camera = scene.camera
    assert camera.projection == "orthographic" and (camera.xmag, camera.ymag, camera.znear, camera.zfar) == (
        2.0, 1.0, 1.0, 10.0)
    w, h = 40, 20  # the aspect of xmag / ymag: square pixels of 0.1
    image = host_render(host_kernel, scene, 16, width=w, height=h, max_depth=1)
    inside, outside = coverage((-0.5, 0.5, -0.5, 0.5), w, h, centre, xmag=2.0, ymag=1.0)
    assert inside.sum() == 81  # 1 x 1 world units at 0.1 per pixel: 9 whole pixels each way
    np.testing.assert_array_equal(image[inside], 1.0)
    np.testing.assert_array_equal(image[outside], 0.0)  # the far square, which is in view, included
    # The same square seen by a camera without clipping shows the near square (emission 5) over it.
    unclipped = Scene(scene.meshes, Camera.orthographic_at(camera.eye, camera.target, camera.up, xmag=2.0, ymag=1.0))
    image = host_render(host_kernel, unclipped, 16, width=w, height=h, max_depth=1)
    near_in, _ = coverage((-0.4, 0.4, -0.4, 0.4), w, h, centre, xmag=2.0, ymag=1.0)
    np.testing.assert_array_equal(image[near_in], 5.0)
    far_in, _ = coverage((1.2, 1.8, 0.0, 0.6), w, h, centre, xmag=2.0, ymag=1.0)
    assert far_in.sum() > 10
    np.testing.assert_array_equal(image[far_in], 5.0)


# -- lights ----------------------------------------------------------------------------------------------------------
def test_spot_light_cone_from_a_gltf_file(host_kernel, tmp_path):
    """A KHR_lights_punctual spot (candela, its node's -z turned down) lights a diffuse plane as the closed form
    of the same light in watts per steradian (1 / 683 W/lm) says, pixel by pixel."""
    g = GltfBuilder()
    (spot,) = lights(g, {"type": "spot", "color": [1.0, 0.5, 0.25], "intensity": 3.0 * 683.0,
                         "spot": {"innerConeAngle": math.radians(20.0), "outerConeAngle": math.radians(35.0)}})
    s = math.sqrt(0.5)
    node = g.node(translation=[-0.4, 1.5, 0.3], rotation=[-s, 0.0, 0.0, s],  # -90 degrees about x: -z -> -y
                  extensions={"KHR_lights_punctual": {"light": spot}})
    quad = g.mesh(SQUARE, SQUARE_FACES.reshape(-1), material=material(g))
    asset = read_gltf(write(g, tmp_path / "spot.gltf", node, g.node(mesh=quad)))
    (light,) = asset.to_scene().lights
    assert isinstance(light, SpotLight)
    np.testing.assert_allclose(light.intensity, (3.0, 1.5, 0.75), rtol=1e-12)
    np.testing.assert_allclose(light.position, (-0.4, 1.5, 0.3), atol=1e-12)
    np.testing.assert_allclose(light.direction, (0.0, -1.0, 0.0), atol=1e-12)
    expected_light = SpotLight((-0.4, 1.5, 0.3), (0.0, -1.0, 0.0), (3.0, 1.5, 0.75), math.radians(20.0),
                               math.radians(35.0))
    w, h, spp = 32, 32, 64
    image = host_render(host_kernel, plane_scene(light), spp, width=w, height=h, max_depth=3, seed=2)
    check_one_light(image, spp, *expected_radiance(w, h, expected_light))


# -- animation -------------------------------------------------------------------------------------------------------
class HostFrames:
    """What a frame update asks of a pipeline, over a host tracer: place() moves the instanced meshes."""

    def __init__(self, tracer: HostTracer) -> None:
        self.tracer = tracer
        self.camera = None

    def place(self, transforms, stream=None) -> None:
        self.tracer.place(transforms, stream)


def test_two_keyframe_animation_moves_the_square_frame_by_frame(host_kernel, tmp_path):
    """A square slides from x = -0.5 to 0.5 over one second (LINEAR); frame k at k / 4 s shows it, black on a
    white sky (max depth 1), exactly where the interpolation puts it."""
    g = GltfBuilder()
    square = square_node(g, material(g), scale=0.25, xy=(0.0, 0.3))  # its rest pose is replaced by the channel
    times = g.accessor(np.array([0.0, 1.0], np.float32))
    values = g.accessor(np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]], np.float32))
    g.add("animations", {"name": "slide", "samplers": [{"input": times, "output": values}],
                         "channels": [{"sampler": 0, "target": {"node": square, "path": "translation"}}]})
    eye = orthographic_node(g, 1.0, 1.0, 0.0, 10.0, (0.025, 0.025, 5.0))  # pixel edges off the square's
    asset = read_gltf(write(g, tmp_path / "slide.gltf", square, eye))
    scene, animation = asset.animated_scene("slide")
    assert scene.instanced == [0] and animation.moving.tolist() == [True]
    scene.environment = Environment(radiance=(1.0, 1.0, 1.0))
    w = h = 20
    tracer = HostTracer(host_kernel, scene, RenderOptions(width=w, height=h, spp=8, max_depth=1))
    frames, motion = HostFrames(tracer), NodeMotion(animation, dt=0.25)
    for k in range(5):
        motion(frames, k, None)
        image = tracer.render(8)
        x = -0.5 + 0.25 * k
        inside, outside = coverage((x - 0.25, x + 0.25, -0.25, 0.25), w, h, (0.025, 0.025), xmag=1.0, ymag=1.0)
        assert inside.sum() == 16, k
        np.testing.assert_array_equal(image[inside], 0.0)
        np.testing.assert_array_equal(image[outside], 1.0)
    assert frames.camera is None  # the camera's node is not animated
