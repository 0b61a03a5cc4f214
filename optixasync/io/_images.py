"""Image files: 8-bit sRGB PNG through Pillow, linear float EXR through OpenEXR, written atomically.

Every file is written under a temporary name beside its destination and
renamed into place (:func:`atomic_write`): a process killed while writing
leaves no half file, and readers never see one. :class:`ImageWriter` encodes
files on worker threads so that a frame loop hands an image over and goes
back to submitting frames.

Nothing here talks to CUDA: every function takes host (numpy) arrays.
:meth:`ImageWriter.close` waits for the files still being written, by design.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ._exr import write_exr
from ._srgb import srgb8

__all__ = ["IMAGE_SUFFIXES", "ImageWriter", "atomic_write", "check_image_path", "numbered_path", "write_image"]

#: Output suffixes :func:`write_image` understands.
IMAGE_SUFFIXES = (".png", ".exr")


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


def _check_image_shape(image: np.ndarray) -> None:
    if image.ndim != 3 or image.shape[2] not in (3, 4) or image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"expected an image of shape (H, W, 3) or (H, W, 4), got shape {image.shape}")


def write_image(path: str | Path, image: Any) -> Path:
    """Write ``image`` to ``path``; the format follows the suffix (``.png`` or ``.exr``).

    Parameters
    ----------
    path : str or Path
        Destination; its folder is created if missing. Written under a temporary name, then renamed.
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
    MissingExtraError
        For ``.exr`` when the OpenEXR package is missing (the ``exr`` extra).
    """
    path = check_image_path(path)
    image = np.asarray(image)
    _check_image_shape(image)
    if path.suffix.lower() == ".exr":
        if not np.issubdtype(image.dtype, np.floating):
            raise ValueError(f"an EXR stores linear floating-point pixels; got {image.dtype} (pass the linear image)")
        pixels = np.ascontiguousarray(image, dtype=np.float32)
        return atomic_write(path, lambda partial: write_exr(partial, pixels))
    if image.dtype == np.uint8:
        pixels = image
    elif np.issubdtype(image.dtype, np.floating):
        pixels = srgb8(image)
    else:
        raise TypeError(f"expected uint8 (sRGB) or floating-point (linear) pixels, got {image.dtype}")
    from PIL import Image

    picture = Image.fromarray(np.ascontiguousarray(pixels), "RGBA" if pixels.shape[2] == 4 else "RGB")
    return atomic_write(path, lambda partial: picture.save(partial, format="PNG"))


def atomic_write(path: Path, write: Callable[[Path], Any]) -> Path:
    """``write(partial)`` to a temporary file beside ``path``, then rename it to ``path``; returns ``path``.

    The folder is created if missing. On any failure the temporary file is removed and the error raised;
    ``path`` is then untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.partial{path.suffix}")
    try:
        write(partial)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path



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
