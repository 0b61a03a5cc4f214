"""Validation of user input, done on the host before any GPU work: arrays, transforms, option objects, numbers in text.

Every layer that takes geometry, a transform or an options object checks it
here, so one input gets one rule and one message wherever it enters.

Host arrays are checked completely (dtype, shape, contiguity, finite
values, index range). Device arrays (``__cuda_array_interface__``, or
``__dlpack__`` with a CUDA ``__dlpack_device__``) are checked for dtype,
shape and contiguity only: reading their values back would stall the host,
which is what this library exists to avoid.

Numbers written in untrusted text (headers, files, messages) are read with
:func:`parse_ascii_int` and :func:`parse_ascii_float`: ASCII digits only.
Python's ``int`` and ``float`` also take Unicode digits (``int('\u0661')`` is 1),
underscores (``'1_0'``), surrounding whitespace, and ``float`` takes
``'infinity'``; ``str.isdigit`` is true for superscripts (``'\u00b9'``) that
``int`` then refuses. A format's number is none of those.

Blocking calls
--------------
None: host-side numpy, and a device array's metadata (its
``__cuda_array_interface__`` dict, its ``__dlpack_device__``, its ``shape``
and ``dtype``), never its data; no DLPack capsule is made here. (JAX builds
its interface dict after acquiring an external reference to the buffer,
an operation jaxlib gives no non-blocking guarantee for.)
"""

from __future__ import annotations

import dataclasses
import math
import operator
import re
from collections.abc import Mapping
from typing import Any, NamedTuple, TypeVar

import numpy as np

__all__ = [
    "ArrayInfo",
    "DLPACK_CUDA_DEVICES",
    "as_affine",
    "as_int",
    "check_aabbs",
    "check_indices",
    "check_radii",
    "check_vertices",
    "coerce_options",
    "cuda_array_interface",
    "describe_array",
    "dlpack_device",
    "is_c_contiguous",
    "is_device_array",
    "parse_ascii_float",
    "parse_ascii_int",
]

T = TypeVar("T")

#: How far the last row of a 4x4 affine transform may be from ``0 0 0 1``.
AFFINE_ROW_TOLERANCE = 1e-12
#: A 3x3 part whose determinant is below this times its largest entry cubed counts as singular.
SINGULAR_TOLERANCE = 1e-12
#: DLPack device types whose memory a CUDA device reads in place: ``kDLCUDA`` (2) and ``kDLCUDAManaged`` (13).
#: ``kDLCUDAHost`` (3, pinned host memory) is host memory: it is not a device array here.
DLPACK_CUDA_DEVICES = (2, 13)


class ArrayInfo(NamedTuple):
    """What :func:`describe_array` reads from an array without touching its data."""

    shape: tuple[int, ...]
    dtype: np.dtype
    contiguous: bool
    on_device: bool


def cuda_array_interface(array: Any) -> Mapping[str, Any] | None:
    """``array.__cuda_array_interface__``, or None when it has none or refuses to give one.

    Reading it never touches the data. Some producers raise something else
    than ``AttributeError`` for arrays they cannot describe (PyTorch: a
    ``RuntimeError`` for a tensor that requires grad): those count as "none".
    """
    if isinstance(array, np.ndarray):
        return None
    try:
        interface = getattr(array, "__cuda_array_interface__", None)  # CuPy builds this dict on every access
    except Exception:  # any refusal means: not usable through this interface
        return None
    return interface if isinstance(interface, Mapping) else None


def dlpack_device(array: Any) -> tuple[int, int] | None:
    """``array.__dlpack_device__()`` (device type, device id) of a DLPack producer, None for anything else.

    Only the device is asked for: no capsule is made, so the producer does no
    stream ordering and no copy.
    """
    if isinstance(array, np.ndarray) or not hasattr(array, "__dlpack__"):
        return None
    method = getattr(array, "__dlpack_device__", None)
    if method is None:
        return None
    try:
        kind, index = method()
        return int(kind), int(index)
    except Exception:  # a producer that cannot say where its data is is not a device array
        return None


def is_device_array(array: Any) -> bool:
    """Whether ``array`` lives in device memory.

    True for objects with ``__cuda_array_interface__`` (CuPy, PyTorch, JAX,
    Numba...) and for DLPack producers whose ``__dlpack_device__`` is CUDA
    memory (:data:`DLPACK_CUDA_DEVICES`); numpy arrays, CPU tensors and
    pinned host memory are not.
    """
    if cuda_array_interface(array) is not None:
        return True
    device = dlpack_device(array)
    return device is not None and device[0] in DLPACK_CUDA_DEVICES


