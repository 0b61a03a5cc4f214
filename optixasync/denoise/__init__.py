"""Denoising on the frame stream, with Intel Open Image Denoise (OIDN) as the backend.

:class:`Denoiser` runs OIDN's ``RT`` filter (HDR or LDR color, optional
albedo and normal guides, clean or prefiltered guides, three quality modes)
on device arrays, enqueued on a non-blocking CUDA stream of our own:
``denoise()`` returns without waiting. A CPU variant (OIDN's CPU device,
numpy arrays) serves tests and machines without a GPU.
:func:`available_denoisers` tells which backends work here, and why not.

Install with ``pip install 'optixasync[denoise]'`` (the ``pyoidn`` wheel,
which bundles OIDN's C libraries). OIDN is loaded on first use; without it
the denoiser raises :class:`MissingExtraError`.

Why OIDN and not the OptiX AI denoiser
--------------------------------------
The OptiX denoiser needs the driver's weights file
``/usr/share/nvidia/nvoptix.bin``, which many containers lack (it comes with
the driver's graphics capability): on our H200 host ``optixDenoiserCreate``
returns 7990 for that reason. optixasync has no OptiX-denoiser backend
because we cannot verify one on a GPU that has the weights;
:func:`available_denoisers` reports its status. OIDN 2.x runs on CUDA,
on the stream we give it: on an H200, 1920x1080 HDR with albedo and normal
guides takes 6.56 / 3.36 / 2.19 ms of GPU time in the high / balanced /
fast modes, and ``denoise()`` returns to the host in 0.15 to 0.18 ms
(``benchmarks/bench_denoise.py``).

Why OIDN's C API through ctypes, not ``pyoidn``'s Python API
------------------------------------------------------------
We need (a) a CUDA device bound to our stream (``oidnNewCUDADevice`` with
a device id and a stream), (b) our device pointers used without a copy,
(c) asynchronous execution (``oidnExecuteFilterAsync``) and (d) the CPU
device for tests. ``pyoidn``'s classes give (d) but not (a)-(c) for CuPy:
``Device.from_torch`` is the only way to a CUDA device and needs PyTorch,
``Filter.set_image`` takes numpy arrays, OIDN buffers or PyTorch tensors
and silently ignores anything else (a CuPy array) when PyTorch is
installed, and ``import pyoidn`` imports PyTorch when it is installed. Its
wrappers do not check errors either. So we use only the C library bundled
in the wheel (located with ``importlib.util.find_spec("pyoidn")``, none of
its Python code runs) through our own ctypes declarations of the ~25
functions of ``oidn.h`` we call, as optixasync does for the OptiX driver
library: no compile step, the GIL released during every call, and exactly
the calls we audit below (ctypes rather than cffi: plain C functions need
nothing more than the standard library). On a GPU host, a ``pyoidn`` with
only its CUDA device library is enough; a library on ``LD_LIBRARY_PATH``
is found too. Device arrays are shared with OIDN through
``oidnSetSharedFilterImage`` (pointer, pixel and row byte strides): the
same zero-copy sharing as ``oidnNewSharedBuffer`` + ``oidnSetFilterImage``,
without one more OIDN object per array to create and release.

Frames in flight
----------------
All of a denoiser's work runs on its stream, in submission order; inputs
are read and the output written after ``denoise()`` returns. Until that
work has passed, the caller must not write the inputs, read the output or
free them; pass ``stream=`` (the stream producing the inputs) to order the
work with that stream without a host wait. OIDN binds image pointers to a
committed filter, so the denoiser keeps one committed filter set per buffer
set, in a bounded cache (``DenoiseOptions.max_filters``): N frame slots with
N buffer sets each reuse their own filters, and a steady-state frame makes
no commit, only the executions (the :class:`Denoise` stage sizes the cache to the
scheduler's slots; a GPU test checks that 20 frames over 5 slots commit 5
filter sets and re-bind none). On OIDN's CPU device, re-binding a filter
to new pointers and committing does not re-initialize it (the next
execution takes as long as the ones before), while a commit that changes
the size does (allocation and weight preparation; on CUDA, device
allocations).
When the cache is full, a new buffer set takes over the least recently used
filters by such a pointer-only re-bind, rather than releasing filters that
queued work may still use.

Blocking calls
--------------
Set-up time (never on the frame path):

* ``Denoiser()``: ``oidnIsCUDADeviceSupported`` and ``oidnNewCUDADevice`` +
  ``oidnCommitDevice`` initialise OIDN's CUDA runtime on the device, query
  it and load its kernels (the first time, CUDA initialisation); a CPU
  device starts a thread pool. The first use also loads OIDN's libraries.
* ``prepare()``, or the first ``denoise()`` of a buffer set:
  ``oidnNewFilter`` + ``oidnCommitFilter``. The first commit of a filter
  initialises it (OIDN may defer part of that to the first execution):
  builds the network, plans and allocates its scratch memory (on CUDA
  ``cudaMalloc``, which may synchronize the device) and prepares the weights.
  Call ``prepare()`` once per frame slot's buffers before the frame loop.
* With ``prefilter_aux=True``, the first binding after creation or a resize
  allocates one OIDN buffer per guide for the prefiltered guides
  (``oidnNewBuffer``, in OIDN's default storage: an allocation that may
  synchronize the device).
* A buffer set that takes over cached filters (the cache is full) re-sets
  images and commits: with the same strides and in-place mode as the
  filters had, a pointer-only change that does not re-initialize (measured
  on the CPU device); otherwise a re-initialization, as a first commit.
  Size ``max_filters`` to the number of buffer sets to avoid this.
* ``resize()``: ``oidnSyncDevice`` (waits for the queued work, because it
  releases the filters and buffers that work uses), then
  ``oidnReleaseFilter`` / ``oidnReleaseBuffer`` (``cudaFree`` may
  synchronize the device); the next binding of each buffer set commits
  again at the new size, as above.
* ``available_denoisers()``: creates, commits and releases one OIDN device
  per backend (diagnostics).

Fences (waiting is what they are for):

* ``synchronize()``: ``oidnSyncDevice``, waits for all the denoiser's work.
* ``close()``: ``oidnSyncDevice``, then releases filters, buffers and the
  device. A denoiser garbage-collected without ``close()`` is closed then,
  with a ``ResourceWarning``.
* ``oidnExecuteFilter`` (the synchronous variant) is never used on 'cuda';
  a 'cpu' denoiser uses it by design (the host is its device).

The frame path (``denoise()`` of a cached buffer set) calls only
``oidnExecuteFilterAsync`` (one per filter: 1, plus one per prefiltered
guide), ``oidnGetDeviceError`` (reads the error OIDN stored for the
calling thread: errors of GPU work appear at a later call of that thread) and, with ``stream=`` another stream,
``cudaEventRecord`` + ``cudaStreamWaitEvent``: none of them waits. The
``stream`` field of ``__cuda_array_interface__`` is ignored rather than
waited on.
"""

from __future__ import annotations

from ._available import OPTIX_WEIGHTS_FILE, available_denoisers
from ._denoiser import Denoiser, DenoiserStats
from ._errors import DenoiseError, DeviceUnsupportedError, MissingExtraError, OidnError
from ._oidn import oidn_library_path
from ._options import DenoiseOptions
from ._stage import GUIDED, Denoise

__all__ = [
    "Denoise",
    "GUIDED",
    "DenoiseError",
    "DeviceUnsupportedError",
    "DenoiseOptions",
    "Denoiser",
    "DenoiserStats",
    "MissingExtraError",
    "OPTIX_WEIGHTS_FILE",
    "OidnError",
    "available_denoisers",
    "oidn_library_path",
]
