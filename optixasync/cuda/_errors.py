"""CUDA failures as :class:`~optixasync.errors.CudaError`, at the boundary where optixasync calls CUDA.

CuPy raises its own ``CUDARuntimeError`` / ``CUDADriverError``; optixasync
code that calls CUDA through CuPy translates them here, so a user catches one
exception family (``OptixAsyncError``) and reads the status name, what the
library was doing and CUDA's message. Calls on a frame's path use
``try: ... except Exception as exc: reraise(exc, what)`` (free when nothing
fails); set-up code may use the ``cuda_errors`` context manager.

Blocking calls
--------------
None.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NoReturn

from ..errors import CudaError

__all__ = ["as_cuda_error", "cuda_errors", "is_cuda_exception", "reraise"]


def is_cuda_exception(exc: BaseException) -> bool:
    """Whether ``exc`` is one of CuPy's CUDA runtime or driver errors."""
    return type(exc).__name__ in ("CUDARuntimeError", "CUDADriverError") and hasattr(exc, "status")


def as_cuda_error(exc: BaseException, what: str) -> CudaError:
    """A :class:`CudaError` for one of CuPy's CUDA errors, naming ``what`` optixasync was doing."""
    text = str(exc)
    name, _, message = text.partition(": ")
    if not name.startswith(("cuda", "CUDA_")):
        name, message = "cudaError", text
    return CudaError(int(getattr(exc, "status", -1)), name, f"{what} failed ({message})")


def reraise(exc: BaseException, what: str) -> NoReturn:
    """Raise ``exc`` again, as a :class:`CudaError` naming ``what`` if it is one of CuPy's CUDA errors."""
    if is_cuda_exception(exc):
        raise as_cuda_error(exc, what) from exc
    raise exc


@contextlib.contextmanager
def cuda_errors(what: str) -> Iterator[None]:
    """Run the block, turning CuPy's CUDA errors into :class:`CudaError` naming ``what``."""
    try:
        yield
    except Exception as exc:
        reraise(exc, what)
