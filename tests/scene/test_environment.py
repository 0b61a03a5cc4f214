"""Environments on the host: validation of constants and maps, their power, and map files (.hdr, .exr, .npy).

CPU only: the files are written here (Radiance RGBE by a small encoder below, with run-length encoded and flat
scanlines; EXR through OpenEXR).
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from optixasync.errors import MissingExtraError

# The modules themselves, until the package exports them: the luminance weights and the RGBE reader.
from optixasync.scene import ENVIRONMENT_SUFFIXES, Environment, load_environment
from optixasync.scene._environment import LUMINANCE_WEIGHTS
from optixasync.scene._rgbe import read_rgbe


def sky(height: int = 4, width: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.0, 4.0, (height, width, 3)).astype(np.float32)


# -- validation ------------------------------------------------------------------------------------------------------


def test_constant_and_map_are_normalised():
    constant = Environment(radiance=[1, 2, 3], scale=2)
    assert constant.radiance == (1.0, 2.0, 3.0) and constant.scale == 2.0 and type(constant.scale) is float
    assert constant.is_constant and constant.image is None and constant.to_world is None
    source = np.random.default_rng(1).uniform(0, 1, (3, 5, 4))  # float64 RGBA
    env = Environment(image=source, name="sky")
    assert not env.is_constant
    assert env.image.dtype == np.float32 and env.image.shape == (3, 5, 3) and env.image.flags.c_contiguous
    np.testing.assert_array_equal(env.image, source[..., :3].astype(np.float32))
    assert not env.image.flags.writeable
    source[...] = 0.0  # the environment holds its own copy
    assert env.image.max() > 0
    half = Environment(image=np.ones((2, 2, 3), np.float16))
    assert half.image.dtype == np.float32


def test_to_world_is_stored_as_a_3x3_rotation():
    turn = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]], np.float64)
    env = Environment(radiance=(1, 1, 1), to_world=turn)
    assert env.to_world.dtype == np.float64 and env.to_world.shape == (3, 3)
    affine = np.eye(4)
    affine[:3, :3], affine[:3, 3] = turn, (5, 6, 7)  # the translation of a 4x4 does not matter
    np.testing.assert_array_equal(Environment(radiance=(1, 1, 1), to_world=affine).to_world, turn)
    mirror = np.diag([-1.0, 1.0, 1.0])
    np.testing.assert_array_equal(Environment(radiance=(1, 1, 1), to_world=mirror).to_world, mirror)


def pixels_with(value: float, where: list[tuple[int, int]], dtype=np.float32) -> np.ndarray:
    image = np.ones((4, 6, 3), dtype)
    for row, col in where:
        image[row, col, 1] = value
    return image


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, r"environment 'sky': give exactly one of radiance .* got neither"),
    ({"radiance": (1, 1, 1), "image": np.ones((2, 2, 3))}, ValueError, "got both"),
    ({"radiance": (1, -1, 1)}, ValueError, r"'sky': radiance must be >= 0"),
    ({"radiance": (1, 1)}, ValueError, "radiance must have 3 components"),
    ({"radiance": (1, math.nan, 1)}, ValueError, "radiance must be finite"),
    ({"radiance": "white"}, TypeError, "radiance must be 3 numbers"),
    ({"image": [[[1.0, 1.0, 1.0]]]}, TypeError, r"'sky': image must be a numpy array .* got list"),
    ({"image": np.ones((4, 4, 3), np.uint8)}, TypeError, r"image must hold float16, float32 or float64 .* uint8"),
    ({"image": np.ones((4, 4), np.float32)}, ValueError, r"image must have shape \(H, W, 3\) or \(H, W, 4\), got \(4, 4\)"),
    ({"image": np.ones((4, 4, 2), np.float32)}, ValueError, r"got \(4, 4, 2\)"),
    ({"image": np.ones((1, 8, 3), np.float32)}, ValueError, r"'sky': image is too small, 1 x 8 pixels .* 2 x 2"),
    ({"image": np.ones((8, 1, 3), np.float32)}, ValueError, "too small, 8 x 1"),
    ({"image": pixels_with(np.nan, [(2, 3), (3, 0)])}, ValueError,
     r"'sky': image has 2 pixels with NaN or Inf values .* first at \(row 2, col 3\)"),
    ({"image": pixels_with(np.inf, [(0, 5)], np.float16)}, ValueError, r"1 pixel with NaN or Inf .*\(row 0, col 5\)"),
    ({"image": pixels_with(1e39, [(1, 1)], np.float64)}, ValueError, r"beyond float32's range.*\(row 1, col 1\)"),
    ({"image": pixels_with(-0.5, [(3, 5), (1, 2), (2, 2)])}, ValueError,
     r"image has 3 pixels with negative values, first at \(row 1, col 2\)"),
    ({"radiance": (1, 1, 1), "scale": -1.0}, ValueError, r"'sky': scale must be finite and >= 0, got -1.0"),
    ({"radiance": (1, 1, 1), "scale": math.inf}, ValueError, "scale must be finite"),
    ({"radiance": (1, 1, 1), "scale": math.nan}, ValueError, "scale must be finite"),
    ({"radiance": (1, 1, 1), "scale": "2"}, TypeError, "scale must be a number"),
    ({"radiance": (1, 1, 1), "scale": True}, TypeError, "scale must be a number"),
    ({"radiance": (1, 1, 1), "to_world": np.eye(3) * 2}, ValueError, r"'sky': to_world must be orthonormal"),
    ({"radiance": (1, 1, 1), "to_world": np.eye(2)}, ValueError, r"to_world must be a 3x3 or 4x4 matrix, got shape"),
    ({"radiance": (1, 1, 1), "to_world": np.diag([1, 1, 1, 2.0])}, ValueError, "last row 0 0 0 1"),
    ({"radiance": (1, 1, 1), "to_world": np.full((3, 3), np.nan)}, ValueError, "to_world must be finite"),
    ({"radiance": (1, 1, 1), "to_world": "identity"}, TypeError, "to_world must be a 3x3 or 4x4 matrix of numbers"),
])
def test_bad_environments_name_the_environment_and_the_field(kwargs, error, match):
    with pytest.raises(error, match=match):
        Environment(name="sky", **kwargs)


def test_unnamed_environment_and_bad_name():
    with pytest.raises(ValueError, match=r"^environment: scale"):
        Environment(radiance=(1, 1, 1), scale=-2)
    with pytest.raises(TypeError, match="environment name must be a string"):
        Environment(radiance=(1, 1, 1), name=3)


# -- power -----------------------------------------------------------------------------------------------------------


def test_power_of_a_constant():
    env = Environment(radiance=(1.0, 2.0, 4.0), scale=0.5)
    lum = float(np.dot(LUMINANCE_WEIGHTS, (1.0, 2.0, 4.0))) * 0.5
    assert env.mean_luminance == pytest.approx(lum)
    assert env.power == pytest.approx(4 * math.pi * lum)
    assert env.scene_power(2.0) == pytest.approx(math.pi * 4.0 * env.power)


@pytest.mark.parametrize("shape", [(2, 2), (3, 7), (16, 32)])
def test_a_uniform_map_has_the_power_of_its_constant(shape):
    image = np.broadcast_to(np.array([0.5, 1.0, 2.0], np.float32), (*shape, 3)).copy()
    assert Environment(image=image, scale=3.0).power == pytest.approx(Environment(radiance=(0.5, 1, 2), scale=3).power)


def test_map_power_weights_rows_by_solid_angle():
    """A bright zenith row counts for little, a bright horizon row for much: the integral of the bilinear lookup."""
    height, width = 9, 4
    rows = np.arange(height)
    for row in (0, 4, 8):
        image = np.zeros((height, width, 3), np.float32)
        image[row] = 1.0
        # the lookup's luminance is a hat function of theta, 1 on the row, 0 one row away (pi/8): integrate it
        theta = np.linspace(0.0, np.pi, 200_001)
        hat = np.interp(theta, np.pi * rows / (height - 1), (rows == row).astype(float))
        integral = 2 * np.pi * np.trapezoid(hat * np.sin(theta), theta)
        assert Environment(image=image).power == pytest.approx(integral, rel=1e-6)


# -- Radiance RGBE ---------------------------------------------------------------------------------------------------


def rgbe_encode(rgb: np.ndarray) -> np.ndarray:
    """Ward's encoding: a shared exponent from the largest channel, 8-bit mantissas (largest >= 128)."""
    rgb = np.asarray(rgb, np.float64)
    largest = rgb.max(axis=-1)
    mantissa, exponent = np.frexp(largest)
    lit = largest > 1e-32
    factor = np.where(lit, mantissa * 256.0 / np.where(lit, largest, 1.0), 0.0)
    out = np.zeros((*rgb.shape[:-1], 4), np.uint8)
    out[..., :3] = np.floor(rgb * factor[..., None]).astype(np.uint8)
    out[..., 3] = np.where(lit, exponent + 128, 0)
    return out


