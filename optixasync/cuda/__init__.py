"""The CUDA layer: the device context, streams, events, readiness, GPU timing, memory and staging, over CuPy.

Every stream optixasync creates is non-blocking (it never synchronizes with
the legacy default stream). Library calls enqueue work on the streams they
are given, never on CuPy's current stream, and refuse the legacy default
stream (handle 0 or 1); the per-thread default stream (handle 2) is
accepted when a caller passes it. One call records on a default stream by
itself: when a producer's ``__cuda_array_interface__`` names stream 1 or 2
as where its writes are pending, :func:`consume_device_array` records an
event there (no other work) for the consumer's stream to wait for.

Every mechanism the layers above share lives here once: ordering a stream
after an event (:func:`wait_event`, :class:`Readiness`) or after another
stream (:func:`join_streams`), uploads into new or existing device buffers
(``Context.upload``, ``Context.upload_into``) and downloads into pinned
memory (``PinnedPool.download``), launch parameters staged in pinned memory
(:class:`StagedStruct`), the device current in a thread (:func:`use_device`, or for a block :func:`on_device`),
CuPy array code on a given stream and pool (``DeviceMemory.scope``), timing GPU work
(:class:`GpuTimer`), bounding the OptiX launches queued on a context (:class:`LaunchQueue`), converting any stream-like (:func:`as_cupy_stream`),
translating CUDA failures into :class:`~optixasync.errors.CudaError`,
using other libraries' device arrays in place with their stream order kept
(:func:`consume_device_array`), and GPU work captured once into a CUDA graph
and replayed (:class:`StreamGraph`), with what each of these mechanisms does
while its stream is being captured (:func:`capture_of`).

Each module of optixasync that talks to CUDA lists the calls that may block
the host, and why, in its own docstring ("Blocking calls"); the
documentation gathers them into one page. To check a program against them,
run it under ``optixasync syncwatch``: it reports every call that blocked the
host and the Python line that made it.
"""

from ._capture import Capture, capture_of
from ._context import Context, register_setup_step
from ._deferred import DeferredRelease
from ._errors import as_cuda_error, cuda_errors, reraise
from ._events import EventPool, elapsed_ms, event_done, fence_event, record_event, synchronize, timing_event
from ._export import ExportedArray
from ._graph import StreamGraph
from ._interop import ConsumedArray, consume_device_array, is_library_array
from ._launch_queue import LaunchQueue, QueueWait
from ._memory import DeviceMemory, PinnedBuffer, PinnedPool, device_pointer, on_device, use_device
from ._nvtx import enable_nvtx, nvtx_enabled, nvtx_range
from ._ready import Readiness
from ._spin import spin_gpu
from ._staging import StagedStruct
from ._streams import StreamLike, as_cupy_stream, create_stream, join_streams, stream_handle, wait_event
from ._timer import GpuSpan, GpuTimer

__all__ = [
    "Capture",
    "ConsumedArray",
    "DeferredRelease",
    "Context",
    "DeviceMemory",
    "EventPool",
    "ExportedArray",
    "GpuSpan",
    "GpuTimer",
    "LaunchQueue",
    "PinnedBuffer",
    "PinnedPool",
    "QueueWait",
    "Readiness",
    "StagedStruct",
    "StreamGraph",
    "StreamLike",
    "as_cuda_error",
    "as_cupy_stream",
    "capture_of",
    "consume_device_array",
    "create_stream",
    "cuda_errors",
    "device_pointer",
    "elapsed_ms",
    "enable_nvtx",
    "event_done",
    "fence_event",
    "is_library_array",
    "join_streams",
    "nvtx_enabled",
    "nvtx_range",
    "on_device",
    "record_event",
    "register_setup_step",
    "reraise",
    "spin_gpu",
    "stream_handle",
    "synchronize",
    "timing_event",
    "use_device",
    "wait_event",
]
