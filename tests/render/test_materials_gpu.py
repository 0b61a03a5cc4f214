"""Materials, textures and environment light on a GPU, against closed forms and CPU integrals.

* White furnace per BSDF: a flat sample of the material seen at angle theta under a constant environment of
  radiance 1, with max_depth 2 (one bounce), shows its directional albedo at cos theta; the CPU integral of the
  same model (``bsdf_harness.directional_albedo``, the device headers compiled by the host compiler) must agree
  within 1%.
* A smooth glass sphere under a constant environment conserves energy: every pixel converges to 1.
* Textures: texels come back as pixels (nearest and bilinear filtering, sRGB decoding, wrap modes, UV
  transforms); an emission texture; an alpha mask cuts holes; a normal map turns a mirror's reflection.
* The environment seen directly equals the numpy reference lookup.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from optixasync.io import srgb_to_linear
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import (
    Camera,
    Environment,
    Material,
    Mesh,
    Scene,
    Texture,
    TextureTransform,
    rectangle,
    sphere,
)

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent


def load_module(name: str):
    """A helper module beside this file (tests/ is no package), loaded once per process."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def render(ctx, scene, spp, **options) -> np.ndarray:
    options.setdefault("width", 32)
    options.setdefault("height", 32)
    with RenderPipeline(ctx, scene, RenderOptions(spp=spp, **options)) as pipeline:
        image = pipeline.render()
        assert pipeline.last_nonfinite == 0
    return image.astype(np.float64)


def quad(material: Material, tilt_degrees: float = 0.0, size: float = 1.0, z: float = 0.0) -> Mesh:
    """The square [-size, size]^2 facing +z, turned by ``tilt_degrees`` about +y, at depth ``z``, with UVs."""
    a = math.radians(tilt_degrees)
    m = np.array([[size * math.cos(a), 0, size * math.sin(a), 0], [0, size, 0, 0],
                  [-size * math.sin(a), 0, size * math.cos(a), z]])
    base = rectangle(m)
    # Corners (-1,-1) (1,-1) (1,1) (-1,1): u rightwards, v downwards (image convention).
    uvs = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
    return Mesh(base.vertices, base.indices, material, uvs=uvs)


def head_on(distance: float = 20.0, fov: float = 2.0) -> Camera:
    return Camera((0.0, 0.0, distance), (0.0, 0.0, 0.0), fov=fov)


WHITE = Environment(radiance=(1.0, 1.0, 1.0))

FURNACE = [
    ("diffuse", dict(bsdf="diffuse", reflectance=(0.8, 0.5, 0.2)), {"albedo": (0.8, 0.5, 0.2)}),
    ("conductor", dict(bsdf="conductor", reflectance=1.0, eta=(0.2, 0.9, 1.1), k=(3.9, 2.4, 1.8)),
     {"eta": (0.2, 0.9, 1.1), "k": (3.9, 2.4, 1.8), "alpha": 0.0}),
    ("roughconductor", dict(bsdf="conductor", reflectance=1.0, alpha=0.3, eta=(0.2, 0.9, 1.1), k=(3.9, 2.4, 1.8)),
     {"eta": (0.2, 0.9, 1.1), "k": (3.9, 2.4, 1.8), "alpha": 0.3}),
    ("dielectric", dict(bsdf="dielectric", int_ior=1.5), {"eta": 1.5, "alpha": 0.0}),
    ("roughdielectric", dict(bsdf="dielectric", int_ior=1.5, alpha=0.3), {"eta": 1.5, "alpha": 0.3}),
    ("plastic", dict(bsdf="plastic", reflectance=(0.6, 0.3, 0.1), alpha=0.2, int_ior=1.49),
     {"diffuse": (0.6, 0.3, 0.1), "eta": 1.49, "alpha": 0.2}),
    ("metallic_roughness", dict(bsdf="metallic_roughness", reflectance=(0.9, 0.6, 0.3), metallic=0.5, roughness=0.5),
     {"base": (0.9, 0.6, 0.3), "metallic": 0.5, "alpha": 0.25}),
]


@pytest.fixture(scope="module")
def harness():
    bsdf_harness = load_module("bsdf_harness")
    if bsdf_harness.compiler() is None:
        pytest.skip("no C++ compiler to build the CPU reference of the BSDFs (bsdf_harness)")
    return bsdf_harness


