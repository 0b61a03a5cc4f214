"""Describe the arrays given to the denoiser, and refuse the ones OIDN cannot take.

Pure Python: nothing here calls OIDN or CUDA. A 'cuda' denoiser takes
objects exposing ``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA
tensors, Numba device arrays); a 'cpu' denoiser takes numpy arrays. The
``stream`` entry of the CUDA array interface is ignored on purpose: honouring
it would mean waiting for a stream we do not own; the order of the work is
given by ``Denoiser.denoise(stream=...)`` instead.

Blocking calls
--------------
None: reading ``__cuda_array_interface__`` or numpy's array interface is
plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ImageView", "BufferSet", "describe_image", "check_aliasing"]

_FLOAT32_TYPESTRS = ("<f4", "=f4", "|f4") if np.little_endian else (">f4", "=f4")


@dataclass(frozen=True)
class ImageView:
    """One image as OIDN sees it: a pointer and byte strides of float32 RGB pixels.

    Attributes
    ----------
    name : str
        The argument it came from (``color``, ``output``, ``albedo``, ``normal``).
    ptr : int
        Address of the first pixel's red channel.
    height, width, channels : int
        Shape; channels is 3 or 4 (OIDN reads and writes the first three).
    pixel_stride, row_stride : int
        Bytes from one pixel to the next, and from one row to the next.
    readonly : bool
        The array may not be written.
    array : object
        The array itself (kept alive while a filter is bound to it).
    """

    name: str
    ptr: int
    height: int
    width: int
    channels: int
    pixel_stride: int
    row_stride: int
    readonly: bool
    array: Any

    @property
    def end(self) -> int:
        """One past the last byte OIDN touches."""
        return self.ptr + (self.height - 1) * self.row_stride + (self.width - 1) * self.pixel_stride + 12

    @property
    def layout(self) -> tuple[int, int, int]:
        """(pointer, pixel stride, row stride): what a committed filter is bound to."""
        return (self.ptr, self.pixel_stride, self.row_stride)

    def overlaps(self, other: ImageView) -> bool:
        """The byte ranges of the two images intersect."""
        return self.ptr < other.end and other.ptr < self.end

    def same_image(self, other: ImageView) -> bool:
        """Both describe the same pixels (same pointer, strides and size)."""
        return (self.layout, self.height, self.width) == (other.layout, other.height, other.width)


class BufferSet(NamedTuple):
    """The images of one ``denoise`` call, checked; guides are None when the filter takes none."""

    color: ImageView
    output: ImageView
    albedo: ImageView | None
    normal: ImageView | None
    inplace: bool

    @property
    def guides(self) -> list[ImageView]:
        """The guides given, albedo first."""
        return [guide for guide in (self.albedo, self.normal) if guide is not None]

    @property
    def key(self) -> tuple[Any, ...]:
        """What committed filters depend on: pointer and strides of every image (the size is the denoiser's)."""
        return (
            self.color.layout,
            self.output.layout,
            None if self.albedo is None else self.albedo.layout,
            None if self.normal is None else self.normal.layout,
        )


def _interface(name: str, array: Any, kind: str) -> tuple[int, tuple[int, ...], str, tuple[int, ...] | None, bool]:
    """(pointer, shape, typestr, strides or None, readonly) of ``array`` for a ``kind`` denoiser."""
    if kind == "cpu":
        if isinstance(array, np.ndarray):
            info = array.__array_interface__
            return int(info["data"][0]), tuple(array.shape), array.dtype.str, tuple(array.strides), not array.flags.writeable
        if hasattr(array, "__cuda_array_interface__"):
            raise TypeError(f"{name} is a device array ({type(array).__name__}); a 'cpu' denoiser takes numpy arrays")
        raise TypeError(f"{name} must be a numpy array for a 'cpu' denoiser, got {type(array).__name__}")
    if isinstance(array, np.ndarray):
        raise TypeError(
            f"{name} is a numpy array (host memory); a 'cuda' denoiser takes device arrays with "
            "__cuda_array_interface__ (cupy.ndarray, ...)"
        )
    try:
        info = array.__cuda_array_interface__
    except AttributeError:
        raise TypeError(
            f"{name} must expose __cuda_array_interface__ (cupy.ndarray, ...), got {type(array).__name__}"
        ) from None
    if info.get("mask") is not None:
        raise ValueError(f"{name} is a masked array; the denoiser takes plain arrays")
    ptr, readonly = info["data"]
    strides = info.get("strides")
    return int(ptr), tuple(info["shape"]), str(info["typestr"]), None if strides is None else tuple(strides), bool(readonly)


def describe_image(name: str, array: Any, kind: str, width: int, height: int, device_id: int | None = None) -> ImageView:
    """Check one image argument and describe it.

    Parameters
    ----------
    name : str
        The argument's name, for messages.
    array : object
        numpy array ('cpu') or object with ``__cuda_array_interface__`` ('cuda').
    kind : {"cpu", "cuda"}
        The denoiser's device kind.
    width, height : int
        The denoiser's image size.
    device_id : int, optional
        The denoiser's CUDA device; an array that says which device it lives
        on (``array.device.id``, as CuPy's) must live there.

    Returns
    -------
    ImageView

    Raises
    ------
    TypeError
        On a host array given to a 'cuda' denoiser or the reverse, or a dtype other than float32.
    ValueError
        On a shape other than (height, width, 3 or 4), channels that are not
        contiguous, negative or too small strides, a null or misaligned
        pointer, or an array on another CUDA device.
    """
    ptr, shape, typestr, strides, readonly = _interface(name, array, kind)
    if typestr not in _FLOAT32_TYPESTRS:
        try:
            dtype = np.dtype(typestr).name
        except TypeError:
            dtype = "unknown"
        raise TypeError(f"{name} must be float32, got {dtype} (typestr {typestr!r})")
    if len(shape) != 3 or shape[2] not in (3, 4):
        raise ValueError(f"{name} must have shape (height, width, 3) or (height, width, 4), got {shape}")
    h, w, c = shape
    if (h, w) != (height, width):
        raise ValueError(
            f"{name} is {w}x{h} (width x height) but the denoiser is {width}x{height}; "
            "call Denoiser.resize(width, height) first (set-up: it re-commits the filters)"
        )
    if strides is None:  # C-contiguous
        strides = (w * c * 4, c * 4, 4)
    row_stride, pixel_stride, channel_stride = (int(s) for s in strides)
    if channel_stride != 4:
        raise ValueError(f"{name}'s channels must be contiguous (channel stride 4 bytes), got strides {strides}")
    if pixel_stride < 4 * c or pixel_stride % 4:
        raise ValueError(
            f"{name}'s pixel stride must be a multiple of 4 bytes and at least {4 * c} for {c} channels, "
            f"got strides {strides}"
        )
    if h > 1 and (row_stride < w * pixel_stride or row_stride % 4):
        raise ValueError(
            f"{name}'s row stride must be a multiple of 4 bytes and at least width * pixel stride "
            f"({w * pixel_stride}), got strides {strides}"
        )
    if h == 1:
        row_stride = max(row_stride, w * pixel_stride)  # unused by OIDN for one row; keep it valid
    if ptr == 0 or ptr % 4:
        raise ValueError(f"{name}'s data pointer must be non-null and 4-byte aligned, got {ptr:#x}")
    if device_id is not None:
        device = getattr(array, "device", None)
        array_device = getattr(device, "id", None)
        if isinstance(array_device, int) and array_device != device_id:
            raise ValueError(f"{name} lives on CUDA device {array_device}, the denoiser on device {device_id}")
    return ImageView(name, ptr, h, w, c, pixel_stride, row_stride, readonly, array)


def check_aliasing(output: ImageView, inputs: list[ImageView]) -> bool:
    """Refuse outputs that overlap an input, except exact in-place denoising of color.

    OIDN denoises in place when the output is the color image itself (it
    then works in tiles with a copy of what it still needs: more memory,
    a little slower). Any other overlap is refused: output overlapping a
    guide would overwrite what the filter reads, and a partial overlap with
    color is almost certainly a mistake.

    Returns
    -------
    bool
        True for in-place denoising (output is the color image).

    Raises
    ------
    ValueError
        On a read-only output, or an overlap other than output == color.
    """
    if output.readonly:
        raise ValueError("output is read-only")
    inplace = False
    for image in inputs:
        if not output.overlaps(image):
            continue
        if image.name == "color" and output.same_image(image):
            inplace = True
            continue
        if image.name == "color":
            raise ValueError(
                "output overlaps color without being the same image; in-place denoising needs output to be "
                "exactly color (same pointer and strides)"
            )
        raise ValueError(f"output overlaps {image.name}, which the filter reads; pass a separate output buffer")
    return inplace
