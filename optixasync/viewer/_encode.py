"""JPEG encoding of frames: ``simplejpeg`` (libjpeg-turbo) when installed, else Pillow.

Both release the GIL while they compress, so a few encoder threads run in
parallel with the render thread and the server's event loop. A C-contiguous
(H, W, 4) image is compressed in place, with no copy and its alpha ignored
(Pillow maps the buffer as ``RGBX``); other layouts are copied once.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

__all__ = ["JpegEncoder", "available_backends"]


def available_backends() -> list[str]:
    """Encoder backends importable here, fastest first (``"pillow"`` always)."""
    names = []
    try:
        import simplejpeg  # noqa: F401

        names.append("simplejpeg")
    except ImportError:
        pass
    return [*names, "pillow"]


class JpegEncoder:
    """Compresses (H, W, 3 or 4) uint8 sRGB images to JPEG (4:2:0 chroma).

    Parameters
    ----------
    quality : int
        JPEG quality, clamped to [10, 95].
    backend : str
        ``"auto"`` (the fastest of :func:`available_backends`), ``"simplejpeg"`` or ``"pillow"``.

    Raises
    ------
    ValueError
        On an unknown or unavailable backend.
    """

    mime = "image/jpeg"

    def __init__(self, quality: int = 80, backend: str = "auto") -> None:
        self.quality = int(min(max(int(quality), 10), 95))
        names = available_backends()
        if backend == "auto":
            backend = names[0]
        if backend not in names:
            raise ValueError(f"JPEG backend {backend!r} is not available here (available: {', '.join(names)})")
        self.backend = backend
        self._simplejpeg: Any = None
        if backend == "simplejpeg":
            import simplejpeg

            self._simplejpeg = simplejpeg

    def encode(self, image: np.ndarray) -> bytes:
        """The JPEG bytes of ``image`` (reads it; keeps no reference)."""
        channels = image.shape[2]
        if not image.flags.c_contiguous:
            image = np.ascontiguousarray(image)
        if self._simplejpeg is not None:
            return self._simplejpeg.encode_jpeg(image, quality=self.quality, colorspace="RGBX" if channels == 4 else "RGB",
                                                colorsubsampling="420", fastdct=True)
        from PIL import Image

        height, width = image.shape[:2]
        mode = "RGBX" if channels == 4 else "RGB"
        picture = Image.frombuffer(mode, (width, height), image, "raw", mode, 0, 1)
        out = io.BytesIO()
        picture.save(out, "JPEG", quality=self.quality, subsampling=2)
        return out.getvalue()
