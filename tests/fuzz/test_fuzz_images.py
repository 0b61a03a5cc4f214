"""Fuzzing texture decoding: valid PNG and JPEG files mutated as bytes and in their size fields.

``load_texture`` must return a texture or raise ``OSError`` / ``ValueError`` (``LoadLimitError`` for a
decompression bomb); Pillow decodes, the limits come first.
"""

from __future__ import annotations

import io
import random
import struct
import zlib
from collections import Counter
from functools import partial

import numpy as np
from conftest import LIMITS, check_case
from fuzzing import mutate_bytes
from PIL import Image

from optixasync.scene import load_texture

CASES = 160  # per seed
ALLOWED = (OSError, ValueError)


def encoded(fmt: str, pixels: np.ndarray, **options) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt, **options)
    return out.getvalue()


def seed_images() -> list[bytes]:
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


def test_fuzz_textures(seed, case_folders):
    asset, _ = case_folders
    rng = random.Random(seed)
    images = seed_images()
    outcomes: Counter = Counter()
    for case in range(CASES):
        data = rng.choice(images)
        if rng.random() < 0.3:
            data = png_with_size(data, rng.choice([0, 1, 16, 2**15, 2**16, 2**24, 2**31 - 1]),
                                 rng.choice([0, 1, 12, 2**15, 2**20, 2**31 - 1]))
        data = mutate_bytes(data, rng, rng.randrange(0, 8))
        path = asset / "texture.png"
        path.write_bytes(data)
        outcomes[check_case(partial(load_texture, path, limits=LIMITS), asset, ALLOWED, seed=seed, case=case,
                            what="texture")] += 1
    assert sum(outcomes.values()) == CASES
    assert outcomes["ok"] >= 1 and len(outcomes) >= 2, outcomes


def test_the_seed_images_load(tmp_path):
    for k, data in enumerate(seed_images()):
        (tmp_path / f"i{k}").write_bytes(data)
        assert load_texture(tmp_path / f"i{k}").shape[:2] == (12, 16)
