"""The in-process backend: one thread per GPU, each with its own context, kept across jobs.

Why threads and not processes: a worker's host work per frame is small next to its GPU work (the
launch, the copies and the fence waits release the GIL), a thread shares the caller's scene instead
of receiving a pickled copy, and its results need no transfer. Processes (one per GPU, surviving each
other's death) are what the Dask backend gives.

Tasks are dealt from one shared queue: a worker takes the next task when its Work pulls one (the path
tracer does when it has a free frame slot), so a faster GPU takes more.

Blocking calls
--------------
:meth:`LocalGPUs.run` waits for the workers' results (by design: it delivers them); leaving it early,
or a failure, waits for the workers to finish the tasks they hold. :meth:`LocalGPUs.release` and
:meth:`LocalGPUs.close` wait for the workers to close their Work (their contexts synchronize).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ._plan import Task, parse_gpus
from ._work import WorkCache, WorkFactory, worker_error

__all__ = ["LocalGPUs"]

_STOP = object()


class _Worker:
    """One thread bound to one device, running one job at a time."""

    def __init__(self, device: int, number: int) -> None:
        self.device = device
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.works = WorkCache()
        self.tasks_done = 0
        self.thread = threading.Thread(target=self._loop, name=f"optixasync-gpu{device}-{number}", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        self._use_device()
        while True:
            job = self.jobs.get()
            if job is _STOP:
                self.works.clear()
                return
            job(self)

    def _use_device(self) -> None:
        try:
            from ..cuda import use_device

            use_device(self.device)  # CuPy's current device is per thread
        except Exception:  # no CUDA here (CPU work, or the error surfaces when the Work is made)
            pass


class _Job:
    """One :meth:`LocalGPUs.run`: the shared task queue, the results queue, the cancel flag."""

    def __init__(self, factory: WorkFactory, tasks: Sequence[Task]) -> None:
        self.factory = factory
        self.pending: queue.SimpleQueue = queue.SimpleQueue()
        for task in tasks:
            self.pending.put(task)
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        self.cancelled = threading.Event()

    def _take(self) -> Iterator[Task]:
        while not self.cancelled.is_set():
            try:
                yield self.pending.get_nowait()
            except queue.Empty:
                return

    def __call__(self, worker: _Worker) -> None:
        try:
            work, lock = worker.works.get(self.factory, worker.device)
            with lock:
                for task, result in work.process(self._take()):
                    worker.tasks_done += 1
                    self.results.put(("result", task, result))
        except BaseException as exc:
            self.cancelled.set()  # the others finish what they hold and stop
            worker.works.discard(self.factory.key)  # a failed GPU context is not reused
            self.results.put(("error", worker_error(exc, worker.device), None))
        finally:
            self.results.put(("done", None, None))


class LocalGPUs:
    """The GPUs of this machine, one worker thread each, for :class:`~optixasync.multi.Farm`.

    Parameters
    ----------
    gpus : "all", str, int or sequence of int
        ``"all"``, ``"0,1"``, one device, or a list (which may name a device twice: two workers on it).

    Raises
    ------
    ValueError
        On an unknown device or a malformed list (before any thread starts).
    DriverNotFoundError
        When no CUDA device is visible (no driver, or a driver without a GPU): this machine cannot, whatever
        ``gpus`` says.
    """

    def __init__(self, gpus: Any = "all") -> None:
        from .._driver import device_count
        from ..errors import DriverNotFoundError

        available = device_count()
        if available == 0:
            raise DriverNotFoundError("no CUDA device is visible (no NVIDIA driver, or none of its GPUs is visible to "
                                      "this process): several GPUs need at least one")
        self._start(parse_gpus(gpus, available))

    @classmethod
    def _unchecked(cls, devices: Sequence[int]) -> LocalGPUs:
        """Workers on ``devices`` without asking the driver how many there are (CPU work in tests)."""
        backend = cls.__new__(cls)
        backend._start(tuple(devices))
        return backend

    def _start(self, devices: tuple[int, ...]) -> None:
        self.devices = devices
        self._workers = [_Worker(device, k) for k, device in enumerate(devices)]
        self._lock = threading.Lock()  # one job at a time

    @property
    def workers(self) -> int:
        return len(self._workers)

    @property
    def tasks_done(self) -> list[int]:
        """Tasks each worker has finished since it started (in the order of :attr:`devices`)."""
        return [w.tasks_done for w in self._workers]

    def run(self, factory: WorkFactory, tasks: Sequence[Task], batch: int = 1) -> Iterator[tuple[Task, Any]]:
        """Deal ``tasks`` to the worker threads; yield ``(task, result)`` as they finish (see ``Backend.run``).

        ``batch`` is ignored: a thread takes tasks one at a time as its Work has room.
        """
        self._check_open()
        with self._lock:
            job = _Job(factory, tasks)
            for worker in self._workers:
                worker.jobs.put(job)
            running, error = len(self._workers), None
            try:
                while running:
                    kind, task, result = job.results.get()
                    if kind == "done":
                        running -= 1
                    elif kind == "error":
                        error = error or task
                    elif error is None:
                        yield task, result
            finally:
                job.cancelled.set()
                while running:  # leaving early or failing: the workers finish what they hold, then stop
                    if job.results.get()[0] == "done":
                        running -= 1
            if error is not None:
                raise error

    def release(self, factory: WorkFactory) -> None:
        """Close each worker's Work of ``factory`` in its own thread, and wait for that."""
        if not self._workers:
            return
        done = threading.Barrier(len(self._workers) + 1)

        def release(worker: _Worker) -> None:
            try:
                worker.works.discard(factory.key)
            finally:
                done.wait()

        for worker in self._workers:
            worker.jobs.put(release)
        done.wait()

    def close(self) -> None:
        """Close every Work and stop the threads (waits for them). Idempotent."""
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.jobs.put(_STOP)
        for worker in workers:
            worker.thread.join()

    def _check_open(self) -> None:
        if not self._workers:
            raise RuntimeError("this LocalGPUs backend is closed")

    def __enter__(self) -> LocalGPUs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<optixasync.multi.LocalGPUs devices={list(self.devices)}>"
