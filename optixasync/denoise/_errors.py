"""Exceptions of the denoiser, under :class:`optixasync.errors.OptixAsyncError`.

A missing Open Image Denoise is the package-wide
:class:`~optixasync.errors.MissingExtraError`; OIDN's own failures are
:class:`OidnError`. Both pickle with their fields.

Blocking calls
--------------
None.
"""

from __future__ import annotations

from ..errors import MissingExtraError, OptixAsyncError

__all__ = ["MissingExtraError", "DenoiseError", "OidnError", "OIDN_ERROR_NAMES", "missing_pyoidn"]

#: ``OIDNError`` codes of ``oidn.h`` (OIDN 2.x) and their names.
OIDN_ERROR_NAMES: dict[int, str] = {
    0: "OIDN_ERROR_NONE",
    1: "OIDN_ERROR_UNKNOWN",
    2: "OIDN_ERROR_INVALID_ARGUMENT",
    3: "OIDN_ERROR_INVALID_OPERATION",
    4: "OIDN_ERROR_OUT_OF_MEMORY",
    5: "OIDN_ERROR_UNSUPPORTED_HARDWARE",
    6: "OIDN_ERROR_CANCELLED",
}


def missing_pyoidn() -> MissingExtraError:
    """The error raised when Intel Open Image Denoise cannot be loaded."""
    return MissingExtraError("the denoiser", "pyoidn", "denoise")


class DenoiseError(OptixAsyncError):
    """Base class of the errors of :mod:`optixasync.denoise` (other than bad arguments)."""


class DeviceUnsupportedError(DenoiseError):
    """This OIDN build or this machine has no OIDN device of the kind asked for (CPU or CUDA).

    Raised before any denoising work; ``optixasync.denoise.available_denoisers()`` says which kinds work here.
    """


class OidnError(DenoiseError):
    """An Intel Open Image Denoise call reported an error.

    Parameters
    ----------
    code : int
        The ``OIDNError`` code (for example 2).
    message : str
        OIDN's message for it.
    operation : str
        What optixasync was doing (for example ``"committing the filter"``).

    Attributes
    ----------
    code : int
        As given.
    name : str
        The symbolic name of ``code`` (for example ``OIDN_ERROR_INVALID_ARGUMENT``).
    message : str
        As given.
    operation : str
        As given.
    """

    def __init__(self, code: int, message: str, operation: str) -> None:
        self.code = int(code)
        self.name = OIDN_ERROR_NAMES.get(self.code, f"OIDN_ERROR_{self.code}")
        self.message = message
        self.operation = operation
        super().__init__(f"{self.name} while {operation}: {message or 'no message'}")

    def __reduce__(self):
        return (type(self), (self.code, self.message, self.operation))