@pytest.mark.parametrize("name, material, params", FURNACE, ids=[f[0] for f in FURNACE])
@pytest.mark.parametrize("tilt", [0.0, 50.0, 75.0])
def test_white_furnace_matches_the_cpu_albedo(ctx, harness, name, material, params, tilt):
    family = material["bsdf"]
    scene = Scene([quad(Material(**material), tilt, size=2.0)], head_on(), environment=WHITE)
    image = render(ctx, scene, 2048, max_depth=2)
    # Pixels see the quad at angles within the half field of view (1 degree) of theta.
    expected = harness.directional_albedo(family, params, math.cos(math.radians(tilt)))
    measured = image.reshape(-1, 3).mean(axis=0)
    error = image.reshape(-1, 3).std(axis=0) / math.sqrt(image.shape[0] * image.shape[1])
    assert (error < 0.002).all(), f"too noisy to tell 1%: {error}"
    np.testing.assert_allclose(measured, expected, rtol=0.01, atol=3 * error.max())


def test_smooth_glass_sphere_conserves_energy(ctx):
    glass = sphere((0, 0, 0), 1.0, Material(bsdf="dielectric", int_ior=1.5), subdivisions=5, smooth=True)
    scene = Scene([glass], Camera((0, 0, 4), (0, 0, 0), fov=35.0), environment=WHITE)
    image = render(ctx, scene, 256, max_depth=64, rr_depth=64)
    # Every path ends in the environment of radiance 1 and glass neither absorbs nor emits.
    assert abs(image.mean() - 1.0) < 0.01, image.mean()
    assert np.percentile(np.abs(image - 1.0), 90) < 0.1


def test_texels_come_back_as_pixels_nearest_and_srgb(ctx):
    rng = np.random.default_rng(1)
    texels = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    texture = Texture(texels, srgb=True, filter="nearest")
    material = Material(reflectance=1.0, reflectance_texture=texture)
    # The quad exactly fills the image: the half field of view spans its half size.
    camera = Camera((0, 0, 10), (0, 0, 0), fov=2 * math.degrees(math.atan(1 / 10)))
    scene = Scene([quad(material)], camera, environment=WHITE)
    image = render(ctx, scene, 256, max_depth=2, width=64, height=64)
    expected = srgb_to_linear(texels).astype(np.float64)
    blocks = image.reshape(4, 16, 4, 16, 3)[:, 2:-2, :, 2:-2].mean(axis=(1, 3))  # away from texel edges
    np.testing.assert_allclose(blocks, expected, rtol=0.03, atol=0.01)


def test_repeat_transform_and_bilinear(ctx):
    texels = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)  # a 2x2 checker, linear
    transform = TextureTransform(scale=(2.0, 2.0))  # the checker twice across the quad
    texture = Texture(texels, filter="nearest", transform=transform)
    camera = Camera((0, 0, 10), (0, 0, 0), fov=2 * math.degrees(math.atan(1 / 10)))
    scene = Scene([quad(Material(reflectance=1.0, reflectance_texture=texture))], camera, environment=WHITE)
    image = render(ctx, scene, 128, max_depth=2, width=64, height=64)[..., 0]
    cells = image.reshape(4, 16, 4, 16)[:, 2:-2, :, 2:-2].mean(axis=(1, 3))
    np.testing.assert_allclose(cells, np.tile(texels, (2, 2)), atol=0.03)
    # Bilinear across one texel: the middle of a 2-texel ramp is the mean of both.
    ramp = Texture(np.array([[0.0, 1.0]], np.float32), wrap="clamp")
    scene = Scene([quad(Material(reflectance=1.0, reflectance_texture=ramp))], camera, environment=WHITE)
    row = render(ctx, scene, 256, max_depth=2, width=64, height=64)[28:36, :, 0].mean(axis=0)
    u = (np.arange(64) + 0.5) / 64
    ramp = np.clip((u - 0.25) / 0.5, 0.0, 1.0)  # linear between the texel centres (u = 1/4, 3/4), clamped beyond
    np.testing.assert_allclose(row, ramp, atol=0.03)


def test_emission_texture(ctx):
    texels = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [255, 255, 255]]], np.uint8)
    light = Material(reflectance=0.0, emission=(2.0, 2.0, 2.0), emission_texture=Texture(texels, filter="nearest"))
    camera = Camera((0, 0, 10), (0, 0, 0), fov=2 * math.degrees(math.atan(1 / 10)))
    image = render(ctx, Scene([quad(light)], camera), 16, max_depth=1, width=32, height=32)
    cells = image.reshape(2, 16, 2, 16, 3)[:, 2:-2, :, 2:-2].mean(axis=(1, 3))
    np.testing.assert_allclose(cells, 2.0 * texels / 255.0, atol=1e-3)


