"""Image textures: pixels, how they wrap and filter, and a UV transform. Host data (numpy).

The renderer uploads each texture once through pinned staging into a CUDA
array and samples it through a texture object (hardware bilinear filtering
and wrapping). Colour textures stored in sRGB (``srgb=True``, glTF's base
colour and emissive images) are decoded to linear values by the hardware
(8-bit data) or on upload (other dtypes).

Texture coordinates follow glTF: ``(0, 0)`` is the top-left corner of the
image (row 0, column 0) and ``v`` grows downwards. A
:class:`TextureTransform` (glTF's ``KHR_texture_transform``) maps a mesh's
UV to the image's: ``uv' = offset + R(rotation) S(scale) uv``.

Image files are decoded by Pillow (:func:`decode_image`), after their
header's width and height are checked against
:attr:`LoadLimits.max_image_pixels <optixasync.scene.LoadLimits>`; Pillow's
own decompression-bomb error is reported as that limit
(:class:`~optixasync.errors.LoadLimitError`), and anything else Pillow
raises on a broken file as a ``ValueError`` naming the image.
"""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import LoadLimitError
from ._limits import LoadBudget, LoadLimits, as_limits

__all__ = ["TEXTURE_FILTERS", "TEXTURE_WRAPS", "Texture", "TextureTransform", "decode_image", "load_texture"]

#: Bytes charged to a load's budget per pixel decoded (the decoded image and its conversion).
_BYTES_PER_PIXEL = 8
_FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The image formats a texture file (``load_texture``, an MTL's ``map_*``) may be in: Pillow's decoders of its
#: own. Pillow knows more (EPS among them, which it hands to Ghostscript, with no time bound): those are refused.
TEXTURE_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TGA")
#: The formats of glTF images: PNG and JPEG (the core), WebP (``EXT_texture_webp``).
GLTF_IMAGE_FORMATS = ("PNG", "JPEG", "WEBP")
#: The MIME types glTF declares (``mimeType``, a data URI's media type) and the format each must be.
MIME_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WEBP"}

#: How a coordinate outside [0, 1] is brought back: glTF's REPEAT, CLAMP_TO_EDGE and MIRRORED_REPEAT.
TEXTURE_WRAPS = ("repeat", "clamp", "mirror")
#: Between texels: bilinear (glTF's LINEAR) or the nearest texel (NEAREST).
TEXTURE_FILTERS = ("bilinear", "nearest")

_DTYPES = (np.uint8, np.uint16, np.float16, np.float32)


@dataclass(frozen=True)
class TextureTransform:
    """``KHR_texture_transform``: ``uv' = offset + R(rotation) * (scale * uv)``.

    Attributes
    ----------
    offset : 2 floats
    rotation : float
        Radians, counter-clockwise in UV space as the extension defines it.
    scale : 2 floats
    """

    offset: tuple[float, float] = (0.0, 0.0)
    rotation: float = 0.0
    scale: tuple[float, float] = (1.0, 1.0)

    def __post_init__(self) -> None:
        offset = _pair(self.offset, "texture transform offset")
        scale = _pair(self.scale, "texture transform scale")
        rotation = float(self.rotation)
        if not math.isfinite(rotation):
            raise ValueError(f"texture transform rotation must be finite, got {self.rotation!r}")
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "rotation", rotation)

    def matrix(self) -> np.ndarray:
        """The (2, 3) float32 matrix ``[[a, b, c], [d, e, f]]`` with ``u' = a u + b v + c``, ``v' = d u + e v + f``."""
        c, s = math.cos(self.rotation), math.sin(self.rotation)
        # The extension's matrix: translation * rotation * scale, with its rotation [[c, s], [-s, c]].
        return np.array([[c * self.scale[0], s * self.scale[1], self.offset[0]],
                         [-s * self.scale[0], c * self.scale[1], self.offset[1]]], np.float32)


def _pair(value: Any, name: str) -> tuple[float, float]:
    try:
        items = [float(v) for v in value]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be 2 numbers, got {value!r}") from exc
    if len(items) != 2 or not all(math.isfinite(v) and abs(v) <= _FLOAT32_MAX for v in items):
        # the matrix is float32: a value beyond its range would be an infinity there
        raise ValueError(f"{name} must be 2 finite numbers within float32's range, got {value!r:.80}")
    return items[0], items[1]


