"""Find every host stall and the Python line that caused it; prove a pipeline has none.

* :func:`syncwatch` (context manager and decorator) records, through NVIDIA's
  CUPTI (``pip install 'optixasync[diagnostics]'``), every CUDA call that
  blocked the host: synchronizations, synchronous copies and memsets, async
  copies that touched pageable memory, driver allocations and frees, module
  loads, and the OptiX calls that waited (with validation mode on,
  ``optixLaunch`` and ``optixAccelBuild`` do). Each record carries the API,
  the host time and the Python stack, with the user's own line picked out.
  The frame scheduler's slot fences are reported apart, as designed waits.
* :func:`assert_no_sync` turns that into a test assertion.
* :func:`blocks` asks whether one call waits for the GPU, without CUPTI:
  a calibrated busy kernel runs ahead of it on the stream.
* :func:`export_chrome_trace` writes the scheduler's host and GPU timeline
  for Perfetto; :func:`enable_nvtx` (or ``OPTIXASYNC_NVTX=1``) marks the
  frame phases for Nsight Systems.
* ``optixasync syncwatch -- python script.py`` runs a script under syncwatch
  and prints the report at exit.

Importing this package imports neither CUPTI, CuPy nor nvtx. When no watch
is active, nothing is subscribed or wrapped.

Blocking calls: :func:`blocks` synchronizes the probed stream (by design);
starting a watch (CUPTI subscription and activity records) may wait for the
GPU: a 20 ms busy kernel queued just before a watch had all but finished
(1.8 ms left) by the first call inside it, measured on an H200, so queue the
work a test wants to see stall inside the watch; ending a watch flushes
CUPTI's activity buffers (host work only).
"""

from __future__ import annotations

from ..cuda._nvtx import disable_nvtx, enable_nvtx, nvtx_enabled
from ..errors import MissingExtraError
from ._blocks import BlockResult, blocks
from ._records import CATEGORY_HELP, SyncRecord, classify
from ._report import ReportOptions, SyncDetected, SyncReport
from ._syncwatch import SyncWatch, assert_no_sync, syncwatch
from ._trace import chrome_trace, export_chrome_trace

__all__ = [
    "BlockResult",
    "CATEGORY_HELP",
    "MissingExtraError",
    "ReportOptions",
    "SyncDetected",
    "SyncRecord",
    "SyncReport",
    "SyncWatch",
    "assert_no_sync",
    "blocks",
    "chrome_trace",
    "classify",
    "disable_nvtx",
    "enable_nvtx",
    "export_chrome_trace",
    "nvtx_enabled",
    "syncwatch",
]