def test_alpha_mask_cuts_holes(ctx):
    # A masked quad (left half transparent) in front of an emitter: the emitter shows through the hole only.
    alpha = np.zeros((1, 2, 4), np.uint8)
    alpha[..., :3] = 128
    alpha[0, 1, 3] = 255
    leaf = Material(reflectance=0.5, reflectance_texture=Texture(alpha, filter="nearest"), alpha_mode="mask",
                    two_sided=True)
    light = Material(reflectance=0.0, emission=(1.0, 1.0, 1.0))
    camera = Camera((0, 0, 10), (0, 0, 0), fov=2 * math.degrees(math.atan(1 / 10)))
    scene = Scene([quad(leaf, z=0.5), quad(light, size=3.0, z=-1.0)], camera)
    image = render(ctx, scene, 16, max_depth=1, width=32, height=32)
    assert image[:, 2:14].min() > 0.99  # through the hole: the light
    assert image[:, 18:30].max() < 1e-6  # the opaque half hides it and does not emit
    # Shadow rays see the mask too: a diffuse floor lit through the leaf is lit only under the hole.


def test_normal_map_turns_a_mirror(ctx):
    # A constant normal map tilting the normal by 10 degrees about +y, on a mirror seen head-on: the view ray
    # reflects to 20 degrees off the axis, into an environment lit only on that side.
    tilt = math.radians(10.0)
    n = np.array([math.sin(tilt), 0.0, math.cos(tilt)])
    texel = np.round((n * 0.5 + 0.5) * 255).astype(np.uint8).reshape(1, 1, 3)
    mirror = Material(bsdf="conductor", reflectance=1.0, normal_texture=Texture(texel))
    sky = np.zeros((64, 128, 3), np.float32)
    u = (np.arange(128) + 0.5) / 128
    sky[:] = np.where(np.sin(2 * np.pi * u) > 0, 1.0, 0.0)[None, :, None]  # lit where direction x > 0
    camera = Camera((0, 0, 10), (0, 0, 0), fov=2 * math.degrees(math.atan(0.5 / 10)))
    plain = render(ctx, Scene([quad(Material(bsdf="conductor", reflectance=1.0))], camera,
                              environment=Environment(image=sky)), 16, max_depth=2)
    mapped = render(ctx, Scene([quad(mirror)], camera, environment=Environment(image=sky)), 16, max_depth=2)
    # Head-on, the plain mirror reflects straight back along +z (the boundary between lit and unlit: 0.5);
    # the mapped normal leans to +x, so the reflection goes to +x: lit.
    assert abs(plain.mean() - 0.5) < 0.1
    assert mapped.mean() > 0.99


def test_environment_seen_directly_matches_the_reference(ctx):
    lookup = load_module("test_environment_host").mitsuba_envmap_lookup
    rng = np.random.default_rng(3)
    sky = rng.random((16, 32, 3)).astype(np.float32)
    camera = Camera((0, 0, 0), (0, 0, -1), fov=90.0)
    # A small quad behind the camera: the scene needs a mesh; no camera ray meets it.
    scene = Scene([quad(Material(), size=0.1, z=5.0)], camera, environment=Environment(image=sky))
    image = render(ctx, scene, 256, max_depth=1, width=16, height=16)
    eye, u, v, w = (np.asarray(a, np.float64) for a in camera.basis(16, 16))
    sub = (np.arange(8) + 0.5) / 8  # an 8x8 grid in every pixel: the box filter's mean
    ref = np.zeros((16, 16, 3))
    for y in range(16):
        for x in range(16):
            sx = (x + sub[None, :]) * 2 / 16 - 1
            sy = 1 - (y + sub[:, None]) * 2 / 16
            d = w + u * sx[..., None] + v * sy[..., None]
            d /= np.linalg.norm(d, axis=-1, keepdims=True)
            ref[y, x] = lookup(sky, d.reshape(-1, 3)).mean(axis=0)
    np.testing.assert_allclose(image, ref, rtol=0.03, atol=0.01)


def test_instances_share_one_gas_and_render_as_their_flattened_copies(ctx):
    builders = load_module("test_pathtracer_host")
    instanced, flat = builders.instanced_scene(False), builders.instanced_scene(True)
    options = RenderOptions(width=48, height=48, spp=256, max_depth=4)
    with RenderPipeline(ctx, instanced, options) as pipeline:
        scene = pipeline.device_scene
        # two spheres of one geometry, the lamp and the floor: 3 GAS under one instance structure
        assert scene.instanced and len(scene.geometries) == 3
        assert scene.hit_records == 1  # instances find their mesh from the instance id
        a = pipeline.render().astype(np.float64)
    with RenderPipeline(ctx, flat, options) as pipeline:
        assert not pipeline.device_scene.instanced and len(pipeline.device_scene.geometries) == 1
        assert pipeline.device_scene.hit_records == len(flat.meshes)  # one hit record per build input
        b = pipeline.render().astype(np.float64)
    assert b.mean() > 0.05
    close = np.isclose(a, b, rtol=1e-3, atol=1e-4).all(axis=-1)
    assert close.mean() > 0.97, close.mean()
    assert abs(a.mean() - b.mean()) < 0.01 * b.mean()
