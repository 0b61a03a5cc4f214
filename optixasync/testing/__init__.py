"""What tests, examples and benchmarks share: a calibrated busy workload, the hello-triangle renderer, a rippling mesh,
and the scripts' entry (one line and the CLI's exit status when the machine cannot run them).

These are small, complete OptiX programs built on the public layers; they
are not part of the rendering API. The GPU spin helper lives in
:func:`optixasync.cuda.spin_gpu`.
"""

from __future__ import annotations

from ._busy import BUSY_PARAMS, BusyWorkload, expected_busy_output
from ._entry import child_output, require_gpu, run_main
from ._hello import DEFAULT_TRIANGLE, HELLO_PARAMS, HelloRenderer, HelloResult, fill_params, render_triangle
from ._ripple import RippleAnimator, grid_mesh

__all__ = [
    "BUSY_PARAMS",
    "BusyWorkload",
    "DEFAULT_TRIANGLE",
    "HELLO_PARAMS",
    "HelloRenderer",
    "HelloResult",
    "RippleAnimator",
    "child_output",
    "expected_busy_output",
    "fill_params",
    "grid_mesh",
    "render_triangle",
    "require_gpu",
    "run_main",
]
