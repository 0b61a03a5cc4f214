"""The texture decoder's target: valid PNG, JPEG and GIF files mutated as bytes and in their size fields.

``load_texture`` must return a texture or raise ``OSError`` / ``ValueError`` (``LoadLimitError`` for a
decompression bomb); Pillow decodes, the limits come first.
"""

from __future__ import annotations

import io
import random
import struct
import zlib
from typing import Any

import numpy as np

from ....scene import load_texture
from .._harness import encode
from .._mutators import mutate_bytes
from .._target import FileTarget, register


def encoded(fmt: str, pixels: np.ndarray, **options: Any) -> bytes:
    """``pixels`` in the image format ``fmt``."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt, **options)
    return out.getvalue()


def seed_images() -> list[bytes]:
    """Valid 12 x 16 images: PNG (RGB, RGBA, grey, 16-bit, optimized), JPEG and GIF."""
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 255, (12, 16, 3), dtype=np.uint8)
    return [encoded("PNG", rgb), encoded("PNG", np.dstack([rgb, rgb[..., :1]])), encoded("PNG", rgb[..., 0]),
            encoded("PNG", (rgb[..., 0].astype(np.uint16) * 257)), encoded("JPEG", rgb, quality=70),
            encoded("PNG", rgb, optimize=True), encoded("GIF", rgb[..., 0])]


def png_with_size(data: bytes, width: int, height: int) -> bytes:
    """A PNG's bytes with its IHDR width and height replaced (and the chunk's CRC made right again)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return data
    body = struct.pack(">II", width, height) + data[24:29]
    return data[:16] + body + struct.pack(">I", zlib.crc32(b"IHDR" + body)) + data[33:]


@register
class TextureTarget(FileTarget):
    """Image files through ``load_texture``."""

    name = "texture"
    cases = 160
    allowed = (OSError, ValueError)
    load = staticmethod(load_texture)

    def __init__(self) -> None:
        super().__init__()
        self._seeds: list[bytes] | None = None

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        if self._seeds is None:
            self._seeds = seed_images()
        data = rng.choice(self._seeds)
        if not valid:
            if rng.random() < 0.3:
                data = png_with_size(data, rng.choice([0, 1, 16, 2**15, 2**16, 2**24, 2**31 - 1]),
                                     rng.choice([0, 1, 12, 2**15, 2**20, 2**31 - 1]))
            data = mutate_bytes(data, rng, rng.randrange(0, 8))
        return {"files": {"texture.png": encode(data)}, "open": "texture.png", "valid": valid}

    def verify(self, case: dict[str, Any], outcome: str, value: Any) -> None:
        if case.get("valid"):
            assert value.shape[:2] == (12, 16), value.shape
