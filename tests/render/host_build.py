"""The kernel's device code built for the CPU: what the host-build tests share, over the package's CPU device.

``kernels/host/pathtracer_host.cpp`` (the CPU device's source) and the tests' own ``environment_host.cpp`` and
``bsdf_host.cpp`` compile the headers of ``kernels/pathtracer/`` unchanged with the host C++ compiler, after
``kernels/host/cuda_host_shims.h`` supplies what NVRTC and OptiX would. The build, the host placement of the
scene tables and the launches are the package's (:mod:`optixasync.cpu._build`,
``optixasync.render._host_placement``, ``optixasync.render._host_tracer``); this module builds into the tests'
own folders (no cache), with the same flags as the CPU device, so both give the same pixels.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np

from optixasync.cpu._build import compile_library
from optixasync.errors import CompilerNotFoundError
from optixasync.render import RenderOptions
from optixasync.render._host_placement import HOST_TEXTURE, WRAPS, HostPlacement, aligned
from optixasync.render._host_tracer import IMAGE, PLAIN, declare
from optixasync.render._host_tracer import HostTracer as _PackageTracer

HERE = Path(__file__).resolve().parent

__all__ = ["HOST_TEXTURE", "IMAGE", "PLAIN", "THREADS", "WRAPS", "HostPlacement", "HostTracer", "aligned",
           "build_host_library", "build_pathtracer_library", "compiler", "host_render"]

#: Threads of a host launch.
THREADS = max(1, min(16, os.cpu_count() or 1))


def compiler() -> str | None:
    """The C++ compiler of the host builds (the CPU device's: $CXX, c++, g++ or clang++), None if there is none."""
    from optixasync.cpu import find_compiler

    try:
        return find_compiler()
    except CompilerNotFoundError:
        return None


def build_host_library(source: str, build: Path, *flags: str) -> ctypes.CDLL:
    """Compile ``source`` (a file beside this one, or of ``kernels/host``) in ``build`` and load it.

    Raises
    ------
    CompilerNotFoundError, HostBuildError
        Without a compiler, or with the compiler's messages when the build fails.
    """
    path = HERE / source
    return ctypes.CDLL(str(compile_library(path if path.is_file() else source, build, *flags)))


def build_pathtracer_library(build: Path, variants=(0, 1, 15), families=None, types=None, *,
                             shapes: bool = False, motion: bool = False, custom: bool = False,
                             features=None, flags: tuple[str, ...] = ()) -> ctypes.CDLL:
    """The host build of the path tracer's generated program (the registered families and types by default).

    ``oa_host_launch(params, triangle counts, mesh count, threads, variant)`` runs the raygen of ``variant`` (an
    ``OUTPUT_*`` mask among ``variants``); it returns -1 for a scene with spheres or curves unless the program was
    built for them (``shapes``: the program a scene with shapes compiles, ``OA_SHAPES``), -2 for a scene with
    moving meshes unless built with ``motion`` (``OA_MOTION``), -3 for custom primitives unless built with
    ``custom`` (``OA_CUSTOM``, with the registered custom primitive types). ``features`` specializes the program
    (``optixasync.render._features.ProgramFeatures``; None: the generic one). ``flags`` go to the compiler
    (``-DOA_HOST_NO_BVH``: every ray tests every triangle).
    """
    from optixasync.render._source import pathtracer_source

    build = Path(build)
    build.mkdir(parents=True, exist_ok=True)
    source = pathtracer_source(variants, families, types, host=True, shapes=shapes, motion=motion,
                               custom=custom, features=features)
    (build / "program.cu").write_text(source.text)
    lib = build_host_library("pathtracer_host.cpp", build, '-DOA_PROGRAM_SOURCE="program.cu"', *flags,
                             *(f"-I{d}" for d in source.include_dirs), f"-I{build}")
    return declare(lib)


class HostTracer(_PackageTracer):
    """The package's host tracer with the tests' thread count, and a still that checks for dropped samples."""

    def __init__(self, lib, scene, options: RenderOptions, threads: int = THREADS) -> None:
        super().__init__(lib, scene, options, threads)

    def render(self, spp: int, per_launch: int | None = None, variant: int = IMAGE) -> np.ndarray:
        per_launch = per_launch or spp
        for offset in range(0, spp, per_launch):
            self.launch(offset, min(per_launch, spp - offset), variant)
        assert (self.accum[..., 3] == 0).all()  # no NaN/Inf sample
        return self.accum[..., :3] / np.float32(spp)


def host_render(lib, scene, spp, **options) -> np.ndarray:
    """The accumulated radiance (H, W, 3) of ``spp`` samples of ``scene`` by the host kernel."""
    return HostTracer(lib, scene, RenderOptions(spp=spp, **options)).render(spp)