@dataclass(frozen=True, eq=False)
class Texture:
    """An image sampled by UV coordinates.

    Attributes
    ----------
    data : numpy array (H, W) or (H, W, C), C in 1..4
        uint8, uint16, float16 or float32; integer data is read normalised
        to [0, 1]. Row 0 is the top of the image (``v = 0``).
    srgb : bool
        The values are sRGB-encoded colours (decoded to linear when sampled).
        Only for colour data (glTF base colour and emissive images).
    wrap : (str, str)
        Wrap mode along u and along v, each one of :data:`TEXTURE_WRAPS`.
    filter : str
        One of :data:`TEXTURE_FILTERS`.
    transform : TextureTransform
    name : str
        For messages: the file or the asset's image name.

    Raises
    ------
    TypeError, ValueError
        On data of the wrong type, dtype or shape, empty or non-finite data,
        or an unknown wrap or filter mode; the message names the texture.
    """

    data: Any
    srgb: bool = False
    wrap: tuple[str, str] = ("repeat", "repeat")
    filter: str = "bilinear"
    transform: TextureTransform = field(default_factory=TextureTransform)
    name: str = ""

    def __post_init__(self) -> None:
        label = f"texture {self.name!r}" if self.name else "texture"
        data = self.data
        if not isinstance(data, np.ndarray):
            raise TypeError(f"{label}: data must be a numpy array, got {type(data).__name__}")
        if data.dtype not in _DTYPES:
            raise ValueError(f"{label}: dtype must be uint8, uint16, float16 or float32, got {data.dtype}")
        if data.ndim == 2:
            data = data[:, :, None]
        if data.ndim != 3 or not 1 <= data.shape[2] <= 4:
            raise ValueError(f"{label}: shape must be (H, W) or (H, W, C) with C in 1..4, got {self.data.shape}")
        if data.shape[0] == 0 or data.shape[1] == 0:
            raise ValueError(f"{label} is empty: shape {self.data.shape}")
        if data.dtype.kind == "f" and not np.isfinite(data).all():
            bad = np.argwhere(~np.isfinite(data))[0]
            raise ValueError(f"{label} contains NaN or Inf (first at row {bad[0]}, column {bad[1]})")
        wrap = (self.wrap, self.wrap) if isinstance(self.wrap, str) else tuple(self.wrap)
        if len(wrap) != 2 or any(w not in TEXTURE_WRAPS for w in wrap):
            raise ValueError(f"{label}: wrap must be one or two of {TEXTURE_WRAPS}, got {self.wrap!r}")
        if self.filter not in TEXTURE_FILTERS:
            raise ValueError(f"{label}: filter must be one of {TEXTURE_FILTERS}, got {self.filter!r}")
        if not isinstance(self.srgb, bool):
            raise TypeError(f"{label}: srgb must be a bool, got {type(self.srgb).__name__}")
        if not isinstance(self.transform, TextureTransform):
            raise TypeError(f"{label}: transform must be a TextureTransform, got {type(self.transform).__name__}")
        object.__setattr__(self, "data", np.ascontiguousarray(data))
        object.__setattr__(self, "wrap", wrap)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(height, width, channels)."""
        return self.data.shape

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def rgba(self) -> np.ndarray:
        """The texels as (H, W, 4) of the same dtype: grey to RGB, missing alpha opaque (what is uploaded)."""
        h, w, c = self.data.shape
        one = np.iinfo(self.data.dtype).max if self.data.dtype.kind == "u" else 1.0
        out = np.empty((h, w, 4), self.data.dtype)
        if c in (1, 2):
            out[..., :3] = self.data[..., :1]
        else:
            out[..., :3] = self.data[..., :3]
        out[..., 3] = self.data[..., c - 1] if c in (2, 4) else one
        return out


def load_texture(path: str | Path, *, srgb: bool = False, wrap: Any = ("repeat", "repeat"), filter: str = "bilinear",
                 transform: TextureTransform | None = None,
                 limits: LoadLimits | dict[str, Any] | None = None) -> Texture:
    """A :class:`Texture` from an image file Pillow reads (PNG, JPEG, ...), 8 or 16 bits per channel.

    ``limits`` (:class:`~optixasync.scene.LoadLimits`, a dict of its fields or None for the defaults)
    bounds the file's size and its pixels.

    Raises
    ------
    FileNotFoundError
        Naming the path.
    LoadLimitError
        When the file or its width times height exceed ``limits`` (a ``ValueError``).
    ValueError
        On a file Pillow cannot read as an image, naming the path.
    """
    from ._files import AssetFiles

    path = Path(path)
    limits = as_limits(limits)
    if not path.is_file():
        raise FileNotFoundError(f"texture file not found: {path}")
    files = AssetFiles(path, limits)
    data = decode_image(files.read(path, "the texture"), str(path), limits, files.budget, "the texture")
    return Texture(data, srgb=srgb, wrap=wrap, filter=filter,
                   transform=transform if transform is not None else TextureTransform(), name=str(path))


def decode_image(data: bytes, file: str, limits: LoadLimits, budget: LoadBudget | None, element: str,
                 formats: tuple[str, ...] = TEXTURE_FORMATS, mime: str | None = None) -> np.ndarray:
    """The pixels of the image file ``data`` (uint8 or uint16, (H, W[, C])), its size checked before decoding.

    ``file`` and ``element`` name it in messages (the file it is in and what it is there). Only the Pillow
    ``formats`` are tried; ``mime`` (a declared MIME type, :data:`MIME_FORMATS`) must be what the bytes are.

    Raises
    ------
    LoadLimitError
        When width times height exceed ``max_image_pixels`` (Pillow's decompression-bomb check
        included), or the decoded pixels exceed the load's byte budget.
    ValueError
        When Pillow cannot decode it (whatever Pillow raised is named in the message).
    """
    from PIL import Image

    try:
        with warnings.catch_warnings():  # the limit below decides; Pillow's warning would only repeat it
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=list(formats)) as image:
                _check_declared(image.format, mime, file, element)
                width, height = image.size
                if width * height > limits.max_image_pixels:
                    raise LoadLimitError(file, f"{element} ({width} x {height} pixels)", "max_image_pixels",
                                         limits.max_image_pixels, width * height)
                if budget is not None:
                    budget.charge(width * height * _BYTES_PER_PIXEL, element)
                return image_array(image, element)
    except (LoadLimitError, _DeclaredError):
        raise
    except Image.UnidentifiedImageError:
        raise ValueError(f"{file}: {element} is not an image Pillow can read in the formats read here "
                         f"({', '.join(formats)})") from None
    except Image.DecompressionBombError:
        raise LoadLimitError(file, element, "max_image_pixels", limits.max_image_pixels) from None
    except Exception as exc:  # Pillow's decoders raise assorted types on broken files (OSError, SyntaxError, ...)
        raise ValueError(f"{file}: {element} is not an image Pillow can read: {type(exc).__name__}: "
                         f"{str(exc)[:200]}") from None


class _DeclaredError(ValueError):
    """The bytes of an image are not what its declared MIME type says."""


def _check_declared(found: str | None, mime: str | None, file: str, element: str) -> None:
    if mime is None:
        return
    wanted = MIME_FORMATS.get(mime.strip().lower())
    if wanted is None:
        raise _DeclaredError(f"{file}: {element} declares the MIME type {mime[:40]!r}; glTF images are "
                             f"{', '.join(MIME_FORMATS)}")
    if found != wanted:
        raise _DeclaredError(f"{file}: {element} declares {mime[:40]!r} but its bytes are {found}")


def image_array(image: Any, name: str) -> np.ndarray:
    """A Pillow image as uint8 or uint16 (H, W[, C]) numpy data (palettes and odd modes converted to RGB(A))."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        return np.asarray(image, dtype=np.uint16) if image.mode != "I" else np.clip(
            np.asarray(image), 0, 65535).astype(np.uint16)
    if image.mode not in ("L", "LA", "RGB", "RGBA"):
        image = image.convert("RGBA" if "A" in image.getbands() or "transparency" in image.info else "RGB")
    return np.asarray(image, dtype=np.uint8)
