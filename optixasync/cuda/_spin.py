"""A GPU that is busy for a known time: one thread spinning on the global timer.

Diagnostics (``blocks``), tests and benchmarks put it before a call to see
whether the call waits for queued GPU work.

Blocking calls
--------------
None: the kernel is enqueued on the given stream (compiled by CuPy once per
process, on first use: set-up time).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._streams import as_cupy_stream

__all__ = ["spin_gpu"]

_SPIN_SOURCE = r"""
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
"""


@functools.lru_cache(maxsize=1)
def _spin_kernel() -> Any:
    import cupy

    return cupy.RawKernel(_SPIN_SOURCE, "spin")


def spin_gpu(ns: int, stream: Any) -> None:
    """Keep ``stream`` busy for ``ns`` nanoseconds."""
    _spin_kernel()((1,), (1,), (np.uint64(ns),), stream=as_cupy_stream(stream))
