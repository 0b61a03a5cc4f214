"""Exception types of optixasync, all under :class:`OptixAsyncError`.

One class per library the package talks to (OptiX, CUDA, NVRTC), each
carrying the numeric status, its symbolic name and any log text the library
returned, plus the package's own conditions (a missing driver, a missing
optional package, no C++ compiler for the CPU device, an aborted frame, a full result queue, a lost worker or
scheduler, an asset that breaks a loading limit or names a file outside its
folder). All of them pickle, so they survive ``concurrent.futures`` process
pools and Dask.

The command line, the examples and the benchmarks turn exceptions into exit
statuses by one rule, :func:`exit_status`: 0 done, 1 this machine cannot do
it (no driver, no GPU, a missing extra, no C++ compiler, a GPU failure), 2 bad input, 130
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
    "CompilerNotFoundError",
    "HostBuildError",
    "MissingExtraError",
    "FrameAbortedError",
    "GraphCaptureError",
    "ResultsOverflowError",
    "StaleGraphError",
    "WorkerError",
    "SchedulerLostError",
    "LoadLimitError",
    "AssetPathError",
    "ShapeError",
]


class OptixAsyncError(RuntimeError):
    """Base class of every error raised by optixasync."""


class DriverNotFoundError(OptixAsyncError):
    """The NVIDIA driver (``libcuda`` / ``libnvoptix``) could not be loaded."""


class CompilerNotFoundError(OptixAsyncError):
    """The CPU device needs a C++17 compiler (``$CXX``, ``c++``, ``g++`` or ``clang++``) and none was found."""


class HostBuildError(OptixAsyncError):
    """The host C++ compiler failed to build the kernel for the CPU device; ``log`` holds its messages."""

    def __init__(self, message: str, log: str = "") -> None:
        self.log = log
        super().__init__(message + (f"\n--- log ---\n{log.rstrip()}" if log else ""))

    def __reduce__(self):
        return (type(self), (str(self).split("\n--- log ---\n")[0], self.log))


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


class GraphCaptureError(OptixAsyncError):
    """Work that a CUDA graph cannot hold was enqueued while the graph was being captured.

    Raised inside a capture (:class:`optixasync.cuda.StreamGraph`) by the call that cannot be captured:
    a device allocation, an upload of host data, a wait for other GPU work, a deferred release,
    or a capture the driver invalidated. The frame scheduler catches it and runs the frame eagerly,
    counting ``reason``.

    Attributes
    ----------
    reason : str
        What could not be captured, and why.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot capture this work into a CUDA graph: {reason}")

    def __reduce__(self):
        return (type(self), (self.reason,))


