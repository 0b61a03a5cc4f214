"""glTF's data side: the document, its buffers, buffer views, accessors and images.

:class:`GltfDocument` reads a file (the GLB container and the JSON are
checked by :mod:`optixasync.scene._gltf_json`), resolves buffers (the GLB
binary chunk, ``data:`` URIs decoded with bounds, files inside the asset's
folder through :class:`~optixasync.scene._files.AssetFiles`), and decodes
accessors (every component type, normalized integers, byte strides, sparse
substitution) and images (Pillow), each with bounds checks whose errors
name the file and the element, and each count checked against
:class:`~optixasync.scene.LoadLimits` before it is allocated. It also holds
the file's warnings, so each is given once, at the caller's line.

Blocking calls
--------------
None: host files and numpy (an image's declared media type, such as
``application/octet-stream``, is text, not a CUDA stream).
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .._warnings import warn
from ._files import AssetFiles
from ._gltf_json import GLB_MAGIC, index, integer, parse_document, split_glb
from ._limits import LoadLimits
from ._texture import GLTF_IMAGE_FORMATS, decode_image

__all__ = ["GLTF_EXTENSIONS", "MAX_WARNINGS", "GltfDocument"]

#: Warnings one file gives at most (each of a kind once); a file of a million odd nodes warns a few lines.
MAX_WARNINGS = 32

#: The glTF extensions this reader implements; a file may require any of them.
GLTF_EXTENSIONS = frozenset({
    "KHR_lights_punctual",
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


def _component_type(value: Any) -> np.dtype | None:
    """The numpy dtype of an accessor ``componentType``, None for anything else (whatever its JSON type)."""
    return _COMPONENT_TYPES.get(value) if type(value) is int else None


def _decode_data_uri(uri: str, what: str, files: AssetFiles, element: str) -> bytes:
    """The bytes of a ``data:`` URI, its decoded size checked against the limits before decoding."""
    header, comma, payload = uri.partition(",")
    if not comma:
        raise ValueError(f"{what}: malformed data URI (no comma)")
    files.check_size(len(payload) // 4 * 3 if header.endswith(";base64") else len(payload), element)
    if header.endswith(";base64"):
        try:
            return base64.b64decode(payload, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"{what}: bad base64 in data URI: {exc}") from None
    return urllib.parse.unquote_to_bytes(payload)  # never longer than the text


class GltfDocument:
    """One glTF file: its JSON (``json``), its decoded buffers and images, its warnings given.

    Parameters
    ----------
    path : Path
        An existing ``.gltf`` or ``.glb`` file.
    limits : LoadLimits

    Attributes
    ----------
    json : dict
        The whole document, as parsed (every extension's and extra's JSON is there).

    Raises
    ------
    ValueError
        On a malformed GLB container or JSON, or a glTF version other than 2.x.
    LoadLimitError
        On a file, JSON or nesting over the limits.
    """

    def __init__(self, path: Path, limits: LoadLimits) -> None:
        self.path = path
        self.file = str(path)
        self.limits = limits
        self.files = AssetFiles(path, limits)
        self.budget = self.files.budget
        self.glb_bin: bytes | None = None
        self.is_glb = False
        self.buffers: dict[int, bytes] = {}
        self.images: dict[int, np.ndarray] = {}
        self.warned: set[str] = set()
        self.json = self.parse()

    def items(self, name: str) -> list[dict[str, Any]]:
        """The document's top-level array ``name`` (objects, checked when parsed), empty when absent."""
        return self.json.get(name) or []

    def idx(self, value: Any, name: str, what: str) -> int:
        """``value`` as an index into the top-level array ``name``; ValueError naming the file and ``what``."""
        return index(value, self.items(name), f"{self.file}: {what}")

    def warn_once(self, key: str, message: str) -> None:
        """Warn ``message`` (prefixed by the file) at the caller's line, unless a warning of this ``key`` was given.

        A file gives at most :data:`MAX_WARNINGS` warnings; the last says that the rest are not shown.
        """
        if key in self.warned or len(self.warned) > MAX_WARNINGS:
            return
        self.warned.add(key)
        if len(self.warned) > MAX_WARNINGS:
            message = f"more than {MAX_WARNINGS} warnings: the rest are not shown"
        warn(f"{self.file}: {message}")

    def extension(self, obj: dict[str, Any], name: str, label: str) -> dict[str, Any] | None:
        """``obj["extensions"][name]`` (a JSON object) or None."""
        extensions = obj.get("extensions") or {}
        if not isinstance(extensions, dict):
            raise ValueError(f"{self.file}: {label}: extensions must be an object, got {type(extensions).__name__}")
        value = extensions.get(name)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{self.file}: {label}: {name} must be an object, got {type(value).__name__}")
        return value

    def get(self, obj: dict[str, Any], key: str, kind: type | tuple[type, ...], label: str, default: Any = None) -> Any:
        """``obj[key]`` when it is of ``kind`` (``default`` when absent); ValueError naming ``label`` otherwise."""
        value = obj.get(key)
        if value is None:
            return default
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise ValueError(f"{self.file}: {label}: {key} has the wrong type ({type(value).__name__})")
        return value

    # -- container and JSON --

    def parse(self) -> dict[str, Any]:
        """The document of the file, after checking the GLB container and the JSON."""
        data = self.files.read(self.path, "the file")
        if data[:4] == GLB_MAGIC or self.path.suffix.lower() == ".glb":
            raw_json, self.glb_bin = split_glb(data, self.file)
            self.is_glb = True
        else:
            raw_json = data
        return parse_document(raw_json, self.file, self.limits)

    def check_extensions(self) -> None:
        """Raise on a required extension this reader lacks; warn once per used one it ignores."""
        required = self.json.get("extensionsRequired") or []
        missing = [name for name in required if name not in GLTF_EXTENSIONS]
        if missing:
            shown = ", ".join(name[:64] for name in missing[:10]) + (", ..." if len(missing) > 10 else "")
            raise ValueError(f"{self.file} requires the glTF extension{'s' if len(missing) > 1 else ''} {shown}, "
                             f"which this reader does not implement (it implements "
                             f"{', '.join(sorted(GLTF_EXTENSIONS))})")
        for name in (self.json.get("extensionsUsed") or [])[:64]:
            if name in GLTF_EXTENSIONS:
                continue
            fallback = _FALLBACKS.get(name, _MATERIAL_FALLBACK if name.startswith(("KHR_materials_", "EXT_materials_"))
                                      else "ignored")
            self.warn_once(f"ext:{name}", f"glTF extension {name[:64]} is not supported: {fallback}")

    # -- buffers, accessors, images --

    def buffer(self, index: int) -> bytes:
        """Buffer ``index``: the GLB binary chunk, a data URI or a file inside the asset's folder (read once)."""
        if index in self.buffers:
            return self.buffers[index]
        buf = self.items("buffers")[index]
        what = f"buffer {index}"
        uri = buf.get("uri")
        if uri is None:
            if not self.is_glb or index != 0 or self.glb_bin is None:
                raise ValueError(f"{self.file}: {what} has no uri and there is no GLB binary chunk to take its place")
            data = self.glb_bin
        else:
            data = self.load_uri(uri, what)
        length = buf.get("byteLength")
        if isinstance(length, int) and not isinstance(length, bool) and len(data) < length:
            raise ValueError(f"{self.file}: {what} is truncated: byteLength is {length} but {len(data)} bytes were "
                             "read")
        self.buffers[index] = data
        return data

    def load_uri(self, uri: Any, what: str) -> bytes:
        """The bytes of a data URI or of a relative (percent-encoded) file path inside the asset's folder.

        Raises
        ------
        AssetPathError
            On a path leading outside the asset's folder (the message names the URI as written).
        FileNotFoundError
            On a file that is not there (naming the URI as written).
        """
        if not isinstance(uri, str):
            raise ValueError(f"{self.file}: {what}: uri must be a string, got {type(uri).__name__}")
        if uri.startswith("data:"):
            return _decode_data_uri(uri, f"{self.file}: {what}", self.files, what)
        return self.files.read_named(uri, what, uri=True)

    def view_bytes(self, view_index: Any, what: str) -> tuple[memoryview, int | None]:
        """A buffer view's bytes (bounds checked against its buffer) and its byteStride."""
        view_index = self.idx(view_index, "bufferViews", f"{what}: bufferView")
        view = self.items("bufferViews")[view_index]
        label = f"{what}: buffer view {view_index}"
        buffer_index = self.idx(view.get("buffer"), "buffers", f"{label}: buffer")
        data = self.buffer(buffer_index)
        offset = integer(view.get("byteOffset", 0), f"{self.file}: {label}: byteOffset")
        length = integer(view.get("byteLength"), f"{self.file}: {label}: byteLength")
        if offset + length > len(data):
            raise ValueError(f"{self.file}: {label} (bytes {offset} to {offset + length}) lies outside buffer "
                             f"{buffer_index} ({len(data)} bytes)")
        stride = view.get("byteStride")
        if stride is not None:
            stride = integer(stride, f"{self.file}: {label}: byteStride", 1)
        return memoryview(data)[offset:offset + length], stride

    def read_view(self, view_index: Any, offset: Any, dtype: np.dtype, count: int, width: int, what: str,
                  strided: bool = True) -> np.ndarray:
        """``count`` elements of ``width`` components from a buffer view, as a (count, width) array."""
        view, stride = self.view_bytes(view_index, what)
        offset = integer(offset or 0, f"{self.file}: {what}: byteOffset")
        element = dtype.itemsize * width
        stride = stride if strided and stride else element
        if stride < element:
            raise ValueError(f"{self.file}: {what}: byteStride {stride} is smaller than an element ({element} bytes)")
        end = offset + stride * (count - 1) + element if count else offset
        if end > len(view):
            raise ValueError(f"{self.file}: {what} reads bytes {offset} to {end} of buffer view {view_index}, which "
                             f"has {len(view)} bytes: the accessor lies outside its buffer")
        self.budget.charge(count * element, what)
        raw = np.frombuffer(view, dtype=np.uint8)
        rows = np.lib.stride_tricks.as_strided(raw[offset:], shape=(count, element), strides=(stride, 1))
        return np.ascontiguousarray(rows).view(dtype).reshape(count, width)

    def accessor(self, index: Any, what: str, types: Iterable[str], as_float: bool = True) -> np.ndarray:
        """An accessor's data as (count, width): float64 (normalized integers scaled) or integers as stored.

        Raises
        ------
        LoadLimitError
            On a count over ``max_accessor_count``, or data over the load's byte budget.
        ValueError
            On an accessor of another type, outside its buffer, or with non-finite values.
        """
        index = self.idx(index, "accessors", f"{what}: accessor")
        acc = self.items("accessors")[index]
        label = f"accessor {index} ({what})"
        types = tuple(types)
        kind = acc.get("type")
        if kind not in types:
            raise ValueError(f"{self.file}: {label} has type {str(kind)[:16]!r}, expected {' or '.join(types)}")
        dtype = _component_type(acc.get("componentType"))
        if dtype is None:
            raise ValueError(f"{self.file}: {label} has unknown componentType {str(acc.get('componentType'))[:16]}")
        count = integer(acc.get("count"), f"{self.file}: {label}: count")
        self.budget.check(count, "max_accessor_count", f"{label} count")
        width = _TYPE_WIDTHS[kind]
        if acc.get("bufferView") is None:
            self.budget.charge(count * width * dtype.itemsize, label)
            data = np.zeros((count, width), dtype)  # all zero unless sparse says otherwise
        else:
            data = self.read_view(acc["bufferView"], acc.get("byteOffset"), dtype, count, width, f"{label}")
        if acc.get("sparse") is not None:
            data = self.apply_sparse(acc["sparse"], data, dtype, width, label)
        if not as_float:
            return data
        self.budget.charge(data.size * 8, f"{label} as float64")
        out = data.astype(np.float64)
        if acc.get("normalized") and dtype.kind in "iu":
            info = np.iinfo(dtype)
            out = np.maximum(out / info.max, -1.0)  # signed: -128 and -127 both map to -1
        if not np.isfinite(out).all():
            raise ValueError(f"{self.file}: {label} contains NaN or Inf")
        return out

    def apply_sparse(self, sparse: Any, data: np.ndarray, dtype: np.dtype, width: int, label: str) -> np.ndarray:
        """``data`` with the sparse substitution of its accessor applied (tightly packed indices and values)."""
        if not isinstance(sparse, dict):
            raise ValueError(f"{self.file}: {label}: sparse must be an object")
        count = integer(sparse.get("count"), f"{self.file}: {label}: sparse.count", 1)
        if count > len(data):
            raise ValueError(f"{self.file}: {label}: sparse.count {count} exceeds the accessor's count {len(data)}")
        indices, values = sparse.get("indices"), sparse.get("values")
        index_dtype = _component_type(indices.get("componentType")) if isinstance(indices, dict) else None
        if not isinstance(values, dict) or index_dtype is None or index_dtype.kind != "u":
            raise ValueError(f"{self.file}: {label}: sparse needs indices (unsigned componentType) and values")
        where = self.read_view(indices.get("bufferView"), indices.get("byteOffset"), index_dtype, count, 1,
                               f"{label} sparse indices", strided=False)[:, 0].astype(np.int64)
        if where.size and where.max() >= len(data):
            raise ValueError(f"{self.file}: {label}: sparse index {int(where.max())} is out of range (count "
                             f"{len(data)})")
        values = self.read_view(values.get("bufferView"), values.get("byteOffset"), dtype, count, width,
                                f"{label} sparse values", strided=False)
        self.budget.charge(data.nbytes, f"{label} with its sparse values")
        data = data.copy()
        data[where] = values
        return data

    def image_label(self, index: int) -> str:
        """Image ``index`` for messages and texture names: its name, else its file, else ``image{index}``."""
        image = self.items("images")[index]
        name, uri = image.get("name"), image.get("uri")
        if isinstance(name, str) and name:
            return name[:200]
        if isinstance(uri, str) and not uri.startswith("data:"):
            return uri[:200]
        return f"image{index}"

    def image(self, index: int, what: str) -> np.ndarray:
        """Image ``index`` decoded by Pillow (once), uint8 or uint16; errors name the image and ``what`` uses it."""
        if index in self.images:
            return self.images[index]
        image = self.items("images")[index]
        label = f"image {index} ({self.image_label(index)!r}, used by {what})"
        mime = image.get("mimeType")
        if mime is not None and not isinstance(mime, str):
            raise ValueError(f"{self.file}: {label}: mimeType must be a string")
        uri = image.get("uri")
        if uri is not None:
            data = self.load_uri(uri, label)
            if isinstance(uri, str) and uri.startswith("data:"):  # its media type is a declaration too
                media = uri[5:].partition(",")[0].partition(";")[0]
                mime = media if media and media != "application/octet-stream" else mime  # octet-stream: no claim
        elif image.get("bufferView") is not None:
            data = bytes(self.view_bytes(image["bufferView"], label)[0])
        else:
            raise ValueError(f"{self.file}: {label} has neither uri nor bufferView")
        pixels = decode_image(data, self.file, self.limits, self.budget, label, GLTF_IMAGE_FORMATS, mime)
        self.images[index] = pixels
        return pixels

