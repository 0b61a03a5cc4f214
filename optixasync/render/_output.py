"""Writing rendered images: 8-bit sRGB PNG through Pillow, linear float EXR through OpenEXR.

EXR needs the optional ``openexr`` package (``pip install "optixasync[exr]"``),
imported only when an ``.exr`` file is written. :class:`ImageWriter` encodes
files on worker threads so that a frame loop hands an image over and goes
back to submitting frames.

Nothing here talks to CUDA: every function takes host (numpy) arrays.
:meth:`ImageWriter.close` waits for the files still being written, by design.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["IMAGE_SUFFIXES", "ImageWriter", "check_image_path", "numbered_path", "srgb8", "write_image"]

#: Output suffixes :func:`write_image` understands.
IMAGE_SUFFIXES = (".png", ".exr")

_EXR_HINT = 'writing .exr files needs the OpenEXR Python package: pip install "optixasync[exr]"'


def check_image_path(path: str | Path, allowed: tuple[str, ...] = IMAGE_SUFFIXES) -> Path:
    """``path`` as a :class:`~pathlib.Path` after checking its suffix.

    Raises
    ------
    ValueError
        If the suffix (case-insensitive) is not one of ``allowed``.
    """
    path = Path(path)
    if path.suffix.lower() not in allowed:
        shown = path.suffix or "no suffix"
        raise ValueError(f"unsupported image format {shown!r} for {str(path)!r}: use {' or '.join(allowed)}")
    return path


def numbered_path(base: str | Path, index: int, digits: int = 4) -> Path:
    """``out.png`` -> ``out_0007.png`` for ``index`` 7: the file of one animation frame."""
    base = Path(base)
    return base.with_name(f"{base.stem}_{int(index):0{digits}d}{base.suffix}")


def srgb8(linear: Any) -> np.ndarray:
    """Linear RGB(A) floats -> 8-bit sRGB with the path tracer's curve (alpha is kept linear, clipped to [0, 1]).

    Parameters
    ----------
    linear : array_like, shape (H, W, 3) or (H, W, 4)
    """
    from ._tonemap import tonemap_srgb

    linear = np.asarray(linear, dtype=np.float32)
    _check_image_shape(linear)
    rgb = tonemap_srgb(linear[..., :3])
    if linear.shape[-1] == 3:
        return rgb
    alpha = np.clip(np.nan_to_num(linear[..., 3:], nan=0.0), 0.0, 1.0)
    return np.concatenate([rgb, (alpha * 255.0 + 0.5).astype(np.uint8)], axis=-1)


def _check_image_shape(image: np.ndarray) -> None:
    if image.ndim != 3 or image.shape[2] not in (3, 4) or image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"expected an image of shape (H, W, 3) or (H, W, 4), got shape {image.shape}")


def write_image(path: str | Path, image: Any) -> Path:
    """Write ``image`` to ``path``; the format follows the suffix (``.png`` or ``.exr``).

    Parameters
    ----------
    path : str or Path
        Destination; its folder is created if missing.
    image : numpy array, shape (H, W, 3) or (H, W, 4), row 0 at the top
        ``uint8`` is taken as sRGB-encoded (PNG only). Floating point is taken
        as linear RGB: a PNG gets :func:`srgb8` of it, an EXR the float32 values.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    ValueError
        On an unsupported suffix, a bad shape, or 8-bit data for an EXR.
    TypeError
        On a dtype other than uint8 or floating point.
    ImportError
        For ``.exr`` when the OpenEXR package is missing (the message says what to install).
    """
    path = check_image_path(path)
    image = np.asarray(image)
    _check_image_shape(image)
    if path.suffix.lower() == ".exr":
        if not np.issubdtype(image.dtype, np.floating):
            raise ValueError(f"an EXR stores linear floating-point pixels; got {image.dtype} (pass the linear image)")
        openexr = _import_openexr()
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_exr(openexr, path, np.ascontiguousarray(image, dtype=np.float32))
        return path
    if image.dtype == np.uint8:
        pixels = image
    elif np.issubdtype(image.dtype, np.floating):
        pixels = srgb8(image)
    else:
        raise TypeError(f"expected uint8 (sRGB) or floating-point (linear) pixels, got {image.dtype}")
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.ascontiguousarray(pixels), "RGBA" if pixels.shape[2] == 4 else "RGB").save(path)
    return path


def _import_openexr() -> Any:
    try:
        import OpenEXR
    except ImportError as exc:
        raise ImportError(_EXR_HINT) from exc
    return OpenEXR


def _write_exr(openexr: Any, path: Path, image: np.ndarray) -> None:
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


class ImageWriter:
    """Writes images on worker threads so that the caller's loop never waits for encoding.

    Parameters
    ----------
    workers : int
        Encoding threads (PNG encoding in Pillow releases the GIL).
    max_pending : int
        Images queued or being written before :meth:`submit` waits for one to
        finish; bounds the memory held by a fast producer.
    writer : callable, optional
        ``writer(path, image)``; :func:`write_image` by default.

    Examples
    --------
    >>> with ImageWriter() as out:                                   # doctest: +SKIP
    ...     for result in sched.poll():
    ...         out.submit(numbered_path("out.png", result.index), result["image"])
    """

    def __init__(self, workers: int = 2, max_pending: int = 16,
                 writer: Callable[[Path, np.ndarray], Any] | None = None) -> None:
        if workers < 1 or max_pending < 1:
            raise ValueError(f"workers and max_pending must be >= 1, got {workers} and {max_pending}")
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="optixasync-image")
        self._slots = threading.BoundedSemaphore(max_pending)
        self._writer = writer or write_image
        self._futures: list[Future] = []
        self.written: list[Path] = []

    def submit(self, path: str | Path, image: np.ndarray) -> Future:
        """Queue ``image`` (kept by reference: pass an array nobody writes to afterwards) for ``path``.

        Raises the first error of an earlier write, if any, so a failing disk stops the loop early.
        Returns the write's future: its result is the path written.
        """
        self._raise_first_error()
        self._slots.acquire()  # waits only when max_pending images are still being encoded
        future = self._pool.submit(self._write, Path(path), image)
        self._futures.append(future)
        return future

    def _write(self, path: Path, image: np.ndarray) -> Path:
        try:
            return Path(self._writer(path, image) or path)
        finally:
            self._slots.release()

    def _raise_first_error(self) -> None:
        done = [f for f in self._futures if f.done()]
        for future in done:
            self._futures.remove(future)
            self.written.append(future.result())  # re-raises the writer's exception

    def close(self) -> list[Path]:
        """Wait for every queued image; return the paths written (in submission order for each batch)."""
        try:
            for future in list(self._futures):
                self.written.append(future.result())
            self._futures.clear()
        finally:
            self._pool.shutdown(wait=True)
        return self.written

    def __enter__(self) -> ImageWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
