"""Device arrays of other libraries used in place, with their producers' stream order kept on the GPU.

:func:`consume_device_array` takes a device array of any library (PyTorch,
JAX, CuPy, Numba, ...) and the stream that will read it, and returns a
zero-copy CuPy view of its memory, what keeps that memory alive, and how the
stream was ordered after the producer's pending writes. The ordering is a
GPU-side wait, never a host synchronization:

* ``__cuda_array_interface__`` (CAI) version 3 names, in ``stream``, where the
  producer may still have work on the data: ``None`` (or no entry) means
  nothing is pending, ``1`` is the legacy default stream, ``2`` the
  per-thread default stream (that of the calling thread: the one a consumer
  can name), any other integer a ``cudaStream_t``; ``0`` is disallowed by
  the specification. An event is recorded on that stream and the consumer's
  stream waits for it (``cudaEventRecord`` + ``cudaStreamWaitEvent``). The
  view is built directly (``cupy.ndarray`` over ``cupy.cuda.UnownedMemory``),
  never with ``cupy.asarray``: CuPy's own import of a CAI object calls
  ``runtime.streamSynchronize(stream_ptr)`` when the dict has a stream
  (``_convert_object_with_cuda_array_interface`` in ``cupy/_core/core.pyx``,
  unless ``CUPY_CUDA_ARRAY_INTERFACE_SYNC=0``), a host wait.
* DLPack: ``__dlpack__(stream=<the consumer's stream>)``. By the protocol the
  consumer passes its stream and the producer makes it wait for its pending
  work: PyTorch records an event on its *current* stream and makes ours wait
  for it (``Tensor.__dlpack__``); JAX enqueues a wait for the buffer's
  definition event on our stream (``BufferToDLPackManagedTensor``); CuPy
  records on its current stream. The capsule becomes a CuPy array with
  ``cupy.from_dlpack(capsule)``, which for a capsule only reads its header
  (``_dlpack_to_cupy_array`` / ``DLPackMemory`` in ``cupy/_core/dlpack.pyx``:
  no CUDA call for ``kDLCUDA`` memory, ``cudaPointerGetAttributes`` for
  managed memory).

Which protocol, when an object offers several:

1. CAI version 3 first: it names the exact stream the producer's pending
   work is on, reading it runs no producer code, and no capsule (a one-shot
   object) is made. CuPy arrays take this path; their ``stream`` is CuPy's
   current stream, the one their ``__dlpack__`` would record on anyway.
2. DLPack next: it is the only protocol by which PyTorch and JAX state their
   stream order. Their CAI is version 2, without a stream entry
   (``Tensor.__cuda_array_interface__``; ``PyArray::CudaArrayInterface`` in
   jaxlib), so reading it says nothing about where the data is still being
   written; their ``__dlpack__`` orders our stream after that work.
3. CAI version 2 last, for producers with nothing else: version 2 says
   nothing about streams, so nothing is waited for; write such arrays on
   the stream you then pass to optixasync.

PyTorch's stream is its *current* stream: produce a tensor on a side stream
and hand it over inside ``with torch.cuda.stream(side):`` (or make the
current stream wait for the side stream first), as PyTorch itself requires.

Lifetime and reuse. The view's memory holds the producer object (and, for
DLPack, the imported capsule); keep the view as long as the GPU may read it
(optixasync's structures and scenes keep theirs, and hold them past their
last GPU use). The producer must not overwrite the memory before
optixasync's reads have run: order its stream after them, for instance
``torch.cuda.current_stream().wait_stream(torch.cuda.ExternalStream(stream.ptr))``
after a build on ``stream`` (a GPU-side wait).

Handing optixasync's arrays to other libraries
-----------------------------------------------
optixasync's device arrays (``RenderPipeline.accumulation``, a scene table's vertices,
images of a frame) are CuPy arrays: they export ``__dlpack__`` and
``__cuda_array_interface__`` themselves, without a copy. ``torch.from_dlpack(array)``
passes PyTorch's current stream to CuPy's ``__dlpack__(stream=...)``, which
records an event on CuPy's *current* stream and makes that stream wait for
it (``_ndarray_base.__dlpack__`` in ``cupy/_core/core.pyx``): a GPU-side
wait, no host synchronization. optixasync never enqueues work on CuPy's
current stream, so make the stream that wrote the array current for the call::

    with pipeline.stream:                               # the stream the frames ran on
        accum = torch.from_dlpack(pipeline.accumulation)  # PyTorch's current stream now waits for it, on the GPU

After a wait that covers the writes (``FrameHandle.result()``,
``FrameScheduler.drain()``, ``RenderPipeline.render()``) a plain
``torch.from_dlpack(array)`` is enough; other DLPack consumers that pass
their stream to ``__dlpack__`` work the same way. The tensor shares the memory (same
``data_ptr()``); keep the optixasync object that owns it alive while
PyTorch may still read it: optixasync frees its memory in the order of its
own stream, which knows nothing of PyTorch's.

Blocking calls
--------------
None. Reading ``__cuda_array_interface__`` or ``__dlpack_device__``,
``cudaPointerGetAttributes`` (the device of a CAI pointer), event creation,
``cudaEventRecord`` and ``cudaStreamWaitEvent`` return at once, and so do the
``__dlpack__`` of PyTorch and CuPy given a stream (an event record and a
stream wait). JAX's ``__dlpack__`` first acquires an external reference
to its buffer, which jaxlib's own source says "may block; there are no API
guarantees" (``BufferToDLPackManagedTensor``); given our stream, it then
waits for the buffer on that stream, not on the host.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..validation import DLPACK_CUDA_DEVICES, cuda_array_interface, dlpack_device, is_c_contiguous
from ._errors import cuda_errors
from ._events import record_event
from ._memory import _StreamOrderedAllocation
from ._streams import stream_handle, wait_event

__all__ = ["ConsumedArray", "consume_device_array", "is_library_array"]

#: ``cudaMemoryType`` of a pointer: what a device array's memory may be.
_MEMORY_DEVICE, _MEMORY_MANAGED = 2, 3
_MEMORY_KIND = {0: "unregistered host memory", 1: "pinned host memory", 2: "device memory", 3: "managed memory"}
#: DLPack device type of plain device memory (``kDLCUDA``); its id is the CUDA device ordinal.
_KDL_CUDA = 2
#: The DLPack version this consumer asks for at most (CuPy's importer reads 1.x and 0.x capsules).
_DLPACK_MAX_VERSION = (1, 0)


class ConsumedArray(NamedTuple):
    """A foreign device array seen as a CuPy array, and how the consumer's stream was ordered after it.

    Attributes
    ----------
    array : cupy.ndarray
        A C-contiguous view of the producer's memory (no copy). Its memory
        object holds :attr:`owner`: the view alone keeps the producer alive.
    owner : object
        What keeps the memory alive: the producer object (and, for DLPack,
        the view over the imported capsule, whose deleter releases it).
    protocol : str
        ``"cuda_array_interface"`` or ``"dlpack"``.
    producer_stream : int or None
        The CAI stream an event was recorded on (1: legacy default, 2:
        per-thread default, else a ``cudaStream_t``); None when there was
        nothing to wait for, the stream was the consumer itself, or the
        producer ordered itself (DLPack).
    event : cupy.cuda.Event or None
        The event recorded on :attr:`producer_stream` that the consumer's stream waits for.
    """

    array: Any
    owner: Any
    protocol: str
    producer_stream: int | None
    event: Any


class _Owner:
    """Keeps a producer alive (and, for DLPack, the imported capsule's view) while a view of its memory lives."""

    __slots__ = ("producer", "imported")

    def __init__(self, producer: Any, imported: Any = None) -> None:
        self.producer = producer
        self.imported = imported

    def __repr__(self) -> str:
        return f"<consumed {type(self.producer).__name__}>"


class _RawStream:
    """A raw stream handle where CuPy wants a stream object (``Event.record`` reads ``.ptr``); 1 and 2 included."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = int(ptr)


class _Interface(NamedTuple):
    """The parts of a ``__cuda_array_interface__`` dict a consumer uses."""

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...] | None
    version: int
    stream: int | None


# -- the public entry points ----------------------------------------------------------------------------------------
def consume_device_array(array: Any, stream: Any, *, name: str = "array", device: int | None = None,
                         dtype: Any = None) -> ConsumedArray:
    """A zero-copy CuPy view of a foreign device array, with ``stream`` ordered after its producer on the GPU.

    Parameters
    ----------
    array : object
        Anything with ``__cuda_array_interface__`` (version 2 or 3) or with
        ``__dlpack__`` and ``__dlpack_device__``: a PyTorch CUDA tensor, a
        JAX array, a CuPy or Numba array... (see the module docstring for
        which protocol is used, and why).
    stream : stream-like
        The consumer: the stream that will read the memory (not the legacy default stream).
    name : str
        The argument's name, for error messages.
    device : int, optional
        The CUDA device the consumer runs on (default: the current one); an
        array on another device is refused.
    dtype : dtype or tuple of dtypes, optional
        The accepted dtypes; any other is refused.

    Returns
    -------
    ConsumedArray
        ``array`` (the CuPy view), ``owner``, ``protocol``, ``producer_stream``, ``event``.

    Raises
    ------
    TypeError
        If ``array`` is not a device array.
    ValueError
        Naming ``name``: a non-contiguous array, another dtype than
        ``dtype``, memory on another device (naming both) or in host memory,
        a malformed interface, a producer that refuses to export, a capsule
        CuPy cannot import (its dtype, or a newer DLPack version). Raised
        before this function enqueues anything; a DLPack producer whose
        capsule shows the problem (layout, dtype) has already made
        ``stream`` wait for its work, which is harmless.
    """
    interface = cuda_array_interface(array)
    location = dlpack_device(array)
    dlpack_usable = location is not None and location[0] in DLPACK_CUDA_DEVICES
    if interface is None and not dlpack_usable:
        where = "" if location is None else f" (its DLPack device type {location[0]} is not CUDA memory)"
        raise TypeError(f"{name} must be a device array (with __cuda_array_interface__ or __dlpack__), "
                        f"got {type(array).__name__}{where}: pass a numpy array to have it uploaded")
    consumer = stream_handle(stream)
    expected = _current_device() if device is None else int(device)
    if interface is not None and (_version(interface) >= 3 or not dlpack_usable):
        return _consume_cai(array, interface, consumer, name, expected, dtype)
    return _consume_dlpack(array, location, consumer, name, expected, dtype)


def is_library_array(array: Any) -> bool:
    """Whether ``array`` is optixasync's own device memory: a :class:`DeviceMemory` block or a consumed view.

    Such arrays are ordered by the stream they are used on (the caller
    writes them there) and are not consumed again: CuPy's interface would
    otherwise name its current stream, which optixasync never uses.
    """
    import cupy

    if not isinstance(array, cupy.ndarray):
        return False
    return isinstance(getattr(array.data.mem, "_owner", None), (_StreamOrderedAllocation, _Owner))


# -- __cuda_array_interface__ ---------------------------------------------------------------------------------------
def parse_cuda_array_interface(interface: Any, name: str = "array") -> _Interface:
    """Check and unpack a ``__cuda_array_interface__`` dict (host-side; nothing is read from the device).

    Raises
    ------
    ValueError
        On a missing or malformed entry, a mask, a big-endian dtype or a stream of 0.
    """
    try:
        shape = tuple(int(s) for s in interface["shape"])
        dtype = np.dtype(interface["typestr"])
        ptr = int(interface["data"][0])
        strides = interface.get("strides")
        strides = None if strides is None else tuple(int(s) for s in strides)
        version = int(interface.get("version", 0))
        stream = interface.get("stream")
        stream = None if stream is None else int(stream)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ValueError(f"{name} has a malformed __cuda_array_interface__ ({type(exc).__name__}: {exc})") from None
    if interface.get("mask") is not None:
        raise ValueError(f"{name} is a masked array (__cuda_array_interface__ 'mask'): not supported")
    if dtype.byteorder == ">":
        raise ValueError(f"{name} has a big-endian dtype ({dtype.str}): not supported on the device")
    if stream is not None and stream <= 0:
        raise ValueError(f"{name}: __cuda_array_interface__ stream {stream} is not allowed (0 is ambiguous by the "
                         "specification: use None, 1 for the legacy or 2 for the per-thread default stream)")
    return _Interface(ptr, shape, dtype, strides, version, stream)


def stream_to_wait_for(producer_stream: int | None, consumer: int) -> int | None:
    """The stream the consumer must be ordered after, from a CAI ``stream`` entry; None when nothing is needed.

    None (nothing pending) and the consumer's own stream (already in order)
    need no wait; 1 (legacy default), 2 (per-thread default) and any
    ``cudaStream_t`` get an event recorded there.
    """
    if producer_stream is None or int(producer_stream) == int(consumer):
        return None
    return int(producer_stream)


def _version(interface: Any) -> int:
    try:
        return int(interface.get("version", 0))
    except (TypeError, ValueError):
        return 0


def _consume_cai(array: Any, interface: Any, consumer: int, name: str, device: int, dtype: Any) -> ConsumedArray:
    info = parse_cuda_array_interface(interface, name)
    _check_layout(name, info.shape, info.dtype, info.strides, dtype)
    nbytes = math.prod(info.shape) * info.dtype.itemsize
    if nbytes:
        _check_pointer(name, info.ptr, device)
    owner = _Owner(array)
    view = _view(info.ptr, info.shape, info.dtype, owner, device)
    # The producer's stream entry is honoured whatever the version (version 2 has none; honouring one costs a wait).
    producer = stream_to_wait_for(info.stream, consumer)
    event = _order_after(producer, consumer) if producer is not None else None
    return ConsumedArray(view, owner, "cuda_array_interface", producer, event)


def _check_pointer(name: str, ptr: int, device: int) -> None:
    """Refuse memory the consumer's device does not own (another GPU, or host memory)."""
    memory_type, pointer_device = _pointer_location(ptr)
    if memory_type not in (_MEMORY_DEVICE, _MEMORY_MANAGED):
        kind = _MEMORY_KIND.get(memory_type, f"memory of type {memory_type}")
        raise ValueError(f"{name} points to {kind}, not device memory: pass a numpy array to have it uploaded")
    if memory_type == _MEMORY_DEVICE and pointer_device != device:
        raise ValueError(_device_message(name, pointer_device, device))


def _pointer_location(ptr: int) -> tuple[int, int]:
    """(``cudaMemoryType``, device) of a pointer: ``cudaPointerGetAttributes``, a host-side query."""
    import cupy

    with cuda_errors("cudaPointerGetAttributes"):
        attributes = cupy.cuda.runtime.pointerGetAttributes(ptr)
    return int(attributes.type), int(attributes.device)


def _order_after(producer: int, consumer: int) -> Any:
    """Make ``consumer`` wait, on the GPU, for the work enqueued on ``producer`` so far; returns the event."""
    event = record_event(_RawStream(producer))
    wait_event(consumer, event)
    return event


# -- DLPack ------------------------------------------------------------------------------------------------------
def _consume_dlpack(array: Any, location: tuple[int, int], consumer: int, name: str, device: int,
                    dtype: Any) -> ConsumedArray:
    kind, index = location
    if kind == _KDL_CUDA and index != device:
        raise ValueError(_device_message(name, index, device))
    capsule = _export(array, consumer, name)  # the producer orders `consumer` after its pending work
    try:
        imported = _from_capsule(capsule)
    except (BufferError, NotImplementedError, TypeError, ValueError) as exc:
        # CuPy refuses dtypes it has no type for (TypeError, NotImplementedError) and capsules of a DLPack
        # version newer than it reads (BufferError): name the argument, as every other refusal here does.
        raise ValueError(f"{name} could not be imported from its DLPack capsule ({type(exc).__name__}: {exc})") from exc
    strides = tuple(int(s) for s in imported.strides)
    _check_layout(name, tuple(imported.shape), np.dtype(imported.dtype), strides, dtype)
    owner = _Owner(array, imported)
    view = _view(int(imported.data.ptr), tuple(imported.shape), np.dtype(imported.dtype), owner,
                 int(imported.data.device_id))
    return ConsumedArray(view, owner, "dlpack", None, None)


def _export(array: Any, consumer: int, name: str) -> Any:
    """``array.__dlpack__`` with the consumer's stream, no copy; older producers get ``stream`` alone."""
    try:
        try:
            return array.__dlpack__(stream=consumer, max_version=_DLPACK_MAX_VERSION, copy=False)
        except TypeError:  # a producer before DLPack 1.0 (no max_version, no copy): what CuPy and PyTorch do too
            return array.__dlpack__(stream=consumer)
    except (BufferError, RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(f"{name} could not be exported through DLPack ({type(exc).__name__}: {exc})") from exc


def _from_capsule(capsule: Any) -> Any:
    """``cupy.from_dlpack`` of a capsule: reads its header, makes no CUDA call for device memory."""
    import cupy

    return cupy.from_dlpack(capsule)


# -- shared ------------------------------------------------------------------------------------------------------
def _check_layout(name: str, shape: tuple[int, ...], dtype: np.dtype, strides: Any, accepted: Any) -> None:
    if accepted is not None:
        allowed = tuple(np.dtype(d) for d in (accepted if isinstance(accepted, (tuple, list)) else (accepted,)))
        if dtype not in allowed:
            names = " or ".join(d.name for d in allowed)
            raise ValueError(f"{name} must have dtype {names}, got {dtype}")
    if not is_c_contiguous(shape, strides, dtype.itemsize):
        raise ValueError(f"{name} must be C-contiguous to be used in place (shape {shape}, byte strides {strides}); "
                         "make a contiguous copy first (tensor.contiguous(), cupy.ascontiguousarray)")


def _device_message(name: str, found: int, expected: int) -> str:
    return (f"{name} is on CUDA device {found}, but the optixasync context is on device {expected}: "
            f"move it there first (e.g. tensor.to('cuda:{expected}'))")


def _view(ptr: int, shape: tuple[int, ...], dtype: np.dtype, owner: Any, device: int) -> Any:
    """A C-contiguous CuPy array over ``ptr`` whose memory holds ``owner``; no CUDA call (the device is given)."""
    import cupy

    nbytes = math.prod(shape) * dtype.itemsize
    memory = cupy.cuda.UnownedMemory(ptr, nbytes, owner, device)
    return cupy.ndarray(shape, dtype, memptr=cupy.cuda.MemoryPointer(memory, 0))


def _current_device() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDevice())
