"""The :class:`Denoiser`: Intel Open Image Denoise filters enqueued on the frame stream.

Blocking calls
--------------
The full list, with the reasons, is in the docstring of
:mod:`optixasync.denoise`. In short:

* set-up: ``Denoiser()`` (device creation and commit), :meth:`Denoiser.prepare`
  or the first :meth:`Denoiser.denoise` of a buffer set (filter creation and
  commit, guide buffers), :meth:`Denoiser.resize` (waits, releases; the next
  binding commits again);
* fences: ``oidnSyncDevice`` in :meth:`Denoiser.synchronize`,
  :meth:`Denoiser.resize` and :meth:`Denoiser.close` (and the finalizer of
  an unclosed denoiser, which closes it);
* the frame path (:meth:`Denoiser.denoise` of a cached buffer set) makes only
  ``oidnExecuteFilterAsync``, ``oidnGetDeviceError`` and, when ``stream=``
  is another stream, ``cudaEventRecord`` + ``cudaStreamWaitEvent``: none waits.
"""

from __future__ import annotations

import atexit
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from ..validation import as_int, coerce_options
from ._cache import FilterCache
from ._device import OidnDevice
from ._errors import DenoiseError, OidnError
from ._filters import FilterBinder, FilterSet
from ._images import BufferSet, check_aliasing, describe_image
from ._oidn import load_library, version_string
from ._options import DenoiseOptions
from ._streams import stream_handle

__all__ = ["Denoiser", "DenoiserStats"]

_KINDS = ("cuda", "cpu")
_exiting = False


@atexit.register
def _mark_exit() -> None:
    global _exiting
    _exiting = True  # OIDN and CUDA may be half torn down: finalizers leave their handles alone


@dataclass(frozen=True)
class DenoiserStats:
    """What a :class:`Denoiser` has done so far (a snapshot).

    Attributes
    ----------
    frames : int
        ``denoise`` calls that enqueued work.
    cache_hits : int
        ``denoise`` (or ``prepare``) calls whose buffer set had committed
        filters: no commit, no OIDN call but the executions.
    filter_sets_created : int
        Buffer sets given new filters (``oidnNewFilter`` + commit: set-up cost).
    filter_sets_rebound : int
        Buffer sets that took over the least recently used filters of a full
        cache (images re-set + commit; a pointer-only change does not re-initialize).
    commits : int
        ``oidnCommitFilter`` calls.
    resizes : int
        Size changes (``resize`` with a new size).
    cached : int
        Filter sets in the cache now.
    """

    frames: int = 0
    cache_hits: int = 0
    filter_sets_created: int = 0
    filter_sets_rebound: int = 0
    commits: int = 0
    resizes: int = 0
    cached: int = 0


def _size(name: str, value: Any) -> int:
    return as_int(name, value, 1, 1 << 16)


def _device_id(device: str, device_id: Any) -> int | None:
    if device not in _KINDS:
        raise ValueError(f"device must be one of {list(_KINDS)}, got {device!r}")
    if device == "cpu":
        return None
    return as_int("device_id", device_id, 0)


