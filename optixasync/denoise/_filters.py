"""OIDN filters for one buffer set: create, bind images, commit, execute, release.

A buffer set gets one main ``RT`` filter and, with ``prefilter_aux``, one
``RT`` filter per guide that denoises it into a buffer of the denoiser's own
(OIDN's recommended handling of noisy guides; the caller's guides are never
written). The prefiltered-guide buffers are shared by every buffer set of a
size: all executions run in order on one stream (or synchronously on the
CPU), so consecutive frames cannot race on them.

Blocking calls
--------------
* :meth:`FilterBinder.create` and :meth:`FilterBinder.bind` are set-up:
  ``oidnNewFilter`` and ``oidnCommitFilter``. A commit that changes more
  than pointers (first commit, size, strides, in-place or not) initialises
  the filter: it plans and allocates scratch memory (on CUDA ``cudaMalloc``,
  which may synchronize the device) and prepares the weights. A commit
  that changes only pointers does not (measured on OIDN's CPU device).
* The prefiltered-guide buffers are allocated at the first binding of a
  size (``oidnNewBuffer`` in OIDN's default storage: an allocation that
  may synchronize the device).
* :meth:`FilterBinder.execute` enqueues with ``oidnExecuteFilterAsync`` on
  a CUDA device and returns; on the CPU device it runs
  ``oidnExecuteFilter``, which returns when the image is done (the host is
  the device there).
* :meth:`FilterBinder.release` and :meth:`FilterBinder.release_buffers`
  free memory queued work may use: callers sync the device first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._device import OidnDevice
from ._errors import DenoiseError
from ._images import BufferSet, ImageView
from ._oidn import FORMAT_FLOAT3, QUALITY
from ._options import DenoiseOptions

__all__ = ["FilterSet", "FilterBinder"]


@dataclass
class FilterSet:
    """The committed OIDN filters of one buffer set, in execution order (prefilters first).

    ``images`` holds the arrays of the last call that used the set, so that
    they stay alive while the set is cached.
    """

    prefilters: list[int] = field(default_factory=list)
    main: int = 0
    images: BufferSet | None = None

    def handles(self) -> list[int]:
        """Every filter handle, prefilters first."""
        return [*self.prefilters, *([self.main] if self.main else [])]


class FilterBinder:
    """Makes, binds, runs and frees the filters of buffer sets on one device, for one size and options.

    Attributes
    ----------
    width, height : int
        The size images are bound with; change it only after :meth:`release_buffers`.
    commits : int
        ``oidnCommitFilter`` calls so far.
    """

    def __init__(self, device: OidnDevice, options: DenoiseOptions, width: int, height: int) -> None:
        self.device = device
        self.options = options
        self.width = width
        self.height = height
        self.commits = 0
        self._aux_buffers: dict[str, int] = {}

    # the three callbacks of the FilterCache

    def create(self, images: BufferSet) -> FilterSet:
        """New filters for ``images``, bound and committed."""
        filters = FilterSet()
        try:
            for _ in images.guides if self.options.prefilter_aux else ():
                filters.prefilters.append(self._new_filter())
            filters.main = self._new_filter()
            self.bind(filters, images)
        except BaseException:
            self.release(filters)
            raise
        return filters

    def bind(self, filters: FilterSet, images: BufferSet) -> None:
        """Point ``filters`` at ``images``, set the parameters, commit."""
        lib, opts = self.device.lib, self.options
        quality = QUALITY[opts.quality]
        prefiltered = opts.prefilter_aux
        if prefiltered:
            for filt, guide in zip(filters.prefilters, images.guides, strict=True):
                self._set_image(filt, guide.name.encode(), guide)
                self._set_buffer_image(filt, b"output", self._aux_buffer(guide.name))
                lib.oidnSetFilterInt(filt, b"quality", quality)
                self.device.check(f"setting up the {guide.name} prefilter")
                self._commit(filt, f"{guide.name} prefilter")
        main = filters.main
        self._set_image(main, b"color", images.color)
        self._set_image(main, b"output", images.output)
        for guide in images.guides:
            if prefiltered:
                self._set_buffer_image(main, guide.name.encode(), self._aux_buffer(guide.name))
            else:
                self._set_image(main, guide.name.encode(), guide)
        lib.oidnSetFilterBool(main, b"hdr", opts.hdr)
        if images.guides:
            lib.oidnSetFilterBool(main, b"cleanAux", opts.clean_aux or prefiltered)
        lib.oidnSetFilterInt(main, b"quality", quality)
        if opts.input_scale is not None:
            lib.oidnSetFilterFloat(main, b"inputScale", opts.input_scale)
        self.device.check("setting up the filter")
        self._commit(main, "main")
        filters.images = images

    def release(self, filters: FilterSet) -> None:
        """Release the filters of a set."""
        for filt in filters.handles():
            self.device.lib.oidnReleaseFilter(filt)
        filters.prefilters.clear()
        filters.main = 0
        filters.images = None

    # running and freeing

    def execute(self, filters: FilterSet) -> None:
        """Run the prefilters, then the main filter: enqueued on CUDA, finished on return on the CPU."""
        lib = self.device.lib
        run = lib.oidnExecuteFilterAsync if self.device.kind == "cuda" else lib.oidnExecuteFilter
        for filt in filters.prefilters:
            run(filt)
        run(filters.main)

    def release_buffers(self) -> None:
        """Free the prefiltered-guide buffers (a new size allocates new ones)."""
        for buffer in self._aux_buffers.values():
            self.device.lib.oidnReleaseBuffer(buffer)
        self._aux_buffers.clear()

    # internals

    def _new_filter(self) -> int:
        filt = self.device.lib.oidnNewFilter(self.device.handle, b"RT")
        if not filt:
            self.device.check("creating an RT filter")
            raise DenoiseError("OIDN returned no RT filter")
        return filt

    def _aux_buffer(self, name: str) -> int:
        """The OIDN-owned buffer that receives the prefiltered ``name`` guide (allocated once per size)."""
        buffer = self._aux_buffers.get(name)
        if buffer is None:
            buffer = self.device.lib.oidnNewBuffer(self.device.handle, self.width * self.height * 12)
            if not buffer:
                self.device.check(f"allocating the prefiltered {name} buffer")
                raise DenoiseError(f"OIDN returned no buffer for the prefiltered {name} guide")
            self._aux_buffers[name] = buffer
        return buffer

    def _set_image(self, filt: int, name: bytes, image: ImageView) -> None:
        self.device.lib.oidnSetSharedFilterImage(
            filt, name, image.ptr, FORMAT_FLOAT3, self.width, self.height, 0, image.pixel_stride, image.row_stride
        )

    def _set_buffer_image(self, filt: int, name: bytes, buffer: int) -> None:
        self.device.lib.oidnSetFilterImage(filt, name, buffer, FORMAT_FLOAT3, self.width, self.height, 0, 0, 0)

    def _commit(self, filt: int, what: str) -> None:
        self.device.lib.oidnCommitFilter(filt)
        self.commits += 1
        self.device.check(f"committing the {what} filter")
