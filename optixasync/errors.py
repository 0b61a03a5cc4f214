"""Exception types of optixasync.

One exception class per library the package talks to, each carrying the
numeric status, its symbolic name and any log text the library returned.
All of them pickle, so they survive ``concurrent.futures`` process pools.
"""

from __future__ import annotations

__all__ = ["OptixAsyncError", "OptixError", "CudaError", "NvrtcError", "DriverNotFoundError"]


class OptixAsyncError(RuntimeError):
    """Base class of every error raised by optixasync."""


class DriverNotFoundError(OptixAsyncError):
    """The NVIDIA driver (``libcuda`` / ``libnvoptix``) could not be loaded."""


class _StatusError(OptixAsyncError):
    def __init__(self, status: int, name: str, explanation: str, log: str = "") -> None:
        self.status = int(status)
        self.name = name
        self.explanation = explanation
        self.log = log
        message = f"{name}: {explanation}"
        if log:
            message += f"\n--- log ---\n{log.rstrip()}"
        super().__init__(message)

    def __reduce__(self):  # keep the structured fields through pickling
        return (type(self), (self.status, self.name, self.explanation, self.log))


class OptixError(_StatusError):
    """An OptiX call returned an error status.

    Attributes
    ----------
    status : int
        The ``OptixResult`` code (for example 7001).
    name : str
        The symbolic name (for example ``OPTIX_ERROR_INVALID_VALUE``).
    explanation : str
        OptiX's human-readable message, plus what optixasync was doing.
    log : str
        The log text OptiX wrote for this call (compile and link errors).
    """


class CudaError(_StatusError):
    """A CUDA driver call returned an error status."""


class NvrtcError(_StatusError):
    """NVRTC failed to compile a kernel; ``log`` holds the compiler output."""