def rgbe_decode(rgbe: np.ndarray) -> np.ndarray:
    e = rgbe[..., 3].astype(np.float64)
    return np.where(e[..., None] > 0, rgbe[..., :3] * 2.0 ** (e[..., None] - 136), 0.0)


def rle_bytes(values: np.ndarray) -> bytes:
    """One channel of a scanline, run-length encoded: runs of 3+ equal bytes, else literals."""
    out, k, n = bytearray(), 0, len(values)
    while k < n:
        run = 1
        while k + run < n and run < 127 and values[k + run] == values[k]:
            run += 1
        if run >= 3:
            out += bytes([128 + run, values[k]])
            k += run
            continue
        start = k
        while k < n and k - start < 128 and not (k + 2 < n and values[k] == values[k + 1] == values[k + 2]):
            k += 1
        out += bytes([k - start]) + bytes(values[start:k])
    return bytes(out)


def write_rgbe(path, rgbe: np.ndarray, rle_rows=(), header: bytes = b"FORMAT=32-bit_rle_rgbe\nEXPOSURE=2.0\n",
               resolution: bytes | None = None) -> None:
    height, width = rgbe.shape[:2]
    data = bytearray(b"#?RADIANCE\n# a comment\n" + header + b"\n")
    data += resolution if resolution is not None else f"-Y {height} +X {width}\n".encode()
    for y in range(height):
        if y in rle_rows:
            data += bytes([2, 2, width >> 8, width & 0xFF])
            for channel in range(4):
                data += rle_bytes(rgbe[y, :, channel])
        else:
            data += rgbe[y].tobytes()
    path.write_bytes(bytes(data))


