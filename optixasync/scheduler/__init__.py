"""The asynchronous frame pipeline: slots, fences, handles, zero-copy results and bounded statistics."""

from __future__ import annotations

from ..errors import FrameAbortedError, ResultsOverflowError
from ._frame import Frame
from ._options import SchedulerOptions
from ._results import FrameHandle, FrameResult
from ._ring import FrameRing
from ._scheduler import FrameScheduler
from ._stats import FrameStats, SchedulerStats

__all__ = [
    "Frame",
    "FrameAbortedError",
    "FrameHandle",
    "FrameResult",
    "FrameRing",
    "FrameScheduler",
    "FrameStats",
    "ResultsOverflowError",
    "SchedulerOptions",
    "SchedulerStats",
]
