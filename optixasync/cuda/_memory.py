"""Device memory from CUDA's stream-ordered allocator, and pooled pinned host memory.

Device allocations are ``cudaMallocAsync`` on an explicit stream from the
device's current memory pool, released with ``cudaFreeAsync`` on the same
stream when their last reference goes away: allocation and release are
ordered on a stream and never synchronize the device. (CuPy's
``MemoryAsyncPool`` does the same, but reads the *current* stream, so every
call needs a stream switch; calling the runtime directly costs about 3 us
instead of 10 to 55 us per allocation, measured on an H200.) The pool keeps
freed memory mapped (release threshold: unlimited), so a re-allocation
does not map new pages. While a stream is being captured into a CUDA graph, an allocation on it is
refused and a free on it is deferred to the graph's end (see :mod:`._capture`). Host staging memory is
page-locked and pooled by size
(``cupy.cuda.PinnedMemoryPool``), so that host-to-device and device-to-host
copies are truly asynchronous.

Blocking calls
--------------
A pool's first allocations of a size map new memory (``cuMemAllocAsync``
growing the device pool, ``cuMemHostAlloc`` for pinned memory, which can
take milliseconds); later ones are served from the pools without a driver
allocation. Copies are ``cudaMemcpyAsync`` between pinned and device memory:
asynchronous. :meth:`DeviceMemory.scope` and :func:`use_device` only set
CuPy's per-thread state.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import CudaError
from ._capture import capture_lock, capture_of, refuse
from ._errors import cuda_errors, reraise
from ._streams import stream_handle

__all__ = ["DeviceMemory", "PinnedBuffer", "PinnedPool", "device_pointer", "use_device"]


@functools.lru_cache(maxsize=1)
def _runtime() -> Any:
    """CuPy's runtime module (looked up once: the copies of a frame call it several times)."""
    import cupy

    return cupy.cuda.runtime


def use_device(device_id: int) -> None:
    """Make CUDA device ``device_id`` current in this thread (CuPy's current device is per thread).

    Every thread that works with a context's arrays calls it once first, on the context's ``device_id``: a
    worker thread, a viewer's render loop, the completion of a job on another thread.
    """
    import cupy

    with cuda_errors(f"making CUDA device {device_id} current"):
        cupy.cuda.Device(int(device_id)).use()


@contextlib.contextmanager
def on_device(device_id: int) -> Iterator[None]:
    """Make CUDA device ``device_id`` current in this thread for the ``with`` block, then restore the previous one.

    For creating objects that belong to a device (streams, events) from a thread whose current device is
    another; it launches nothing and does not stand for a stream.
    """
    import cupy

    with cuda_errors(f"making CUDA device {device_id} current"):
        scope = cupy.cuda.Device(int(device_id))
        scope.__enter__()
    try:
        yield
    finally:
        scope.__exit__(None, None, None)


# Streams with live allocations, kept here (reachable from the module, never
# part of a garbage cycle) until their last allocation is freed: CuPy destroys
# a stream in its finalizer, and when a stream and an allocation die in the
# same garbage cycle the finalizers run in any order, so a reference held by
# the allocation alone could leave cudaFreeAsync a destroyed stream.
_streams_in_use: dict[int, list[Any]] = {}  # handle -> [stream object, live allocations]
_streams_lock = threading.RLock()  # re-entrant: a collection can run a finalizer while it is held
_exiting = False


@atexit.register
def _mark_exit() -> None:
    global _exiting
    _exiting = True  # the CUDA context may already be gone: leave the memory to the driver


def _count(shape: Any) -> int:
    """Elements of ``shape`` (an int or a sequence of ints); ``math.prod`` costs a tenth of ``numpy.prod`` here."""
    if isinstance(shape, (int, np.integer)):
        return int(shape)
    return math.prod(shape) if isinstance(shape, tuple) else math.prod(int(s) for s in shape)


class _StreamOrderedAllocation:
    """Owns one ``cudaMallocAsync`` block; frees it on its stream when collected."""

    __slots__ = ("ptr", "nbytes", "_stream_handle", "_runtime")

    def __init__(self, runtime: Any, nbytes: int, stream: Any) -> None:
        handle = stream_handle(stream)
        if capture_of(handle) is not None:
            refuse(f"a device allocation of {nbytes} bytes on the captured stream (cudaMallocAsync would become a "
                   "graph memory node, allocated anew at every launch): allocate it before the capture, as a "
                   "frame's slot buffer (frame.buffer in the frame's body) or with the object that uses it")
        try:
            self.ptr = runtime.mallocAsync(nbytes, handle)
        except Exception as exc:
            reraise(exc, f"cudaMallocAsync of {nbytes} bytes")
        self._runtime = runtime
        self._stream_handle = handle
        self.nbytes = nbytes
        with _streams_lock:
            entry = _streams_in_use.get(handle)
            if entry is None:
                _streams_in_use[handle] = [stream, 1]
            else:
                entry[1] += 1

    def __del__(self) -> None:
        ptr = getattr(self, "ptr", None)  # unset when cudaMallocAsync itself raised (out of memory)
        if _exiting or ptr is None:
            return
        free = functools.partial(_free_block, self._runtime, ptr, self._stream_handle)
        with capture_lock:  # a capture starting now either sees this free enqueued before it, or defers it
            capture = capture_of(self._stream_handle)
            if capture is None:
                free()
                return
        # The stream is being captured: a free enqueued now would be captured (and replayed). The captured work
        # may read this block, so it lives as long as the graph and is freed with it.
        capture.defer_free(free)


