"""What runs on a worker: a :class:`Work` made once per worker by a :class:`WorkFactory`, kept across jobs.

A backend (threads over local GPUs, Dask workers) deals :class:`~optixasync.multi.Task` objects to its
workers; each worker asks the factory for its :class:`Work` once (the GPU context, compiled pipeline and
acceleration structures of the path tracer live there) and feeds it tasks. ``Work.process`` may hold
several tasks in flight (the path tracer pipelines frames) and yields each ``(task, result)`` when done;
a result may be a :class:`concurrent.futures.Future` (a file still being written), which the caller
resolves before delivering it.

Blocking calls
--------------
None here; a :class:`FunctionWork` runs the user's function, which may block.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import Any, Protocol

from ..errors import WorkerError
from ._plan import Task

_log = logging.getLogger("optixasync.multi")

__all__ = ["FunctionFactory", "FunctionWork", "Work", "WorkFactory", "describe_device", "resolve", "then", "worker_error", "WorkCache"]


class Work(Protocol):
    """A worker's state for one factory: processes tasks, keeps what it built between jobs."""

    def process(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, Any]]:
        """Process ``tasks`` (pulled one by one, as the worker has room) and yield ``(task, result)`` as each ends."""
        ...

    def close(self) -> None:
        """Release the worker's resources (its GPU context)."""
        ...


class WorkFactory:
    """Makes a worker's :class:`Work` for a device; subclasses implement :meth:`create`.

    A factory is what travels to workers (pickled once per Dask worker), so it holds the job's inputs
    (a scene, options) and nothing of a device. ``key`` identifies it: a worker keeps one Work per key.
    """

    def __init__(self) -> None:
        self.key = uuid.uuid4().hex

    def create(self, device: int | None) -> Work:
        """The Work of a worker on CUDA device ``device`` (None: the worker's default device)."""
        raise NotImplementedError


class FunctionWork:
    """A :class:`Work` calling ``function(state, payload)`` for each task, in order, one at a time.

    ``state`` is ``setup(device)`` (made once per worker; ``device`` when no setup is given).
    """

    def __init__(self, function: Callable[[Any, Any], Any], state: Any, teardown: Callable[[Any], None] | None) -> None:
        self._function = function
        self._state = state
        self._teardown = teardown

    def process(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, Any]]:
        for task in tasks:
            yield task, self._function(self._state, task.payload)

    def close(self) -> None:
        if self._teardown is not None:
            self._teardown(self._state)


class FunctionFactory(WorkFactory):
    """A :class:`WorkFactory` of :class:`FunctionWork`: the way to run a plain function per task on the workers.

    Parameters
    ----------
    function : callable
        ``function(state, payload) -> result``; module-level (picklable) for Dask.
    setup : callable, optional
        ``setup(device) -> state``, run once per worker (where a scene would be uploaded).
    teardown : callable, optional
        ``teardown(state)``, when the worker lets the state go.
    """

    def __init__(self, function: Callable[[Any, Any], Any], setup: Callable[[int | None], Any] | None = None,
                 teardown: Callable[[Any], None] | None = None) -> None:
        super().__init__()
        if not callable(function):
            raise TypeError(f"function must be callable, got {type(function).__name__}")
        self.function, self.setup, self.teardown = function, setup, teardown

    def create(self, device: int | None) -> FunctionWork:
        state = self.setup(device) if self.setup is not None else device
        return FunctionWork(self.function, state, self.teardown)


def describe_device(device: int | None) -> str:
    """``GPU k``, or ``GPU k of CUDA_VISIBLE_DEVICES=...`` when that variable renumbers the devices."""
    ordinal = 0 if device is None else int(device)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f"GPU {ordinal} of CUDA_VISIBLE_DEVICES={visible}" if visible else f"GPU {ordinal}"


def worker_error(exc: BaseException, device: int | None, worker: str = "") -> WorkerError:
    """``exc`` of a worker on ``device`` as a :class:`~optixasync.errors.WorkerError` (``exc`` as its cause).

    ``worker`` names the worker beside its device (a Dask worker's address).
    """
    if isinstance(exc, WorkerError):
        return exc
    text = str(exc).splitlines()[0] if str(exc) else ""
    where = describe_device(device) + (f", {worker}" if worker else "")
    error = WorkerError(where, socket.gethostname(), f"{type(exc).__name__}: {text}".rstrip(": "))
    error.__cause__ = exc
    return error


def resolve(result: Any) -> Any:
    """A result as delivered: a future's value (waiting for it: a file being written), anything else as is."""
    return result.result() if isinstance(result, Future) else result


def then(future: Future, function: Callable[[Any], Any]) -> Future:
    """A future of ``function(future.result())``, or of ``future``'s exception."""
    out: Future = Future()

    def chain(done: Future) -> None:
        try:
            out.set_result(function(done.result()))
        except BaseException as exc:
            out.set_exception(exc)

    future.add_done_callback(chain)
    return out


class WorkCache:
    """The :class:`Work` objects of one worker, by factory key; one task stream at a time per Work."""

    def __init__(self) -> None:
        self._works: dict[str, tuple[Work, threading.Lock]] = {}
        self._lock = threading.Lock()

    def get(self, factory: WorkFactory, device: int | None) -> tuple[Work, threading.Lock]:
        """The Work of ``factory`` here, created on ``device`` the first time (the caller holds its lock to use it)."""
        with self._lock:
            entry = self._works.get(factory.key)
            if entry is None:
                entry = (factory.create(device), threading.Lock())
                self._works[factory.key] = entry
            return entry

    def discard(self, key: str) -> None:
        """Close and forget the Work of ``key`` (after its failure, or when the job's owner is done)."""
        with self._lock:
            entry = self._works.pop(key, None)
        if entry is not None:
            with entry[1]:
                try:
                    entry[0].close()
                except Exception as exc:  # a Work that failed may fail again closing; it is gone either way
                    _log.warning("closing a worker's state also failed: %s", exc)

    def clear(self) -> None:
        for key in list(self._works):
            self.discard(key)

    def __len__(self) -> int:
        return len(self._works)
