"""The bad-input matrix's expectations on the CPU: every case of ``test_bad_input_matrix_gpu.py`` that needs no
device runs here over :class:`~optixasync.testing.StubCuda` (the real pipeline, scene, structures and scheduler),
so that a message, an output name or an option the code changes makes CI fail, not the next GPU run.

(Three GPU cases had gone stale that way: they expected ``depth`` to be an unknown output after it became one.)
The cases left to the GPU are listed in :data:`GPU_ONLY`, each with why; a new case runs here by default.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import cornell_box
from optixasync.testing import StubCuda, StubRender

sys.path.insert(0, str(Path(__file__).parent))
import test_bad_input_matrix_gpu as matrix  # noqa: E402

#: Cases that need a device, and why.
GPU_ONLY: dict[str, str] = {
    "triangle-input-device-not-contiguous": "a strided CuPy view (the stub's arrays cannot be sliced)",
    "launch-in-a-scheduler-without-parameters": "the hello triangle's module (the stub's OptiX has no modules)",
    "program-group-of-a-module-of-another-context": "a module of a second context (the stub's OptiX has none)",
    "launch-of-a-pipeline-of-another-context": "a module of a second context (the stub's OptiX has none)",
    "pipeline-unknown-integrator": "the stub renderer stands in for every integrator (test_bad_pipeline_input.py "
                                   "checks the name on the CPU)",
}


def _cpu_cases() -> list:
    out = []
    for param in matrix.CASES:
        reason = GPU_ONLY.get(param.id)
        marks = [*param.marks, pytest.mark.skip(reason=f"needs a GPU: {reason}")] if reason else list(param.marks)
        out.append(pytest.param(*param.values, id=param.id, marks=marks))
    return out


class StubEnv(matrix.Env):
    """The matrix's Env whose other and closed contexts are the stub's."""

    cuda: StubCuda

    def other_context(self):
        other = self.cuda.context()
        self.stack.callback(other.close)
        return other

    def closed_context(self):
        closed = self.cuda.context()
        closed.close()
        return closed


@pytest.fixture(scope="module")
def stub():
    with StubCuda() as cuda, StubRender(cuda):
        ctx = cuda.context()
        with RenderPipeline(ctx, cornell_box(), RenderOptions(width=16, height=16, spp=1),
                            scheduler_options={"completion_thread": False}) as shared:
            shared.render(1)
            yield cuda, ctx, shared


@pytest.mark.parametrize("arrange, exc, match", _cpu_cases())
def test_bad_input_raises_its_documented_exception_on_the_cpu(stub, tmp_path, arrange, exc, match):
    cuda, ctx, pipeline = stub
    with contextlib.ExitStack() as stack:
        env = StubEnv(ctx, pipeline, stack, tmp_path)
        env.cuda = cuda
        mistake = arrange(env)
        with pytest.raises(exc, match=match):
            mistake()
