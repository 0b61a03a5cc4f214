"""Options of the frame scheduler.

Blocking calls
--------------
None: a dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OVERFLOW_POLICIES", "SchedulerOptions"]

#: What happens when completed frames wait for ``poll()`` beyond ``max_queued_results``.
OVERFLOW_POLICIES = ("drop_oldest", "raise")


@dataclass(frozen=True)
class SchedulerOptions:
    """Options of a :class:`FrameScheduler`.

    Attributes
    ----------
    timing : bool
        Record timing events around each frame's GPU work (GPU time and idle gap).
    completion_thread : bool
        Retire frames in a background thread as soon as their fences pass, so
        callbacks run and ``result()`` returns without the submitting thread's help.
    keep_results : bool
        Queue completed frames for :meth:`FrameScheduler.poll`, except those
        already asked for through their handle (see the delivery rule in
        :class:`FrameScheduler`). Turn off when results are consumed through
        handles or callbacks only.
    max_queued_results : int
        Most results waiting for ``poll()`` at once (each holds its pinned
        readback buffers). What happens beyond is ``on_full``.
    on_full : {"drop_oldest", "raise"}
        ``"drop_oldest"``: the oldest waiting result is dropped, counted in
        ``stats.dropped_results`` and logged once. ``"raise"``: nothing is
        dropped, and the next ``begin_frame`` raises
        :class:`~optixasync.errors.ResultsOverflowError` until ``poll()`` has
        drained the queue (it may exceed the bound by the frames in flight).
    stats_window : int
        Frames whose :class:`FrameStats` are kept for summaries, timelines
        and traces (the newest ones); whole-run counts and sums are kept apart.
    optix_queue_limit : int or None
        At most this many OptiX launches queued on the scheduler's OptiX device context (by every
        scheduler and pipeline of that context, see :mod:`optixasync.cuda._launch_queue`) while the
        scheduler is open: a launch that would exceed it first waits on the host for the oldest queued
        launch's event, a designed wait counted in ``stats.queue_waits`` with its cause and reported by
        syncwatch as ``optix queue``, so that OptiX never waits inside ``optixLaunch`` for its own ring of
        launch resources. None (the default): no bound, until a GPU run has measured the ring's depth
        (``benchmarks/bench_launch_wait.py``); ``OPTIXASYNC_OPTIX_QUEUE_LIMIT=N`` sets one for every
        context instead.
    """

    timing: bool = True
    completion_thread: bool = True
    keep_results: bool = True
    max_queued_results: int = 32
    on_full: str = "drop_oldest"
    stats_window: int = 4096
    optix_queue_limit: int | None = None

    def __post_init__(self) -> None:
        for name in ("timing", "completion_thread", "keep_results"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__} {getattr(self, name)!r}")
        for name in ("max_queued_results", "stats_window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        limit = self.optix_queue_limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError(f"optix_queue_limit must be an int >= 1 (launches queued per OptiX context) or None, "
                             f"got {limit!r}")
        if self.on_full not in OVERFLOW_POLICIES:
            raise ValueError(f"on_full must be one of {OVERFLOW_POLICIES}, got {self.on_full!r}")
