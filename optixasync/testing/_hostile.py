"""Instruments for tests of hostile input: which files a load opens, a wall-clock bound, peak memory.

* :func:`record_opens` collects the path of every ``open`` audit event
  (:func:`sys.addaudithook`: ``open()``, ``io.open``, ``os.open``, numpy and
  Pillow file reads) while it is active; the hook is installed once per
  process and does nothing outside a recording. :func:`outside` keeps the
  paths that lie outside some folders, leaving out Python's own imports.
* :func:`time_limit` raises :class:`TimeLimitExceeded` in the main thread when
  a block runs past a bound (``SIGALRM``): a test that would hang on a defect
  fails instead. It is a safety bound, generous, never a measurement.
* :func:`peak_memory` measures the peak of Python's and numpy's allocations
  in a block (:mod:`tracemalloc`, which numpy reports its buffers to).

Blocking calls
--------------
None.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import tracemalloc
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["MemoryPeak", "TimeLimitExceeded", "outside", "peak_memory", "record_opens", "time_limit"]

_recordings: list[list[str]] = []
_lock = threading.Lock()
_installed = False
_IMPORTS = (".py", ".pyc", ".so", ".pth", ".pyd")


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _recordings:
        return
    path = args[0] if args else None
    if isinstance(path, (str, bytes, os.PathLike)):
        text = os.fsdecode(path)
        with _lock:
            for recording in _recordings:
                recording.append(text)


@contextlib.contextmanager
def record_opens() -> Iterator[list[str]]:
    """A list that receives the path of every file opened (any thread) until the block ends."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    recording: list[str] = []
    with _lock:
        _recordings.append(recording)
    try:
        yield recording
    finally:
        with _lock:
            _recordings.remove(recording)


def outside(paths: Iterable[str], folders: Iterable[str | Path]) -> list[str]:
    """The ``paths`` whose real path lies in none of ``folders``, Python's module imports left out."""
    roots = [os.path.realpath(f) for f in folders]
    found = []
    for path in paths:
        real = os.path.realpath(path)
        if any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
            continue
        if real.endswith(_IMPORTS):  # a lazy import of a module (Pillow's plugins, numpy's submodules)
            continue
        found.append(path)
    return found


class TimeLimitExceeded(Exception):
    """A block ran past the bound of :func:`time_limit`."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`TimeLimitExceeded` in the block when it runs longer than ``seconds`` (main thread only).

    Elsewhere (a worker thread, a platform without ``SIGALRM``) the block runs unbounded.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise TimeLimitExceeded(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class MemoryPeak:
    """The result of :func:`peak_memory`: ``bytes``, the peak of traced allocations in the block."""

    bytes: int = 0


@contextlib.contextmanager
def peak_memory() -> Iterator[MemoryPeak]:
    """Measure the peak traced allocation (Python objects and numpy buffers) of the block, in ``.bytes``."""
    result = MemoryPeak()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        yield result
    finally:
        result.bytes = max(0, tracemalloc.get_traced_memory()[1] - base)
        if started:
            tracemalloc.stop()
