"""Environment maps' targets: Radiance HDR headers and scanlines, NPY headers and bodies, EXR files.

``load_environment`` must return an Environment or raise ``OSError``, ``ValueError`` (``LoadLimitError``
among them), ``TypeError`` (an integer ``.npy``) or ``MissingExtraError``. OpenEXR is a C++ library: its
target runs in a child process, so that a crash there is a failing case instead of the end of the run.
"""

from __future__ import annotations

import io
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ....errors import MissingExtraError
from ....scene import load_environment
from .._harness import encode
from .._mutators import mutate_bytes
from .._target import FileTarget, register

ALLOWED = (OSError, ValueError, TypeError, MissingExtraError)


def _rle_row(rng: random.Random, width: int) -> bytes:
    """One run-length encoded RGBE scanline: runs of at most 127 and literals."""
    row = bytearray([2, 2, width >> 8, width & 0xFF])
    for _channel in range(4):
        left = width
        while left:
            run = min(left, 127)
            row += bytes([128 + run, rng.randrange(256)]) if rng.random() < 0.8 else bytes([run]) + rng.randbytes(run)
            left -= run
    return bytes(row)


def hdr_file(rng: random.Random, valid: bool) -> bytes:
    """An RGBE file: a header of random claims over scanlines of random encodings; ``valid``: a well-formed one
    (``-Y h +X w``, every scanline there, flat or run-length encoded)."""
    if valid:
        height, width = rng.randrange(2, 21), rng.choice([2, 7, 8, 9, 40, 127, 300])  # 2 x 2 at least
        header = [b"#?RADIANCE", rng.choice([b"FORMAT=32-bit_rle_rgbe", b"EXPOSURE=2"]), b""]
        resolution = b"-Y %d +X %d"
    else:
        height = rng.choice([1, 2, 3, 8, 20, rng.randrange(1, 64), 0, 10**5, 2**31])
        width = rng.choice([1, 7, 8, 9, 40, 127, 300, rng.randrange(1, 400), 0, 0x8000, 10**6])
        header = [b"#?RADIANCE", rng.choice([b"FORMAT=32-bit_rle_rgbe", b"FORMAT=32-bit_rle_xyze", b"EXPOSURE=2",
                                             b"EXPOSURE=\xd9\xa1", b"EXPOSURE=nan", b"EXPOSURE=-inf", b""]), b""]
        resolution = rng.choice([b"-Y %d +X %d", b"+Y %d +X %d", b"-Y %d -X %d", b"-Y %d", b"-Y %d +X %d junk",
                                 b"-Y %d +X \xd9\xa1%d", b"-Y +%d +X %d", b"-Y %d\xc2\xb9 +X %d"])
    body = bytearray()
    for _ in range(min(height, 64)):
        if 8 <= width <= 0x7FFF and rng.random() < 0.6:
            body += _rle_row(rng, width)
        else:
            row = bytearray(rng.randbytes(4 * min(width, 2000)))
            if row[:2] == b"\x02\x02":  # a flat row starting 2, 2 reads as run-length encoded (the format's rule)
                row[0] = 1
            body += row
    claims = (height, width) if resolution.count(b"%") == 2 else (height,)
    text = b"\n".join(header) + b"\n" + (resolution % claims) + b"\n"
    return text + bytes(body) if valid else mutate_bytes(text + bytes(body), rng, rng.randrange(0, 4))


def npy_file(rng: random.Random, valid: bool) -> bytes:
    """An NPY file with a mutated header (shape, dtype, order) or body; ``valid``: an unmutated float one."""
    low = 2 if valid else 1  # a map has 2 x 2 pixels at least
    array = np.random.default_rng(rng.randrange(2**32)).random((rng.randrange(low, 6), rng.randrange(low, 6), 3))
    out = io.BytesIO()
    np.save(out, array.astype(rng.choice([np.float32, np.float64, np.float16])), allow_pickle=False)
    data = out.getvalue()
    if valid:
        return data
    if rng.random() < 0.6:
        start, end = data.index(b"{"), data.index(b"}") + 1
        header = data[start:end].decode("latin-1")
        choice = rng.random()
        if choice < 0.4:
            header = header.replace(header[header.index("("): header.index(")") + 1],
                                    rng.choice(["(100000, 100000, 3)", "(-1, 2, 3)", "(2, 2)", "()", "(4, 4, 3, 2)",
                                                "(2**40, 2, 3)", "(10, 10, 3)", "(1, 1, 3)", "(0, 5, 3)"]))
        elif choice < 0.7:
            header = header.replace(header.split("'descr': '")[1].split("'")[0],
                                    rng.choice(["|O", "<i4", ">f8", "<U5", "V12", "<c8", "|b1", "<f2"]))
        else:
            header = header.replace("False", rng.choice(["True", "None", "1", "__import__('os')"]))
        data = data[:start] + header.encode("latin-1").ljust(end - start) + data[end:]
    return mutate_bytes(data, rng, rng.randrange(0, 3))


class _EnvironmentTarget(FileTarget):
    allowed = ALLOWED
    load = staticmethod(load_environment)

    def verify(self, case: dict[str, Any], outcome: str, value: Any) -> None:
        if outcome == "ok":
            image = value.image
            assert image.ndim == 3 and image.shape[2] == 3 and image.size > 0, image.shape
            assert np.isfinite(image).all() or not case.get("valid"), "a valid map gave non-finite pixels"


@register
class HdrTarget(_EnvironmentTarget):
    """Radiance HDR (RGBE) files."""

    name = "hdr"
    cases = 160

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        return {"files": {"sky.hdr": encode(hdr_file(rng, valid))}, "open": "sky.hdr", "valid": valid}


@register
class NpyTarget(_EnvironmentTarget):
    """NumPy ``.npy`` maps."""

    name = "npy"
    cases = 120

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        return {"files": {"sky.npy": encode(npy_file(rng, valid))}, "open": "sky.npy", "valid": valid}


@register
class ExrTarget(_EnvironmentTarget):
    """OpenEXR files (the exr extra): small valid scanline files in three compressions, mutated as bytes."""

    name = "exr"
    cases = 60
    isolated = True

    def __init__(self) -> None:
        super().__init__()
        self._seeds: list[bytes] | None = None

    def _seed_files(self) -> list[bytes]:
        import OpenEXR

        seeds = []
        with tempfile.TemporaryDirectory() as scratch:
            for k, compression in enumerate((OpenEXR.NO_COMPRESSION, OpenEXR.ZIP_COMPRESSION,
                                             OpenEXR.PIZ_COMPRESSION)):
                pixels = np.random.default_rng(k).random((6, 9)).astype(np.float32)
                path = Path(scratch) / f"seed{k}.exr"
                OpenEXR.File({"compression": compression, "type": OpenEXR.scanlineimage},
                             {"R": pixels, "G": pixels, "B": pixels}).write(str(path))
                seeds.append(path.read_bytes())
        return seeds

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        if self._seeds is None:
            self._seeds = self._seed_files()
        data = rng.choice(self._seeds)
        if not valid:
            data = mutate_bytes(data, rng, rng.randrange(1, 6))
        return {"files": {"sky.exr": encode(data)}, "open": "sky.exr", "valid": valid}
