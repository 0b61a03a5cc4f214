"""The Mitsuba 3 conversion of our scenes: each convention checked by rendering with Mitsuba's ``scalar_rgb`` variant.

Tests that render need Mitsuba in the running interpreter and skip without
it (it is no dependency of optixasync). Each sets up a scene whose answer
is known from our own conventions (``optixasync/scene``): where a point
projects, which texel UV (0, 0) is, which side of a triangle emits, which
environment texel a direction sees, which way a normal map tilts.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from optixasync.scene import (
    COPPER_ETA,
    COPPER_K,
    GOLD_ETA,
    GOLD_K,
    Camera,
    Environment,
    Material,
    Scene,
    Texture,
    TextureTransform,
    material_scene,
    rectangle,
    sphere,
)
from optixasync.scene.demo import leaf_quad
from optixasync.testing import MissingMitsubaError, import_mitsuba, mitsuba_scene_dict

# The converter's parts: tested one by one, they have no public door.
from optixasync.testing._mitsuba import mitsuba_bsdf, uv_handedness


@pytest.fixture(scope="module")
def mi():
    pytest.importorskip("mitsuba", reason="Mitsuba 3 is not installed (pip install mitsuba): no reference renderer")
    return import_mitsuba("scalar_rgb")


def render(mi, scene: Scene, width: int, height: int, spp: int, max_depth: int, seed: int = 0) -> np.ndarray:
    loaded = mi.load_dict(mitsuba_scene_dict(scene, width=width, height=height, spp=spp, max_depth=max_depth, mi=mi))
    return np.array(mi.render(loaded, spp=spp, seed=seed))


FRONT = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=30.0)  # sees [-0.8, 0.8]^2 of the plane z = 0


# -- without Mitsuba ------------------------------------------------------------------------------------------------


def test_missing_mitsuba_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "mitsuba", None)  # makes `import mitsuba` raise ImportError
    with pytest.raises(MissingMitsubaError, match="pip install mitsuba") as info:
        import_mitsuba()
    assert isinstance(info.value, ImportError)


def test_uv_handedness_of_a_quad_and_of_the_sphere():
    assert uv_handedness(leaf_quad(np.eye(4)[:3])) == 1
    mirrored = leaf_quad(np.diag([-1.0, 1.0, 1.0, 1.0])[:3])  # mirrored geometry, same UVs
    assert uv_handedness(mirrored) == -1
    # sphere(smooth=True): u grows clockwise seen from above, so the image appears mirrored from outside.
    assert uv_handedness(sphere(subdivisions=3, smooth=True)) == -1


def test_uv_handedness_refuses_mixed_meshes():
    a = leaf_quad(np.eye(4)[:3])
    b = leaf_quad(np.array([[-1.0, 0, 0, 3.0], [0, 1, 0, 0], [0, 0, 1, 0]]))
    both = type(a)(np.concatenate([a.vertices, b.vertices]), np.concatenate([a.indices, b.indices + 4]),
                   a.material, "both", uvs=np.concatenate([a.uvs, b.uvs]))
    with pytest.raises(ValueError, match="2 of 4 triangles have mirrored UVs"):
        uv_handedness(both)


# -- conversions that refuse --------------------------------------------------------------------------------------


@pytest.mark.parametrize("material, words", [
    (Material(bsdf="metallic_roughness", metallic=1.0, roughness=0.5, name="brass"), "'brass'.*metallic_roughness"),
    (Material(alpha_mode="mask", name="leaf"), "'leaf'.*alpha_mode 'mask'"),
])
def test_materials_without_a_twin_raise_naming_them(mi, material, words):
    with pytest.raises(ValueError, match=words):
        mitsuba_bsdf(material, mi, mesh_name="m")


def test_the_material_scene_names_the_first_material_without_a_twin(mi):
    with pytest.raises(ValueError, match="alpha_mode 'mask'"):
        mitsuba_scene_dict(material_scene(subdivisions=1), width=8, height=8, spp=1, mi=mi)


def test_the_integrator_and_film_follow_the_render_options(mi):
    d = mitsuba_scene_dict(Scene([rectangle()], FRONT), width=40, height=30, spp=7, max_depth=6, rr_depth=3, mi=mi)
    assert d["integrator"] == {"type": "path", "max_depth": 6, "rr_depth": 3}
    sensor = d["sensor"]
    assert (sensor["fov_axis"], sensor["fov"], sensor["sampler"]["sample_count"]) == ("smaller", 30.0, 7)
    assert (sensor["film"]["width"], sensor["film"]["height"], sensor["film"]["rfilter"]) == (40, 30, {"type": "box"})


@pytest.mark.parametrize("preset, eta, k", [("Au", GOLD_ETA, GOLD_K), ("Cu", COPPER_ETA, COPPER_K)])
def test_the_conductor_constants_are_mitsubas_rgb_presets(mi, preset, eta, k):
    params = mi.traverse(mi.load_dict({"type": "conductor", "material": preset}))
    np.testing.assert_allclose(np.ravel(params["eta.value"]), eta, rtol=1e-5)
    np.testing.assert_allclose(np.ravel(params["k.value"]), k, rtol=1e-5)


# -- conventions, rendered ----------------------------------------------------------------------------------------


def test_a_diffuse_quad_under_a_constant_sky_has_albedo_times_radiance(mi):
    albedo, sky = (0.2, 0.5, 0.8), (1.5, 1.0, 0.5)
    scene = Scene([rectangle(material=Material(reflectance=albedo))], FRONT, Environment(radiance=sky))
    image = render(mi, scene, 16, 16, 256, max_depth=2)
    # The quad fills the view; its upper hemisphere sees only the sky: irradiance pi L, radiance albedo * L.
    np.testing.assert_allclose(image.mean(axis=(0, 1)), np.multiply(albedo, sky), rtol=0.02)


def test_uv_00_is_the_top_left_texel(mi):
    texels = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [255, 255, 0]]], np.uint8)
    texture = Texture(texels, srgb=False, filter="nearest")
    quad = leaf_quad(np.eye(4)[:3], Material(reflectance=(1.0, 1.0, 1.0), reflectance_texture=texture))
    image = render(mi, Scene([quad], FRONT, Environment(radiance=(1.0, 1.0, 1.0))), 8, 8, 64, max_depth=2)
    corners = [image[1, 1], image[1, 6], image[6, 1], image[6, 6]]  # top-left, top-right, bottom-left, bottom-right
    np.testing.assert_allclose(corners, texels.reshape(4, 3) / 255.0, atol=0.05)


def test_the_uv_transform_and_srgb_decoding_follow_the_texture(mi):
    texels = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [128, 128, 128]]], np.uint8)
    shifted = Texture(texels, srgb=True, filter="nearest", transform=TextureTransform(offset=(0.5, 0.0)))
    quad = leaf_quad(np.eye(4)[:3], Material(reflectance=(1.0, 1.0, 1.0), reflectance_texture=shifted))
    image = render(mi, Scene([quad], FRONT, Environment(radiance=(1.0, 1.0, 1.0))), 8, 8, 64, max_depth=2)
    # u + 0.5 with repeat swaps the columns; code 128 decodes to the linear 0.2158.
    np.testing.assert_allclose(image[1, 1], [0.0, 1.0, 0.0], atol=0.05)
    np.testing.assert_allclose(image[6, 1], [0.2158, 0.2158, 0.2158], atol=0.01)


def test_the_camera_projects_a_point_where_camera_project_says(mi):
    camera = Camera((0.3, 0.4, 2.5), (0.0, 0.1, 0.0), up=(0.1, 1.0, 0.0), fov=35.0)
    width, height = 48, 32  # fov spans the smaller axis: the height
    target = np.array([0.45, 0.35, 0.0])
    dot = rectangle(np.array([[0.01, 0, 0, target[0]], [0, 0.01, 0, target[1]], [0, 0, 1.0, 0.0]]),
                    Material(emission=(1.0, 1.0, 1.0)))
    image = render(mi, Scene([dot], camera), width, height, 256, max_depth=1).sum(axis=2)
    # The dot covers under half a pixel: the centroid of its light is its projection, pixel centres at +0.5.
    rows, cols = np.indices(image.shape) + 0.5
    centroid = np.array([(cols * image).sum(), (rows * image).sum()]) / image.sum()
    np.testing.assert_allclose(centroid, camera.project(target[None], width, height)[0], atol=0.25)


def test_emission_leaves_the_winding_normals_side_only(mi):
    light = Material(emission=(2.0, 2.0, 2.0), reflectance=(0.0, 0.0, 0.0))
    front = rectangle(material=light)  # winding normal +z, towards the camera
    back = rectangle(np.diag([-1.0, 1.0, -1.0, 1.0])[:3], light)  # half a turn about y: winding normal -z
    assert render(mi, Scene([front], FRONT), 4, 4, 4, max_depth=1).min() == pytest.approx(2.0)
    assert render(mi, Scene([back], FRONT), 4, 4, 4, max_depth=1).max() == 0.0


def direction_map(width: int = 64) -> np.ndarray:
    """An environment image whose texels hold their own direction, encoded ``(d + 1) / 2``."""
    rows = width // 2 + 1
    theta = np.pi * np.arange(rows) / (rows - 1)  # Environment: row i at theta = pi i / (H - 1)
    phi = 2.0 * np.pi * (np.arange(width) + 0.5) / width  # column j at phi = 2 pi (j + 0.5) / W
    d = np.stack(np.broadcast_arrays(np.sin(phi)[None] * np.sin(theta)[:, None], np.cos(theta)[:, None],
                                     -np.cos(phi)[None] * np.sin(theta)[:, None]), axis=-1)
    return ((d + 1.0) * 0.5).astype(np.float32)


def seen_direction(image: np.ndarray) -> np.ndarray:
    d = image[image.shape[0] // 2, image.shape[1] // 2] * 2.0 - 1.0
    return d / np.linalg.norm(d)


@pytest.mark.parametrize("look", [(1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (-0.6, 0.3, 0.74), (0.2, -0.9, 0.3)])
def test_the_environment_map_is_seen_in_the_direction_our_convention_gives(mi, look):
    look = np.asarray(look) / np.linalg.norm(look)
    camera = Camera((0.0, 0.0, 0.0), tuple(look), up=(0.0, 0.0, 1.0) if abs(look[1]) > 0.8 else (0.0, 1.0, 0.0),
                    fov=1.0)
    image = render(mi, Scene([], camera, Environment(image=direction_map())), 5, 5, 16, max_depth=1)
    np.testing.assert_allclose(seen_direction(image), look, atol=0.02)


def test_environment_scale_and_to_world_follow(mi):
    turn = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # +x of the map to -z of the world
    env = Environment(image=direction_map(), scale=2.0, to_world=turn)
    camera = Camera((0.0, 0.0, 0.0), (0.0, 0.0, -1.0), fov=1.0)
    image = render(mi, Scene([], camera, env), 5, 5, 16, max_depth=1) / 2.0
    np.testing.assert_allclose(seen_direction(image), [1.0, 0.0, 0.0], atol=0.02)  # the map's own +x


def constant_normal_map(normal: tuple[float, float, float]) -> Texture:
    n = np.asarray(normal, np.float64) / np.linalg.norm(normal)
    return Texture(np.full((4, 4, 3), (n + 1.0) * 0.5, np.float32), srgb=False)


@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("tilt, expected_axis", [((1.0, 0.0), "u"), ((0.0, 1.0), "up")])
def test_a_normal_map_tilts_as_ours_does(mi, mirror, tilt, expected_axis):
    """A mirror quad facing the camera, its normal map tilting the normal 22.5 degrees; the reflection shows where.

    Ours: the map's x follows dp/du and its y the bitangent towards the top of the image (decreasing v), on
    either handedness of the UVs (``kernels/pathtracer/surface.h``).
    """
    a = math.radians(22.5)
    n = (tilt[0] * math.sin(a), tilt[1] * math.sin(a), math.cos(a))
    mirror_material = Material(bsdf="conductor", eta=(0.0, 0.0, 0.0), k=(1.0, 1.0, 1.0), reflectance=(1.0, 1.0, 1.0),
                               normal_texture=constant_normal_map(n))  # eta 0 + 1i: a perfect mirror
    flip = np.diag([-1.0 if mirror else 1.0, 1.0, 1.0, 1.0])[:3]
    quad = leaf_quad(flip, mirror_material)
    scene = Scene([quad], Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=5.0), Environment(image=direction_map()))
    image = render(mi, scene, 5, 5, 16, max_depth=2)
    dpdu = np.array([-1.0 if mirror else 1.0, 0.0, 0.0])
    axis = dpdu if expected_axis == "u" else np.array([0.0, 1.0, 0.0])
    normal = math.sin(a) * axis + math.cos(a) * np.array([0.0, 0.0, 1.0])
    view = np.array([0.0, 0.0, -1.0])
    reflected = view - 2.0 * (view @ normal) * normal
    np.testing.assert_allclose(seen_direction(image), reflected, atol=0.03)
