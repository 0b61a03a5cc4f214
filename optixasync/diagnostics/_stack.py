"""Python stacks of CUDA calls: capture (cheap, inside a callback) and attribution (later).

A CUPTI callback runs in the thread that made the CUDA call, while that
thread is inside the call, so the Python stack at that moment leads to the
line that caused it. :func:`capture_stack` copies it as plain tuples (no
frame objects kept, no source read); :class:`FrameFilter` later walks it
outward past library frames to the user's line.

Blocking calls
--------------
None: pure logic apart from locating the library directories; no CUDA call.
"""

from __future__ import annotations

import importlib.util
import os
import site
import sysconfig
from collections.abc import Iterable, Sequence
from types import FrameType

from ._records import StackFrame

__all__ = ["DEFAULT_SKIP_PACKAGES", "OPTIX_QUEUE", "FrameFilter", "capture_stack", "designed_wait", "library_dirs"]

#: Packages whose frames are never "the user's line".
DEFAULT_SKIP_PACKAGES = ("optixasync", "cupy", "cupy_backends", "cupyx", "cupti", "cuda", "numpy", "nvtx", "fastrlock")

_SCHEDULER_PACKAGE = "optixasync/scheduler/"
#: Functions of the scheduler package whose waits are by design, outermost first in priority.
_DESIGNED = {
    "begin_frame": "slot fence",
    "_loop": "completion thread",
    "drain": "drain",
    "result": "frame result",
    "close": "scheduler close",
}
#: The designed wait of an OptiX context's launch queue (``optix_queue_limit``): a launch waited on the host for the
#: oldest queued launch of its context, so that ``optixLaunch`` would not wait inside for OptiX's ring.
OPTIX_QUEUE = "optix queue"
_QUEUE_FILE = "optixasync/cuda/_launch_queue.py"
_QUEUE_WAIT = "make_room"
#: The name of the scheduler's completion thread.
COMPLETION_THREAD = "optixasync-completion"


def capture_stack(frame: FrameType | None, limit: int = 64) -> tuple[StackFrame, ...]:
    """``(file, line, function)`` of ``frame`` and its callers, innermost first, at most ``limit``."""
    out = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        out.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return tuple(out)


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path)).rstrip(os.sep) + os.sep


def library_dirs(packages: Iterable[str] = DEFAULT_SKIP_PACKAGES) -> list[str]:
    """Directories of the installed ``packages`` (found without importing them)."""
    dirs = []
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        locations = list(spec.submodule_search_locations or [])
        if not locations and spec.origin:
            locations = [os.path.dirname(spec.origin)]
        dirs.extend(_norm(location) for location in locations)
    return dirs


def _stdlib_dirs() -> tuple[list[str], list[str]]:
    paths = sysconfig.get_paths()
    stdlib = {_norm(paths[key]) for key in ("stdlib", "platstdlib") if key in paths}
    sites = {_norm(paths[key]) for key in ("purelib", "platlib") if key in paths}
    try:
        sites.update(_norm(p) for p in site.getsitepackages())
    except AttributeError:  # some virtualenv versions lack it
        pass
    user_site = getattr(site, "USER_SITE", None)
    if user_site:
        sites.add(_norm(user_site))
    return sorted(stdlib), sorted(sites)


class FrameFilter:
    """Decides which frames are library code and which is the user's line.

    Parameters
    ----------
    skip_dirs : sequence of str, optional
        Directories whose files are library code (default: the installed
        optixasync, CuPy, CUPTI, CUDA bindings, NumPy and nvtx packages).
    extra_skip : sequence of str
        More directories or files to treat as library code.
    skip_stdlib : bool
        Treat the standard library (not its site-packages) as library code.
    """

    def __init__(self, skip_dirs: Sequence[str] | None = None, extra_skip: Sequence[str] = (),
                 skip_stdlib: bool = True) -> None:
        dirs = library_dirs() if skip_dirs is None else [_norm(d) for d in skip_dirs]
        self._dirs = tuple(dirs)
        self._files = frozenset(os.path.normcase(os.path.realpath(p)) for p in extra_skip if not os.path.isdir(p))
        self._dirs += tuple(_norm(p) for p in extra_skip if os.path.isdir(p))
        stdlib, sites = _stdlib_dirs() if skip_stdlib else ([], [])
        self._stdlib, self._sites = tuple(stdlib), tuple(sites)
        self._cache: dict[str, bool] = {}

    def is_library(self, filename: str) -> bool:
        """Whether ``filename`` belongs to a skipped package, the standard library or is synthetic (``<frozen ...>``)."""
        cached = self._cache.get(filename)
        if cached is not None:
            return cached
        if filename.startswith("<"):
            result = filename.startswith(("<frozen", "<string>")) or filename == "<__array_function__ internals>"
        else:
            path = os.path.normcase(os.path.realpath(filename))
            result = (
                path in self._files
                or path.startswith(self._dirs)
                or (bool(self._stdlib) and path.startswith(self._stdlib) and not path.startswith(self._sites))
            )
        self._cache[filename] = result
        return result

    def user_frame(self, stack: Sequence[StackFrame]) -> StackFrame | None:
        """The innermost frame of ``stack`` (innermost first) that is not library code."""
        for frame in stack:
            if not self.is_library(frame[0]):
                return frame
        return None


def _is_scheduler_file(filename: str) -> bool:
    path = filename.replace("\\", "/")
    return _SCHEDULER_PACKAGE in path and path.endswith(".py")


def designed_wait(stack: Sequence[StackFrame], thread: str = "") -> str | None:
    """Which designed wait of the frame scheduler a synchronization is, or None.

    A wait inside an OptiX context's launch queue (``LaunchQueue.make_room``) is
    :data:`OPTIX_QUEUE`, whoever launched. Otherwise the outermost scheduler
    function of the stack decides: ``begin_frame`` (the slot fence),
    ``Completion._loop`` (the completion thread), ``drain``, ``result`` or
    ``close``. A synchronization in the completion thread is designed whatever
    its stack.
    """
    kind = None
    for filename, _line, function in stack:  # innermost first: the last match is the outermost
        if function == _QUEUE_WAIT and filename.replace("\\", "/").endswith(_QUEUE_FILE):
            return OPTIX_QUEUE  # whoever launched (a frame, a direct launch): the queue's own wait
        if function in _DESIGNED and _is_scheduler_file(filename):
            kind = _DESIGNED[function]
    if kind is None and thread == COMPLETION_THREAD:
        kind = _DESIGNED["_loop"]
    return kind
