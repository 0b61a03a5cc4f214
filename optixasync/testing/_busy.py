"""A calibrated GPU workload for the scheduler's tests, benchmarks and demos.

``kernels/busy.cu`` keeps the GPU busy for a given number of nanoseconds
and writes values derived from the frame's parameters, so every readback
proves which parameters its launch saw.

Blocking calls
--------------
Creating a :class:`BusyWorkload` compiles its module (set-up); recording
enqueues a launch and a readback (asynchronous).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix._types import TraversableGraphFlags
from .._structs import struct_dtype
from ..program import Module, Pipeline, PipelineOptions, ProgramGroup, ShaderBindingTable

if TYPE_CHECKING:
    from ..cuda import Context
    from ..scheduler import Frame

__all__ = ["BUSY_PARAMS", "BusyWorkload", "KernelBusyWorkload", "expected_busy_output"]

#: Layout of ``BusyParams`` in ``kernels/busy.cu``.
BUSY_PARAMS = struct_dtype([("out", "ptr"), ("spin_ns", "u64"), ("frame", "uint"), ("scale", "float")])


def expected_busy_output(frame: int, scale: float, n: int) -> np.ndarray:
    """What ``__raygen__busy`` writes for these parameters."""
    return (np.float32(scale) * np.arange(1, n + 1, dtype=np.float32) + np.float32(frame)).astype(np.float32)


class BusyWorkload:
    """The busy pipeline and its SBT, ready to launch inside a frame."""

    def __init__(self, ctx: Context) -> None:
        options = PipelineOptions(num_payload_values=0, traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS)
        self.module = Module(ctx, "busy.cu", pipeline_options=options)
        self.raygen = ProgramGroup.raygen(ctx, self.module, "__raygen__busy")
        self.miss = ProgramGroup.miss(ctx, self.module, "__miss__busy")
        self.pipeline = Pipeline(ctx, [self.raygen, self.miss], max_trace_depth=1)
        self.sbt = ShaderBindingTable(ctx, self.raygen, [self.miss])

    def record(self, frame: Frame, spin_ns: int, scale: float, n_out: int = 256, readback: bool = True) -> Any:
        """Launch the busy program in ``frame``; its output buffer is read back as ``"out"``."""
        out = frame.buffer("out", (n_out,), np.float32)
        frame.params["out"] = out.data.ptr
        frame.params["spin_ns"] = int(spin_ns)
        frame.params["frame"] = frame.index
        frame.params["scale"] = scale
        frame.launch(self.pipeline, self.sbt, n_out)
        if readback:
            frame.readback(out, "out")
        return out


_KERNEL = r"""
extern "C" __global__ void busy_values(float* out, int n, const unsigned int* frame, const float* scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __fadd_rn(__fmul_rn(*scale, (float)(i + 1)), (float)(*frame));
}
"""


class KernelBusyWorkload:
    """The busy frame's values (:func:`expected_busy_output`) written by a CUDA kernel instead of an OptiX launch.

    A frame of plain CUDA work (an optional spin, the kernel reading the frame's ``frame`` and ``scale`` from
    its parameters on the GPU, a readback): the kind of frame CUDA graphs replay (an OptiX launch cannot be
    replayed from a graph, see ``optixasync.program._pipeline.LAUNCH_NOT_REPLAYABLE``). Use it with a scheduler
    of ``params_dtype=BUSY_PARAMS``.
    """

    def __init__(self) -> None:
        import cupy

        self._kernel = cupy.RawKernel(_KERNEL, "busy_values")

    def record(self, frame: Frame, n_out: int = 256, spin_ns: int = 0, readback: bool = True) -> Any:
        """Enqueue the values of ``frame``'s parameters into its ``"out"`` buffer (read back when asked)."""
        from ..cuda import spin_gpu

        out = frame.buffer("out", (n_out,), np.float32)
        if spin_ns:
            spin_gpu(int(spin_ns), frame)
        self._kernel(((n_out + 255) // 256,), (256,), (out, np.int32(n_out), np.uint64(frame.param_address("frame")),
                                                       np.uint64(frame.param_address("scale"))), stream=frame.stream)
        if readback:
            frame.readback(out, "out")
        return out
