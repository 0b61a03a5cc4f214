"""Environment map files: Radiance ``.hdr``, OpenEXR ``.exr`` and numpy ``.npy``, read into an :class:`Environment`.

:func:`load_environment` picks the reader by suffix: the small RGBE reader of
:mod:`optixasync.scene._rgbe`, OpenEXR (the optional ``OpenEXR`` package,
``pip install "optixasync[exr]"``) or numpy.

Hostile files
-------------
Every reader checks the image's width times height against
:attr:`LoadLimits.max_image_pixels <optixasync.scene.LoadLimits>` from the
header alone, before reading pixels: the RGBE header also against the bytes
the file has, the EXR ``dataWindow`` before OpenEXR decodes, and the NPY
header (shape and dtype) against the bytes after it before numpy allocates.
Files are bounded by ``max_file_bytes``; a breach is a
:class:`~optixasync.errors.LoadLimitError` (a ``ValueError``), anything
else wrong a ``ValueError`` or ``TypeError`` naming the file.

Blocking calls
--------------
None: file reading and numpy on the host.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import LoadLimitError
from ..io import import_openexr
from ._environment import Environment
from ._files import AssetFiles
from ._limits import LoadLimits, as_limits
from ._rgbe import decode_rgbe

__all__ = ["ENVIRONMENT_SUFFIXES", "load_environment"]

#: File suffixes :func:`load_environment` reads (case-insensitive).
ENVIRONMENT_SUFFIXES = (".hdr", ".rgbe", ".exr", ".npy")
_NPY_VERSIONS = ((1, 0), (2, 0))
_NPY_HEADER_BYTES = 10_000  # numpy's own bound on a header it parses


def load_environment(path: str | Path, *, scale: float = 1.0, name: str | None = None, to_world: Any = None,
                     limits: LoadLimits | dict[str, Any] | None = None) -> Environment:
    """Read an environment map file as an :class:`Environment`.

    Parameters
    ----------
    path : str or Path
        A Radiance ``.hdr``/``.rgbe`` file (run-length encoded or flat
        scanlines, ``-Y H +X W`` orientation, RGBE pixels), an OpenEXR
        ``.exr`` file (its R, G and B channels, of the first part), or a numpy
        ``.npy`` array (H, W, 3|4) of floats. Row 0 is the top of the sky.
    scale : float
        Multiplies the radiance.
    name : str, optional
        Name of the environment (default: the file name), shown in errors.
    to_world : array_like, optional
        As :attr:`Environment.to_world`.
    limits : LoadLimits, dict or None
        Resource limits (None: the defaults): ``max_file_bytes``, ``max_image_pixels``, ``max_total_bytes``.

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path``.
    LoadLimitError
        On a file or image larger than ``limits`` allow (a ``ValueError``).
    ValueError
        On an unsupported suffix (the message lists :data:`ENVIRONMENT_SUFFIXES`),
        a file that cannot be read or decoded, a header claiming more pixels
        than the file holds, or pixels that :class:`Environment` refuses.
    TypeError
        On pixels of a type :class:`Environment` refuses (an integer ``.npy``).
    MissingExtraError
        For ``.exr`` when the OpenEXR package is missing (an ``ImportError``
        naming the ``exr`` extra).
    OSError
        A file that cannot be read.

    Notes
    -----
    An ``.hdr`` file's ``EXPOSURE`` and ``PRIMARIES`` lines are ignored,
    as the reference renderer ignores them: pixels are read as stored.
    """
    path = Path(path)
    limits = as_limits(limits)
    suffix = path.suffix.lower()
    if suffix not in ENVIRONMENT_SUFFIXES:
        shown = path.suffix or "no suffix"
        raise ValueError(f"unsupported environment map format {shown!r} for {str(path)!r}: "
                         f"use one of {', '.join(ENVIRONMENT_SUFFIXES)}")
    if not path.is_file():
        raise FileNotFoundError(f"environment map file not found: {str(path)!r}")
    files = AssetFiles(path, limits)
    if suffix == ".exr":
        image = _read_exr(path, files)
    elif suffix == ".npy":
        image = _read_npy(path, files)
    else:
        image = decode_rgbe(files.read(path, "the file"), f"Radiance HDR file {str(path)!r}", limits, files.budget)
    if isinstance(image, np.ndarray) and image.ndim == 3:  # Environment keeps a checked float32 copy
        files.budget.charge(image.shape[0] * image.shape[1] * 16, "the map's checked copy")
    return Environment(image=image, scale=scale, to_world=to_world, name=path.name if name is None else name)


def _check_pixels(path: Path, files: AssetFiles, height: int, width: int, bytes_per_pixel: int) -> None:
    if height < 1 or width < 1:
        raise ValueError(f"environment map {str(path)!r}: its header gives an empty image ({height} x {width})")
    if height * width > files.limits.max_image_pixels:
        raise LoadLimitError(str(path), f"the image ({height} x {width} pixels)", "max_image_pixels",
                             files.limits.max_image_pixels, height * width)
    files.budget.charge(height * width * bytes_per_pixel, f"the image ({height} x {width} pixels)")


def _read_npy(path: Path, files: AssetFiles) -> np.ndarray:
    """A ``.npy`` array, its header (dtype, shape) checked against the limits and the file's size first."""
    size = os.path.getsize(path)
    files.check_size(size, "the file")
    with open(path, "rb") as handle:
        preamble = handle.read(12)
    # numpy reads as many header bytes as the preamble says before it checks them: check the claim first
    if preamble[:6] != b"\x93NUMPY" or len(preamble) < 10 or (preamble[6], preamble[7]) not in _NPY_VERSIONS:
        raise ValueError(f"cannot read numpy file {str(path)!r}: not an NPY file of format 1.0 or 2.0")
    wide = preamble[6] > 1
    length = struct.unpack("<I", preamble[8:12])[0] if wide and len(preamble) == 12 else struct.unpack(
        "<H", preamble[8:10])[0]
    if length > min(_NPY_HEADER_BYTES, size):
        raise ValueError(f"cannot read numpy file {str(path)!r}: its header claims {length:,} bytes")
    try:
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                      else np.lib.format.read_array_header_2_0)(handle)
            offset = handle.tell()
    except Exception as exc:  # numpy raises ValueError, OSError, EOFError or SyntaxError by what is wrong
        raise ValueError(f"cannot read numpy file {str(path)!r}: {type(exc).__name__}: {str(exc)[:200]}") from None
    shape, _fortran, dtype = header
    if dtype.hasobject:
        raise ValueError(f"numpy file {str(path)!r} holds Python objects; an environment map holds floats")
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if len(shape) == 3:
        _check_pixels(path, files, int(shape[0]), int(shape[1]), 16)
    if count * dtype.itemsize > os.path.getsize(path) - offset:
        raise ValueError(f"numpy file {str(path)!r}: its header claims shape {tuple(shape)} of {dtype}, "
                         f"{count * dtype.itemsize:,} bytes, but the file has {os.path.getsize(path) - offset:,} "
                         "after its header (truncated)")
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:  # numpy raises ValueError, OSError or EOFError by what is wrong
        raise ValueError(f"cannot read numpy file {str(path)!r}: {type(exc).__name__}: {str(exc)[:200]}") from None


