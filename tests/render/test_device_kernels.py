"""Kernels compiled by CuPy at run time (device tonemap, GPU spin, ripple): each compiles with NVRTC on the CPU.

On a GPU they are compiled inside the call that launches them; here they go through NVRTC directly, so a kernel
that does not compile fails CI. The device tonemap is also compared with the host curve on the GPU.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from optixasync.cuda._spin import _SPIN_SOURCE  # the sources have no public door; these tests compile them
from optixasync.io import tonemap_srgb
from optixasync.program import CompileOptions, compile_ptx
from optixasync.render._tonemap import TONEMAP_SOURCE
from optixasync.testing._ripple import _RIPPLE_SOURCE


@pytest.mark.parametrize("source, entry", [(TONEMAP_SOURCE, "tonemap_srgb8"), (_SPIN_SOURCE, "spin"),
                                           (_RIPPLE_SOURCE, "ripple")])
def test_runtime_kernels_compile_with_nvrtc(source, entry):
    ptx = compile_ptx(source, f"{entry}.cu", CompileOptions(use_fast_math=True))  # the kernels folder is on -I
    assert re.search(rf"\.entry\s+{entry}\s*\(", ptx)
    assert ".local" not in ptx


def test_the_device_tonemap_is_the_kernels_own_curve():
    """One sRGB curve on the device: the tonemap includes film.h rather than a copy of its formula."""
    assert '#include "pathtracer/film.h"' in TONEMAP_SOURCE and "pt::srgb8" in TONEMAP_SOURCE
    assert "powf" not in TONEMAP_SOURCE and "12.92" not in TONEMAP_SOURCE


@pytest.mark.gpu
def test_device_tonemap_matches_the_host_curve():
    import cupy

    from optixasync.cuda import create_stream, synchronize
    from optixasync.cuda._events import record_event
    from optixasync.render._tonemap import tonemap_device

    rng = np.random.default_rng(3)
    linear = rng.uniform(-0.2, 1.5, (37, 53, 4)).astype(np.float32)
    linear[0, 0, :3] = np.nan
    stream = create_stream()
    out = cupy.zeros((37, 53, 4), cupy.uint8)
    tonemap_device(cupy.asarray(linear), out, stream)
    synchronize(record_event(stream))
    got = cupy.asnumpy(out)
    expected = tonemap_srgb(linear[..., :3])
    assert np.abs(got[..., :3].astype(int) - expected.astype(int)).max() <= 1
    assert (got[..., 3] == 255).all() and (got[0, 0, :3] == 0).all()
    with pytest.raises(ValueError, match="float32 in and uint8 out"):
        tonemap_device(cupy.asarray(linear), cupy.zeros((37, 53, 3), cupy.uint8), stream)
