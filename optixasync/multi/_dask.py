"""The Dask backend: tasks run on ``dask.distributed`` workers, one GPU each, on one host or many.

With ``dask_cuda.LocalCUDACluster`` each worker process sees one GPU (``CUDA_VISIBLE_DEVICES``); on a
cluster, ``Client("tcp://scheduler:8786")`` reaches workers started the same way (``dask cuda worker``).

* **Worker-local state.** A worker makes its :class:`~optixasync.multi.Work` (GPU context, compiled
  pipeline, acceleration structures) the first time one of a factory's tasks reaches it and keeps it
  in a per-process cache until :meth:`DaskGPUs.release`: later tasks and later jobs reuse it.
* **The scene travels once per worker, not per task.** The factory (scene and options) is scattered to
  every worker once (``broadcast``); tasks name it by key, so Dask hands each worker its local copy. A
  worker that joins later (a restarted one) fetches it once from a peer. Dask's active memory manager
  may drop a worker's copy while no task there waits for it; that worker then fetches it once more.
* **Threads.** Give each worker two threads (``threads_per_worker=2``): a batch's GPU work holds the
  worker's Work, its last files are written after it lets go, so the next batch renders meanwhile.
* **Faults.** A worker that dies takes no result with it: Dask runs its unfinished tasks again
  elsewhere, and the caller's in-order delivery drops a result that arrives twice. A result is
  released as soon as it arrives (its future let go), so a dead worker's finished work is not run
  again: a delivered frame is rendered once and its file written once. A task that raises fails the
  job with a :class:`~optixasync.errors.WorkerError` naming the worker's GPU and host; the job's other
  tasks are cancelled. A lost scheduler fails the job with a
  :class:`~optixasync.errors.SchedulerLostError` naming the scheduler and listing what had finished
  (for a frame job, the frames whose files are complete).

Dask is an optional extra: ``pip install "optixasync[cluster]"`` (and ``dask-cuda`` for
``LocalCUDACluster``); it is imported when a :class:`DaskGPUs` is created.

Blocking calls
--------------
Creating a :class:`DaskGPUs` from an address connects to the scheduler. :meth:`DaskGPUs.run` waits for
task results (it delivers them) and the first run of a factory for its scatter; :meth:`DaskGPUs.release`
waits for the workers to close their state; :meth:`DaskGPUs.close` for the client to close.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import MissingExtraError, SchedulerLostError, WorkerError
from ._plan import FrameTask, Task, batches
from ._work import WorkCache, WorkFactory, resolve, worker_error

__all__ = ["DaskGPUs"]

# The Work caches of the Dask workers living in this process, by worker address (one per process with a
# nanny; several with an in-process cluster).
_caches: dict[str, WorkCache] = {}
_caches_lock = threading.Lock()


def _cache(address: str) -> WorkCache:
    with _caches_lock:
        return _caches.setdefault(address, WorkCache())


def _process_batch(factory: WorkFactory, tasks: list[Task]) -> list[tuple[Task, Any]]:
    """A Dask task: run ``tasks`` on this worker's Work of ``factory`` (made on first use); their results."""
    from distributed import get_worker

    worker = get_worker()
    cache = _cache(worker.address)
    try:
        work, lock = cache.get(factory, None)
        with lock:  # a worker with several threads runs one batch of a Work at a time on its GPU ...
            done = list(work.process(tasks))
        # ... and waits for the batch's files outside the lock: with two threads per worker, the next batch
        # renders while this one's last images are encoded
        return [(task, resolve(result)) for task, result in done]
    except BaseException as exc:
        cache.discard(factory.key)  # a failed GPU context is not reused
        raise worker_error(exc, None, f"Dask worker {worker.address}") from None


def _release(key: str, dask_worker: Any = None) -> int:
    """Run on every worker by :meth:`DaskGPUs.release`: close its Work of ``key``; how many it had."""
    cache = _cache(dask_worker.address) if dask_worker is not None else None
    if cache is None:
        return 0
    had = len(cache)
    cache.discard(key)
    return had - len(cache)


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise MissingExtraError("the Dask backend of optixasync.multi", "distributed", "cluster") from exc
    return distributed


