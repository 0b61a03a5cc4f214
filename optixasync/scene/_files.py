"""The files an asset names, kept inside its folder: resolution, containment, bounded reads.

A scene file names other files: glTF buffer and image URIs, an OBJ's
``mtllib``, an MTL's ``map_Kd``. :class:`AssetFiles` resolves each one
against the folder of the file naming it, follows symbolic links, and
refuses (:class:`~optixasync.errors.AssetPathError`) any whose real path
leaves the asset's folder (or the caller's
:attr:`LoadLimits.allowed_folders <optixasync.scene.LoadLimits>`): ``..``,
its percent-encoded forms, absolute paths and links pointing out alike.
The check runs on the path's text before anything is opened, so an error
says nothing about what exists outside; the message names the reference as
the asset writes it. A file that is not a regular file (a folder, a FIFO, a
device) is refused too, so a read never blocks, and every read is bounded
by ``max_file_bytes`` and charged to the load's byte budget.

Blocking calls
--------------
None: file reading on the host.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import urllib.parse
from pathlib import Path

from ..errors import AssetPathError, LoadLimitError
from ._limits import LoadBudget, LoadLimits

__all__ = ["AssetFiles", "OUTSIDE", "is_file"]

#: Why a path leading out of the allowed folders is refused (the same words whatever lies there).
OUTSIDE = "it leads outside the asset's folder"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CHUNK = 1 << 20
#: Whether the system names an open descriptor's file (Linux); elsewhere the resolved path is trusted.
_FD_PATHS = os.path.isdir("/proc/self/fd")


def is_file(path: Path) -> bool:
    """Whether ``path`` is a regular file; False for any error (a name too long for the system included)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


