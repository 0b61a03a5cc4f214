"""The CPU device's context: how many threads its launches use, and the C++ compiler that builds its kernel.

Blocking calls
--------------
Creating a context looks the compiler up on ``PATH`` (no subprocess). Nothing else here blocks.
"""

from __future__ import annotations

import os
from typing import Any

from ..validation import as_int
from ._build import find_compiler

__all__ = ["MAX_THREADS", "CpuContext", "default_threads"]

#: Most threads a CPU launch may use.
MAX_THREADS = 1024


def default_threads() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class CpuContext:
    """The CPU device: render pipelines created with it run the path tracer's kernel on this machine's CPU.

    ``RenderPipeline(CpuContext(), scene)`` renders through the host build of the same kernel headers the GPU
    compiles (``kernels/pathtracer/``), with ``threads`` threads per launch, each taking rows of the image in turn.
    Nothing falls back to it: a pipeline runs on the CPU only when it is given this context.

    Parameters
    ----------
    threads : int, optional
        Threads per launch (default: the CPUs this process may run on).

    Attributes
    ----------
    threads : int
    compiler : str
        The C++ compiler that builds the kernel (``$CXX``, ``c++``, ``g++`` or ``clang++``).

    Raises
    ------
    CompilerNotFoundError
        Without a C++ compiler (raised here, before any scene is read).
    TypeError, ValueError
        On a bad ``threads``.
    """

    def __init__(self, threads: int | None = None) -> None:
        self.threads = default_threads() if threads is None else as_int("threads", threads, 1, MAX_THREADS)
        self.compiler = find_compiler()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def require_open(self) -> None:
        """Raise RuntimeError if the context is closed."""
        if self._closed:
            raise RuntimeError("this CpuContext is closed")

    def close(self) -> None:
        """Mark the context closed (it holds no resources: pipelines own their buffers)."""
        self._closed = True

    def __enter__(self) -> CpuContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<optixasync.CpuContext {self.threads} threads, {os.path.basename(self.compiler)}>"
