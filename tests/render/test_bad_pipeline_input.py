"""The path tracer GPU test's list of mistakes refused before GPU work, run on the CPU over the stub, so that a
changed output name or message fails in CI (three GPU tests had kept ``depth`` as an unknown output after it
became one)."""

from __future__ import annotations

import pytest
import test_pathtracer_gpu as gpu  # noqa: E402  (beside this file)

from optixasync.render._integrator import integrator_class
from optixasync.testing import StubCuda, StubRender


@pytest.mark.parametrize("exc, match, mistake", gpu.MISTAKES, ids=[m for _e, m, _c in gpu.MISTAKES])
def test_a_mistake_of_the_gpu_test_is_refused_on_the_cpu(exc, match, mistake):
    if "integrator" in match:
        with pytest.raises(exc, match=match):  # the stub renderer stands in for every integrator: its name
            integrator_class("bidirectional")
        return
    with StubCuda() as cuda, StubRender(cuda):
        ctx = cuda.context()
        with pytest.raises(exc, match=match):
            mistake(ctx)
        ctx.close()