class Denoiser:
    """Intel Open Image Denoise's ``RT`` filter, enqueued on a CUDA stream without waiting.

    Parameters
    ----------
    width, height : int
        Image size in pixels; change it with :meth:`resize`.
    options : DenoiseOptions, dict or None
        What to filter and how (HDR or not, guides, quality, cache bound);
        None gives the defaults (HDR color, no guides, high quality).
    device : {"cuda", "cpu"}
        ``"cuda"``: OIDN's CUDA device, bound to ``stream``, taking device
        arrays. ``"cpu"``: OIDN's CPU device, taking numpy arrays, each
        :meth:`denoise` finished when it returns (for tests and machines
        without a GPU).
    device_id : int
        CUDA device ordinal ('cuda' only).
    stream : cupy.cuda.Stream, object with ``__cuda_stream__``, int or None
        The non-blocking stream OIDN runs on ('cuda' only). None creates a
        new non-blocking stream, kept in :attr:`stream`. The legacy default
        stream is refused. A stream object is kept alive by the denoiser;
        for an int handle, the caller keeps the stream alive until
        :meth:`close`.

    Raises
    ------
    MissingExtraError
        If ``pyoidn`` (which brings OIDN's library) is not installed, or CuPy for 'cuda'.
    TypeError, ValueError
        On bad arguments (checked before any OIDN call).
    DenoiseError
        If OIDN does not support the device, or is older than 2.0.
    OidnError
        If OIDN refuses to create or commit the device.

    Notes
    -----
    **Frames in flight.** All work of a denoiser runs on its stream, in
    submission order. :meth:`denoise` reads ``color``/``albedo``/``normal``
    and writes ``output`` after it returns, on the GPU: until that work has
    passed (a fence after it on the stream), the caller must not write the
    inputs, read the output, or free any of them. With ``stream=`` naming the
    stream that produces the inputs and consumes the output, that is
    automatic for work on that stream: the denoise waits for what was
    enqueued there before, and what is enqueued there after waits for the
    denoise. A frame pipeline whose host runs N frames ahead, and whose
    buffers are also touched by the host or by other streams (uploads,
    readbacks), gives each frame slot its own buffers, so that frame k+1
    never writes what the denoise of frame k may still read, and sets
    ``max_filters >= N``: each slot then finds its filters committed and a
    frame costs only the executions. The denoiser keeps a reference to the
    arrays of each cached buffer set (a guard against early frees, not a
    substitute for the fence).
    OIDN's filters bind image pointers: a new buffer set is bound once
    (``oidnNewFilter`` + commit, set-up cost; do it ahead with
    :meth:`prepare`), and kept in a bounded cache. Internal buffers (OIDN's
    scratch memory, the prefiltered guides) are shared by all buffer sets;
    they are used only on the denoiser's stream, in order, so consecutive
    frames cannot race on them.

    Examples
    --------
    >>> import cupy  # doctest: +SKIP
    >>> stream = cupy.cuda.Stream(non_blocking=True)  # doctest: +SKIP
    >>> den = Denoiser(1920, 1080, {"albedo": True, "normal": True, "clean_aux": True}, stream=stream)  # doctest: +SKIP
    >>> for color, output, albedo, normal in slots:  # per frame slot, at set-up  # doctest: +SKIP
    ...     den.prepare(color, output, albedo, normal)
    >>> den.denoise(*slots[frame % len(slots)])  # in the frame: returns at once  # doctest: +SKIP
    """

    def __init__(
        self,
        width: int,
        height: int,
        options: DenoiseOptions | dict[str, Any] | None = None,
        *,
        device: str = "cuda",
        device_id: int = 0,
        stream: Any = None,
    ) -> None:
        self._device: OidnDevice | None = None  # set last: close() and __del__ look at it
        self._closed = False
        width, height = _size("width", width), _size("height", height)
        self._options = coerce_options(DenoiseOptions, options)
        self._device_id = _device_id(device, device_id)
        if device == "cpu" and stream is not None:
            raise ValueError("stream: a 'cpu' denoiser runs on the host; pass no stream")
        if stream is not None:
            stream_handle(stream)  # refuse a bad stream before any OIDN call
        self._kind = device
        self._lock = threading.Lock()
        self._frames = 0
        self._resizes = 0
        lib = load_library()
        oidn = OidnDevice.cpu(lib) if device == "cpu" else OidnDevice.cuda(lib, device_id, stream)
        self._binder = FilterBinder(oidn, self._options, width, height)
        self._cache: FilterCache[tuple[Any, ...], FilterSet, BufferSet] = FilterCache(
            self._options.max_filters, self._binder.create, self._binder.bind, self._binder.release
        )
        self._device = oidn

    # ------------------------------------------------------------------ checks (no OIDN or CUDA call)

    def _check_open(self) -> OidnDevice:
        if self._closed or self._device is None:
            raise DenoiseError("the denoiser is closed")
        return self._device

    def _describe(self, color: Any, output: Any, albedo: Any, normal: Any) -> BufferSet:
        guides = self._options.guides
        for name, value in (("albedo", albedo), ("normal", normal)):
            if value is None and name in guides:
                raise ValueError(f"{name} is missing: the denoiser was created with {name}=True")
            if value is not None and name not in guides:
                raise ValueError(f"{name} was given but the denoiser was created without it (DenoiseOptions.{name})")
        kind, w, h, dev = self._kind, self.width, self.height, self._device_id
        color_view = describe_image("color", color, kind, w, h, dev)
        output_view = describe_image("output", output, kind, w, h, dev)
        albedo_view = None if albedo is None else describe_image("albedo", albedo, kind, w, h, dev)
        normal_view = None if normal is None else describe_image("normal", normal, kind, w, h, dev)
        inputs = [v for v in (color_view, albedo_view, normal_view) if v is not None]
        inplace = check_aliasing(output_view, inputs)
        return BufferSet(color_view, output_view, albedo_view, normal_view, inplace)

    def _join_handle(self, stream: Any) -> int | None:
        """The raw handle of ``stream`` when the work must be joined with it; None when no join is needed."""
        if stream is None:
            return None
        if self._kind == "cpu":
            raise ValueError("stream: a 'cpu' denoiser runs on the host; pass no stream")
        handle = stream_handle(stream)
        return None if handle == self.stream_handle else handle

    # ------------------------------------------------------------------ frame path

    def denoise(self, color: Any, output: Any, albedo: Any = None, normal: Any = None, stream: Any = None) -> Any:
        """Enqueue the denoising of ``color`` into ``output``; on 'cuda', return without waiting.

        Parameters
        ----------
        color : array
            float32, shape (height, width, 3) or (height, width, 4), channels
            contiguous, any pixel stride of at least 12 (3 channels) or 16
            (4 channels) bytes and any row stride (so ``rgba[..., :3]`` is
            accepted). OIDN reads the first three channels. Device arrays
            (``__cuda_array_interface__``) for 'cuda', numpy arrays for 'cpu'.
        output : array
            Same rules, writable. OIDN writes the first three channels; a
            fourth is left as it was. ``output`` may be ``color`` itself
            (in-place denoising, same pointer and strides); any other overlap
            with an input is refused.
        albedo, normal : array, optional
            The guides, required exactly when the denoiser was created with them.
        stream : cupy.cuda.Stream, object with ``__cuda_stream__``, int or None
            ('cuda' only) The stream that produces the inputs and consumes
            the output, when it is not the denoiser's: the denoise waits for
            the work enqueued on it so far, and work enqueued on it later
            waits for the denoise (two ``cudaEventRecord`` +
            ``cudaStreamWaitEvent``, no host wait). None: the caller orders the
            work (for example by producing the inputs on :attr:`stream`).

        Returns
        -------
        array
            ``output``. On 'cuda' its content is ready once the denoiser's
            stream (or ``stream``) has passed this point; on 'cpu', at once.

        Raises
        ------
        TypeError, ValueError
            On any bad argument, naming it, before any OIDN or CUDA call:
            wrong array kind or dtype, shape or size other than the
            denoiser's, strides OIDN cannot take, a guide missing or
            unexpected, a read-only output, an output overlapping an input
            (other than in-place on color), a bad stream.
        OidnError
            If OIDN reports an error (of this call or of earlier work of the device).
        DenoiseError
            If the denoiser is closed.

        Notes
        -----
        The first call with a new buffer set binds filters to it (create and
        commit, set-up cost: see :meth:`prepare`); later calls with the same
        buffers only execute the committed filters.
        """
        self._check_open()
        with self._lock:  # the size checked and bound under one lock: a resize() cannot come in between
            images = self._describe(color, output, albedo, normal)  # the arrays first: a Frame's timer stays off
            join = self._join_handle(stream)
            device = self._check_open()
            filters = self._cache.get(images.key, images)
            filters.images = images  # the arrays of this call stay alive while the entry is cached
            if join is not None:
                device.events.before(join, device.stream_handle)  # type: ignore[union-attr,arg-type]
            self._binder.execute(filters)
            if join is not None:
                device.events.after(device.stream_handle, join)  # type: ignore[union-attr,arg-type]
            self._frames += 1
            device.check("executing the filter")
        return output

    def prepare(self, color: Any, output: Any, albedo: Any = None, normal: Any = None) -> None:
        """Bind and commit filters for a buffer set now, at set-up, without executing them.

        Takes the arguments of :meth:`denoise` (and checks them the same
        way). Call it once per frame slot's buffers before the frame loop, so
        that no commit happens on the frame path.
        """
        self._check_open()
        with self._lock:
            images = self._describe(color, output, albedo, normal)
            self._check_open()
            self._cache.get(images.key, images)

    # ------------------------------------------------------------------ set-up and fences

    def resize(self, width: int, height: int) -> bool:
        """Change the image size. Set-up, not the frame path.

        Waits for the denoiser's queued work (``oidnSyncDevice``), releases
        every cached filter and the prefiltered-guide buffers; the next
        :meth:`prepare` or :meth:`denoise` of each buffer set creates and
        commits its filters again at the new size (OIDN then re-initializes
        and allocates scratch memory, which may synchronize the device).

        Returns
        -------
        bool
            False when the size is unchanged (nothing is done), True otherwise.
        """
        width, height = _size("width", width), _size("height", height)
        self._check_open()
        if (width, height) == (self.width, self.height):
            return False
        with self._lock:
            device = self._check_open()
            try:
                device.sync("waiting for the denoiser's work before resizing")
            finally:
                self._release_filters()
                self._binder.width, self._binder.height = width, height
                self._resizes += 1
        return True

    def synchronize(self) -> None:
        """Wait until all work enqueued by this denoiser has finished (a fence: ``oidnSyncDevice``).

        Raises
        ------
        OidnError
            If OIDN reports an error of that work.
        """
        self._check_open().sync("waiting for the denoiser's work")

    def _release_filters(self) -> None:
        self._cache.clear()
        self._binder.release_buffers()

    def close(self) -> None:
        """Wait for the queued work, then release filters, buffers, the OIDN device and the events. Idempotent.

        Raises
        ------
        OidnError
            If OIDN reports an error of the queued work (everything is released anyway).
        """
        if self._closed or self._device is None:
            self._closed = True
            return
        with self._lock:
            device, self._closed = self._device, True
            if device is None:  # another thread closed it while this one waited for the lock
                return
            error: OidnError | None = None
            try:
                device.sync("waiting for the denoiser's work before closing")
            except OidnError as exc:
                error = exc
            finally:
                self._release_filters()
                device.release()
                self._device = None
            if error is not None:
                raise error

    def __enter__(self) -> Denoiser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if _exiting or getattr(self, "_device", None) is None or getattr(self, "_closed", True):
            return
        warnings.warn(
            "a Denoiser was garbage-collected without close(): closing it now waits for its queued work",
            ResourceWarning,
            stacklevel=2,
        )
        try:
            self.close()
        except Exception as exc:  # a finalizer cannot raise: say what went wrong instead
            warnings.warn(f"closing a garbage-collected Denoiser failed: {exc}", ResourceWarning, stacklevel=2)

    # ------------------------------------------------------------------ properties

    @property
    def kind(self) -> str:
        """``"cuda"`` or ``"cpu"``."""
        return self._kind

    @property
    def device_id(self) -> int | None:
        """The CUDA device ordinal ('cuda'), or None ('cpu')."""
        return self._device_id

    @property
    def stream(self) -> Any:
        """The stream OIDN runs on, as given (or created); None for 'cpu'."""
        return self._binder.device.stream

    @property
    def stream_handle(self) -> int | None:
        """The raw ``CUstream`` OIDN runs on; None for 'cpu'."""
        return self._binder.device.stream_handle

    @property
    def width(self) -> int:
        """Image width in pixels."""
        return self._binder.width

    @property
    def height(self) -> int:
        """Image height in pixels."""
        return self._binder.height

    @property
    def options(self) -> DenoiseOptions:
        """The options the denoiser was created with."""
        return self._options

    @property
    def oidn_version(self) -> str:
        """The version of the OIDN library in use (``"2.5.1"``)."""
        return version_string(self._binder.device.version)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    @property
    def stats(self) -> DenoiserStats:
        """A snapshot of the counters (frames, cache hits, filter sets created and rebound, commits, resizes)."""
        cache = self._cache.stats
        return DenoiserStats(
            frames=self._frames,
            cache_hits=cache.hits,
            filter_sets_created=cache.created,
            filter_sets_rebound=cache.rebound,
            commits=self._binder.commits,
            resizes=self._resizes,
            cached=len(self._cache),
        )

    def __repr__(self) -> str:
        where = "cpu" if self._kind == "cpu" else f"cuda:{self._device_id}"
        state = "closed" if self._closed else f"{len(self._cache)} filter set(s) cached"
        return f"<Denoiser {self.width}x{self.height} on {where}, quality={self._options.quality}, {state}>"