def _free_block(runtime: Any, ptr: int, handle: int) -> None:
    """``cudaFreeAsync`` of one block on its stream, and the stream's bookkeeping."""
    try:
        runtime.freeAsync(ptr, handle)
    except Exception:  # a context already destroyed: nothing left to free into
        pass
    with _streams_lock:
        entry = _streams_in_use.get(handle)
        if entry is not None:
            entry[1] -= 1
            if entry[1] == 0:
                del _streams_in_use[handle]


class DeviceMemory:
    """Stream-ordered device allocations (``cudaMallocAsync``) for one device.

    Parameters
    ----------
    device_id : int, optional
        The CUDA device (default: CuPy's current one). Allocations come from
        the pool of the stream's device; the arrays are labelled with this one.
    """

    def __init__(self, device_id: int | None = None) -> None:
        import cupy

        self._cupy = cupy
        self._runtime = cupy.cuda.runtime
        self._device_id = cupy.cuda.Device().id if device_id is None else int(device_id)
        self._pool = self._runtime.deviceGetMemPool(self._device_id)
        # Keep freed blocks mapped: with the default threshold (0) the pool may
        # unmap them at every synchronization and re-map on the next build.
        self._runtime.memPoolSetAttribute(self._pool, self._runtime.cudaMemPoolAttrReleaseThreshold, 2**64 - 1)

    def alloc(self, nbytes: int, stream: Any) -> Any:
        """A ``cupy.cuda.MemoryPointer`` of ``nbytes``, allocated in the order of ``stream``.

        The memory is released with ``cudaFreeAsync`` on the same stream when
        the last reference goes away; users of the memory on other streams
        must keep a reference until their work is fenced.
        """
        nbytes = max(int(nbytes), 1)
        owner = _StreamOrderedAllocation(self._runtime, nbytes, stream)
        memory = self._cupy.cuda.UnownedMemory(owner.ptr, nbytes, owner, self._device_id)
        return self._cupy.cuda.MemoryPointer(memory, 0)

    def empty(self, shape: Any, dtype: Any, stream: Any) -> Any:
        """An uninitialised ``cupy.ndarray`` backed by :meth:`alloc`."""
        dtype = np.dtype(dtype)
        size = _count(shape) * dtype.itemsize
        return self._cupy.ndarray(shape, dtype, memptr=self.alloc(size, stream))

    @contextlib.contextmanager
    def scope(self, stream: Any) -> Iterator[None]:
        """CuPy array expressions inside run on ``stream`` and allocate from this stream-ordered pool on it.

        The one place where the library sets CuPy's current stream and allocator: CuPy's array operations
        (``cupy.cumsum``, slicing assignment, ...) read both from its per-thread state. Their temporaries are
        freed on ``stream`` once the kernels that use them have run (CuPy's own pool would ``cudaMalloc`` them
        and keep them: 671 MB after a 4096 x 2049 environment map). Arrays made inside that must outlive the
        kernels reading them are the caller's to keep.
        """
        import cupy

        cupy_stream = stream if isinstance(stream, cupy.cuda.Stream) else None
        if cupy_stream is None:
            from ._streams import as_cupy_stream

            cupy_stream = as_cupy_stream(stream)
        with cupy_stream, cupy.cuda.using_allocator(lambda nbytes: self.alloc(nbytes, cupy_stream)):
            yield

    def trim(self) -> None:
        """Give the pool's unused memory back to the driver (``cudaMemPoolTrimTo``; at tear-down).

        The pool keeps freed blocks mapped for reuse (its release threshold is
        unlimited); a closed context trims it so that the process holds no
        device memory it does not use.
        """
        try:
            self._runtime.memPoolTrimTo(self._pool, 0)
        except Exception as exc:
            reraise(exc, "cudaMemPoolTrimTo")

    def used_bytes(self) -> int:
        """Bytes currently allocated from the device's pool, by anyone using it (a query; never waits).

        Long-running loops read it to check that device memory stays flat.
        """
        with cuda_errors("cudaMemPoolGetAttribute"):
            return int(self._runtime.memPoolGetAttribute(self._pool, self._runtime.cudaMemPoolAttrUsedMemCurrent))


