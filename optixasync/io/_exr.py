"""OpenEXR files: the one shim over the optional ``openexr`` package, for reading and writing.

``openexr`` is the ``exr`` extra (``pip install "optixasync[exr]"``),
imported only when an ``.exr`` file is read or written; without it both
raise :class:`~optixasync.errors.MissingExtraError` naming the extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingExtraError

__all__ = ["import_openexr", "write_exr"]


def import_openexr(feature: str = "reading and writing .exr files") -> Any:
    """The ``OpenEXR`` module; :class:`MissingExtraError` naming the ``exr`` extra without it."""
    try:
        import OpenEXR
    except ImportError as exc:
        raise MissingExtraError(feature, "openexr", "exr") from exc
    return OpenEXR


def write_exr(path: Path, image: np.ndarray) -> None:
    """Write float32 ``image`` (H, W, 3 or 4) to ``path`` as a ZIP-compressed scanline EXR (channels RGB[A])."""
    openexr = import_openexr("writing .exr files")
    names = "RGBA"[: image.shape[2]]
    if hasattr(openexr, "File"):  # the numpy API of OpenEXR >= 3.3
        header = {"compression": openexr.ZIP_COMPRESSION, "type": openexr.scanlineimage}
        channels = {name: np.ascontiguousarray(image[..., i]) for i, name in enumerate(names)}
        with openexr.File(header, channels) as exr:
            exr.write(str(path))
        return
    import Imath  # the older API (OpenEXR 3.2), which ships Imath beside it

    header = openexr.Header(image.shape[1], image.shape[0])
    header["channels"] = {name: Imath.Channel(Imath.PixelType(Imath.PixelType.FLOAT)) for name in names}
    exr = openexr.OutputFile(str(path), header)
    try:
        exr.writePixels({name: np.ascontiguousarray(image[..., i]).tobytes() for i, name in enumerate(names)})
    finally:
        exr.close()
