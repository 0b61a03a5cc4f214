"""Device memory from CUDA's stream-ordered allocator, and pooled pinned host memory.

Device allocations come from one ``cupy.cuda.MemoryAsyncPool``
(``cudaMallocAsync``/``cudaFreeAsync``): allocation and release are ordered
on a stream and never synchronize the device. Host staging memory is
page-locked and pooled by size (``cupy.cuda.PinnedMemoryPool``), so that
host-to-device and device-to-host copies are truly asynchronous.

Blocking calls: a pool's first allocations of a size map new memory
(``cuMemHostAlloc`` for pinned memory can take milliseconds); later ones are
served from the pool.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ._streams import stream_handle

__all__ = ["DeviceMemory", "PinnedBuffer", "PinnedPool", "device_pointer"]


class DeviceMemory:
    """Stream-ordered device allocations (``cudaMallocAsync``) for one device."""

    def __init__(self) -> None:
        import cupy

        self._pool = cupy.cuda.MemoryAsyncPool()

    def alloc(self, nbytes: int, stream: Any) -> Any:
        """A ``cupy.cuda.MemoryPointer`` of ``nbytes``, allocated in the order of ``stream``.

        The memory is released with ``cudaFreeAsync`` on the same stream when
        the last reference goes away; users of the memory on other streams
        must keep a reference until their work is fenced.
        """
        # CuPy's async pool reads the current stream; set it only around the call.
        with _current_stream(stream):
            return self._pool.malloc(max(int(nbytes), 1))

    def empty(self, shape: Any, dtype: Any, stream: Any) -> Any:
        """An uninitialised ``cupy.ndarray`` backed by :meth:`alloc`."""
        import cupy

        dtype = np.dtype(dtype)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return cupy.ndarray(shape, dtype, memptr=self.alloc(size, stream))

    def used_bytes(self) -> int:
        return int(self._pool.used_bytes())


@contextlib.contextmanager
def _current_stream(stream: Any):
    import cupy

    previous = cupy.cuda.get_current_stream()
    stream.use()
    try:
        yield
    finally:
        previous.use()


def device_pointer(obj: Any) -> int:
    """The device address of a ``cupy.ndarray``, ``MemoryPointer``, ``__cuda_array_interface__`` object or int."""
    if isinstance(obj, int):
        return obj
    interface = getattr(obj, "__cuda_array_interface__", None)
    if interface is not None:
        return int(interface["data"][0])
    if hasattr(obj, "ptr"):
        return int(obj.ptr)
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
        count = self.nbytes // dtype.itemsize if shape is None else int(np.prod(shape, dtype=np.int64))
        array = np.frombuffer(self._memory, dtype=dtype, count=count)
        return array if shape is None else array.reshape(shape)

    def copy_to_device_async(self, dst: Any, stream: Any, nbytes: int | None = None) -> None:
        """Enqueue a host-to-device copy into ``dst`` (a MemoryPointer or cupy array) on ``stream``."""
        import cupy

        nbytes = self.nbytes if nbytes is None else int(nbytes)
        cupy.cuda.runtime.memcpyAsync(
            device_pointer(dst), self.ptr, nbytes, cupy.cuda.runtime.memcpyHostToDevice, stream_handle(stream)
        )

    def copy_from_device_async(self, src: Any, stream: Any, nbytes: int | None = None) -> None:
        """Enqueue a device-to-host copy from ``src`` into this buffer on ``stream``."""
        import cupy

        nbytes = self.nbytes if nbytes is None else int(nbytes)
        cupy.cuda.runtime.memcpyAsync(
            self.ptr, device_pointer(src), nbytes, cupy.cuda.runtime.memcpyDeviceToHost, stream_handle(stream)
        )


class PinnedPool:
    """Page-locked host memory pooled by size.

    Buffers return to the pool when released; callers own the rule that a
    buffer is released only after the GPU work that reads or writes it has
    passed its fence.
    """

    def __init__(self) -> None:
        import cupy

        self._pool = cupy.cuda.PinnedMemoryPool()

    def allocate(self, nbytes: int) -> PinnedBuffer:
        return PinnedBuffer(self._pool.malloc(max(int(nbytes), 1)), nbytes)

    def array(self, shape: Any, dtype: Any) -> tuple[PinnedBuffer, np.ndarray]:
        """A pinned buffer and its numpy view of ``shape`` and ``dtype``."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        buffer = self.allocate(nbytes)
        return buffer, buffer.view(dtype, shape)