def device_pointer(obj: Any) -> int:
    """The device address of a ``cupy.ndarray``, ``MemoryPointer``, ``__cuda_array_interface__`` object or int.

    A ``MemoryPointer``'s ``ptr`` and a CuPy array's ``data.ptr`` are read first: CuPy builds its
    ``__cuda_array_interface__`` afresh on every access (a dictionary, the dtype's description and the
    current stream, several microseconds), and this is called on every copy of a frame.
    """
    if isinstance(obj, int):
        return obj
    ptr = getattr(obj, "ptr", None)
    if ptr is None:
        ptr = getattr(getattr(obj, "data", None), "ptr", None)
    if isinstance(ptr, int):
        return ptr
    interface = getattr(obj, "__cuda_array_interface__", None)
    if interface is not None:
        return int(interface["data"][0])
    raise TypeError(f"expected device memory, got {type(obj).__name__}")


class PinnedBuffer:
    """A page-locked host buffer with a numpy view.

    Attributes
    ----------
    ptr : int
        Host address, usable as the source or target of async copies.
    nbytes : int
        Size in bytes.
    """

    def __init__(self, memory: Any, nbytes: int) -> None:
        self._memory = memory  # keeps the pinned block alive (returned to its pool on release)
        self.nbytes = int(nbytes)
        self.ptr = int(memory.ptr)

    def view(self, dtype: Any, shape: Any = None) -> np.ndarray:
        """A numpy array over the buffer (no copy)."""
        dtype = np.dtype(dtype)
        count = self.nbytes // dtype.itemsize if shape is None else _count(shape)
        array = np.frombuffer(self._memory, dtype=dtype, count=count)
        return array if shape is None else array.reshape(shape)

    def copy_to_device_async(self, dst: Any, stream: Any, nbytes: int | None = None) -> None:
        """Enqueue a host-to-device copy into ``dst`` (a MemoryPointer, cupy array or address) on ``stream``."""
        # Every frame makes these copies: plain ints (an address, a raw stream handle) skip the converters' calls.
        nbytes = self.nbytes if nbytes is None else nbytes if type(nbytes) is int else int(nbytes)
        dst = dst if type(dst) is int else device_pointer(dst)
        handle = stream if type(stream) is int and stream > 1 else stream_handle(stream)
        try:
            _runtime().memcpyAsync(dst, self.ptr, nbytes, 1, handle)  # cudaMemcpyHostToDevice
        except Exception as exc:
            reraise(exc, "cudaMemcpyAsync (host to device)")

    def copy_from_device_async(self, src: Any, stream: Any, nbytes: int | None = None) -> None:
        """Enqueue a device-to-host copy from ``src`` into this buffer on ``stream``."""
        nbytes = self.nbytes if nbytes is None else nbytes if type(nbytes) is int else int(nbytes)
        src = src if type(src) is int else device_pointer(src)
        handle = stream if type(stream) is int and stream > 1 else stream_handle(stream)
        try:
            _runtime().memcpyAsync(self.ptr, src, nbytes, 2, handle)  # cudaMemcpyDeviceToHost
        except Exception as exc:
            reraise(exc, "cudaMemcpyAsync (device to host)")


class PinnedPool:
    """Page-locked host memory pooled by size.

    Buffers return to the pool when released; callers own the rule that a
    buffer is released only after the GPU work that reads or writes it has
    passed its fence.
    """

    def __init__(self) -> None:
        import cupy

        self._pool = cupy.cuda.PinnedMemoryPool()

    def release(self) -> None:
        """Free the pool's unused blocks now (``cuMemFreeHost``, which may synchronize: at tear-down only)."""
        self._pool.free_all_blocks()

    def allocate(self, nbytes: int) -> PinnedBuffer:
        """A pinned buffer of ``nbytes`` (from the pool when one of that size is free).

        Raises
        ------
        CudaError
            If the pinned allocation fails.
        """
        try:
            memory = self._pool.malloc(max(int(nbytes), 1))
        except MemoryError as exc:  # CuPy's OutOfMemoryError
            raise CudaError(2, "cudaErrorMemoryAllocation", f"pinned allocation of {nbytes} bytes failed ({exc})") from exc
        except Exception as exc:
            reraise(exc, f"pinned allocation of {nbytes} bytes")
        return PinnedBuffer(memory, nbytes)

    def array(self, shape: Any, dtype: Any) -> tuple[PinnedBuffer, np.ndarray]:
        """A pinned buffer and its numpy view of ``shape`` and ``dtype``."""
        dtype = np.dtype(dtype)
        nbytes = _count(shape) * dtype.itemsize
        buffer = self.allocate(nbytes)
        return buffer, buffer.view(dtype, shape)

    def download(self, device_array: Any, stream: Any) -> np.ndarray:
        """Enqueue a copy of ``device_array`` into a pinned buffer of this pool; its numpy view (no copy).

        The view holds the pinned block (it goes back to the pool with the last view). Its contents are
        valid once ``stream`` has passed this point: wait for an event recorded after it, or deliver it
        behind a frame's fence.
        """
        if capture_of(stream_handle(stream)) is not None:
            refuse("a download into a newly leased pinned buffer on the captured stream (every launch of the "
                   "graph would copy into that one buffer): read back into a fixed destination (frame.readback)")
        buffer, view = self.array(device_array.shape, device_array.dtype)
        buffer.copy_from_device_async(device_array, stream, int(device_array.nbytes))
        return view
