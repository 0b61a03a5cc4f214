"""The kernel's device code built for the CPU: what the host-build tests share.

``pathtracer_host.cpp``, ``environment_host.cpp`` and ``bsdf_host.cpp`` compile the headers of
``kernels/pathtracer/`` unchanged with the host C++ compiler, after ``cuda_host_shims.h`` supplies what NVRTC
and OptiX would. :func:`build_host_library` builds one of them against a copy of the kernels tree whose
``optixasync_device.h`` is empty (the harness provides the device interface; a copy rather than ``-I``, because
a quoted include looks next to the including file first and would find the real device header there).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

__all__ = ["aligned", "build_host_library", "compiler"]


def compiler() -> str | None:
    """The C++ compiler of the host builds: $CXX, c++, g++ or clang++ (None if there is none)."""
    return shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++") or shutil.which("clang++")


def build_host_library(source: str, build: Path, *flags: str) -> ctypes.CDLL:
    """Compile ``source`` (a file beside this one) into a shared library in ``build`` and load it.

    Raises
    ------
    RuntimeError
        Without a compiler, or with the compiler's messages when the build fails.
    """
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (c++, g++ or clang++)")
    from optixasync._config import kernels_dir  # the package's kernels (checkout or wheel) have no public door

    kernels = Path(build) / "kernels"
    shutil.copytree(kernels_dir(), kernels)
    (kernels / "optixasync_device.h").write_text("#pragma once\n")
    library = Path(build) / f"lib{Path(source).stem}.so"
    command = [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-pthread", "-Wall", "-Wno-unused-function", *flags,
               f"-I{kernels}", str(HERE / source), "-o", str(library)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"host build of {source} failed:\n{result.stderr}")
    return ctypes.CDLL(str(library))


def aligned(array: np.ndarray, alignment: int = 16) -> np.ndarray:
    """A copy of ``array`` whose data starts on an ``alignment``-byte boundary (float4 loads need it)."""
    raw = np.zeros(array.nbytes + alignment, np.uint8)
    start = (-raw.ctypes.data) % alignment
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out
