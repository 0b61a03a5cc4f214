"""The OptiX entry points and CuPy kernels of :class:`~optixasync.testing.StubCuda`: calls enqueued on the stub GPU.

:class:`StubOptixApi` answers the OptiX calls a frame and an acceleration
structure make (launches, memory usage, builds, refits, compactions), each
enqueued on its stream like the stub's copies; :class:`StubKernel` stands in
for a CuPy ``RawKernel``. Both log into the :class:`StubCuda` that made them.

Blocking calls
--------------
None: no CUDA or OptiX call is made.
"""

from __future__ import annotations

from typing import Any

__all__ = ["StubKernel", "StubOptixApi"]

_BUILD_UPDATE = 0x2162  # OPTIX_BUILD_OPERATION_UPDATE


def _logged(value: Any) -> Any:
    """A kernel argument as the log shows it: a device array's address, a numpy scalar's value."""
    if hasattr(value, "__cuda_array_interface__"):
        return int(value.__cuda_array_interface__["data"][0])
    return value.item() if hasattr(value, "item") else value


class StubOptixApi:
    """The OptiX entry points a frame calls, answering success.

    ``launches_replay``: whether a launch may be captured into a CUDA graph (True: the stand-in's launches are
    graph nodes like any other, so the capture logic can be tested; the real driver's are refused, see
    ``optixasync.program._pipeline.LAUNCH_NOT_REPLAYABLE``). Set it False to test that refusal.
    """

    abi = 87
    launches_replay = True

    def __init__(self, cuda: Any) -> None:
        self._cuda = cuda

    def optixLaunch(self, pipeline: int, stream: int, params: int, size: int, sbt: Any, w: int, h: int, d: int) -> int:
        self._cuda.enqueue("optixLaunch", int(stream), (int(pipeline), int(params), int(size), w, h, d))
        return 0

    def optixAccelComputeMemoryUsage(self, ctx: int, options: Any, inputs: Any, count: int, sizes: Any) -> int:
        out = sizes._obj
        out.outputSizeInBytes, out.tempSizeInBytes, out.tempUpdateSizeInBytes = 4096, 1024, 256
        return 0

    def optixAccelBuild(self, ctx: int, stream: int, options: Any, inputs: Any, count: int, temp: int,
                        temp_size: int, output: int, output_size: int, handle: Any, emit: Any,
                        emit_count: int) -> int:
        update = options._obj.operation == _BUILD_UPDATE
        self._cuda.enqueue("optixAccelBuild(update)" if update else "optixAccelBuild", int(stream),
                           (int(output), int(count)))
        if not update:  # a build makes a new structure; an update keeps its handle
            handle._obj.value = self._cuda.new_address()
        return 0

    def optixAccelCompact(self, ctx: int, stream: int, handle: int, output: int, size: int, out: Any) -> int:
        self._cuda.enqueue("optixAccelCompact", int(stream), (int(handle), int(output)))
        out._obj.value = self._cuda.new_address()
        return 0

    def optixPipelineDestroy(self, handle: int) -> int:
        return 0

    def optixDeviceContextDestroy(self, handle: int) -> int:
        return 0

    def error_name(self, status: int) -> str:
        return "OPTIX_ERROR_UNKNOWN"

    def error_string(self, status: int) -> str:
        return "stub"


class StubKernel:
    """A stand-in for a ``cupy.RawKernel``: a launch is enqueued on its stream by name, with its arguments.

    Device arrays among the arguments are logged as their addresses, numpy scalars as Python numbers.
    """

    def __init__(self, cuda: Any, name: str) -> None:
        self._cuda = cuda
        self.name = name

    def __call__(self, grid: tuple, block: tuple, args: tuple, stream: Any = None, **options: Any) -> None:
        if stream is None:
            raise ValueError(f"kernel {self.name} launched without a stream (the legacy default stream)")
        logged = tuple(_logged(a) for a in args)
        self._cuda.enqueue(self.name, int(stream.ptr), (tuple(grid), tuple(block), logged))
