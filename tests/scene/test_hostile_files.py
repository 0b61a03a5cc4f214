"""Hostile OBJ/MTL files, textures and environment maps: containment, no echo, header sizes checked first.

Regression tests of the defects found by fuzzing the loaders: ``mtllib`` and ``map_*`` naming any file (and the
error echoing the first token of its lines), Pillow's decompression-bomb error escaping, and an HDR header
whose size is not checked against the file. Bounds are generous safety limits, not measurements.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from optixasync.errors import AssetPathError, LoadLimitError
from optixasync.scene import load_environment, load_mesh, load_obj, load_texture
from optixasync.scene._rgbe import read_rgbe
from optixasync.testing import GltfBuilder, outside, peak_memory, record_opens, time_limit

HANG_GUARD_S = 20.0
TRIANGLE_OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\n"


@pytest.fixture
def folders(tmp_path):
    """(the asset's folder; a private folder beside it holding a file that looks like a password file)."""
    asset, private = tmp_path / "asset", tmp_path / "private"
    asset.mkdir()
    private.mkdir()
    (private / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    return asset, private


@pytest.mark.parametrize("reference", ["../private/passwd", "{private}/passwd", "sub/../../private/passwd"])
def test_mtllib_cannot_leave_the_obj_folder_and_nothing_is_echoed(folders, reference):
    asset, private = folders
    reference = reference.format(private=private)
    (asset / "a.obj").write_text(f"mtllib {reference}\n{TRIANGLE_OBJ}f 1 2 3\n")
    with record_opens() as opened, pytest.raises(AssetPathError) as info:
        load_obj(asset / "a.obj")
    message = str(info.value)
    assert f"line 1: {reference!r} is refused: it leads outside the asset's folder" in message
    assert "root:x" not in message
    assert not outside(opened, [asset])


def test_a_texture_cannot_leave_the_obj_folder(folders):
    asset, private = folders
    (asset / "m.mtl").write_text(f"newmtl wood\nmap_Kd {private}/passwd\n")
    (asset / "a.obj").write_text(f"mtllib m.mtl\n{TRIANGLE_OBJ}usemtl wood\nf 1/1 2/1 3/1\n")
    with record_opens() as opened, pytest.raises(AssetPathError, match=r"m\.mtl: line 2, texture of material "
                                                                     r"'wood': .* is refused"):
        load_obj(asset / "a.obj")
    assert not outside(opened, [asset])
    (asset / "m.mtl").write_text("newmtl wood\nmap_Kd -s 1 1 ../private/passwd\n")
    with pytest.raises(AssetPathError, match="'../private/passwd' is refused"):
        load_obj(asset / "a.obj")


def test_an_mtl_error_quotes_only_a_short_piece_of_the_line(tmp_path):
    (tmp_path / "m.mtl").write_text("x" * 5000 + " 1 2 3\n")
    (tmp_path / "a.obj").write_text(f"mtllib m.mtl\n{TRIANGLE_OBJ}f 1 2 3\n")
    with pytest.raises(ValueError, match="before any newmtl") as info:
        load_obj(tmp_path / "a.obj")
    assert len(str(info.value)) < 300


def test_a_library_named_many_times_is_read_once(tmp_path):
    (tmp_path / "m.mtl").write_text("newmtl red\nKd 1 0 0\n")
    (tmp_path / "a.obj").write_text("mtllib " + " ".join(["m.mtl"] * 2000) + f"\n{TRIANGLE_OBJ}usemtl red\nf 1 2 3\n")
    with record_opens() as opened:
        scene = load_obj(tmp_path / "a.obj")
    assert scene.meshes[0].material.reflectance == (1.0, 0.0, 0.0)
    assert sum(path.endswith("m.mtl") for path in opened) == 1


def test_obj_files_are_bounded_by_the_limits(tmp_path):
    (tmp_path / "a.obj").write_text(TRIANGLE_OBJ + "f 1 2 3\n")
    with pytest.raises(LoadLimitError, match="max_file_bytes = 10"):
        load_obj(tmp_path / "a.obj", limits={"max_file_bytes": 10})
    with pytest.raises(LoadLimitError, match="max_total_bytes = 100"):
        load_obj(tmp_path / "a.obj", limits={"max_total_bytes": 100})


def test_load_mesh_reads_only_inside_the_mesh_folder(folders):
    asset, private = folders
    (private / "evil.mtl").write_text("newmtl evil\nKd 1 0 0\n")
    (asset / "a.obj").write_text(f"mtllib ../private/evil.mtl\nmtllib {private}/evil.mtl\n{TRIANGLE_OBJ}f 1 2 3\n")
    with record_opens() as opened:
        meshes = load_mesh(asset / "a.obj")
    assert meshes[0].num_triangles == 1
    assert not outside(opened, [asset])


def png_header(width: int, height: int) -> bytes:
    """A 57-byte PNG claiming ``width`` x ``height`` RGB pixels and holding none."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + \
        chunk(b"IEND", b"")


@pytest.mark.parametrize("width, height", [(100_000, 100_000), (12_000, 12_000)])
def test_a_decompression_bomb_is_a_load_limit_error(tmp_path, width, height):
    path = tmp_path / "bomb.png"
    path.write_bytes(png_header(width, height))
    with time_limit(HANG_GUARD_S), pytest.raises(LoadLimitError, match="max_image_pixels"):
        load_texture(path)


def test_a_bomb_inside_a_gltf_or_an_obj_is_a_load_limit_error(tmp_path):
    (tmp_path / "bomb.png").write_bytes(png_header(100_000, 100_000))
    g = GltfBuilder()
    g.add("images", {"uri": "bomb.png"})
    g.add("textures", {"source": 0})
    material = g.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}})
    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    g.scene(g.node(mesh=g.mesh(tri, [0, 1, 2], material, TEXCOORD_0=tri[:, :2])))
    from optixasync.scene import load_gltf

    with pytest.raises(LoadLimitError, match=r"image 0 .*max_image_pixels"):
        load_gltf(g.write_glb(tmp_path / "bomb.glb"))
    (tmp_path / "m.mtl").write_text("newmtl m\nmap_Kd bomb.png\n")
    (tmp_path / "a.obj").write_text(f"mtllib m.mtl\n{TRIANGLE_OBJ}usemtl m\nf 1/1 2/1 3/1\n")
    with pytest.raises(LoadLimitError, match=r"texture 'bomb.png' of material 'm'.*max_image_pixels"):
        load_obj(tmp_path / "a.obj")


def test_texture_pixels_are_checked_from_the_header(tmp_path):
    from PIL import Image

    Image.fromarray(np.zeros((40, 50, 3), np.uint8)).save(tmp_path / "t.png")
    assert load_texture(tmp_path / "t.png").shape == (40, 50, 3)
    with pytest.raises(LoadLimitError, match=r"\(50 x 40 pixels\): 2,000 exceeds the limit LoadLimits.max_image_pixels"):
        load_texture(tmp_path / "t.png", limits={"max_image_pixels": 1999})


def test_a_broken_image_is_a_value_error(tmp_path):
    (tmp_path / "t.png").write_bytes(png_header(8, 8)[:40])
    with pytest.raises(ValueError, match="not an image Pillow can read"):
        load_texture(tmp_path / "t.png")


def test_an_hdr_header_is_checked_against_the_file_size(tmp_path):
    path = tmp_path / "sky.hdr"
    path.write_bytes(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 100000 +X 100000\n")  # 71 bytes
    with time_limit(HANG_GUARD_S), pytest.raises(LoadLimitError, match=r"100000 x 100000 pixels.*max_image_pixels"):
        load_environment(path)
    path.write_bytes(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 4000 +X 4000\n" + b"\x02\x02\x0f\xa0" + b"\x80\x00")
    with peak_memory() as peak, pytest.raises(ValueError, match=r"claims 4000 x 4000 pixels, which take at least "
                                                                r"1,040,000 bytes, but the file has 6"):
        load_environment(path)
    assert peak.bytes < 16 << 20  # generous: nothing of the 16 million pixels is allocated


def test_an_hdr_decodes_in_bands(tmp_path):
    """A 90 KB run-length encoded file of a million pixels: the load holds the RGBE bytes and the float32 image
    (16 bytes a pixel), not the five full-size temporaries of a whole-image conversion (36 bytes a pixel)."""
    height, width = 2048, 512
    runs = [127, 127, 127, 127, 4]
    rows = b"".join(b"\x02\x02" + struct.pack(">H", width) + b"".join(bytes([128 + n, 128]) for n in runs) * 3 +
                    b"".join(bytes([128 + n, 129]) for n in runs) for _ in range(height))
    path = tmp_path / "grey.hdr"
    path.write_bytes(b"#?RADIANCE\n\n-Y %d +X %d\n" % (height, width) + rows)
    assert path.stat().st_size < 100_000
    with peak_memory() as peak:
        image = read_rgbe(path)
    assert image.shape == (height, width, 3) and float(image[-1, -1, 2]) == 128 * 2.0 ** (129 - 136)
    assert peak.bytes < 24 * height * width  # generous above 16 bytes a pixel, well below 36
    assert load_environment(path).image.shape == (height, width, 3)


def test_an_npy_header_is_checked_before_numpy_allocates(tmp_path):
    path = tmp_path / "sky.npy"
    np.save(path, np.zeros((2, 2, 3), np.float32))
    path.write_bytes(path.read_bytes().replace(b"(2, 2, 3)", b"(9999, 9999, 3)"))
    with pytest.raises(LoadLimitError, match=r"9999 x 9999 pixels"):
        load_environment(path, limits={"max_image_pixels": 10**6})
    with peak_memory() as peak, pytest.raises(ValueError, match=r"claims shape \(9999, 9999, 3\).*truncated"):
        load_environment(path)
    assert peak.bytes < 16 << 20


def test_an_exr_data_window_is_checked_before_it_is_decoded(tmp_path):
    openexr = pytest.importorskip("OpenEXR", reason="EXR maps need the exr extra")
    if not hasattr(openexr, "File"):
        pytest.skip("the header check is tested through OpenEXR >= 3.3's numpy API")
    pixels = np.ones((20, 30), np.float32)
    openexr.File({"compression": openexr.ZIP_COMPRESSION, "type": openexr.scanlineimage},
                 {"R": pixels, "G": pixels, "B": pixels}).write(str(tmp_path / "sky.exr"))
    assert load_environment(tmp_path / "sky.exr").image.shape == (20, 30, 3)
    with pytest.raises(LoadLimitError, match=r"20 x 30 pixels\): 600 exceeds"):
        load_environment(tmp_path / "sky.exr", limits={"max_image_pixels": 599})


def test_an_npy_preamble_claiming_a_huge_header_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "sky.npy"
    np.save(path, np.zeros((2, 2, 3), np.float32))
    data = bytearray(path.read_bytes())
    data[6:8] = b"\x02\x00"  # format 2.0: a 4-byte header length ...
    data[8:12] = struct.pack("<I", 600 << 20)  # ... claiming 600 MiB
    path.write_bytes(bytes(data))
    with peak_memory() as peak, pytest.raises(ValueError, match="its header claims 629,145,600 bytes"):
        load_environment(path)
    assert peak.bytes < 16 << 20


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed_out(tmp_path):
    """The race, made deterministic: the path is resolved (inside), then its folder becomes a link to a private
    folder before the read. The file opened is checked, so the private bytes are never returned."""
    import os

    from optixasync.errors import AssetPathError
    from optixasync.scene import LoadLimits
    from optixasync.scene._files import AssetFiles

    asset, private = tmp_path / "asset", tmp_path / "private"
    (asset / "sub").mkdir(parents=True)
    private.mkdir()
    (asset / "sub" / "m.mtl").write_text("newmtl inside\n")
    (private / "m.mtl").write_text("newmtl SECRET\n")
    (asset / "a.obj").write_text("v 0 0 0\n")
    files = AssetFiles(asset / "a.obj", LoadLimits())
    path = files.resolve("sub/m.mtl", "mtllib")
    assert files.read(path, "mtllib", "sub/m.mtl") == b"newmtl inside\n"
    os.rename(asset / "sub", asset / "gone")
    os.symlink(private, asset / "sub")  # swapped between the check and the read
    with pytest.raises(AssetPathError, match="outside the asset's folder"):
        files.read(path, "mtllib", "sub/m.mtl")
    os.remove(asset / "sub")
    (asset / "sub").mkdir()
    (asset / "sub" / "m.mtl").symlink_to(private / "m.mtl")  # the file itself a link: not followed
    with pytest.raises(AssetPathError, match="outside the asset's folder"):
        files.read(path, "mtllib", "sub/m.mtl")
