"""Parallel module compilation: the tasks of ``optixModuleCreateWithTasks`` run on a pool of threads.

``optixModuleCreateWithTasks`` returns a module and its first compile task at
once; executing a task (``optixTaskExecute``) compiles a part of the module and
may hand out further tasks, which any thread may execute. The ctypes call
releases the GIL, so the tasks of one module compile on several cores. The
module is usable once its compilation state is ``COMPLETED``.

Blocking calls
--------------
:func:`execute_tasks` runs the tasks and waits for all of them (it is the
compile): set-up time, on the CPU. No CUDA call is made.
"""

from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._optix import types as t

__all__ = ["MAX_ADDITIONAL_TASKS", "compilation_state", "execute_tasks"]

#: How many new tasks one ``optixTaskExecute`` may hand out.
MAX_ADDITIONAL_TASKS = 16


class _TaskRun:
    """The tasks of one module in flight: counted, so the last one to finish wakes the waiter."""

    def __init__(self, api: Any, pool: ThreadPoolExecutor) -> None:
        self.api, self.pool = api, pool
        self.lock = threading.Lock()
        self.pending = 0
        self.done = threading.Event()
        self.statuses: list[int] = []
        self.errors: list[BaseException] = []
        self.executed = 0

    def submit(self, task: int) -> None:
        with self.lock:
            self.pending += 1
        self.pool.submit(self._run, task)

    def _run(self, task: int) -> None:
        try:
            children = (ctypes.c_void_p * MAX_ADDITIONAL_TASKS)()
            created = ctypes.c_uint(0)
            status = self.api.optixTaskExecute(task, children, MAX_ADDITIONAL_TASKS, ctypes.byref(created))
            with self.lock:
                self.executed += 1
            if status != 0:
                with self.lock:
                    self.statuses.append(int(status))
            for k in range(int(created.value)):  # children first, so the count never drops to 0 too early
                self.submit(children[k])
        except BaseException as exc:  # reported by the waiter; the other tasks still finish
            with self.lock:
                self.errors.append(exc)
        finally:
            with self.lock:
                self.pending -= 1
                finished = self.pending == 0
            if finished:
                self.done.set()


def execute_tasks(api: Any, first_task: int, threads: int) -> tuple[int, list[int]]:
    """Execute ``first_task`` and every task it leads to on ``threads`` threads; wait for all of them.

    Returns
    -------
    executed : int
        How many tasks ran.
    statuses : list of int
        The non-zero ``OptixResult`` of the tasks that failed (empty when all succeeded).

    Raises
    ------
    BaseException
        The first exception a task's call raised (after every task has finished).
    """
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="optixasync-compile") as pool:
        run = _TaskRun(api, pool)
        run.submit(first_task)
        run.done.wait()
    if run.errors:
        raise run.errors[0]
    return run.executed, run.statuses


def compilation_state(api: Any, module: int) -> t.ModuleCompileState:
    """The compilation state of a module created with tasks (``optixModuleGetCompilationState``)."""
    state = ctypes.c_int(0)
    status = api.optixModuleGetCompilationState(module, ctypes.byref(state))
    if status != 0:
        return t.ModuleCompileState.FAILED
    return t.ModuleCompileState(int(state.value))
