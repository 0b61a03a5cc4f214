"""``blocks(fn, stream)``: does this call wait for the GPU? A probe that needs no CUPTI.

The probe keeps ``stream`` busy with a calibrated GPU spin (``busy_ms`` of
``%globaltimer`` spinning, one thread), times ``fn()`` on the host, and
checks, right after ``fn`` returns, whether the spin has already finished.
A call that returned while the spin still ran did not wait for it; a call
that took about as long as the spin and returned after it ended did. To
tell waiting apart from slow CPU work, ``fn`` first runs once on an idle
stream (which also takes first-use costs, such as module loads and pool
growth, out of the measurement): only the extra time behind the busy GPU
counts.

Blocking calls
--------------
By design: the probe synchronizes ``stream`` before and after each run of
``fn``; it is a test and debugging tool, never for a frame loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["BlockResult", "blocks", "decide_blocked"]


@dataclass(frozen=True)
class BlockResult:
    """The verdict of :func:`blocks`; true when the call waited for the GPU.

    Attributes
    ----------
    blocked : bool
        Whether the call waited for the busy GPU.
    host_ms : float
        Host time of the call behind the busy GPU.
    idle_ms : float or None
        Host time of the same call on an idle GPU (None without the warm-up run).
    busy_ms : float
        How long the GPU was kept busy ahead of the call.
    gpu_done_at_return : bool
        Whether the busy work had finished when the call returned.
    """

    blocked: bool
    host_ms: float
    idle_ms: float | None
    busy_ms: float
    gpu_done_at_return: bool

    def __bool__(self) -> bool:
        return self.blocked

    @property
    def verdict(self) -> str:
        return "blocks" if self.blocked else "does not block"

    def __str__(self) -> str:
        idle = f", {self.idle_ms:.3f} ms on an idle GPU" if self.idle_ms is not None else ""
        state = "finished" if self.gpu_done_at_return else "still running"
        return (f"{self.verdict}: {self.host_ms:.3f} ms in the call behind {self.busy_ms:g} ms of GPU work{idle}; "
                f"the GPU work was {state} when it returned")


def decide_blocked(host_ms: float, idle_ms: float | None, busy_ms: float, gpu_done_at_return: bool,
                   fraction: float = 0.5) -> bool:
    """The rule of :func:`blocks`: the busy work ended during the call, and the call took
    at least ``fraction`` of it longer than on an idle GPU."""
    extra = host_ms - (idle_ms if idle_ms is not None else 0.0)
    return bool(gpu_done_at_return) and extra >= fraction * busy_ms


def blocks(fn: Callable[[], Any], stream: Any, *, busy_ms: float = 20.0, fraction: float = 0.5,
           warmup: bool = True) -> BlockResult:
    """Whether ``fn()`` makes the host wait for GPU work queued on ``stream``.

    Parameters
    ----------
    fn : callable
        Called with no arguments (three times with ``warmup``: wrap it in a
        ``lambda`` or ``functools.partial``). It should enqueue its work on
        ``stream``, the stream whose earlier work it might wait for.
    stream : stream
        A non-blocking stream (``cupy.cuda.Stream``, ``__cuda_stream__`` object or handle).
    busy_ms : float
        GPU time queued ahead of the call; longer than the call's own host time.
    fraction : float
        Part of ``busy_ms`` the call must wait to count as blocking.
    warmup : bool
        Run ``fn`` twice on an idle stream first: once to take first-use costs
        (compiles, loads, allocations) out of the measurement, then once timed,
        whose host time is subtracted from the measured call's.

    Returns
    -------
    BlockResult
        True-ish when the call blocked; ``str()`` explains the verdict.

    Raises
    ------
    ValueError
        On a non-positive ``busy_ms`` or a ``fraction`` outside (0, 1], before any GPU work.
    """
    if not callable(fn):
        raise TypeError(f"blocks() needs a callable, got {type(fn).__name__}")
    if not busy_ms > 0:
        raise ValueError(f"busy_ms must be positive, got {busy_ms}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    from ..cuda import as_cupy_stream, fence_event, spin_gpu

    cupy_stream = as_cupy_stream(stream)
    spin_gpu(0, cupy_stream)  # compiles and loads the spin kernel now, not inside the measurement
    cupy_stream.synchronize()
    idle_ms = None
    if warmup:
        fn()  # first use: compiles, module loads, allocations (a validation-mode launch's set-up)
        cupy_stream.synchronize()
        start = time.perf_counter()
        fn()
        idle_ms = (time.perf_counter() - start) * 1e3
        cupy_stream.synchronize()
    spin_gpu(int(busy_ms * 1e6), cupy_stream)
    spun = fence_event()
    spun.record(cupy_stream)
    start = time.perf_counter()
    fn()
    host_ms = (time.perf_counter() - start) * 1e3
    done = bool(spun.done)  # an event query: never waits
    cupy_stream.synchronize()
    return BlockResult(decide_blocked(host_ms, idle_ms, busy_ms, done, fraction), host_ms, idle_ms, float(busy_ms), done)