class DaskGPUs:
    """Dask workers, one GPU each, for :class:`~optixasync.multi.Farm`.

    Parameters
    ----------
    cluster : distributed.Client, str or cluster
        A client, a scheduler address (``"tcp://host:8786"``) or a cluster object (for example
        ``dask_cuda.LocalCUDACluster()``); a client made here is closed by :meth:`close`.
    timeout : float, optional
        Seconds to wait for the scheduler when connecting (Dask's default when None).

    Raises
    ------
    MissingExtraError
        If ``distributed`` is not installed (the ``cluster`` extra).
    TypeError
        On anything else.
    """

    def __init__(self, cluster: Any, *, timeout: float | None = None) -> None:
        distributed = _import_distributed()
        self._distributed = distributed
        if isinstance(cluster, distributed.Client):
            self.client, self._owns_client = cluster, False
        elif isinstance(cluster, str) or hasattr(cluster, "scheduler_address"):
            self.client, self._owns_client = distributed.Client(cluster, timeout=timeout), True
        else:
            raise TypeError(f"cluster must be a distributed.Client, a scheduler address or a cluster, "
                            f"got {type(cluster).__name__}")
        self._scattered: dict[str, Any] = {}
        self.last_batches = 0

    @property
    def workers(self) -> int:
        return len(self.client.scheduler_info(n_workers=-1)["workers"])

    def _factory_future(self, factory: WorkFactory) -> Any:
        future = self._scattered.get(factory.key)
        if future is None:
            # once per worker, not per task; a worker that joins later fetches it from a peer once
            future = self.client.scatter(factory, broadcast=True, hash=False)
            self._scattered[factory.key] = future
        return future

    def run(self, factory: WorkFactory, tasks: Sequence[Task], batch: int = 1) -> Iterator[tuple[Task, Any]]:
        """Submit ``tasks`` in batches of ``batch``, earliest first; yield ``(task, result)`` as batches finish.

        Each batch's future is released once its results are here, so the scheduler forgets them: a
        worker that dies afterwards costs nothing to run again.

        Raises
        ------
        WorkerError
            When a task fails (naming the worker), or Dask gives up on one (a task whose workers kept dying).
        SchedulerLostError
            When the connection to the scheduler is lost (naming it, listing what had finished).
        """
        distributed = self._distributed
        shared = self._factory_future(factory)
        groups = batches(tasks, batch)
        self.last_batches = len(groups)
        job = uuid.uuid4().hex[:8]
        address = str(self.client.scheduler.address)
        pending = {}
        for k, group in enumerate(groups):
            future = self.client.submit(_process_batch, shared, group, pure=False, priority=-k,
                                        key=f"optixasync-{job}-{group[0].position}")
            pending[future.key] = future
        finished: list[int] = []
        try:
            for future in distributed.as_completed(list(pending.values())):
                try:
                    results = future.result()
                except WorkerError:
                    raise
                except Exception as exc:  # KilledWorker (a task whose workers kept dying), a lost scheduler
                    error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
                    if self._lost_scheduler(exc):
                        raise SchedulerLostError(address, tuple(finished), error) from exc
                    raise WorkerError("a Dask worker", "the cluster", error) from exc
                pending.pop(future.key, None)
                future.release()  # delivered: nobody wants it now, so a dead worker's copy is not recomputed
                del future
                for task, result in results:
                    finished.append(task.payload.index if isinstance(task.payload, FrameTask) else task.position)
                    yield task, result
        finally:
            if pending:
                self.client.cancel(list(pending.values()))

    def _lost_scheduler(self, exc: BaseException) -> bool:
        """Whether ``exc`` (from a future's result) means the connection to the scheduler is gone."""
        if getattr(exc, "reason", None) == "scheduler-connection-lost":  # distributed's FutureCancelledError
            return True
        return self.client.status not in ("running", "newly-created")

    def release(self, factory: WorkFactory) -> None:
        """Close every worker's Work of ``factory`` and drop the scattered factory."""
        self.client.run(_release, factory.key)
        future = self._scattered.pop(factory.key, None)
        if future is not None:
            future.release()

    def close(self) -> None:
        """Close the client if this backend made it."""
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> DaskGPUs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<optixasync.multi.DaskGPUs scheduler={self.client.scheduler.address}>"

