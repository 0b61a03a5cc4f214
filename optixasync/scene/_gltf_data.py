"""glTF's data side: the GLB container and the JSON, buffers, buffer views, accessors and images.

:class:`GltfDocument` parses a file (checking the GLB header and chunks and
the JSON before pygltflib builds its object model), resolves buffers (the
GLB binary chunk, data URIs, external files next to the ``.gltf``), and
decodes accessors (every component type, normalized integers, byte strides,
sparse substitution) and images (Pillow), each with bounds checks whose
errors name the file and the element. It also holds the file's warnings, so
each is given once.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
import struct
import urllib.parse
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._texture import image_array

__all__ = ["GLTF_EXTENSIONS", "GltfDocument", "floats", "number"]

#: The glTF extensions this reader implements; a file may require any of them.
GLTF_EXTENSIONS = frozenset({
    "KHR_materials_emissive_strength",
    "KHR_materials_ior",
    "KHR_materials_transmission",
    "KHR_mesh_quantization",
    "KHR_texture_transform",
    "EXT_mesh_gpu_instancing",
    "EXT_texture_webp",
})

# What happens to an extension the file uses (but does not require) and this reader ignores.
_FALLBACKS = {
    "KHR_lights_punctual": "its lights are ignored (only emissive meshes and the environment give light)",
    "KHR_materials_unlit": "ignored, the metallic-roughness material is used",
    "KHR_materials_variants": "ignored, each primitive's default material is used",
    "KHR_texture_basisu": "ignored, each texture's fallback image (its source) is used",
    "EXT_texture_avif": "ignored, each texture's fallback image (its source) is used",
    "MSFT_texture_dds": "ignored, each texture's fallback image (its source) is used",
    "KHR_draco_mesh_compression": "ignored, the uncompressed fallback accessors are used",
    "EXT_meshopt_compression": "ignored, the uncompressed fallback buffer views are used",
    "KHR_animation_pointer": "ignored, the static pose is used",
}
_MATERIAL_FALLBACK = "ignored, the base material is used"

# Accessor componentType -> little-endian numpy dtype.
_COMPONENT_TYPES = {
    5120: np.dtype("<i1"),
    5121: np.dtype("<u1"),
    5122: np.dtype("<i2"),
    5123: np.dtype("<u2"),
    5125: np.dtype("<u4"),
    5126: np.dtype("<f4"),
}
_TYPE_WIDTHS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
# GLB chunk types: "JSON" and "BIN\0" as little-endian uint32.
_GLB_MAGIC = b"glTF"
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942


def _decode_data_uri(uri: str, what: str) -> bytes:
    header, comma, payload = uri.partition(",")
    if not comma:
        raise ValueError(f"{what}: malformed data URI (no comma)")
    if header.endswith(";base64"):
        try:
            return base64.b64decode(payload, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"{what}: bad base64 in data URI: {exc}") from None
    return urllib.parse.unquote_to_bytes(payload)


def _split_glb(data: bytes, file: str) -> tuple[bytes, bytes | None]:
    """The JSON and (first) BIN chunk of a GLB container, checking its header and chunk bounds."""
    if len(data) < 12:
        raise ValueError(f"{file}: not a GLB file: {len(data)} bytes, shorter than the 12-byte header")
    magic, version, length = struct.unpack_from("<4sII", data)
    if magic != _GLB_MAGIC:
        raise ValueError(f"{file}: not a GLB file: magic {magic!r}, expected {_GLB_MAGIC!r}")
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


def floats(value: Any, count: int, what: str) -> np.ndarray:
    """``value`` as ``count`` finite float64s; ValueError naming ``what`` otherwise."""
    try:
        out = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be {count} numbers, got {value!r}") from None
    if out.shape != (count,) or not np.isfinite(out).all():
        raise ValueError(f"{what} must be {count} finite numbers, got {value!r}")
    return out


def number(value: Any, default: float, what: str) -> float:
    """A finite JSON number as a float, ``default`` when absent (None); ValueError naming ``what`` otherwise."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def _index(value: Any, items: Sequence[Any] | None, what: str) -> int:
    """``value`` as an index into ``items``; ValueError naming ``what`` when it is not one."""
    size = len(items or ())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
        raise ValueError(f"{what} is {value!r}, out of range: the file has {size}")
    return value


