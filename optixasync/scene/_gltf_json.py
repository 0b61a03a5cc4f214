"""glTF's JSON: the GLB container, the document parsed by Python's ``json`` with bounded depth, typed fields.

:func:`split_glb` checks a GLB header and its chunks; :func:`parse_document`
checks the JSON's size and nesting (:func:`json_depth`, before parsing: a
document nested thousands deep costs nothing), parses it with ``json`` and
checks the top-level arrays, so that every later access may assume an
array of objects. The small helpers (:func:`integer`, :func:`number`,
:func:`floats`, :func:`index`) turn a field into a Python value or raise a
``ValueError`` naming the element.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import LoadLimitError
from ._limits import LoadLimits

__all__ = ["ARRAYS", "floats", "index", "integer", "json_depth", "number", "parse_document", "split_glb"]

#: The document's top-level arrays of objects.
ARRAYS = ("accessors", "animations", "bufferViews", "buffers", "cameras", "images", "materials", "meshes", "nodes",
          "samplers", "scenes", "skins", "textures")
# GLB chunk types: "JSON" and "BIN\0" as little-endian uint32.
GLB_MAGIC = b"glTF"
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
#: The largest float32: a glTF number beyond it is refused (it would be an infinity where the GPU reads it).
FLOAT32_MAX = float(np.finfo(np.float32).max)
_STEPS = np.zeros(256, np.int8)  # +1 for [ and {, -1 for ] and }
_STEPS[[ord("["), ord("{")]] = 1
_STEPS[[ord("]"), ord("}")]] = -1


def split_glb(data: bytes, file: str) -> tuple[bytes, bytes | None]:
    """The JSON and (first) BIN chunk of a GLB container, checking its header and chunk bounds."""
    if len(data) < 12:
        raise ValueError(f"{file}: not a GLB file: {len(data)} bytes, shorter than the 12-byte header")
    magic, version, length = struct.unpack_from("<4sII", data)
    if magic != GLB_MAGIC:
        raise ValueError(f"{file}: not a GLB file: magic {magic!r}, expected {GLB_MAGIC!r}")
    if version != 2:
        raise ValueError(f"{file}: GLB container version {version}; only version 2 (glTF 2.0) is supported")
    if length > len(data):
        raise ValueError(f"{file}: truncated GLB: the header gives {length} bytes, the file has {len(data)}")
    offset, json_chunk, bin_chunk = 12, None, None
    while offset + 8 <= length:
        chunk_length, chunk_type = struct.unpack_from("<II", data, offset)
        start, end = offset + 8, offset + 8 + chunk_length
        if end > length:
            raise ValueError(f"{file}: truncated GLB: a chunk at byte {offset} claims {chunk_length} bytes, past "
                             f"the end ({length})")
        if json_chunk is None:
            if chunk_type != _CHUNK_JSON:
                raise ValueError(f"{file}: malformed GLB: the first chunk must be JSON, got type 0x{chunk_type:08x}")
            json_chunk = data[start:end]
        elif chunk_type == _CHUNK_BIN and bin_chunk is None:
            bin_chunk = data[start:end]
        offset = end  # other chunk types: the specification says to skip them
    if json_chunk is None:
        raise ValueError(f"{file}: malformed GLB: no JSON chunk")
    return json_chunk, bin_chunk


#: The piece of text :func:`json_depth` scans at once: its temporaries (about 35 bytes per byte of text in the worst
#: case, a text of brackets) are bounded by this, not by the file (a 128 MiB file took 4.45 GB scanned whole).
DEPTH_CHUNK = 1 << 20


def json_depth(raw: bytes, chunk: int = DEPTH_CHUNK) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``raw``, brackets inside strings not counted.

    Vectorised (numpy), linear in the text, in pieces of ``chunk`` bytes (what is carried from one to the next:
    the depth, whether a string is open, the parity of a run of backslashes at the end). Every unescaped quote
    toggles between inside and outside a string, a quote being escaped when an odd number of backslashes
    precede it. Exact for valid JSON; for other text it is some number, and the parser refuses the text anyway.
    """
    view = memoryview(raw)
    depth = deepest = 0
    inside = escaped = False
    for start in range(0, len(view), chunk):
        depth, top, inside, escaped = _scan(np.frombuffer(view[start:start + chunk], np.uint8), depth, inside,
                                            escaped)
        deepest = max(deepest, top)
    return deepest