class AssetFiles:
    """The files one load may read: the asset the caller named, and what it names inside its folder.

    Parameters
    ----------
    asset : Path
        The file the caller named (read as it is, wherever it lies).
    limits : LoadLimits
    budget : LoadBudget, optional
        The load's byte budget (a new one when None).
    """

    def __init__(self, asset: Path, limits: LoadLimits, budget: LoadBudget | None = None) -> None:
        self.asset = asset
        self.file = str(asset)
        self.limits = limits
        self.budget = budget if budget is not None else LoadBudget(limits, self.file)
        self.folder = os.path.realpath(asset.parent)
        self.roots = [self.folder, *(os.path.realpath(folder) for folder in limits.allowed_folders)]

    def inside(self, real: str) -> bool:
        """Whether the real (resolved) path ``real`` lies in one of the allowed folders."""
        return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)

    def resolve(self, reference: str, element: str, *, base: str | None = None, uri: bool = False,
                named_by: str | None = None) -> Path:
        """The real path of ``reference`` relative to ``base`` (default: the asset's folder), checked to lie inside.

        ``uri``: ``reference`` is a glTF URI reference (percent-encoded, ``/``-separated).
        ``named_by`` is the file naming it, for messages (default: the asset).

        Raises
        ------
        AssetPathError
            On a path leading outside, a NUL character, or a URI whose percent-encoding is not UTF-8.
        """
        owner = named_by or self.file
        text = reference
        if uri:
            try:
                text = urllib.parse.unquote(reference, errors="strict")
            except UnicodeDecodeError:
                raise AssetPathError(owner, element, reference, "its percent-encoding is not UTF-8") from None
        if "\0" in text:
            raise AssetPathError(owner, element, reference, "it contains a NUL character")
        try:
            os.fsencode(text)
        except UnicodeError:  # a lone surrogate (JSON's "\ud800"): no file system name
            raise AssetPathError(owner, element, reference, "it is not valid Unicode (a lone surrogate)") from None
        if uri and _SCHEME.match(text) and not re.match(r"^[A-Za-z]:[/\\]", text):
            raise AssetPathError(owner, element, reference, "only relative file paths and data: URIs are read")
        real = os.path.realpath(os.path.join(base if base is not None else self.folder, text))
        if not self.inside(real):
            raise AssetPathError(owner, element, reference, OUTSIDE)
        return Path(real)

    def read(self, path: Path, element: str, reference: str | None = None) -> bytes:
        """The bytes of ``path`` (a regular file), its size checked and charged to the budget.

        ``reference`` is how the asset names the file (None: the caller named it; its path is shown). A file
        the asset names is opened once, and what was opened is what is checked (its real path) and read: a
        folder swapped for a link between :meth:`resolve` and the read cannot lead outside (with a process
        swapping them, 121 of 3,000 loads had read the outside file when the path was opened again by name).

        Raises
        ------
        FileNotFoundError
            Naming ``reference`` (or the path).
        AssetPathError
            When it is not a regular file (a folder, a FIFO, a device), or a component of its path became a link.
        LoadLimitError
            Over ``max_file_bytes`` or the byte budget.
        """
        shown = repr(reference) if reference is not None else repr(str(path))
        try:
            fd = self._open(path, reference)
        except (FileNotFoundError, NotADirectoryError):
            relative = os.path.relpath(path, self.folder) if reference is not None else None
            if relative is not None and relative != reference:  # inside the folder: saying where is harmless
                shown += f" ({relative} in {self.folder})"
            raise FileNotFoundError(f"{self.file}: {element}: file not found: {shown}") from None
        except OSError as exc:
            if reference is not None and exc.errno in (errno.ELOOP, errno.EMLINK):
                raise AssetPathError(self.file, element, reference, OUTSIDE) from None
            if reference is not None:  # a name too long, no permission...: said without the absolute path
                reason = os.strerror(exc.errno).lower() if exc.errno else type(exc).__name__
                raise AssetPathError(self.file, element, reference, f"it cannot be opened ({reason})") from None
            raise
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                if reference is None:
                    raise IsADirectoryError(f"not a file: {shown}") if stat.S_ISDIR(info.st_mode) else OSError(
                        f"not a regular file: {shown}")
                raise AssetPathError(self.file, element, reference, "it is not a regular file")
            self.check_size(info.st_size, element)
            data = handle.read(info.st_size)  # one allocation of the size checked
            more = handle.read(_CHUNK)
            if not more:
                return data
            parts = [data]
            size = len(data)
            while more:  # a file larger than it said (growing, or a kernel file of size 0): in bounded pieces
                size += len(more)
                self.check_size(len(more), element, size=size)
                parts.append(more)
                more = handle.read(_CHUNK)
        return b"".join(parts)

    def _open(self, path: Path, reference: str | None) -> int:
        """A descriptor of ``path`` opened for reading without blocking (a FIFO is refused after, by its mode).

        A file the asset names is opened without following a link in its last component, and the file opened
        is checked to lie inside (its real path as the system reports it for the descriptor: ``/proc/self/fd``),
        so a component swapped for a link after :meth:`resolve` cannot lead outside.
        """
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
        if reference is None:
            return os.open(path, flags)
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}") if _FD_PATHS else str(path)
        except OSError:
            opened = None
        if opened is None or not self.inside(opened):
            os.close(fd)
            raise OSError(errno.ELOOP, "the file opened is not the one resolved")
        return fd

    def check_size(self, nbytes: int, element: str, *, size: int | None = None) -> None:
        """Charge ``nbytes`` to the budget, after checking a file's ``size`` (default ``nbytes``) against
        ``max_file_bytes``; LoadLimitError past either."""
        size = nbytes if size is None else size
        if size > self.limits.max_file_bytes:
            raise LoadLimitError(self.file, element, "max_file_bytes", self.limits.max_file_bytes, size)
        self.budget.charge(nbytes, element)

    def read_named(self, reference: str, element: str, *, base: str | None = None, uri: bool = False,
                   named_by: str | None = None) -> bytes:
        """:meth:`resolve` then :meth:`read`: the bytes of a file the asset names."""
        return self.read(self.resolve(reference, element, base=base, uri=uri, named_by=named_by), element, reference)
