"""Images and primitives a hostile file uses: only the formats the loaders document are decoded, a declared MIME
type must be what the bytes are, and a mesh's primitive list is checked once (it was checked once per primitive:
20,000 primitives took 17.1 s, 1.75 s now, on the CPU machine)."""

from __future__ import annotations

import base64
import io
import warnings

import numpy as np
import pytest
from PIL import Image

from optixasync.scene import _gltf_mesh, _gltf_reader, load_gltf, load_texture
from optixasync.testing import GltfBuilder

TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\nshowpage\n"


def encoded(fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((4, 4, 3), 90, np.uint8)).save(out, format=fmt)
    return out.getvalue()


def textured(tmp_path, image: dict, data: bytes | None = None) -> object:
    g = GltfBuilder()
    if data is not None:
        image = {**image, "bufferView": g.view(data)}
    g.add("images", image)
    g.add("textures", {"source": 0})
    material = g.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}})
    g.scene(g.node(mesh=g.mesh(TRIANGLE, [0, 1, 2], material, TEXCOORD_0=TRIANGLE[:, :2])))
    return g.write_glb(tmp_path / "t.glb")


def test_an_eps_texture_is_refused_before_pillow_would_hand_it_to_ghostscript(tmp_path):
    (tmp_path / "t.png").write_bytes(EPS)
    with pytest.raises(ValueError, match=r"formats read here \(PNG, JPEG, WEBP, GIF, BMP, TGA\)"):
        load_texture(tmp_path / "t.png")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "BMP", "GIF"])
def test_the_documented_texture_formats_load(tmp_path, fmt):
    (tmp_path / "t.img").write_bytes(encoded(fmt))
    assert load_texture(tmp_path / "t.img").shape[:2] == (4, 4)


def test_a_gltf_data_uri_labelled_png_must_hold_a_png(tmp_path):
    uri = "data:image/png;base64," + base64.b64encode(encoded("JPEG")).decode()
    with pytest.raises(ValueError, match="declares 'image/png' but its bytes are JPEG"):
        load_gltf(textured(tmp_path, {"uri": uri})).meshes  # noqa: B018
    uri = "data:image/png;base64," + base64.b64encode(EPS).decode()
    with pytest.raises(ValueError, match=r"formats read here \(PNG, JPEG, WEBP\)"):
        load_gltf(textured(tmp_path, {"uri": uri}))


def test_a_gltf_image_in_a_buffer_is_checked_against_its_mime_type_and_to_the_gltf_formats(tmp_path):
    with pytest.raises(ValueError, match="declares 'image/jpeg' but its bytes are PNG"):
        load_gltf(textured(tmp_path, {"mimeType": "image/jpeg"}, encoded("PNG")))
    with pytest.raises(ValueError, match="declares the MIME type 'image/x-eps'"):
        load_gltf(textured(tmp_path, {"mimeType": "image/x-eps"}, encoded("PNG")))
    assert load_gltf(textured(tmp_path, {"mimeType": "image/png"}, encoded("PNG"))).meshes


def test_a_bmp_is_no_gltf_image(tmp_path):
    uri = "data:application/octet-stream;base64," + base64.b64encode(encoded("BMP")).decode()
    with pytest.raises(ValueError, match=r"formats read here \(PNG, JPEG, WEBP\)"):
        load_gltf(textured(tmp_path, {"uri": uri}))
    ok = "data:image/png;base64," + base64.b64encode(encoded("PNG")).decode()
    assert load_gltf(textured(tmp_path, {"uri": ok})).meshes[0].material.textures


def test_a_mesh_of_many_primitives_checks_its_primitive_list_once_per_reading(tmp_path, monkeypatch):
    g = GltfBuilder()
    position = g.accessor(TRIANGLE)
    g.add("meshes", {"primitives": [{"attributes": {"POSITION": position}}] * 300})
    g.scene(g.node(mesh=0))
    calls = []
    checked = _gltf_mesh.primitive_list

    def counting(*args):
        calls.append(args[2])
        return checked(*args)

    monkeypatch.setattr(_gltf_mesh, "primitive_list", counting)
    monkeypatch.setattr(_gltf_reader, "primitive_list", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = load_gltf(g.write_glb(tmp_path / "many.glb"))
    assert len(scene.meshes) == 300 and len(calls) <= 2, len(calls)
