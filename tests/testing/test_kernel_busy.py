"""The CUDA-kernel busy workload: its kernel compiles under NVRTC and computes what ``expected_busy_output`` says.

The kernel's arithmetic is run here on the host through numpy with the same rounding steps (``__fmul_rn`` then
``__fadd_rn`` are float32 multiply then add), so the GPU tests' comparison with ``expected_busy_output`` is the
comparison of two independent writings of one formula.
"""

from __future__ import annotations

import re

import numpy as np

from optixasync.program import compile_ptx
from optixasync.testing import expected_busy_output
from optixasync.testing._busy import _KERNEL


def test_the_kernel_compiles_to_one_entry_point():
    ptx = compile_ptx(_KERNEL, "busy_values.cu")
    assert re.findall(r"\.entry\s+(\w+)", ptx) == ["busy_values"]
    assert "fma" not in ptx  # the _rn intrinsics keep the multiply and the add apart, as the OptiX program does


def test_its_formula_is_the_expected_output():
    i = np.arange(256, dtype=np.float32)
    for frame, scale in [(0, 1.0), (7, 0.25), (123456, 1.5)]:
        values = (np.float32(scale) * (i + np.float32(1))).astype(np.float32) + np.float32(frame)
        np.testing.assert_array_equal(values, expected_busy_output(frame, scale, 256))
