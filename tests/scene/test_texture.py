"""Textures and texture transforms: validation, channel expansion, files, and what is uploaded."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from optixasync.render._textures import texel_data
from optixasync.scene import Material, Mesh, Texture, TextureTransform, load_texture, rectangle


@pytest.mark.parametrize("data, message", [
    (np.zeros((4, 4, 3), np.int64), "dtype must be uint8, uint16, float16 or float32"),
    (np.zeros((4, 4, 5), np.uint8), r"shape must be \(H, W\) or \(H, W, C\) with C in 1..4"),
    (np.zeros((4,), np.uint8), "shape must be"),
    (np.zeros((0, 4, 3), np.uint8), "is empty"),
    (np.full((2, 2, 3), np.nan, np.float32), r"NaN or Inf \(first at row 0, column 0\)"),
])
def test_bad_texel_data_names_the_texture(data, message):
    with pytest.raises(ValueError, match=message) as info:
        Texture(data, name="bark.png")
    assert "'bark.png'" in str(info.value)


def test_bad_modes_and_types():
    with pytest.raises(TypeError, match="must be a numpy array"):
        Texture([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="wrap must be one or two of"):
        Texture(np.zeros((2, 2), np.uint8), wrap="wrap")
    with pytest.raises(ValueError, match="filter must be one of"):
        Texture(np.zeros((2, 2), np.uint8), filter="cubic")
    with pytest.raises(TypeError, match="srgb must be a bool"):
        Texture(np.zeros((2, 2), np.uint8), srgb=1)
    with pytest.raises(ValueError, match="offset must be 2 finite numbers"):
        TextureTransform(offset=(0.0, math.inf))
    assert Texture(np.zeros((2, 2), np.uint8), wrap="clamp").wrap == ("clamp", "clamp")


def test_channels_expand_to_rgba():
    grey = Texture(np.array([[10, 20]], np.uint8))
    np.testing.assert_array_equal(grey.rgba()[0, 1], [20, 20, 20, 255])
    grey_alpha = Texture(np.array([[[10, 100]]], np.uint8))
    np.testing.assert_array_equal(grey_alpha.rgba()[0, 0], [10, 10, 10, 100])
    rgb = Texture(np.array([[[0.25, 0.5, 0.75]]], np.float32))
    np.testing.assert_array_equal(rgb.rgba()[0, 0], [0.25, 0.5, 0.75, 1.0])


def test_what_is_uploaded():
    # 8-bit data stays 8-bit (the texture unit decodes sRGB); other sRGB data is decoded here, alpha untouched.
    data, hardware_srgb = texel_data(Texture(np.full((1, 1, 3), 128, np.uint8), srgb=True))
    assert data.dtype == np.uint8 and hardware_srgb
    data, hardware_srgb = texel_data(Texture(np.array([[[0.5, 0.5, 0.5, 0.5]]], np.float32), srgb=True))
    assert data.dtype == np.float32 and not hardware_srgb
    np.testing.assert_allclose(data[0, 0], [0.21404114, 0.21404114, 0.21404114, 0.5], rtol=1e-6)
    data, _ = texel_data(Texture(np.full((1, 1), 65535, np.uint16), srgb=True))
    np.testing.assert_allclose(data[0, 0], [1.0, 1.0, 1.0, 1.0])


def test_transform_matrix_is_khr_texture_transform():
    m = TextureTransform(offset=(0.5, 0.25), rotation=math.pi / 2, scale=(2.0, 3.0)).matrix()
    # uv' = T R S uv with the extension's R = [[cos, sin], [-sin, cos]]: (1, 0) -> (0.5, 0.25) + (0, -2)
    np.testing.assert_allclose(m @ [1.0, 0.0, 1.0], [0.5, -1.75], atol=1e-6)
    np.testing.assert_allclose(m @ [0.0, 1.0, 1.0], [3.5, 0.25], atol=1e-6)


def test_load_texture(tmp_path):
    path = tmp_path / "checker.png"
    Image.fromarray(np.array([[[255, 0, 0], [0, 255, 0]]], np.uint8)).save(path)
    texture = load_texture(path, srgb=True, filter="nearest")
    assert texture.shape == (1, 2, 3) and texture.srgb and texture.name == str(path)
    np.testing.assert_array_equal(texture.data[0, 1], [0, 255, 0])
    with pytest.raises(FileNotFoundError, match="missing.png"):
        load_texture(tmp_path / "missing.png")
    (tmp_path / "broken.png").write_bytes(b"not an image")
    with pytest.raises(ValueError, match="not an image Pillow can read"):
        load_texture(tmp_path / "broken.png")


def test_a_textured_material_needs_uvs():
    square = rectangle()
    textured = Material(reflectance_texture=Texture(np.zeros((2, 2, 3), np.uint8)))
    with pytest.raises(ValueError, match="no uvs"):
        Mesh(square.vertices, square.indices, textured, name="panel")
    with pytest.raises(ValueError, match=r"uvs must have shape \(4, 2\)"):
        Mesh(square.vertices, square.indices, textured, uvs=np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="normals contains NaN"):
        Mesh(square.vertices, square.indices, normals=np.full((4, 3), np.nan, np.float32))
    mesh = Mesh(square.vertices, square.indices, textured, uvs=np.zeros((4, 2), np.float64))
    assert mesh.uvs.dtype == np.float32


def test_texture_roles_are_checked():
    colour = Texture(np.zeros((2, 2, 3), np.uint8), srgb=True, name="albedo.png")
    with pytest.raises(ValueError, match="normal_texture holds data, not colours: it must have srgb=False"):
        Material(normal_texture=colour, name="bumpy")
    with pytest.raises(ValueError, match="metallic_roughness_texture holds data"):
        Material(bsdf="metallic_roughness", metallic_roughness_texture=colour)
    with pytest.raises(ValueError, match="normal_texture needs 3 channels"):
        Material(normal_texture=Texture(np.zeros((2, 2), np.uint8)))
    with pytest.raises(ValueError, match="emission_texture is set but emission is"):
        Material(emission_texture=colour)
    assert Material(alpha=np.float32(0.5), reflectance=np.float64(0.25)).reflectance == (0.25, 0.25, 0.25)


def test_a_dynamic_mesh_has_no_normals():
    square = rectangle()
    with pytest.raises(ValueError, match="dynamic and has normals or tangents"):
        Mesh(square.vertices, square.indices, normals=np.tile([[0, 0, 1]], (4, 1)).astype(np.float32), dynamic=True)


def test_scenes_the_renderer_refuses_before_any_gpu_work():
    from optixasync.render import check_scene
    from optixasync.scene import Environment, Scene

    dark = Scene([rectangle()])
    with pytest.raises(ValueError, match="the scene has no light"):
        check_scene(dark)
    dark.environment = Environment(radiance=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="the scene has no light"):
        check_scene(dark)
    dark.environment = Environment(radiance=(1.0, 1.0, 1.0))
    assert check_scene(dark) is dark
    dark.environment = "sky.hdr"  # the dataclass does not stop an assignment; the renderer does
    with pytest.raises(TypeError, match="environment must be an Environment"):
        check_scene(dark)
    lit = Scene([rectangle(material=Material(emission=1.0))])
    lit.meshes[0].material = Material(emission=1.0, reflectance_texture=Texture(np.zeros((1, 1, 3), np.uint8)))
    with pytest.raises(ValueError, match="has no uvs"):
        check_scene(lit)
