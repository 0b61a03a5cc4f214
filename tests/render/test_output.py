"""Image output: sRGB encoding, PNG and EXR files, numbered frame names, the background writer. CPU only."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from optixasync.errors import MissingExtraError

# Frame file names and the suffix check with a restricted list (the command's "use .png") are the render command's
# helpers, with no public re-export.
from optixasync.io import ImageWriter, check_image_path, numbered_path, tonemap_srgb, write_image


def png_of(tmp_path, linear) -> np.ndarray:
    """What a PNG of linear floats holds: its 8-bit sRGB encoding."""
    return np.asarray(Image.open(write_image(tmp_path / "linear.png", linear)))


def test_srgb8_known_values(tmp_path):
    linear = np.array([[[0.0, 1.0, 0.5], [0.001, 0.2, 2.0], [np.nan, -1.0, np.inf]]], np.float32)
    out = png_of(tmp_path, linear)
    assert out.dtype == np.uint8 and out.shape == (1, 3, 3)
    # 0.5 -> 1.055 * 0.5**(1/2.4) - 0.055 = 0.7354 -> 188; 0.001 -> 12.92e-3 -> 3; 0.2 -> 0.4845 -> 124
    assert out.tolist() == [[[0, 255, 188], [3, 124, 255], [0, 0, 255]]]


def test_srgb8_keeps_alpha_linear(tmp_path):
    out = png_of(tmp_path, np.full((2, 2, 4), 0.5, np.float32))
    assert out.shape == (2, 2, 4)
    assert (out[..., :3] == 188).all() and (out[..., 3] == 128).all()


def test_png_uint8_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    path = write_image(tmp_path / "sub" / "a.png", image)  # the folder is created
    assert path == tmp_path / "sub" / "a.png"
    back = np.asarray(Image.open(path))
    np.testing.assert_array_equal(back, image)


def test_png_rgba_and_float(tmp_path):
    rgba = np.zeros((3, 4, 4), np.uint8)
    rgba[..., 3] = 200
    rgba[1, 2] = (10, 20, 30, 40)
    np.testing.assert_array_equal(np.asarray(Image.open(write_image(tmp_path / "rgba.PNG", rgba))), rgba)
    linear = np.linspace(0, 1, 4 * 3 * 3, dtype=np.float32).reshape(4, 3, 3)
    back = np.asarray(Image.open(write_image(tmp_path / "f.png", linear)))
    np.testing.assert_array_equal(back, tonemap_srgb(linear))


def test_exr_round_trip(tmp_path):
    openexr = pytest.importorskip("OpenEXR", reason="OpenEXR (the 'exr' extra) is not installed")
    rng = np.random.default_rng(2)
    image = (rng.random((6, 5, 3)) * 40).astype(np.float32)  # HDR values well above 1
    path = write_image(tmp_path / "hdr.exr", image)
    with openexr.File(str(path)) as exr:
        channels = exr.channels()
        back = channels["RGB"].pixels if "RGB" in channels else np.stack([channels[c].pixels for c in "RGB"], -1)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, image)


def test_exr_without_openexr_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "OpenEXR", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'optixasync\[exr\]'"):
        write_image(tmp_path / "a.exr", np.zeros((2, 2, 3), np.float32))
    assert not (tmp_path / "a.exr").exists()


def test_exr_refuses_8_bit(tmp_path):
    with pytest.raises(ValueError, match="linear floating-point"):
        write_image(tmp_path / "a.exr", np.zeros((2, 2, 3), np.uint8))


@pytest.mark.parametrize("name", ["a.jpg", "a", "a.png.gz", "a.tiff"])
def test_unsupported_suffix(tmp_path, name):
    with pytest.raises(ValueError, match="unsupported image format"):
        write_image(tmp_path / name, np.zeros((2, 2, 3), np.uint8))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("shape", [(4, 4), (4, 4, 2), (0, 4, 3), (2, 2, 5)])
def test_bad_shape(tmp_path, shape):
    with pytest.raises(ValueError, match="shape"):
        write_image(tmp_path / "a.png", np.zeros(shape, np.uint8))


def test_integer_pixels_other_than_uint8(tmp_path):
    with pytest.raises(TypeError, match="uint8"):
        write_image(tmp_path / "a.png", np.zeros((2, 2, 3), np.int32))


def test_check_image_path_restricts_formats():
    assert check_image_path("x.EXR").suffix == ".EXR"
    with pytest.raises(ValueError, match=r"use \.png"):
        check_image_path("x.exr", (".png",))


def test_numbered_path(tmp_path):
    assert numbered_path("out.png", 7).name == "out_0007.png"
    assert numbered_path(tmp_path / "run" / "frame.png", 12345) == tmp_path / "run" / "frame_12345.png"


def test_image_writer_writes_everything(tmp_path):
    images = [np.full((2, 3, 3), k, np.uint8) for k in range(10)]
    with ImageWriter(workers=3) as writer:
        for k, image in enumerate(images):
            writer.submit(numbered_path(tmp_path / "f.png", k), image)
    assert sorted(p.name for p in writer.written) == [f"f_{k:04d}.png" for k in range(10)]
    for k in range(10):
        np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / f"f_{k:04d}.png")), images[k])


def test_image_writer_bounds_pending_images():
    gate = threading.Event()
    seen: list[str] = []

    def slow(path, image):
        gate.wait(5)
        seen.append(path.name)

    writer = ImageWriter(workers=1, max_pending=2, writer=slow)
    writer.submit("a.png", np.zeros((1, 1, 3), np.uint8))
    writer.submit("b.png", np.zeros((1, 1, 3), np.uint8))  # two pending: the limit
    third = threading.Thread(target=writer.submit, args=("c.png", np.zeros((1, 1, 3), np.uint8)))
    third.start()
    time.sleep(0.2)
    assert third.is_alive(), "submit should wait while max_pending images are being written"
    gate.set()
    third.join(5)
    assert not third.is_alive()
    writer.close()
    assert seen == ["a.png", "b.png", "c.png"]


def test_image_writer_reports_a_failed_write(tmp_path):
    def failing(path, image):
        raise OSError(f"disk full writing {path.name}")

    writer = ImageWriter(workers=1, writer=failing)
    writer.submit(tmp_path / "a.png", np.zeros((1, 1, 3), np.uint8))
    with pytest.raises(OSError, match="disk full writing a.png"):
        writer.close()


def test_image_writer_rejects_bad_sizes():
    with pytest.raises(ValueError, match=">= 1"):
        ImageWriter(workers=0)


def test_writes_are_atomic(tmp_path, monkeypatch):
    """A write that fails half-way leaves the old file as it was and no temporary file beside it."""
    from PIL import Image

    target = tmp_path / "frame.png"
    write_image(target, np.full((2, 2, 3), 7, np.uint8))
    before = target.read_bytes()

    def half_then_fail(self, fp, format=None, **kwargs):
        Path(fp).write_bytes(b"half a PNG")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Image.Image, "save", half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        write_image(target, np.full((2, 2, 3), 9, np.uint8))
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frame.png"]
