"""Image files and the sRGB curve: what the renderer writes and reads, in one module.

* :func:`write_image` (PNG or EXR by suffix, written atomically),
  :class:`ImageWriter` (on worker threads), :func:`check_image_path`,
  :func:`numbered_path`, :func:`atomic_write`;
* the one OpenEXR shim (:func:`import_openexr`: a missing ``exr`` extra is a
  :class:`~optixasync.errors.MissingExtraError`);
* the renderer's sRGB curve on the host (:func:`tonemap_srgb`, :func:`srgb8`,
  :func:`srgb_to_linear`; the kernels' is ``kernels/pathtracer/film.h``).
"""

from __future__ import annotations

from ._exr import import_openexr, write_exr
from ._images import IMAGE_SUFFIXES, ImageWriter, atomic_write, check_image_path, numbered_path, write_image
from ._srgb import srgb8, srgb_to_linear, tonemap_srgb

__all__ = ["IMAGE_SUFFIXES", "ImageWriter", "atomic_write", "check_image_path", "import_openexr", "numbered_path",
           "srgb8", "srgb_to_linear", "tonemap_srgb", "write_exr", "write_image"]
