"""How much a scene file may ask for: :class:`LoadLimits`, and the byte budget of one load.

Every loader (glTF, OBJ and MTL, textures, environment maps) takes
``limits=`` (a :class:`LoadLimits`, a dict of its fields, or None for the
defaults) and checks each count a file declares against it *before*
allocating for it or doing the work it implies, so that a small hostile
file cannot cost gigabytes or hours. A breach raises
:class:`~optixasync.errors.LoadLimitError` (a ``ValueError``) naming the
file, the element and the limit.

The defaults suit assets a rendering application downloads: they let
through every Khronos glTF sample model and scanned or CAD scenes of a few
million triangles and 10^5 nodes, and refuse what no renderable asset
needs. An application that loads untrusted files on a shared machine may
lower them (the fuzz suite loads with ``max_total_bytes=64 MiB``).

Blocking calls
--------------
None: bookkeeping on the host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import LoadLimitError
from ..validation import as_int, coerce_options

__all__ = ["LoadBudget", "LoadLimits", "as_limits"]

_MiB = 2**20
_GiB = 2**30


@dataclass(frozen=True)
class LoadLimits:
    """Resource limits of one scene load; every field a maximum (inclusive).

    Attributes
    ----------
    max_file_bytes : int
        Size of any one file read: the asset itself, its buffers and images,
        material libraries, textures, environment maps. Default 2 GiB.
    max_total_bytes : int
        Bytes one load may hold: the files read plus the arrays decoded from
        them (buffers, accessors, images), counted before each allocation.
        Default 4 GiB.
    max_json_bytes : int
        Size of a glTF file's JSON (a ``.gltf`` file, or a GLB's JSON chunk).
        Default 256 MiB (a document of 10^6 nodes is about 100 MiB).
    max_json_depth : int
        Nesting of JSON arrays and objects in a glTF document, checked
        before it is parsed. Default 64 (glTF itself nests 6 deep; the rest is
        for extensions and extras).
    max_nodes : int
        Nodes in a glTF file. Default 1,000,000.
    max_node_depth : int
        Length of the longest chain of parent and child nodes. Default 1,024.
    max_instances : int
        Node instances after expanding the node graph, counted before it is
        walked: a node listed as the child of several parents counts once per
        path from a scene root, and ``EXT_mesh_gpu_instancing`` adds its
        instances. Default 1,000,000.
    max_accessor_count : int
        Elements of one glTF accessor (vertices, indices, keyframes,
        instances). An accessor reading a buffer is also checked against that
        buffer's bytes; one without a buffer view (zeros, plus sparse values)
        only against this. Default 2**25 (33,554,432).
    max_image_pixels : int
        Width times height of a texture or an environment map, read from the
        file's header before it is decoded; Pillow's decompression-bomb check
        is reported as this limit too. Default 2**27 (134,217,728: a
        16,384 x 8,192 sky).
    allowed_folders : tuple of str or Path
        Folders besides the asset's own in which the files it names may lie
        (glTF buffer and image URIs, OBJ ``mtllib``, MTL ``map_*``). Default
        none: an asset reads only inside its own folder.

    Raises
    ------
    TypeError, ValueError
        On a limit that is not a positive integer, or a folder that is not a path.
    """

    max_file_bytes: int = 2 * _GiB
    max_total_bytes: int = 4 * _GiB
    max_json_bytes: int = 256 * _MiB
    max_json_depth: int = 64
    max_nodes: int = 1_000_000
    max_node_depth: int = 1_024
    max_instances: int = 1_000_000
    max_accessor_count: int = 2**25
    max_image_pixels: int = 2**27
    allowed_folders: tuple[str | Path, ...] = ()

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name != "allowed_folders":
                object.__setattr__(self, f.name, as_int(f"LoadLimits.{f.name}", getattr(self, f.name), 1))
        folders = self.allowed_folders
        if isinstance(folders, (str, Path)):
            folders = (folders,)
        try:
            folders = tuple(Path(folder) for folder in folders)
        except TypeError:
            raise TypeError(f"LoadLimits.allowed_folders must be paths, got {self.allowed_folders!r}") from None
        object.__setattr__(self, "allowed_folders", folders)


def as_limits(limits: LoadLimits | dict[str, Any] | None) -> LoadLimits:
    """``limits`` as a :class:`LoadLimits`: an instance as it is, a dict of its fields, None for the defaults."""
    return coerce_options(LoadLimits, limits)


class LoadBudget:
    """The bytes one load holds, charged before each allocation against ``LoadLimits.max_total_bytes``.

    Parameters
    ----------
    limits : LoadLimits
    file : str
        The file being loaded, for messages.
    """

    def __init__(self, limits: LoadLimits, file: str) -> None:
        self.limits = limits
        self.file = file
        self.total = 0

    def charge(self, nbytes: int | float, element: str) -> None:
        """Count ``nbytes`` more; :class:`~optixasync.errors.LoadLimitError` naming ``element`` past the limit."""
        nbytes = int(nbytes) if math.isfinite(nbytes) else self.limits.max_total_bytes + 1
        if self.total + nbytes > self.limits.max_total_bytes:
            raise LoadLimitError(self.file, f"{element} ({nbytes:,} bytes, after {self.total:,} already held)",
                                 "max_total_bytes", self.limits.max_total_bytes, self.total + nbytes)
        self.total += nbytes

    def check(self, value: int, limit: str, element: str) -> int:
        """``value`` if it is at most the limit ``limit`` (a :class:`LoadLimits` field), else LoadLimitError."""
        maximum = getattr(self.limits, limit)
        if value > maximum:
            raise LoadLimitError(self.file, element, limit, maximum, value)
        return value
