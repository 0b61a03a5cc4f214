"""The CPU device: the path tracer's kernel built for this machine's CPU by its C++ compiler.

``RenderPipeline(CpuContext(threads=N), scene, options)`` renders ``scene`` through the host build of the same
kernel headers the GPU runs (``kernels/pathtracer/``): the same sampling, BSDFs, lights and accumulation, the
same pixels for the same seed as the host-build tests, with OptiX's traversal replaced by a bounding volume
hierarchy in double precision (``kernels/host/``). It needs a C++17 compiler (``$CXX``, ``c++``, ``g++`` or
``clang++``; :class:`~optixasync.errors.CompilerNotFoundError` without one) and no GPU, driver or CuPy. It is
chosen only by passing a :class:`CpuContext`: nothing falls back to it.

This layer holds the context and the build (:mod:`._build`); the pipeline that uses them is
:class:`optixasync.render.RenderPipeline` (its CPU side, ``optixasync.render._cpu_pipeline``).
"""

from __future__ import annotations

from ._build import find_compiler
from ._context import CpuContext

__all__ = ["CpuContext", "find_compiler"]
