"""The asynchronous frame pipeline: slots, fences, handles and measurements."""

from ._ring import FrameRing
from ._scheduler import (
    Frame,
    FrameAbortedError,
    FrameHandle,
    FrameResult,
    FrameScheduler,
    SchedulerOptions,
)
from ._stats import FrameStats, SchedulerStats

__all__ = [
    "Frame",
    "FrameAbortedError",
    "FrameHandle",
    "FrameResult",
    "FrameRing",
    "FrameScheduler",
    "FrameStats",
    "SchedulerOptions",
    "SchedulerStats",
]
