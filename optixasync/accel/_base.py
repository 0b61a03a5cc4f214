"""What GAS and IAS share: build, refit and deferred compaction on a stream.

Every operation is enqueued on a stream and recorded in the structure's
:class:`~optixasync.cuda.Readiness`: work on another stream that traces,
refits or instances the structure is ordered after it on the GPU.

A build or refit enqueued on a stream being captured into a CUDA graph is
refused (:class:`~optixasync.errors.GraphCaptureError`, ``BUILD_NOT_CAPTURABLE``)
before OptiX is called: on an H200 with driver R580 ``optixAccelBuild``
failed inside a capture and left OptiX's own events broken for every later
build of the context. The mechanism for a refit inside a graph stays (every
launch refits again, counts in ``refits``, and says when the structure was
rebuilt or compacted since or its next refit is a full rebuild) for an API
whose builds can be captured (a test's stand-in).

Blocking calls
--------------
None, except :meth:`AccelStructure.compact` with ``wait=True`` (it waits
for the emitted compacted size; meant for offline use). The compacted size
travels to pinned host memory behind an event and is read only once that
event has passed; temporary buffers are freed in stream order; GPU build
times come from timing events queried lazily. ``optixAccelBuild`` blocks
when the context has validation mode on.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix import check
from .._optix import types as t
from ..cuda import Capture, GpuTimer, Readiness, _nvtx, as_cupy_stream, capture_of, stream_handle, synchronize
from ..errors import GraphCaptureError
from ..validation import as_int, coerce_options

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["AccelOptions", "AccelStructure", "MotionOptions", "aligned"]

#: The most motion keys OptiX stores (``OptixMotionOptions::numKeys`` is 16 bits).
MAX_MOTION_KEYS = 2**16 - 1

#: Why a build or refit is refused inside a CUDA-graph capture (measured on an H200, driver R580, ABI 105).
BUILD_NOT_CAPTURABLE = ("an acceleration-structure build or refit: inside a CUDA-graph capture optixAccelBuild failed "
                        "(OPTIX_ERROR_CUDA_ERROR on an H200, driver R580) and broke OptiX's events for later builds; "
                        "frames with refits run eagerly")


@dataclass(frozen=True)
class MotionOptions:
    """Motion blur of a structure or a motion transform: keys spread evenly over a time range.

    A trace's ``time`` picks the moment: between two keys OptiX interpolates linearly (vertices, centres,
    radii, boxes; matrices; SRT components, the rotation normalised again).

    Attributes
    ----------
    keys : int
        Number of motion keys (>= 2); every build input must give this many.
    time_begin, time_end : float
        The times of the first and last key (``time_end > time_begin``).
    start_vanish, end_vanish : bool
        Before ``time_begin`` (after ``time_end``) the geometry is not there; without, it stays at the
        first (last) key.
    """

    keys: int = 2
    time_begin: float = 0.0
    time_end: float = 1.0
    start_vanish: bool = False
    end_vanish: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", as_int("MotionOptions.keys", self.keys, 2, MAX_MOTION_KEYS))
        for name in ("time_begin", "time_end"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise TypeError(f"MotionOptions.{name} must be a number, got {type(value).__name__}")
            if not math.isfinite(float(value)):
                raise ValueError(f"MotionOptions.{name} must be finite, got {value}")
            object.__setattr__(self, name, float(value))
        if not self.time_end > self.time_begin:
            raise ValueError(f"MotionOptions needs time_end > time_begin, got [{self.time_begin}, {self.time_end}]")
        for name in ("start_vanish", "end_vanish"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"MotionOptions.{name} must be a bool, got {type(getattr(self, name)).__name__}")

    @property
    def flags(self) -> int:
        flags = t.MotionFlags.NONE
        if self.start_vanish:
            flags |= t.MotionFlags.START_VANISH
        if self.end_vanish:
            flags |= t.MotionFlags.END_VANISH
        return int(flags)

    def to_struct(self) -> t.MotionOptions:
        return t.MotionOptions(self.keys, self.flags, self.time_begin, self.time_end)


@dataclass(frozen=True)
class AccelOptions:
    """Build options of an acceleration structure.

    Attributes
    ----------
    prefer : {"fast_trace", "fast_build", "default"}
        Trade build time against trace speed.
    allow_update : bool
        Allow refits (``OPTIX_BUILD_OPERATION_UPDATE``) after the build.
    allow_compaction : bool
        Emit the compacted size at build time so the structure can be compacted later.
    random_vertex_access : bool
        Let programs read triangle vertices back from the GAS.
    rebuild_every : int
        Refit policy of :meth:`GeometryAccel.refit`: after this many refits,
        the next one is a full rebuild (0: never). A refit keeps the
        hierarchy the build chose, which traces slower as the triangles move
        far from where they were; a rebuild restores it, at the price of new
        buffers, a new ``handle`` (rebuild or refit the IAS over it) and a
        structure that is no longer compacted.
    motion : MotionOptions or dict, optional
        Motion blur: how many keys each build input gives and over which times (None: no motion).
    """

    prefer: str = "fast_trace"
    allow_update: bool = False
    allow_compaction: bool = False
    random_vertex_access: bool = False
    rebuild_every: int = 0
    motion: MotionOptions | None = None

    def __post_init__(self) -> None:
        if self.motion is not None:
            object.__setattr__(self, "motion", coerce_options(MotionOptions, self.motion))
        for name in ("allow_update", "allow_compaction", "random_vertex_access"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__} {getattr(self, name)!r}")
        if self.prefer not in ("fast_trace", "fast_build", "default"):
            raise ValueError(f"prefer must be 'fast_trace', 'fast_build' or 'default', got {self.prefer!r}")
        if isinstance(self.rebuild_every, bool) or not isinstance(self.rebuild_every, int) or self.rebuild_every < 0:
            raise ValueError(f"rebuild_every must be an int >= 0 (0: never), got {self.rebuild_every!r}")
        if self.rebuild_every and not self.allow_update:
            raise ValueError("rebuild_every is a refit policy: it needs allow_update=True")

    @property
    def build_flags(self) -> int:
        flags = t.BuildFlags.NONE
        if self.prefer == "fast_trace":
            flags |= t.BuildFlags.PREFER_FAST_TRACE
        elif self.prefer == "fast_build":
            flags |= t.BuildFlags.PREFER_FAST_BUILD
        if self.allow_update:
            flags |= t.BuildFlags.ALLOW_UPDATE
        if self.allow_compaction:
            flags |= t.BuildFlags.ALLOW_COMPACTION
        if self.random_vertex_access:
            flags |= t.BuildFlags.ALLOW_RANDOM_VERTEX_ACCESS
        return int(flags)

    @property
    def num_keys(self) -> int:
        """Motion keys each build input must give (1 without motion)."""
        return self.motion.keys if self.motion is not None else 1


def aligned(nbytes: int, alignment: int = t.ACCEL_BUFFER_BYTE_ALIGNMENT) -> int:
    return (int(nbytes) + alignment - 1) // alignment * alignment


class AccelStructure:
    """Base of :class:`GeometryAccel` and :class:`InstanceAccel`.

    Subclasses fill ``self._structs`` (a ctypes array of ``OptixBuildInput``)
    and call :meth:`_build`.

    Attributes
    ----------
    handle : int
        The ``OptixTraversableHandle``; changes when the structure is compacted or rebuilt.
    nbytes : int
        Size of the current output buffer.
    ready : Readiness
        The end of the last build, refit or compaction; call ``ready.order(stream)``
        before enqueuing work that reads the structure on another stream
        (the structure's own methods and the library's tracers do).
    """

    def __init__(self, ctx: Context, options: Any, stream: Any) -> None:
        ctx.require_open()
        self.ctx = ctx
        self.options = coerce_options(AccelOptions, options)
        self.stream = ctx.stream if stream is None else as_cupy_stream(stream)
        self.ready = Readiness()
        self.handle = 0
        self.nbytes = 0
        self.buffer: Any = None
        self.compacted = False
        self.uncompacted_nbytes = 0
        self._structs: Any = None
        self._count = 0
        self._size_event: Any = None
        self._size_staging: Any = None
        self._size_device: Any = None  # where the build emits the compacted size (allow_compaction)
        self._temp_update: Any = None  # the refits' temp buffer, sized by the build (allow_update)
        self._build_timer = GpuTimer()
        self._refit_timer = GpuTimer()
        self.refits = 0
        self.rebuilds = 0
        self._refits_since_build = 0
        ctx.track(self)

    def _check_open(self) -> None:
        if self.buffer is None:
            raise RuntimeError(f"this {type(self).__name__} is closed")

    def _use_stream(self, stream: Any) -> Any:
        """``stream`` (default: the build stream) as a CuPy stream, ordered after the last operation.

        Raises
        ------
        RuntimeError
            If the structure is closed (every operation on it starts here).
        """
        self._check_open()
        stream = self.stream if stream is None else as_cupy_stream(stream)
        self.ready.order(stream)
        return stream

    def _sizes(self, operation: t.BuildOperation) -> t.AccelBufferSizes:
        build_options = self._build_options(operation)
        sizes = t.AccelBufferSizes()
        check(
            self.ctx.api.optixAccelComputeMemoryUsage(
                self.ctx.handle, ctypes.byref(build_options), self._structs, self._count, ctypes.byref(sizes)
            ),
            "optixAccelComputeMemoryUsage",
            api=self.ctx.api,
        )
        return sizes

    def _build_options(self, operation: t.BuildOperation) -> t.AccelBuildOptions:
        build_options = t.AccelBuildOptions()
        build_options.buildFlags = self.options.build_flags
        build_options.operation = int(operation)
        if self.options.motion is not None:
            build_options.motionOptions = self.options.motion.to_struct()
        return build_options

    def _new_buffers(self, operation: t.BuildOperation, stream: Any) -> tuple[Any, int, Any]:
        """A build's buffers on ``stream``: (temp, its size, the compacted size's emit descriptor or None)."""
        ctx = self.ctx
        if self.buffer is not None:
            # A rebuild replaces the buffers: the old ones live until the work queued on this stream so
            # far (traces of the old structure, the compacted-size copy) has passed.
            ctx.deferred.after(stream, self.buffer, self._temp_update, self._size_device, self._size_staging)
        self._refits_since_build = 0
        sizes = self._sizes(operation)
        self.buffer_sizes = (int(sizes.outputSizeInBytes), int(sizes.tempSizeInBytes), int(sizes.tempUpdateSizeInBytes))
        temp_size = aligned(sizes.tempSizeInBytes)
        temp = ctx.memory.alloc(temp_size, stream)
        # Refits reuse one temp buffer (their size is fixed by the build); the stream order keeps them apart.
        self._temp_update = ctx.memory.alloc(aligned(sizes.tempUpdateSizeInBytes), stream) if self.options.allow_update else None
        self.buffer = ctx.memory.alloc(aligned(sizes.outputSizeInBytes), stream)
        self.nbytes = self.uncompacted_nbytes = int(sizes.outputSizeInBytes)
        self.compacted = False
        emit = None
        if self.options.allow_compaction:
            self._size_device = ctx.memory.empty((1,), np.uint64, stream)
            emit = t.AccelEmitDesc(int(self._size_device.data.ptr), int(t.AccelPropertyType.COMPACTED_SIZE))
        return temp, temp_size, emit

    def _build(self, operation: t.BuildOperation, stream: Any) -> None:
        ctx = self.ctx
        if capture_of(stream_handle(stream)) is not None and not getattr(ctx.api, "builds_replay", False):
            raise GraphCaptureError(BUILD_NOT_CAPTURABLE)  # before OptiX is called (a test's stand-in may allow it)
        building = operation == t.BuildOperation.BUILD
        if building:
            temp, temp_size, emit = self._new_buffers(operation, stream)
        else:
            temp, temp_size, emit = self._temp_update, aligned(self.buffer_sizes[2]), None
        emit_count = 0 if emit is None else 1
        timer = self._build_timer if building else self._refit_timer
        span = timer.start(stream)
        handle = ctypes.c_uint64(self.handle)
        try:
            with _nvtx.annotate("optixasync.build" if building else "optixasync.refit"):
                check(
                    ctx.api.optixAccelBuild(
                        ctx.handle, stream_handle(stream), ctypes.byref(self._build_options(operation)), self._structs,
                        self._count, int(temp.ptr), temp_size, int(self.buffer.ptr), aligned(self.nbytes),
                        ctypes.byref(handle), ctypes.byref(emit) if emit is not None else None, emit_count,
                    ),
                    "optixAccelBuild" if building else "optixAccelBuild(update)",
                    api=ctx.api,
                )
        except BaseException:
            timer.cancel(span)
            if building:
                # The new buffers hold no structure and the old ones are already handed to deferred release:
                # nothing valid is left to describe, so the structure is closed rather than left pointing at either.
                self.close()
            raise
        end = timer.stop(span, stream)
        self._captured_refit(None if building else capture_of(stream_handle(stream)))
        self.handle = int(handle.value)
        del temp  # freed in the stream's order: after the build, never under it
        if building and emit is not None:
            # The compacted size travels to pinned memory behind an event; nobody waits for it here.
            self._size_staging = ctx.pinned.download(self._size_device, stream)  # 8 bytes, read once the event passed
            self._size_event = ctx.deferred.after(stream)
            # The structure's end is after the copy: a stream ordered after it (a rebuild elsewhere, which hands
            # the staging to deferred release there) never lets the staging go back to the pool under the copy.
            end = self._size_event
        self.ready.adopt(end, stream)

    def _captured_refit(self, capture: Capture | None) -> None:
        """A refit went into a graph (``capture``; None: it did not): it must see these buffers at every launch,
        and counts at every launch."""
        if capture is None:
            return
        buffer, temp = self.buffer, self._temp_update
        capture.hold(buffer, temp)
        capture.check(lambda: None if self.buffer is buffer else
                      "the acceleration structure was rebuilt, compacted or closed since the capture")
        capture.after_replay(_ReplayedRefit(self))

    def _replayed_refit(self, first: bool) -> str | None:
        """A launch of a graph holding a refit: count it (the capture's own launch was counted by the call)."""
        if not first:
            self.refits += 1
            self._refits_since_build += 1
        every = self.options.rebuild_every
        if every and self._refits_since_build >= every:
            return "the structure's next refit is a full rebuild (AccelOptions.rebuild_every)"
        return None

    # -- reporting -----------------------------------------------------------------
    @property
    def build_ms(self) -> float | None:
        """GPU time of the last full build found finished, None before (never waits)."""
        return self._build_timer.poll()

    @property
    def refit_ms(self) -> float | None:
        """GPU time of the last refit found finished, None before or if never refitted (never waits)."""
        return self._refit_timer.poll()

    @property
    def compacted_size(self) -> int | None:
        """The size the structure compacts to; None until the GPU has reported it (never waits)."""
        if self._size_event is None or not self._size_event.done:
            return None
        return int(self._size_staging[0])

    # -- compaction ----------------------------------------------------------------
    def compact(self, wait: bool = False, stream: Any = None) -> bool:
        """Compact the structure into a buffer of its compacted size.

        Parameters
        ----------
        wait : bool
            False (the default, for render loops): compact only if the size
            has already arrived, else return False and try again next frame.
            True (offline): wait for the size, then compact.
        stream : stream, optional
            Where the copy is enqueued; pass the stream the structure is
            traced on (``frame.stream``) so that the old buffer, held until
            the work enqueued there so far has passed, outlives every trace of it.

        Returns
        -------
        bool
            Whether the structure was compacted by this call.
        """
        self._check_open()
        if not self.options.allow_compaction:
            raise ValueError("this structure was built without allow_compaction=True")
        if self.compacted:
            return False
        if wait and self._size_event is not None:
            synchronize(self._size_event, "waiting for the compacted size")
        size = self.compacted_size
        if size is None:
            return False
        stream = self._use_stream(stream)
        ctx = self.ctx
        new_buffer = ctx.memory.alloc(aligned(size), stream)
        handle = ctypes.c_uint64()
        with _nvtx.annotate("optixasync.compact"):
            check(
                ctx.api.optixAccelCompact(
                    ctx.handle, stream_handle(stream), self.handle, int(new_buffer.ptr), aligned(size),
                    ctypes.byref(handle),
                ),
                "optixAccelCompact",
                api=ctx.api,
            )
        old = self.buffer
        self.buffer, self.handle, self.nbytes, self.compacted = new_buffer, int(handle.value), size, True
        # The old structure lives until the traces enqueued before the compaction have passed.
        self.ready.adopt(ctx.deferred.after(stream, old), stream)
        return True

    def close(self) -> None:
        """Release the buffers and the inputs uploaded for the build (freed in stream order); forget the handle."""
        self.buffer = self._temp_update = self._size_device = self._size_staging = None
        try:
            self._release_inputs()
        finally:
            self.handle = 0  # closed even when releasing the inputs fails (an error of the device's work)

    def _release_inputs(self) -> None:
        """Drop the device copies of the build inputs (each structure type knows its own)."""


class _ReplayedRefit:
    """The hook a captured refit leaves in its graph (see :meth:`AccelStructure._replayed_refit`)."""

    __slots__ = ("_accel", "_launches")

    def __init__(self, accel: AccelStructure) -> None:
        self._accel = accel
        self._launches = 0

    def __call__(self, end: Any, stream: Any) -> str | None:
        self._launches += 1
        return self._accel._replayed_refit(first=self._launches == 1)