def _scan(text: np.ndarray, depth: int, inside: bool, escaped: bool) -> tuple[int, int, bool, bool]:
    """One piece of :func:`json_depth`: (depth after it, deepest in it, a string open after it, whether its last
    backslash run is odd), from the same at its start."""
    quotes = np.flatnonzero(text == _QUOTE)
    slashes = text == _BACKSLASH
    backslashes = np.flatnonzero(slashes)
    if len(quotes) and (len(backslashes) or escaped):
        first = np.r_[True, np.diff(backslashes) != 1]  # each run's first backslash
        starts = np.flatnonzero(first)
        run = np.cumsum(first) - 1  # run number of each backslash
        last = np.searchsorted(backslashes, quotes) - 1  # the last backslash before each quote
        clipped = np.maximum(last, 0)
        adjacent = (last >= 0) & (backslashes[clipped] == quotes - 1) if len(backslashes) else np.zeros(
            len(quotes), bool)
        length = np.where(adjacent, clipped - starts[run[clipped]] + 1, 0) if len(backslashes) else np.zeros(
            len(quotes), np.int64)
        # a run that starts the piece continues the previous piece's: its odd parity carries over
        carried = escaped & (np.where(adjacent, backslashes[starts[run[clipped]]], quotes) == 0) if len(
            backslashes) else (quotes == 0) & escaped
        quotes = quotes[(length + carried) % 2 == 0]
    trailing = len(text) - 1 - int(np.flatnonzero(~slashes)[-1]) if (~slashes).any() else len(text)
    escaped = bool((trailing + (escaped and trailing == len(text))) % 2)
    steps = np.take(_STEPS, text)
    brackets = np.flatnonzero(steps)
    outside = (np.searchsorted(quotes, brackets) + inside) % 2 == 0  # an even number of quotes before: outside
    inside = bool((len(quotes) + inside) % 2)
    moves = steps[brackets[outside]]
    if not len(moves):
        return depth, depth, inside, escaped
    levels = np.cumsum(moves, dtype=np.int64) + depth
    return int(levels[-1]), int(levels.max()), inside, escaped


def parse_document(raw: bytes, file: str, limits: LoadLimits) -> dict[str, Any]:
    """The glTF JSON ``raw`` as a dict, after checking its size, nesting, version and top-level arrays.

    Raises
    ------
    LoadLimitError
        Over ``max_json_bytes`` or ``max_json_depth``.
    ValueError
        On text that is not UTF-8 JSON of a glTF 2.x object whose arrays hold objects.
    """
    if len(raw) > limits.max_json_bytes:
        raise LoadLimitError(file, "the glTF JSON", "max_json_bytes", limits.max_json_bytes, len(raw))
    depth = json_depth(raw)
    if depth > limits.max_json_depth:
        raise LoadLimitError(file, "the glTF JSON's nesting", "max_json_depth", limits.max_json_depth, depth)
    try:
        document = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: the glTF JSON is not UTF-8: {exc}") from None
    except RecursionError:  # text the depth scan misread is refused as what it is
        raise ValueError(f"{file}: malformed glTF JSON: nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError, and integers beyond Python's digit limit
        raise ValueError(f"{file}: malformed glTF JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{file}: malformed glTF: the JSON must be an object, got {type(document).__name__}")
    asset = document.get("asset")
    version = asset.get("version") if isinstance(asset, dict) else None
    if not isinstance(version, str):
        raise ValueError(f"{file}: malformed glTF: no asset.version")
    if not version.startswith("2."):
        raise ValueError(f"{file}: glTF version {version[:20]!r}; only glTF 2.x is supported")
    for name in ARRAYS:
        items = document.get(name)
        if items is None:
            continue
        if not isinstance(items, list):
            raise ValueError(f"{file}: malformed glTF: {name} must be an array, got {type(items).__name__}")
        for k, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValueError(f"{file}: malformed glTF: {name}[{k}] must be an object, got "
                                 f"{'null' if item is None else type(item).__name__}")
    for name in ("extensionsUsed", "extensionsRequired"):
        names = document.get(name)
        if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise ValueError(f"{file}: malformed glTF: {name} must be an array of strings")
    return document


def integer(value: Any, what: str, low: int = 0) -> int:
    """``value`` as a JSON integer ``>= low`` (a bool or a float is not one); ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{what} must be an integer >= {low}, got {_shown(value)}")
    return value


def index(value: Any, items: Sequence[Any], what: str) -> int:
    """``value`` as an index into ``items``; ValueError naming ``what`` when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(items):
        raise ValueError(f"{what} is {_shown(value)}, out of range: the file has {len(items)}")
    return value


def number(value: Any, default: float, what: str) -> float:
    """A finite JSON number as a float, ``default`` when absent (None); ValueError naming ``what`` otherwise."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a finite number, got {_shown(value)}")
    try:
        out = float(value)
    except OverflowError:  # an integer beyond float's range
        raise ValueError(f"{what} must be a finite number, got an integer of {value.bit_length()} bits") from None
    if not math.isfinite(out) or abs(out) > FLOAT32_MAX:
        # beyond float32's range a value becomes an infinity on the GPU (a light's intensity, an orthographic size)
        raise ValueError(f"{what} must be a finite number within float32's range (+-{FLOAT32_MAX:.4g}), got "
                         f"{_shown(value)}")
    return out


def floats(value: Any, count: int, what: str) -> np.ndarray:
    """``value`` as ``count`` finite float64s (a JSON array of numbers); ValueError naming ``what`` otherwise."""
    if not isinstance(value, list) or len(value) != count:
        raise ValueError(f"{what} must be {count} finite numbers, got {_shown(value)}")
    return np.array([number(v, math.nan, what) for v in value], np.float64)


def _shown(value: Any) -> str:
    """``value`` for a message, at most 80 characters of its repr."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