def hdr_test_image(height: int = 5, width: int = 40) -> np.ndarray:
    rng = np.random.default_rng(3)
    image = rng.lognormal(0.0, 2.0, (height, width, 3))
    image[:, 5:20] = [0.25, 0.5, 1.0]  # long runs in every channel
    image[1, 30:] = 0.0  # black pixels: exponent 0
    image[-1, :4] = [1e5, 3e4, 2.0]  # bright
    return image


def test_rgbe_reader_reads_run_length_and_flat_scanlines(tmp_path):
    rgbe = rgbe_encode(hdr_test_image())
    path = tmp_path / "sky.hdr"
    write_rgbe(path, rgbe, rle_rows=(0, 2, 3))  # rows 1 and 4 flat, mixed in one file
    assert len(path.read_bytes()) < 200 + rgbe.size  # the runs were really encoded
    image = read_rgbe(path)
    assert image.dtype == np.float32 and image.shape == (5, 40, 3)
    np.testing.assert_array_equal(image, rgbe_decode(rgbe).astype(np.float32))
    assert (image[1, 30:] == 0).all() and image[4, 0, 0] > 5e4
    env = load_environment(path, scale=2.0)
    assert env.name == "sky.hdr" and env.scale == 2.0  # EXPOSURE is ignored: pixels as stored
    np.testing.assert_array_equal(env.image, image)


def test_rgbe_reader_narrow_images_are_flat(tmp_path):
    rgbe = rgbe_encode(hdr_test_image(3, 5))
    path = tmp_path / "narrow.HDR"
    write_rgbe(path, rgbe, header=b"")  # no FORMAT line: RGBE by default
    np.testing.assert_array_equal(load_environment(path).image, rgbe_decode(rgbe).astype(np.float32))


@pytest.mark.parametrize("change, match", [
    ({"header": b"FORMAT=32-bit_rle_xyze\n"}, "pixel format '32-bit_rle_xyze' is not supported"),
    ({"resolution": b"+Y 5 +X 40\n"}, r"orientation '\+Y \+X' is not supported: only '-Y <height> \+X <width>'"),
    ({"resolution": b"-X 40 +Y 5\n"}, "orientation '-X \\+Y'"),
    ({"resolution": b"-Y five +X 40\n"}, "malformed resolution line"),
    ({"resolution": b"-Y 0 +X 40\n"}, "empty"),
])
def test_rgbe_reader_refuses_what_it_does_not_read(tmp_path, change, match):
    path = tmp_path / "bad.hdr"
    write_rgbe(path, rgbe_encode(hdr_test_image()), rle_rows=(0,), **change)
    with pytest.raises(ValueError, match=match) as info:
        load_environment(path)
    assert "bad.hdr" in str(info.value)


