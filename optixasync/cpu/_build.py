"""The host build: device code of ``kernels/`` compiled by this machine's C++ compiler into a shared library.

The kernels' headers are compiled unchanged, after ``kernels/host/cuda_host_shims.h`` supplies what NVRTC
would; ``kernels/host/pathtracer_host.cpp`` supplies what OptiX would. A build runs in a folder holding a copy
of the kernels tree whose ``optixasync_device.h`` is empty (the host sources provide the device interface; a
copy rather than ``-I``, because a quoted include looks next to the including file first and would find the
real device header there).

:func:`compile_library` builds into a folder the caller names; :func:`cached_library` keeps the result under
``cache_dir()/host/<key>.so``, the key hashing the sources, every file of the kernels tree and of the extra
include folders, the command line and the compiler's ``--version``; an entry is written with ``os.replace``, so
concurrent builds never see a half-written one. ``OPTIXASYNC_DISABLE_CACHE=1`` builds afresh in a temporary
folder every time.

Requirements: a C++17 compiler, ``$CXX`` if set, else ``c++``, ``g++`` or ``clang++`` on ``PATH`` (GCC 9+ or
Clang 10+; GCC 12.2 built the path tracer in 3.2 s on a shared 2-core machine). Without one,
:class:`~optixasync.errors.CompilerNotFoundError`.

Blocking calls
--------------
None on a GPU. A cache miss runs the compiler (a subprocess, seconds); ``compiler_version`` runs it once.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .._config import cache_dir, cache_enabled, kernels_dir
from ..errors import CompilerNotFoundError, HostBuildError

__all__ = ["HOST_FLAGS", "cached_library", "compile_library", "compiler_version", "find_compiler", "host_sources"]

#: The compiler flags of every host build (the CPU device's and the tests'): the pixels depend on them.
HOST_FLAGS = ("-O2", "-std=c++17", "-shared", "-fPIC", "-pthread", "-Wall", "-Wno-unused-function")
#: Bumped when the key recipe or the entry format changes.
SCHEMA_VERSION = 1
_COMPILERS = ("c++", "g++", "clang++")


def find_compiler() -> str:
    """The C++ compiler of the host builds: ``$CXX`` if set, else ``c++``, ``g++`` or ``clang++``.

    Raises
    ------
    CompilerNotFoundError
        When ``$CXX`` names no program, or none of the three is on ``PATH``.
    """
    named = os.environ.get("CXX")
    if named:
        found = shutil.which(named)
        if found is None:
            raise CompilerNotFoundError(f"CXX={named!r} names no program on PATH: the CPU device compiles the "
                                        "kernel with a C++17 compiler (set CXX to one, or unset it)")
        return found
    for name in _COMPILERS:
        found = shutil.which(name)
        if found is not None:
            return found
    raise CompilerNotFoundError("the CPU device compiles the kernel with a C++17 compiler, and none was found "
                                "(c++, g++ or clang++ on PATH, or $CXX): install one, e.g. apt install g++")


@functools.lru_cache(maxsize=8)
def compiler_version(cxx: str) -> str:
    """The first line of ``cxx --version`` (part of the cache key)."""
    try:
        result = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompilerNotFoundError(f"cannot run the C++ compiler {cxx}: {exc}") from exc
    return (result.stdout.strip().splitlines() or [""])[0]


def host_sources() -> Path:
    """The folder of the host sources (``kernels/host``: in a checkout, and in a wheel as ``optixasync/kernels``)."""
    return kernels_dir() / "host"


def _command(cxx: str, source: Path, kernels: Path, library: Path, flags: Sequence[str]) -> list[str]:
    return [cxx, *HOST_FLAGS, *flags, f"-I{kernels}", f"-I{kernels / 'host'}", str(source), "-o", str(library)]


def compile_library(source: str | Path, build: str | Path, *flags: str) -> Path:
    """Compile ``source`` (a path, or a file name of ``kernels/host``) into ``build``; the library's path.

    ``build`` gets the kernels tree's copy (``build/kernels``) and the library ``lib<stem>.so``.

    Raises
    ------
    CompilerNotFoundError
        Without a C++ compiler.
    HostBuildError
        With the compiler's messages, when the build fails.
    """
    cxx = find_compiler()
    build = Path(build)
    kernels = build / "kernels"
    shutil.copytree(kernels_dir(), kernels, dirs_exist_ok=True)
    (kernels / "optixasync_device.h").write_text("#pragma once\n")
    source = Path(source)
    if not source.is_absolute() and source.parent == Path("."):
        source = kernels / "host" / source  # a host source of the package: the copy, beside the empty header
    library = build / f"lib{source.stem}.so"
    result = subprocess.run(_command(cxx, source, kernels, library, flags), capture_output=True, text=True)
    if result.returncode != 0:
        raise HostBuildError(f"the host build of {source.name} failed ({Path(cxx).name} exit status "
                             f"{result.returncode})", result.stderr)
    return library


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".h", ".hpp", ".cuh", ".cu", ".cpp"))


def _key(cxx: str, source: str, program: str, flags: Sequence[str], include_dirs: Sequence[str]) -> str:
    digest = hashlib.sha256(f"schema {SCHEMA_VERSION}\n{compiler_version(cxx)}\n{source}\n".encode())
    digest.update("\0".join([*HOST_FLAGS, *flags]).encode())
    digest.update(program.encode())
    for root in (kernels_dir(), *(Path(d) for d in include_dirs)):
        for path in _files(root):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:32]


def cached_library(source: str, program: str, flags: Sequence[str] = (), include_dirs: Sequence[str] = ()) -> ctypes.CDLL:
    """The host library of ``source`` (a file of ``kernels/host``) built with ``program.cu`` holding ``program``.

    The program file goes into the build folder, which is on the include path (``-DOA_PROGRAM_SOURCE="program.cu"``
    names it), as are ``include_dirs``. Loaded from the cache when an entry has the same key.

    Raises
    ------
    CompilerNotFoundError, HostBuildError
        As :func:`compile_library`.
    """
    cxx = find_compiler()
    all_flags = ['-DOA_PROGRAM_SOURCE="program.cu"', *flags, *(f"-I{d}" for d in include_dirs)]
    enabled = cache_enabled()
    entry = cache_dir() / "host" / f"{_key(cxx, source, program, all_flags, include_dirs)}.so" if enabled else None
    if entry is not None and entry.is_file():
        return ctypes.CDLL(str(entry))
    parent = entry.parent if entry is not None else None
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="optixasync-host-", dir=parent))
    try:
        (build / "program.cu").write_text(program)
        library = compile_library(source, build, *all_flags, f"-I{build}")
        if entry is None:
            return ctypes.CDLL(str(library))  # the mapping outlives the folder's removal
        os.replace(library, entry)
        return ctypes.CDLL(str(entry))
    finally:
        shutil.rmtree(build, ignore_errors=True)
