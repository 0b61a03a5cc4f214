"""In-order, exactly-once delivery of a job's results, whatever order and however often workers finish tasks.

A backend yields ``(task, result)`` in the order workers finish; a task may even finish twice (a Dask
worker killed after its result left, the task run again elsewhere). :class:`InOrder` holds results
until every earlier position has arrived and drops repeats; :func:`run_in_order` drives a backend
through it.

Blocking calls
--------------
:func:`run_in_order` waits for the backend's results and for a result's file to be written (a future),
by design: it delivers finished work.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from ._plan import Task
from ._work import WorkFactory, resolve

__all__ = ["Backend", "InOrder", "run_in_order"]


class Backend(Protocol):
    """Where tasks run: :class:`~optixasync.multi.LocalGPUs` (threads, one per GPU) or :class:`~optixasync.multi.DaskGPUs`.

    A new backend (Ray, say) implements these three methods.
    """

    @property
    def workers(self) -> int:
        """Workers that can take tasks now."""
        ...

    def run(self, factory: WorkFactory, tasks: Sequence[Task], batch: int = 1) -> Iterator[tuple[Task, Any]]:
        """Run ``tasks`` on the workers' Work of ``factory``; yield ``(task, result)`` as they finish.

        ``batch`` is a hint: tasks that travel together (one Dask task per ``batch`` frames). A failing
        worker stops the job with a :class:`~optixasync.errors.WorkerError` naming its device; leaving
        the iterator early cancels the tasks not started.
        """
        ...

    def release(self, factory: WorkFactory) -> None:
        """Close every worker's Work of ``factory``."""
        ...


class InOrder:
    """Results keyed by position ``0 ... count - 1``, handed out in position order, each once."""

    def __init__(self, count: int) -> None:
        self.count = int(count)
        self._held: dict[int, Any] = {}
        self._next = 0
        self.repeats = 0  # results of a position that had arrived already (dropped)

    def add(self, position: int, value: Any) -> list[tuple[int, Any]]:
        """Take the result of ``position``; return the results now deliverable, in order.

        Raises
        ------
        ValueError
            On a position outside the job.
        """
        if not 0 <= position < self.count:
            raise ValueError(f"position {position} is outside the job's {self.count} tasks")
        if position < self._next or position in self._held:
            self.repeats += 1
            return []
        self._held[position] = value
        out = []
        while self._next in self._held:
            out.append((self._next, self._held.pop(self._next)))
            self._next += 1
        return out

    @property
    def delivered(self) -> int:
        """Positions handed out so far (all those before :attr:`delivered`)."""
        return self._next

    @property
    def done(self) -> bool:
        return self._next == self.count


def run_in_order(backend: Backend, factory: WorkFactory, payloads: Sequence[Any], batch: int = 1) -> Iterator[Any]:
    """Run ``payloads`` on ``backend``'s workers and yield their results in the payloads' order, each once.

    A result that is a future (a file being written) is waited for before it is yielded.

    Raises
    ------
    WorkerError
        From the backend, when a worker fails; naming its device.
    RuntimeError
        If the backend ended without a result for every payload.
    """
    tasks = [Task(k, payload) for k, payload in enumerate(payloads)]
    order = InOrder(len(tasks))
    for task, result in backend.run(factory, tasks, batch):
        for _position, value in order.add(task.position, result):
            yield resolve(value)
    if not order.done:
        raise RuntimeError(f"the workers delivered {order.delivered} of {order.count} results")
