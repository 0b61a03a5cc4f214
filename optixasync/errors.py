"""Exception types of optixasync, all under :class:`OptixAsyncError`.

One class per library the package talks to (OptiX, CUDA, NVRTC), each
carrying the numeric status, its symbolic name and any log text the library
returned, plus the package's own conditions (a missing driver, a missing
optional package, an aborted frame, a full result queue). All of them
pickle, so they survive ``concurrent.futures`` process pools.

The command line, the examples and the benchmarks turn exceptions into exit
statuses by one rule, :func:`exit_status`: 0 done, 1 this machine cannot do
it (no driver, no GPU, a missing extra, a GPU failure), 2 bad input, 130
interrupted.
"""

from __future__ import annotations

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "exit_status",
    "one_line",
    "OptixAsyncError",
    "OptixError",
    "CudaError",
    "NvrtcError",
    "DriverNotFoundError",
    "MissingExtraError",
    "FrameAbortedError",
    "ResultsOverflowError",
    "WorkerError",
]


class OptixAsyncError(RuntimeError):
    """Base class of every error raised by optixasync."""


class DriverNotFoundError(OptixAsyncError):
    """The NVIDIA driver (``libcuda`` / ``libnvoptix``) could not be loaded."""


class MissingExtraError(OptixAsyncError, ImportError):
    """An optional package of optixasync is not installed.

    Attributes
    ----------
    feature : str
        What needed it (for example ``syncwatch``).
    package : str
        The distribution to install (for example ``cupti-python``).
    extra : str
        The optixasync extra that brings it (for example ``diagnostics``).
    """

    def __init__(self, feature: str, package: str, extra: str = "diagnostics") -> None:
        self.feature = feature
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the '{package}' package, which is not installed: "
            f"pip install 'optixasync[{extra}]' (or pip install {package})"
        )

    def __reduce__(self):
        return (type(self), (self.feature, self.package, self.extra))


class FrameAbortedError(OptixAsyncError):
    """The frame raised while it was being recorded; its GPU work (if any) was fenced and discarded."""


class ResultsOverflowError(OptixAsyncError):
    """More completed frames wait for :meth:`FrameScheduler.poll` than the scheduler's bound allows.

    Raised by ``begin_frame`` when :class:`SchedulerOptions` says ``on_full="raise"``: poll the
    results, consume them through the frames' handles, or create the scheduler with
    ``keep_results=False``.
    """


class WorkerError(OptixAsyncError):
    """A render worker failed, so the job it belonged to failed: the worker's device and host are named.

    Raised by :mod:`optixasync.multi` in the caller for an error on a worker (a thread or a Dask
    worker process); the worker's own exception is its ``__cause__`` where it could travel, and its
    text is in the message in any case.

    Attributes
    ----------
    device : str
        The worker's device, for example ``GPU 1`` (or ``GPU 0 of CUDA_VISIBLE_DEVICES=1``).
    host : str
        The host name of the worker's machine.
    error : str
        The worker's exception as ``Type: message``.
    """

    def __init__(self, device: str, host: str, error: str) -> None:
        self.device = device
        self.host = host
        self.error = error
        super().__init__(f"the worker on {device} of {host} failed: {error}")

    def __reduce__(self):
        return (type(self), (self.device, self.host, self.error))


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
    """A CUDA call returned an error status.

    Attributes
    ----------
    status : int
        The ``cudaError_t`` code (for example 2).
    name : str
        Its symbolic name (for example ``cudaErrorMemoryAllocation``).
    explanation : str
        What optixasync was doing, and CUDA's message.
    """


class NvrtcError(_StatusError):
    """NVRTC failed to compile a kernel; ``log`` holds the compiler output."""


#: Exit status: done.
EXIT_OK = 0
#: Exit status: this machine cannot do it (no driver, no GPU, a missing extra, a CUDA, OptiX or NVRTC failure).
EXIT_UNAVAILABLE = 1
#: Exit status: bad input (arguments, files, scenes).
EXIT_BAD_INPUT = 2
#: Exit status after Ctrl-C (or SIGTERM where a command turns it into one).
EXIT_INTERRUPTED = 130


def exit_status(exc: BaseException) -> int | None:
    """The exit status ``exc`` stands for on the command line, or None for a bug (its traceback is kept).

    * :data:`EXIT_INTERRUPTED`: ``KeyboardInterrupt``;
    * :data:`EXIT_UNAVAILABLE`: :class:`MissingExtraError`, :class:`DriverNotFoundError`, a
      ``ModuleNotFoundError`` of a package outside optixasync (an optional package that is not installed),
      and the other :class:`OptixAsyncError` (CUDA, OptiX and NVRTC failures);
    * :data:`EXIT_BAD_INPUT`: ``ValueError``, ``TypeError`` and ``OSError`` (a file that cannot be read or
      written), the library's checks of what it was asked, raised before any GPU work.
    """
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, (MissingExtraError, DriverNotFoundError)):
        return EXIT_UNAVAILABLE
    if isinstance(exc, ModuleNotFoundError):
        return EXIT_UNAVAILABLE if (exc.name or "optixasync").split(".")[0] != "optixasync" else None
    if isinstance(exc, (ValueError, TypeError, OSError)):
        return EXIT_BAD_INPUT
    if isinstance(exc, OptixAsyncError):
        return EXIT_UNAVAILABLE
    return None


def one_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type's name for an empty one); GPU failures keep their type."""
    if isinstance(exc, ModuleNotFoundError) and exc.name and not isinstance(exc, MissingExtraError):
        package = exc.name.split(".")[0]
        return f"needs the '{package}' package, which is not installed: pip install {package}"
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    if isinstance(exc, _StatusError):
        return f"{type(exc).__name__}: {text}"
    return text