def is_c_contiguous(shape: tuple[int, ...], strides: Any, itemsize: int) -> bool:
    """Whether byte ``strides`` (None: C order) lay ``shape`` out in C order; dimensions of size 1 do not count.

    The rule CuPy, NumPy and PyTorch use: a stride of a dimension of extent 1 is never used to address an
    element, and an empty array is contiguous whatever its strides.
    """
    if strides is None or any(int(s) == 0 for s in shape):
        return True
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        return False
    expected = int(itemsize)
    for extent, stride in zip(reversed(shape), reversed(strides), strict=True):
        if extent != 1 and stride != expected:
            return False
        expected *= int(extent)
    return True


def describe_array(array: Any, name: str = "array") -> ArrayInfo:
    """Shape, dtype, C-contiguity and location of a numpy or device array, without reading its data.

    A device array is described from its ``__cuda_array_interface__`` when
    it has one. A DLPack-only producer is described from its ``shape`` and
    ``dtype`` attributes (those of the array API standard), without calling
    ``__dlpack__``: making a capsule runs the producer's stream ordering,
    and some producers wait on the host when asked for one without a
    consumer stream (JAX). Its contiguity is known only when it has numpy
    style byte ``strides``; otherwise it is reported contiguous here and
    checked when the array is used (:func:`optixasync.cuda.consume_device_array`
    refuses a non-contiguous capsule).

    Raises
    ------
    TypeError
        If ``array`` is neither a numpy array nor a device array, or is a
        DLPack producer whose shape or dtype cannot be read that way.
    """
    if isinstance(array, np.ndarray):
        return ArrayInfo(array.shape, array.dtype, bool(array.flags.c_contiguous), False)
    interface = cuda_array_interface(array)
    if interface is not None:
        shape = tuple(int(s) for s in interface["shape"])
        dtype = np.dtype(interface["typestr"])
        return ArrayInfo(shape, dtype, is_c_contiguous(shape, interface.get("strides"), dtype.itemsize), True)
    device = dlpack_device(array)
    if device is not None and device[0] in DLPACK_CUDA_DEVICES:
        return _describe_dlpack_producer(array, name)
    raise TypeError(f"{name} must be a numpy array or a device array, got {type(array).__name__}")


def _describe_dlpack_producer(array: Any, name: str) -> ArrayInfo:
    """:func:`describe_array` of an object known only through DLPack: its ``shape``, ``dtype`` and ``strides``."""
    kind = type(array).__name__
    try:
        shape = tuple(int(s) for s in array.shape)
    except (AttributeError, TypeError, ValueError):
        raise TypeError(f"{name}: a {kind} with neither __cuda_array_interface__ nor a readable shape") from None
    dtype = _numpy_dtype(getattr(array, "dtype", None))
    if dtype is None:
        raise TypeError(f"{name}: cannot tell the dtype of a {kind} ({getattr(array, 'dtype', None)!r}) without "
                        "exporting it")
    strides = getattr(array, "strides", None)  # numpy convention (bytes); PyTorch's stride() is a method
    if not (isinstance(strides, tuple) and all(isinstance(s, (int, np.integer)) for s in strides)):
        strides = None
    return ArrayInfo(shape, dtype, is_c_contiguous(shape, strides, dtype.itemsize), True)


def _numpy_dtype(dtype: Any) -> np.dtype | None:
    """A producer's dtype as numpy's: a numpy dtype as it is, ``torch.float32`` by its name ``float32``."""
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        pass
    try:
        return np.dtype(str(dtype).rpartition(".")[2])
    except TypeError:
        return None


def check_vertices(vertices: Any, name: str = "vertices") -> int:
    """Validate an (N, 3) float32 C-contiguous vertex array (finite, when on the host); return N.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` and what is wrong.
    """
    shape, dtype, contiguous, on_device = describe_array(vertices, name)
    if dtype != np.float32:
        raise ValueError(f"{name} must have dtype float32, got {dtype}")
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3), got {shape}")
    if shape[0] == 0:
        raise ValueError(f"{name} is empty: a mesh needs at least 3 vertices")
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous (use numpy.ascontiguousarray)")
    if not on_device and not np.isfinite(vertices).all():
        bad = int(np.argwhere(~np.isfinite(vertices).all(axis=1))[0, 0])
        raise ValueError(f"{name} contains NaN or Inf (first at vertex {bad}: {vertices[bad].tolist()})")
    return int(shape[0])