def _read_exr(path: Path, files: AssetFiles) -> np.ndarray:
    openexr = import_openexr("reading .exr environment maps")
    files.check_size(os.path.getsize(path), "the file")
    try:
        if hasattr(openexr, "File"):  # the numpy API of OpenEXR >= 3.3
            with openexr.File(str(path), header_only=True) as exr:
                low, high = exr.header()["dataWindow"]
            _check_pixels(path, files, int(high[1]) - int(low[1]) + 1, int(high[0]) - int(low[0]) + 1, 32)
            with openexr.File(str(path), separate_channels=True) as exr:
                channels = {name: np.asarray(c.pixels) for name, c in exr.channels().items()}
        else:  # OpenEXR 3.2
            channels = _read_exr_3_2(openexr, path, files)
    except LoadLimitError:
        raise
    except Exception as exc:  # OpenEXR raises its own exception types
        raise ValueError(f"cannot read EXR file {str(path)!r}: {type(exc).__name__}: {str(exc)[:200]}") from exc
    missing = [c for c in "RGB" if c not in channels]
    if missing:
        raise ValueError(f"EXR file {str(path)!r} has no {', '.join(missing)} channel: it has "
                         f"{', '.join(sorted(channels)[:16]) or 'none'}; an environment map needs R, G and B")
    for c in "RGB":
        if not np.issubdtype(channels[c].dtype, np.floating):
            raise ValueError(f"EXR file {str(path)!r}: channel {c} holds {channels[c].dtype}, not floating point")
    if len({channels[c].shape for c in "RGB"}) != 1:
        raise ValueError(f"EXR file {str(path)!r}: the R, G and B channels differ in size (subsampled channels)")
    return np.stack([channels[c] for c in "RGB"], axis=-1)


def _read_exr_3_2(openexr: Any, path: Path, files: AssetFiles) -> dict[str, np.ndarray]:
    import Imath  # shipped beside OpenEXR 3.2

    exr = openexr.InputFile(str(path))
    try:
        header = exr.header()
        window = header["dataWindow"]
        shape = (window.max.y - window.min.y + 1, window.max.x - window.min.x + 1)
        _check_pixels(path, files, shape[0], shape[1], 32)
        float_type = Imath.PixelType(Imath.PixelType.FLOAT)
        return {c: np.frombuffer(exr.channel(c, float_type), np.float32).reshape(shape)
                for c in header["channels"] if c in ("R", "G", "B")}
    finally:
        exr.close()