def test_rgbe_reader_refuses_broken_data(tmp_path):
    rgbe = rgbe_encode(hdr_test_image())
    path = tmp_path / "broken.hdr"
    write_rgbe(path, rgbe, rle_rows=(0, 1, 2, 3, 4))
    whole = path.read_bytes()
    path.write_bytes(whole[:-10])
    with pytest.raises(ValueError, match=r"broken.hdr.*scanline 4: the file is truncated"):
        read_rgbe(path)
    path.write_bytes(b"P6\n3 3\n255\n")
    with pytest.raises(ValueError, match="not a Radiance file"):
        read_rgbe(path)
    path.write_bytes(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n")
    with pytest.raises(ValueError, match="no resolution line"):
        read_rgbe(path)
    start = whole.index(b"+X 40\n") + 6
    wrong_width = whole[:start] + bytes([2, 2, 0, 39]) + whole[start + 4:]
    path.write_bytes(wrong_width)
    with pytest.raises(ValueError, match="scanline 0: run-length scanline of width 39, not 40"):
        read_rgbe(path)
    overflow = whole[:start + 4] + bytes([128 + 41, 7]) + whole[start + 6:]
    path.write_bytes(overflow)
    with pytest.raises(ValueError, match="a run overflows the scanline"):
        read_rgbe(path)
    flat = rgbe.copy()
    flat[2, 7] = [1, 1, 1, 3]  # an old-style "repeat the previous pixel 3 times" marker
    write_rgbe(path, flat)
    with pytest.raises(ValueError, match="scanline 2: old-style run-length encoding"):
        read_rgbe(path)


# -- other formats and paths -------------------------------------------------------------------------------------------


def test_exr_maps_are_read_through_openexr(tmp_path):
    openexr = pytest.importorskip("OpenEXR", reason="OpenEXR (the 'exr' extra) is needed to write the test file")
    if not hasattr(openexr, "File"):
        pytest.skip("the test writes with the numpy API of OpenEXR >= 3.3")
    image = sky(6, 10)
    path = tmp_path / "sky.exr"
    channels = {c: image[..., k].copy() for k, c in enumerate("RGB")}
    channels["A"] = np.ones((6, 10), np.float16)
    with openexr.File({"compression": openexr.ZIP_COMPRESSION, "type": openexr.scanlineimage}, channels) as exr:
        exr.write(str(path))
    env = load_environment(path, name="studio")
    assert env.name == "studio"
    np.testing.assert_array_equal(env.image, image)
    half = tmp_path / "half.exr"
    with openexr.File({"type": openexr.scanlineimage}, {"RGB": image.astype(np.float16)}) as exr:
        exr.write(str(half))
    np.testing.assert_array_equal(load_environment(half).image, image.astype(np.float16).astype(np.float32))
    grey = tmp_path / "grey.exr"
    with openexr.File({"type": openexr.scanlineimage}, {"Y": image[..., 0].copy()}) as exr:
        exr.write(str(grey))
    with pytest.raises(ValueError, match=r"grey.exr' has no R, G, B channel: it has Y"):
        load_environment(grey)


def test_exr_without_openexr_names_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "sky.exr"
    path.write_bytes(b"\x76\x2f\x31\x01")
    monkeypatch.setitem(sys.modules, "OpenEXR", None)  # makes `import OpenEXR` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'optixasync\[exr\]'") as info:
        load_environment(path)
    assert isinstance(info.value, MissingExtraError)
    assert (info.value.package, info.value.extra) == ("openexr", "exr")


def test_npy_maps_and_their_checks(tmp_path):
    image = sky(3, 4).astype(np.float64)
    path = tmp_path / "sky.npy"
    np.save(path, image)
    np.testing.assert_array_equal(load_environment(path).image, image.astype(np.float32))
    image[1, 2, 0] = np.nan
    np.save(path, image)
    with pytest.raises(ValueError, match=r"environment 'sky.npy': image has 1 pixel with NaN .*\(row 1, col 2\)"):
        load_environment(path)
    path.write_bytes(b"not numpy")
    with pytest.raises(ValueError, match="cannot read numpy file"):
        load_environment(path)


def test_missing_files_and_unknown_formats(tmp_path):
    missing = tmp_path / "nowhere" / "sky.hdr"
    with pytest.raises(FileNotFoundError, match="sky.hdr"):
        load_environment(missing)
    with pytest.raises(ValueError, match=r"unsupported environment map format '.png' .* \.hdr, \.rgbe, \.exr, \.npy"):
        load_environment(tmp_path / "sky.png")
    with pytest.raises(ValueError, match="'no suffix'"):
        load_environment(tmp_path / "sky")
    assert ENVIRONMENT_SUFFIXES == (".hdr", ".rgbe", ".exr", ".npy")
