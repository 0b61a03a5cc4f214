"""On-disk cache of the PTX that NVRTC produced.

Entries live in ``cache_dir()/ptx/<key>.ptx``. The key hashes everything
that can change the PTX: the source, its name, the contents of every header
it could include, the NVRTC command line, the NVRTC version and the OptiX
ABI. The cache stores NVRTC's raw output; fitting it to the driver happens
after loading, so an entry stays valid when the driver changes.

The cache is an optimisation only: an unwritable or corrupt cache degrades
to compiling, with a warning, and never to an exception.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._config import cache_enabled, kernels_dir, optix_cache_dir, ptx_cache_dir
from .._optix._abi import DEFAULT_ABI
from ..validation import coerce_options
from ._nvrtc import CompileOptions, compile_ptx, nvrtc_version

__all__ = [
    "SCHEMA_VERSION",
    "cache_key",
    "clear_cache",
    "compile_ptx_cached",
    "load",
    "optix_cache_dir",
    "ptx_cache_dir",
    "store",
]

logger = logging.getLogger("optixasync")

#: Bumped whenever the key recipe or the entry format changes, orphaning old entries.
SCHEMA_VERSION = 1

_HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".cu")  # .cu too: a generated source includes the kernel files
_TMP_SUFFIX = ".tmp"


def _headers(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.suffix in _HEADER_SUFFIXES and p.is_file())


def nvrtc_fingerprint() -> str:
    """Identifies the NVRTC that would compile, cheaply enough for a cache hit.

    Importing ``cuda.bindings.nvrtc`` and loading ``libnvrtc`` costs 30-70 ms,
    more than the rest of a warm pipeline creation. ``cuda-bindings`` loads
    NVRTC from the ``nvidia-cuda-nvrtc`` wheel when one is installed, so that
    wheel's version identifies it; without the wheel (a system toolkit),
    NVRTC is asked for its version.
    """
    global _fingerprint
    if _fingerprint is None:
        from importlib import metadata

        for dist in ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc-cu11"):
            try:
                _fingerprint = f"wheel:{dist}=={metadata.version(dist)}"
                break
            except metadata.PackageNotFoundError:
                continue
        else:
            major, minor = nvrtc_version()
            _fingerprint = f"nvrtc:{major}.{minor}"
    return _fingerprint


_fingerprint: str | None = None


def cache_key(source: str, name: str, options: CompileOptions, nvrtc: tuple[int, int] | str, abi: int) -> str:
    """SHA-256 hex digest identifying the PTX of one compilation.

    Parameters
    ----------
    source, name : str
        Source text and file name given to NVRTC.
    options : CompileOptions
        Compiler options; their NVRTC command line is hashed.
    nvrtc : tuple of int or str
        NVRTC ``(major, minor)``, or a fingerprint string from :func:`nvrtc_fingerprint`.
    abi : int
        OptiX ABI the PTX is meant for (the device headers depend on it).

    Notes
    -----
    Header contents are hashed rather than their modification times, so a
    checkout or a reinstall that rewrites identical files keeps the entry.
    """
    h = hashlib.sha256()

    def field(tag: str, data: bytes) -> None:
        # Length-prefixed fields, so no two different inputs concatenate to the same bytes.
        h.update(f"{tag}:{len(data)}:".encode())
        h.update(data)

    field("schema", str(SCHEMA_VERSION).encode())
    field("name", name.encode())
    field("source", source.encode())
    roots = [kernels_dir(), *(Path(d) for d in options.include_dirs)]
    for index, root in enumerate(roots):
        field("root", str(index).encode())
        for header in _headers(root):
            field("path", header.relative_to(root).as_posix().encode())
            try:
                field("content", header.read_bytes())
            except OSError as exc:
                field("unreadable", str(exc).encode())
    field("args", "\0".join(options.to_nvrtc_args()).encode())
    field("nvrtc", (nvrtc if isinstance(nvrtc, str) else f"{nvrtc[0]}.{nvrtc[1]}").encode())
    field("abi", str(int(abi)).encode())
    return h.hexdigest()


def _entry_path(key: str) -> Path:
    return ptx_cache_dir() / f"{key}.ptx"


def load(key: str) -> str | None:
    """The cached PTX of ``key``, or None when absent, unreadable or the cache is disabled."""
    if not cache_enabled():
        return None
    path = _entry_path(key)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("ignoring unreadable PTX cache entry %s: %s", path, exc)
        return None
    if ".version" not in text:
        # Writes are atomic, so this is damage from outside; recompile and overwrite.
        logger.warning("ignoring corrupt PTX cache entry %s", path)
        return None
    return text


def store(key: str, ptx: str) -> Path:
    """Write ``ptx`` as the entry of ``key``, atomically.

    Returns
    -------
    Path
        Where the entry belongs. When the cache is disabled or cannot be
        written (a warning is logged), nothing is there.
    """
    path = _entry_path(key)
    if not cache_enabled():
        return path
    tmp_name: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A temporary file in the same directory, then a rename: readers (other
        # processes included) see either no entry or a complete one.
        fd, tmp_name = tempfile.mkstemp(prefix=f".{key}.", suffix=_TMP_SUFFIX, dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(ptx.encode("utf-8"))
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        logger.warning("could not write the PTX cache entry %s (continuing without caching): %s", path, exc)
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
    return path


def compile_ptx_cached(
    source: str,
    name: str,
    options: CompileOptions | Mapping[str, Any] | None = None,
    abi: int = DEFAULT_ABI,
) -> tuple[str, bool]:
    """Compile like :func:`~optixasync.program.compile_ptx`, through the on-disk cache.

    Parameters
    ----------
    source, name : str
        Source text and its file name.
    options : CompileOptions, dict or None
        Compiler options.
    abi : int
        OptiX ABI the program targets; part of the key.

    Returns
    -------
    tuple of (str, bool)
        NVRTC's raw PTX (not fitted to the driver) and whether it came from the cache.
    """
    opts = coerce_options(CompileOptions, options)
    if not cache_enabled():
        return compile_ptx(source, name, opts), False
    key = cache_key(source, name, opts, nvrtc_fingerprint(), abi)
    ptx = load(key)
    if ptx is not None:
        return ptx, True
    ptx = compile_ptx(source, name, opts)
    store(key, ptx)
    return ptx, False


def clear_cache() -> int:
    """Delete the cached PTX and OptiX's own module cache.

    Returns
    -------
    int
        Number of files removed.
    """
    removed = 0
    ptx_dir = ptx_cache_dir()
    if ptx_dir.is_dir():
        for path in ptx_dir.iterdir():
            # Leftover temporaries of an interrupted writer go too.
            if path.is_file() and (path.suffix == ".ptx" or path.name.endswith(_TMP_SUFFIX)):
                try:
                    path.unlink()
                    removed += 1
                except OSError as exc:
                    logger.warning("could not remove %s: %s", path, exc)
    optix_dir = optix_cache_dir()
    if optix_dir.is_dir():
        # Deepest paths first, so directories are empty when their turn comes.
        for path in sorted(optix_dir.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            try:
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()
                else:
                    path.unlink()
                    removed += 1
            except OSError as exc:
                logger.warning("could not remove %s: %s", path, exc)
        try:
            optix_dir.rmdir()
        except OSError:
            pass
    return removed
