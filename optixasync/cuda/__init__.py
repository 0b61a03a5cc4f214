"""The CUDA layer: streams, events, pinned staging and stream-ordered memory, over CuPy.

Every stream optixasync creates is non-blocking (it never synchronizes with
the legacy default stream), and no library call uses the default stream.

Calls in optixasync that may block the host, and why
----------------------------------------------------
Steady state (per frame):

* ``FrameScheduler.begin_frame`` waits on the fence event of the frame that
  last used the slot, only when the host is ``frames_in_flight`` frames ahead.
  This is the one designed wait.
* ``optixLaunch`` and ``optixAccelBuild`` block until all work of the
  context is done when the context was created with ``validation=True``
  (OptiX's validation mode serializes; that is what it is for).
* ``FrameHandle.result()`` / ``FrameScheduler.drain()`` / ``close()`` wait
  for the frames they are asked for, by design.

Queries that return host data, waiting for their own GPU work only:

* ``RayCaster.cast`` and the hello-triangle ``render_triangle`` (they return numpy arrays).
* ``AccelStructure.compact(wait=True)`` waits for the emitted compacted size (offline use;
  ``compact()`` without ``wait`` never waits).
* ``PathTracer.render`` waits for its image (and, on its first call, for the compacted
  size); ``PathTracer.close`` waits for the launches it enqueued.

Diagnostics (only while asked for):

* ``optixasync.diagnostics.blocks`` synchronizes the stream it probes.
* Starting a ``syncwatch`` may wait for queued GPU work (CUPTI's subscription).

Set-up time (never on the frame path):

* ``Context()`` creates the CUDA primary context and the OptiX device
  context (driver initialisation, a device synchronize), and (``warm_up=True``)
  builds, compacts and refits a one-triangle GAS and IAS and waits for them,
  so that OptiX loads the code of those operations here: loaded on first use
  inside a frame, it waited for all queued GPU work (50.9 ms measured).
* ``PathTracer()`` reads back emissive meshes given as device arrays, once, to
  build its emitter table.
* ``Context.create_module`` compiles with NVRTC and OptiX on the CPU
  (seconds on a cold cache, milliseconds on a warm one).
* ``Context.create_pipeline`` and program group creation compile on the CPU.
* The first allocations of a memory pool map new device or pinned memory
  (``cuMemAllocAsync`` growing the pool, ``cuMemHostAlloc``); later ones are
  served from the pools without a driver allocation.
* ``Context.close`` synchronizes the device before destroying the OptiX
  context, so no in-flight work refers to freed objects.

To check a program against this list, run it under ``optixasync syncwatch``
(``optixasync.diagnostics.syncwatch``): it reports every call that blocked
the host and the Python line that made it.
"""

from ._memory import DeviceMemory, PinnedBuffer, PinnedPool, device_pointer
from ._nvtx import enable_nvtx, nvtx_enabled, nvtx_range
from ._streams import StreamLike, create_stream, fence_event, record_event, stream_handle, timing_event

__all__ = [
    "DeviceMemory", "PinnedBuffer", "PinnedPool", "device_pointer",
    "enable_nvtx", "nvtx_enabled", "nvtx_range",
    "StreamLike", "create_stream", "fence_event", "record_event", "stream_handle", "timing_event",
]
