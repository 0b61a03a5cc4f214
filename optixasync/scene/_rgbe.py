"""Radiance RGBE (``.hdr``) images: a small reader that checks the header's size against the file first.

The header (``#?`` magic, ``FORMAT=32-bit_rle_rgbe`` or no FORMAT line), the
``-Y H +X W`` resolution line, then each scanline, new-style run-length
encoded or flat. A pixel ``(r, g, b, e)`` is ``(r, g, b) * 2^(e - 136)``, or
0 when ``e`` is 0, as the reference renderer decodes it.

Hostile files
-------------
Before a pixel is decoded, width times height is checked against
:attr:`LoadLimits.max_image_pixels <optixasync.scene.LoadLimits>`
(:class:`~optixasync.errors.LoadLimitError`), and against the bytes the file
has after its header: every scanline takes at least ``4 * W`` bytes flat or
``4 + 8 * ceil(W / 127)`` run-length encoded (a run holds at most 127 bytes),
so a header claiming more than the file can hold is a ``ValueError`` at
once, not an allocation. Decoding converts a band of rows at a time, so it
holds about 16 bytes per pixel (the RGBE bytes and the float32 result; an
:class:`~optixasync.scene.Environment` made from it keeps its own checked copy).

Blocking calls
--------------
None: file reading and numpy on the host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..validation import parse_ascii_int
from ._limits import LoadBudget, LoadLimits, as_limits

__all__ = ["decode_rgbe", "read_rgbe", "rgbe_min_bytes"]

#: Rows converted from RGBE to float32 at once.
_ROWS_AT_ONCE = 256


def read_rgbe(path: str | Path, *, limits: LoadLimits | dict[str, Any] | None = None) -> np.ndarray:
    """The pixels of a Radiance RGBE (``.hdr``) file as float32 (H, W, 3), row 0 at the top.

    ValueError on anything but the format above (XYZE pixels, another orientation, old-style run
    markers, bad runs, a truncated file, a header claiming more pixels than the file holds), naming
    the file; LoadLimitError (a ``ValueError``) beyond ``limits``.
    """
    from ._files import AssetFiles

    path = Path(path)
    files = AssetFiles(path, as_limits(limits))
    return decode_rgbe(files.read(path, "the file"), f"Radiance HDR file {str(path)!r}", files.limits, files.budget)


def rgbe_min_bytes(width: int, height: int) -> int:
    """The fewest bytes ``height`` scanlines of ``width`` pixels can take (flat or run-length encoded)."""
    flat = 4 * width
    if 8 <= width <= 0x7FFF:
        flat = min(flat, 4 + 8 * -(-width // 127))
    return height * flat


def decode_rgbe(data: bytes, where: str, limits: LoadLimits, budget: LoadBudget | None) -> np.ndarray:
    """Decode the RGBE file ``data`` (``where`` names it in messages) into float32 (H, W, 3)."""
    from ..errors import LoadLimitError

    pos = _rgbe_header(data, where)
    line, pos = _next_line(data, pos, where)
    tokens = line.split()
    try:  # ASCII digits only: str.isdigit() and int() also take Unicode digits
        if len(tokens) != 4:
            raise ValueError
        height, width = parse_ascii_int(tokens[1]), parse_ascii_int(tokens[3])
    except ValueError:
        raise ValueError(f"{where}: malformed resolution line {line[:80]!r}, expected '-Y <height> +X <width>'"
                         ) from None
    if tokens[0] != "-Y" or tokens[2] != "+X":
        raise ValueError(f"{where}: image orientation '{tokens[0][:8]} {tokens[2][:8]}' is not supported: only "
                         "'-Y <height> +X <width>' (rows top to bottom, columns left to right)")
    if height == 0 or width == 0:
        raise ValueError(f"{where}: the image is empty ({height} x {width})")
    if height * width > limits.max_image_pixels:
        raise LoadLimitError(where, f"the image ({height} x {width} pixels)", "max_image_pixels",
                             limits.max_image_pixels, height * width)
    needed = rgbe_min_bytes(width, height)
    if needed > len(data) - pos:
        raise ValueError(f"{where}: the header claims {height} x {width} pixels, which take at least {needed:,} "
                         f"bytes, but the file has {len(data) - pos:,} after its header (truncated, or not an HDR "
                         "image)")
    if budget is not None:
        budget.charge(height * width * 16, f"the image ({height} x {width} pixels)")
    rgbe = np.empty((height, width, 4), np.uint8)
    for y in range(height):
        pos = _rgbe_scanline(data, pos, rgbe[y], f"{where}, scanline {y}")
    out = np.empty((height, width, 3), np.float32)
    for top in range(0, height, _ROWS_AT_ONCE):  # a band at a time: the temporaries stay small
        band = rgbe[top:top + _ROWS_AT_ONCE]
        exponent = band[..., 3].astype(np.int32)
        scale = np.where(exponent > 0, np.ldexp(np.float32(1.0), exponent - 136), np.float32(0.0)).astype(np.float32)
        np.multiply(band[..., :3], scale[..., None], out=out[top:top + _ROWS_AT_ONCE])
    return out


def _next_line(data: bytes, pos: int, where: str) -> tuple[str, int]:
    end = data.find(b"\n", pos)
    if end < 0:
        raise ValueError(f"{where}: the header ends before the pixels (no resolution line)")
    try:
        return data[pos:end].rstrip(b"\r").decode("ascii"), end + 1
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: the header is not text (not a Radiance file?)") from exc


def _rgbe_header(data: bytes, where: str) -> int:
    """Position after the header's blank line, once the magic and the pixel format are checked."""
    if not data.startswith(b"#?"):
        raise ValueError(f"{where}: not a Radiance file (no '#?' magic at the start)")
    line, pos = _next_line(data, 0, where)
    while True:
        line, pos = _next_line(data, pos, where)
        if not line.strip():
            return pos
        if line.startswith("FORMAT=") and line[7:].strip() != "32-bit_rle_rgbe":
            raise ValueError(f"{where}: pixel format {line[7:].strip()[:40]!r} is not supported, only "
                             "32-bit_rle_rgbe")