def check_indices(indices: Any, num_vertices: int, name: str = "indices") -> int:
    """Validate an (M, 3) int32/uint32 index array whose values are < ``num_vertices``; return M.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` and what is wrong.
    """
    shape, dtype, contiguous, on_device = describe_array(indices, name)
    if dtype not in (np.int32, np.uint32):
        raise ValueError(f"{name} must have dtype int32 or uint32, got {dtype}")
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(f"{name} must have shape (M, 3), got {shape}")
    if shape[0] == 0:
        raise ValueError(f"{name} is empty: a mesh needs at least one triangle")
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous (use numpy.ascontiguousarray)")
    if not on_device:
        low, high = int(indices.min()), int(indices.max())
        if low < 0 or high >= num_vertices:
            raise ValueError(f"{name} out of range: values span [{low}, {high}] but there are {num_vertices} vertices")
    return int(shape[0])


def check_radii(radii: Any, count: int, name: str = "radii") -> None:
    """Validate a (``count``,) float32 C-contiguous array of radii or widths: finite and >= 0 when on the host.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` and what is wrong (the first negative or NaN entry).
    """
    shape, dtype, contiguous, on_device = describe_array(radii, name)
    if dtype != np.float32:
        raise ValueError(f"{name} must have dtype float32, got {dtype}")
    if shape != (count,):
        raise ValueError(f"{name} must have shape ({count},), one per point, got {shape}")
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous (use numpy.ascontiguousarray)")
    if not on_device:
        bad = ~(np.isfinite(radii) & (radii >= 0))
        if bad.any():
            first = int(np.argmax(bad))
            raise ValueError(f"{name} must be finite and >= 0: entry {first} is {float(radii[first])}")


def check_aabbs(aabbs: Any, name: str = "aabbs") -> int:
    """Validate an (N, 6) float32 C-contiguous array of boxes ``min x, y, z, max x, y, z``; return N.

    On the host every entry must be finite and each box's minimum at most its maximum.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` and the first bad box.
    """
    shape, dtype, contiguous, on_device = describe_array(aabbs, name)
    if dtype != np.float32:
        raise ValueError(f"{name} must have dtype float32, got {dtype}")
    if len(shape) != 2 or shape[1] != 6:
        raise ValueError(f"{name} must have shape (N, 6): min x, y, z, max x, y, z per box; got {shape}")
    if shape[0] == 0:
        raise ValueError(f"{name} is empty: a custom-primitive input needs at least one box")
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous (use numpy.ascontiguousarray)")
    if not on_device:
        bad = ~(np.isfinite(aabbs).all(axis=1) & (aabbs[:, :3] <= aabbs[:, 3:]).all(axis=1))
        if bad.any():
            first = int(np.argmax(bad))
            raise ValueError(f"{name}: box {first} ({aabbs[first].tolist()}) is not finite or has min > max")
    return int(shape[0])