class GltfDocument:
    """One glTF file: its pygltflib object model (``gltf``), its decoded buffers and images, its warnings given.

    Parameters
    ----------
    path : Path
        An existing ``.gltf`` or ``.glb`` file.
    pygltflib : module

    Raises
    ------
    ValueError
        On a malformed GLB container or JSON, or a glTF version other than 2.x.
    """

    def __init__(self, path: Path, pygltflib: Any) -> None:
        self.path = path
        self.file = str(path)
        self.base = path.parent
        self.glb_bin: bytes | None = None
        self.is_glb = False
        self.buffers: dict[int, bytes] = {}
        self.images: dict[int, np.ndarray] = {}
        self.warned: set[str] = set()
        self.gltf = self.parse(pygltflib)

    def idx(self, value: Any, items: Sequence[Any] | None, what: str) -> int:
        """``value`` as an index into ``items`` (an array of the file); ValueError naming the file and ``what``."""
        return _index(value, items, f"{self.file}: {what}")

    def warn_once(self, key: str, message: str) -> None:
        """Warn ``message`` (prefixed by the file) unless a warning of this ``key`` was given already."""
        if key not in self.warned:
            self.warned.add(key)
            warnings.warn(f"{self.file}: {message}", UserWarning, stacklevel=4)

    def extension(self, obj: Any, name: str, label: str) -> dict[str, Any] | None:
        """``obj.extensions[name]`` (a JSON object) or None."""
        extensions = getattr(obj, "extensions", None) or {}
        if not isinstance(extensions, dict):
            raise ValueError(f"{self.file}: {label}: extensions must be an object, got {extensions!r}")
        value = extensions.get(name)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{self.file}: {label}: {name} must be an object, got {value!r}")
        return value

    # -- container and JSON --

    def parse(self, pygltflib: Any) -> Any:
        """The pygltflib ``GLTF2`` of the file, after checking the GLB container and the JSON."""
        data = self.path.read_bytes()
        if data[:4] == _GLB_MAGIC or self.path.suffix.lower() == ".glb":
            raw_json, self.glb_bin = _split_glb(data, self.file)
            self.is_glb = True
        else:
            raw_json = data
        try:
            text = raw_json.decode("utf-8-sig")
            document = json.loads(text)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{self.file}: the glTF JSON is not UTF-8: {exc}") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{self.file}: malformed glTF JSON: {exc}") from None
        if not isinstance(document, dict):
            raise ValueError(f"{self.file}: malformed glTF: the JSON must be an object, got {type(document).__name__}")
        asset = document.get("asset")
        version = asset.get("version") if isinstance(asset, dict) else None
        if not isinstance(version, str):
            raise ValueError(f"{self.file}: malformed glTF: no asset.version")
        if not version.startswith("2."):
            raise ValueError(f"{self.file}: glTF version {version}; only glTF 2.x is supported")
        try:
            gltf = pygltflib.GLTF2.from_json(text, infer_missing=True)
        except Exception as exc:  # dataclasses-json raises assorted types on JSON of the wrong shape
            raise ValueError(f"{self.file}: malformed glTF: {type(exc).__name__}: {exc}") from None
        for name in ("accessors", "bufferViews", "buffers", "cameras", "images", "materials", "meshes", "nodes",
                     "samplers", "scenes", "textures", "extensionsUsed", "extensionsRequired"):
            if not isinstance(getattr(gltf, name) or [], list):
                raise ValueError(f"{self.file}: malformed glTF: {name} must be an array")
        return gltf

    def check_extensions(self) -> None:
        """Raise on a required extension this reader lacks; warn once per used one it ignores."""
        gltf = self.gltf
        required = [str(name) for name in gltf.extensionsRequired or []]
        missing = [name for name in required if name not in GLTF_EXTENSIONS]
        if missing:
            raise ValueError(f"{self.file} requires the glTF extension{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)}, which this reader does not implement (it implements "
                             f"{', '.join(sorted(GLTF_EXTENSIONS))})")
        for name in gltf.extensionsUsed or []:
            name = str(name)
            if name in GLTF_EXTENSIONS:
                continue
            fallback = _FALLBACKS.get(name, _MATERIAL_FALLBACK if name.startswith(("KHR_materials_", "EXT_materials_"))
                                      else "ignored")
            self.warn_once(f"ext:{name}", f"glTF extension {name} is not supported: {fallback}")
        if gltf.animations:
            self.warn_once("animations", f"{len(gltf.animations)} animation(s) ignored: the static pose is used")

    # -- buffers, accessors, images --

    def buffer(self, index: int) -> bytes:
        """Buffer ``index``: the GLB binary chunk, a data URI or a file next to the glTF (read once)."""
        if index in self.buffers:
            return self.buffers[index]
        buf = self.gltf.buffers[index]
        what = f"buffer {index}"
        if buf.uri is None:
            if not self.is_glb or index != 0 or self.glb_bin is None:
                raise ValueError(f"{self.file}: {what} has no uri and there is no GLB binary chunk to take its place")
            data = self.glb_bin
        else:
            data = self.load_uri(buf.uri, what)
        length = buf.byteLength
        if isinstance(length, int) and not isinstance(length, bool) and len(data) < length:
            raise ValueError(f"{self.file}: {what} is truncated: byteLength is {length} but {len(data)} bytes were "
                             "read")
        self.buffers[index] = data
        return data

    def load_uri(self, uri: Any, what: str) -> bytes:
        """The bytes of a data URI or of a relative (percent-encoded) file path; FileNotFoundError naming both."""
        if not isinstance(uri, str):
            raise ValueError(f"{self.file}: {what}: uri must be a string, got {uri!r}")
        if uri.startswith("data:"):
            return _decode_data_uri(uri, f"{self.file}: {what}")
        if "://" in uri:
            raise ValueError(f"{self.file}: {what}: only relative file paths and data URIs are supported, got "
                             f"{uri!r}")
        file = self.base / urllib.parse.unquote(uri)
        if not file.is_file():
            raise FileNotFoundError(f"{self.file}: {what}: file not found: {str(file)!r}")
        return file.read_bytes()

    def view_bytes(self, view_index: Any, what: str) -> tuple[memoryview, int | None]:
        """A buffer view's bytes (bounds checked against its buffer) and its byteStride."""
        view_index = self.idx(view_index, self.gltf.bufferViews, f"{what}: bufferView")
        view = self.gltf.bufferViews[view_index]
        label = f"{what}: buffer view {view_index}"
        buffer_index = self.idx(view.buffer, self.gltf.buffers, f"{label}: buffer")
        data = self.buffer(buffer_index)
        offset, length = view.byteOffset or 0, view.byteLength
        if not (isinstance(offset, int) and isinstance(length, int) and offset >= 0 and length >= 0):
            raise ValueError(f"{self.file}: {label}: byteOffset and byteLength must be non-negative integers, got "
                             f"{view.byteOffset!r} and {view.byteLength!r}")
        if offset + length > len(data):
            raise ValueError(f"{self.file}: {label} (bytes {offset} to {offset + length}) lies outside buffer "
                             f"{buffer_index} ({len(data)} bytes)")
        return memoryview(data)[offset:offset + length], view.byteStride

    def read_view(self, view_index: Any, offset: Any, dtype: np.dtype, count: int, width: int, what: str,
                  strided: bool = True) -> np.ndarray:
        """``count`` elements of ``width`` components from a buffer view, as a (count, width) array."""
        view, stride = self.view_bytes(view_index, what)
        offset = offset or 0
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"{self.file}: {what}: byteOffset must be a non-negative integer, got {offset!r}")
        element = dtype.itemsize * width
        stride = stride if strided and stride else element
        if stride < element:
            raise ValueError(f"{self.file}: {what}: byteStride {stride} is smaller than an element ({element} bytes)")
        end = offset + stride * (count - 1) + element if count else offset
        if end > len(view):
            raise ValueError(f"{self.file}: {what} reads bytes {offset} to {end} of buffer view {view_index}, which "
                             f"has {len(view)} bytes: the accessor lies outside its buffer")
        raw = np.frombuffer(view, dtype=np.uint8)
        rows = np.lib.stride_tricks.as_strided(raw[offset:], shape=(count, element), strides=(stride, 1))
        return np.ascontiguousarray(rows).view(dtype).reshape(count, width)

    def accessor(self, index: Any, what: str, types: Iterable[str], as_float: bool = True) -> np.ndarray:
        """An accessor's data as (count, width): float64 (normalized integers scaled) or integers as stored."""
        index = self.idx(index, self.gltf.accessors, f"{what}: accessor")
        acc = self.gltf.accessors[index]
        label = f"accessor {index} ({what})"
        types = tuple(types)
        if acc.type not in types:
            raise ValueError(f"{self.file}: {label} has type {acc.type!r}, expected {' or '.join(types)}")
        dtype = _COMPONENT_TYPES.get(acc.componentType)
        if dtype is None:
            raise ValueError(f"{self.file}: {label} has unknown componentType {acc.componentType!r}")
        count = acc.count
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{self.file}: {label}: count must be a non-negative integer, got {count!r}")
        width = _TYPE_WIDTHS[acc.type]
        if acc.bufferView is None:
            data = np.zeros((count, width), dtype)  # all zero unless sparse says otherwise
        else:
            data = self.read_view(acc.bufferView, acc.byteOffset, dtype, count, width, f"{label}")
        if acc.sparse is not None:
            data = self.apply_sparse(acc.sparse, data, dtype, width, label)
        if not as_float:
            return data
        out = data.astype(np.float64)
        if acc.normalized and dtype.kind in "iu":
            info = np.iinfo(dtype)
            out = np.maximum(out / info.max, -1.0)  # signed: -128 and -127 both map to -1
        if not np.isfinite(out).all():
            raise ValueError(f"{self.file}: {label} contains NaN or Inf")
        return out

    def apply_sparse(self, sparse: Any, data: np.ndarray, dtype: np.dtype, width: int, label: str) -> np.ndarray:
        """``data`` with the sparse substitution of its accessor applied (tightly packed indices and values)."""
        count = sparse.count
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"{self.file}: {label}: sparse.count must be a positive integer, got {count!r}")
        index_dtype = _COMPONENT_TYPES.get(sparse.indices.componentType) if sparse.indices else None
        if sparse.indices is None or sparse.values is None or index_dtype is None or index_dtype.kind != "u":
            raise ValueError(f"{self.file}: {label}: sparse needs indices (unsigned componentType) and values")
        where = self.read_view(sparse.indices.bufferView, sparse.indices.byteOffset, index_dtype, count, 1,
                               f"{label} sparse indices", strided=False)[:, 0].astype(np.int64)
        if where.size and where.max() >= len(data):
            raise ValueError(f"{self.file}: {label}: sparse index {int(where.max())} is out of range (count "
                             f"{len(data)})")
        values = self.read_view(sparse.values.bufferView, sparse.values.byteOffset, dtype, count, width,
                                f"{label} sparse values", strided=False)
        data = data.copy()
        data[where] = values
        return data

    def image_label(self, index: int) -> str:
        """Image ``index`` for messages and texture names: its name, else its file, else ``image{index}``."""
        image = self.gltf.images[index]
        if image.name:
            return str(image.name)
        if isinstance(image.uri, str) and not image.uri.startswith("data:"):
            return image.uri
        return f"image{index}"

    def image(self, index: int, what: str) -> np.ndarray:
        """Image ``index`` decoded by Pillow (once), uint8 or uint16; errors name the image and ``what`` uses it."""
        if index in self.images:
            return self.images[index]
        from PIL import Image, UnidentifiedImageError

        image = self.gltf.images[index]
        label = f"image {index} ({self.image_label(index)!r}, used by {what})"
        if image.uri is not None:
            data = self.load_uri(image.uri, label)
        elif image.bufferView is not None:
            data = bytes(self.view_bytes(image.bufferView, label)[0])
        else:
            raise ValueError(f"{self.file}: {label} has neither uri nor bufferView")
        try:
            with Image.open(io.BytesIO(data)) as decoded:
                pixels = image_array(decoded, self.image_label(index))
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise ValueError(f"{self.file}: {label} is not an image Pillow can decode: {exc}") from None
        self.images[index] = pixels
        return pixels