def _rgbe_scanline(data: bytes, pos: int, out: np.ndarray, where: str) -> int:
    """Decode one scanline of ``out.shape[0]`` pixels into ``out`` (W, 4) uint8; returns the next position."""
    width = out.shape[0]
    header = data[pos:pos + 4]
    if 8 <= width <= 0x7FFF and len(header) == 4 and header[0] == 2 and header[1] == 2 and header[2] < 128:
        if (header[2] << 8 | header[3]) != width:
            raise ValueError(f"{where}: run-length scanline of width {header[2] << 8 | header[3]}, not {width}")
        pos += 4
        for channel in range(4):  # each channel's bytes are run-length encoded separately
            pos = _rle_channel(data, pos, out[:, channel], where)
        return pos
    end = pos + 4 * width
    if end > len(data):
        raise ValueError(f"{where}: the file is truncated")
    out[...] = np.frombuffer(data, np.uint8, 4 * width, pos).reshape(width, 4)
    # (1, 1, 1, n) repeats the previous pixel in the 1980s encoding; an encoder never writes it as a pixel,
    # whose largest mantissa is >= 128.
    if ((out[:, 0] == 1) & (out[:, 1] == 1) & (out[:, 2] == 1)).any():
        raise ValueError(f"{where}: old-style run-length encoding (1, 1, 1, n pixels) is not supported")
    return end


def _rle_channel(data: bytes, pos: int, out: np.ndarray, where: str) -> int:
    width = out.shape[0]
    decoded = bytearray()
    while len(decoded) < width:
        if pos + 2 > len(data):
            raise ValueError(f"{where}: the file is truncated")
        count = data[pos]
        if count > 128:  # a run: one byte, repeated count - 128 times
            count -= 128
            if count > width - len(decoded):
                raise ValueError(f"{where}: a run overflows the scanline (bad run-length data)")
            decoded += data[pos + 1:pos + 2] * count
            pos += 2
        else:  # count literal bytes
            if count == 0 or count > width - len(decoded):
                raise ValueError(f"{where}: bad run-length data (a literal of {count} bytes)")
            if pos + 1 + count > len(data):
                raise ValueError(f"{where}: the file is truncated")
            decoded += data[pos + 1:pos + 1 + count]
            pos += 1 + count
    out[:] = np.frombuffer(bytes(decoded), np.uint8)
    return pos