def as_affine(matrix: Any, name: str = "transform") -> np.ndarray:
    """A 3x4 or 4x4 row-major affine transform as a float64 (3, 4) array.

    The one rule for every transform optixasync takes (mesh placement, loaded
    files, instances): finite entries, a 4x4's last row ``0 0 0 1``, and an
    invertible linear part (a singular one would flatten geometry, and OptiX
    inverts instance transforms to trace them).

    Raises
    ------
    ValueError
        On another shape, a non-finite entry, a 4x4 whose last row is not
        ``0 0 0 1`` (within :data:`AFFINE_ROW_TOLERANCE`), or a singular 3x3 part.
    """
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 3x4 or 4x4 affine transform of numbers: {exc}") from None
    if m.shape not in ((3, 4), (4, 4)):
        raise ValueError(f"{name} must be a 3x4 or 4x4 affine transform, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"{name} contains NaN or Inf")
    if m.shape == (4, 4):
        if not np.allclose(m[3], (0.0, 0.0, 0.0, 1.0), rtol=0.0, atol=AFFINE_ROW_TOLERANCE):
            raise ValueError(f"{name}: the last row of a 4x4 affine transform must be 0 0 0 1, got {m[3].tolist()}")
        m = m[:3]
    scale = max(float(np.abs(m[:, :3]).max()), 1e-300)
    if abs(np.linalg.det(m[:, :3])) <= SINGULAR_TOLERANCE * scale**3:
        raise ValueError(f"{name} is singular (its 3x3 part has determinant ~0): it would flatten the geometry")
    return np.ascontiguousarray(m)


def as_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int (any exact integer, not a bool), within ``[low, high]`` when given.

    Raises
    ------
    TypeError
        On a value that is not an exact integer (a float, a string, a bool), naming ``name``.
    ValueError
        Outside the range, naming ``name`` and the range.
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got a bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    if (low is not None and number < low) or (high is not None and number > high):
        if low is not None and high is not None:
            raise ValueError(f"{name} must be in [{low}, {high}], got {number}")
        raise ValueError(f"{name} must be {f'>= {low}' if low is not None else f'<= {high}'}, got {number}")
    return number


def coerce_options(cls: type[T], value: Any) -> T:
    """``value`` as an instance of the options dataclass ``cls``.

    ``None`` gives the defaults, an instance is returned as it is, a mapping
    gives ``cls(**value)``.

    Raises
    ------
    TypeError
        On unknown keys (naming them and the accepted ones) or another type.
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(value) - names)
        if unknown:
            raise TypeError(f"unknown {cls.__name__} option(s) {unknown}; accepted: {sorted(names)}")
        return cls(**value)
    raise TypeError(f"expected {cls.__name__}, dict or None, got {type(value).__name__}")


_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_ASCII_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: The longest number text read (a format's numbers are short; Python refuses ints of over 4,300 digits anyway).
MAX_NUMBER_CHARS = 400


def _number_text(text: str | bytes, name: str) -> str:
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("latin-1")  # any byte over 0x7F is then a non-ASCII character, refused below
    if not isinstance(text, str):
        raise TypeError(f"{name} must be text, got {type(text).__name__}")
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"{name}: a number of {len(text):,} characters (at most {MAX_NUMBER_CHARS})")
    return text


def parse_ascii_int(text: str | bytes, name: str = "number", *, signed: bool = False, low: int | None = None,
                    high: int | None = None) -> int:
    """The decimal integer ``text`` in ASCII digits, with a sign only when ``signed``, within ``[low, high]``.

    No whitespace, underscores, Unicode digits or other bases: ``'\u0661'``, ``'9\u00b99'``, ``'\uff12'``,
    ``'1_0'``, ``' 8'`` and ``'0x10'`` are all refused.

    Raises
    ------
    ValueError
        On anything else, or a value outside the range, naming ``name`` and the text (shortened).
    TypeError
        If ``text`` is not ``str`` or ``bytes``.
    """
    text = _number_text(text, name)
    if not _ASCII_INT.fullmatch(text) or (not signed and text[0] in "+-"):
        kind = "a decimal integer in ASCII digits" + ("" if signed else " without a sign")
        raise ValueError(f"{name} must be {kind}, got {text[:40]!r}")
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"[{low}, {high}]" if low is not None and high is not None else (
            f">= {low}" if low is not None else f"<= {high}")
        raise ValueError(f"{name} must be {span}, got {value}")
    return value


def parse_ascii_float(text: str | bytes, name: str = "number", *, finite: bool = True) -> float:
    """The decimal number ``text`` in ASCII (``[+-]digits[.digits][e[+-]digits]``); finite unless ``finite=False``.

    With ``finite=False``, ``nan``, ``inf`` and ``infinity`` (any case, signed) are read too, and so is a value
    too large for a double (it becomes an infinity); by default they are refused.

    Raises
    ------
    ValueError
        On other text (Unicode digits, underscores, whitespace, hexadecimal), or a non-finite value when
        ``finite``, naming ``name`` and the text (shortened).
    TypeError
        If ``text`` is not ``str`` or ``bytes``.
    """
    text = _number_text(text, name)
    special = text.lstrip("+-").lower() in ("nan", "inf", "infinity") and len(text) - len(text.lstrip("+-")) <= 1
    if not (_ASCII_FLOAT.fullmatch(text) or special):
        raise ValueError(f"{name} must be a decimal number in ASCII, got {text[:40]!r}")
    value = float(text)
    if finite and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {text[:40]!r}")
    return value