class StaleGraphError(OptixAsyncError):
    """A recorded CUDA graph no longer matches what it captured (a structure was rebuilt, a buffer replaced).

    Raised by :meth:`optixasync.cuda.StreamGraph.launch`; record the work again.

    Attributes
    ----------
    reason : str
        What changed since the capture.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the recorded graph is out of date: {reason}; record it again")

    def __reduce__(self):
        return (type(self), (self.reason,))


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


class SchedulerLostError(WorkerError):
    """The Dask scheduler went away during a job: the job fails, naming the scheduler and what had finished.

    A :class:`WorkerError` (code catching those catches this too), raised by
    :class:`~optixasync.multi.DaskGPUs` when its connection to the scheduler is lost.

    Attributes
    ----------
    scheduler : str
        The scheduler's address.
    finished : tuple of int
        What had finished before the scheduler was lost: the frame numbers of a frame job (their
        files are complete and stay), else the positions of the job's tasks.
    error : str
        What Dask reported, as ``Type: message``.
    """

    def __init__(self, scheduler: str, finished: tuple[int, ...], error: str) -> None:
        self.scheduler = scheduler
        self.finished = tuple(sorted({int(k) for k in finished}))
        self.device = "the Dask scheduler"
        self.host = scheduler
        self.error = error
        OptixAsyncError.__init__(self, f"lost the Dask scheduler {scheduler}: {error}; {_runs(self.finished)}")

    def __reduce__(self):
        return (type(self), (self.scheduler, self.finished, self.error))


def _runs(finished: tuple[int, ...]) -> str:
    """``nothing had finished`` or ``finished before: 0-3, 5`` (runs of consecutive numbers joined)."""
    if not finished:
        return "nothing had finished"
    runs: list[list[int]] = []
    for k in finished:
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    return "finished before: " + ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


class LoadLimitError(OptixAsyncError, ValueError):
    """A file asks for more than a :class:`~optixasync.scene.LoadLimits` limit allows; nothing was allocated for it.

    A ``ValueError``, raised by the scene loaders in bounded time and memory, before the memory the
    file asks for is allocated or the work it implies is done.

    Attributes
    ----------
    file : str
        The file that was being read.
    element : str
        What in it breaks the limit (for example ``accessor 3 (POSITION of mesh 0 primitive 0)``).
    limit : str
        The :class:`~optixasync.scene.LoadLimits` field (for example ``max_accessor_count``).
    maximum : int
        The limit's value.
    found : int or None
        What the file asks for, or None where only "more than the limit" is known.
    """

    def __init__(self, file: str, element: str, limit: str, maximum: int, found: int | None = None) -> None:
        self.file = str(file)
        self.element = element
        self.limit = limit
        self.maximum = int(maximum)
        self.found = None if found is None else int(found)
        asks = f"{self.found:,}" if self.found is not None else f"more than {self.maximum:,}"
        super().__init__(f"{self.file}: {element}: {asks} exceeds the limit LoadLimits.{limit} = {self.maximum:,} "
                         "(pass limits= to the loader to raise it)")

    def __reduce__(self):
        return (type(self), (self.file, self.element, self.limit, self.maximum, self.found))


class AssetPathError(OptixAsyncError, ValueError):
    """A file an asset names (a glTF ``uri``, an OBJ ``mtllib`` or ``map_Kd``) lies outside the folders it may read.

    A ``ValueError``: nothing outside is opened, and the message names the reference as the asset
    writes it, never where it leads or whether something is there.

    Attributes
    ----------
    file : str
        The asset (or material library) that names it.
    element : str
        Where (for example ``image 2`` or ``line 7``).
    reference : str
        The path or URI exactly as the asset writes it.
    reason : str
        Why it is refused (for example ``it leads outside the asset's folder``).
    """

    def __init__(self, file: str, element: str, reference: str, reason: str) -> None:
        self.file = str(file)
        self.element = element
        self.reference = reference
        self.reason = reason
        shown = reference if len(reference) <= 200 else reference[:200] + "..."
        super().__init__(f"{self.file}: {element}: {shown!r} is refused: {reason}")

    def __reduce__(self):
        return (type(self), (self.file, self.element, self.reference, self.reason))


class ShapeError(OptixAsyncError, ValueError):
    """Spheres, curves or custom primitives given to a scene are malformed; raised before any GPU work.

    A ``ValueError``: a NaN or negative radius, a curve kind the path tracer does not draw, a strand with fewer
    control points than one segment of its kind reads, a segment index past the control points, a material id
    past the materials, colours of the wrong shape. The message names the shape and what to change.
    """


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
    * :data:`EXIT_UNAVAILABLE`: :class:`MissingExtraError`, :class:`DriverNotFoundError`,
      :class:`CompilerNotFoundError`, a
      ``ModuleNotFoundError`` of a package outside optixasync (an optional package that is not installed),
      and the other :class:`OptixAsyncError` (CUDA, OptiX and NVRTC failures);
    * :data:`EXIT_BAD_INPUT`: ``ValueError``, ``TypeError`` and ``OSError`` (a file that cannot be read or
      written), the library's checks of what it was asked, raised before any GPU work.
    """
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, (MissingExtraError, DriverNotFoundError, CompilerNotFoundError)):
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
