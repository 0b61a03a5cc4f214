"""One frame being recorded, and the slot resources it reuses.

A :class:`Frame` holds everything about its frame: the slot, the launch
parameters in the slot's pinned staging, its handle, the GPU span that
times it, its readbacks and the temporaries to keep alive until it retires.
Frames of one scheduler run on the scheduler's stream, in order.

The frame's GPU time starts when its first GPU work is enqueued: by a
frame method (:meth:`Frame.launch`, :meth:`Frame.upload`,
:meth:`Frame.readback`) or by any optixasync call given the frame itself as
its stream (``gas.refit(v, stream=frame)``): a ``Frame`` is a stream-like
(``__cuda_stream__``), and handing it over is what says "work starts now".
Work enqueued directly on :attr:`Frame.stream` before that is ordered with
the frame but not counted in its ``gpu_ms``.

Blocking calls
--------------
None: pinned copies, stream-ordered allocations and event records.
``optixLaunch`` in :meth:`Frame.launch` blocks when the context has
validation mode on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import GpuSpan, StagedStruct, _nvtx
from ._results import FrameHandle
from ._stats import FrameStats

if TYPE_CHECKING:
    from ._scheduler import FrameScheduler

__all__ = ["Frame", "Slot"]


class Slot:
    """Resources of one frame slot, reused by every N-th frame: parameter staging and persistent buffers."""

    def __init__(self, scheduler: FrameScheduler, index: int) -> None:
        self.index = index
        self.params: StagedStruct | None = None
        if scheduler.params_dtype is not None:
            self.params = StagedStruct(scheduler.ctx, scheduler.params_dtype, scheduler.stream)
        self.buffers: dict[str, Any] = {}

    @property
    def params_view(self) -> np.ndarray | None:
        """The launch parameters in pinned memory (None without a parameter layout)."""
        return self.params.host if self.params is not None else None

    def release(self) -> None:
        """Let go of the slot's device and pinned memory (the scheduler is closing; its frames have completed)."""
        self.buffers = {}
        if self.params is not None:
            self.params.release()
            self.params = None


class Frame:
    """One frame being recorded. Get it from :meth:`FrameScheduler.begin_frame` or ``frame()``.

    Attributes
    ----------
    index : int
        Frame number (0, 1, 2, ...).
    slot : int
        The slot this frame uses (``index % frames_in_flight``).
    params : numpy structured scalar
        The launch parameters in the slot's pinned staging; write fields
        before the first :meth:`launch`, which copies them to the device.
    stream : cupy.cuda.Stream
        The scheduler's stream. To enqueue the frame's own work (builds,
        refits, kernels) pass the frame itself where a stream is expected
        (``stream=frame``), so the work is part of the frame's GPU time.
    handle : FrameHandle
        The future of this frame's result.
    launched : bool
        Whether the frame has launched (its parameters are on their way).
    stats : FrameStats
        Filled as the frame is recorded and when it retires.
    """

    def __init__(self, scheduler: FrameScheduler, index: int, slot: Slot, stats: FrameStats) -> None:
        self._scheduler = scheduler
        self.index = index
        self.slot = slot.index
        self._slot = slot
        self.stream = scheduler.stream
        self.params = slot.params_view
        self.stats = stats
        self.handle = FrameHandle(index, scheduler)
        self.launched = False
        self.submitted = False  # set by submit() or close(): the frame's methods refuse work from then on
        self.started = False  # whether GPU work of this frame has been enqueued (its timer started)
        self.span: GpuSpan | None = None  # timing events around the frame's GPU work
        self.error: BaseException | None = None  # what aborted the recording, if anything
        self.holds: list[Any] = []  # per-frame staging and temporaries, released when the frame retires
        self.readbacks: list[tuple[str, np.ndarray]] = []  # name, view of the pinned buffer leased for it

    # -- the stream protocol -------------------------------------------------------------------------------------
    def __cuda_stream__(self) -> tuple[int, int]:
        """The scheduler's stream, for any call that takes a stream; marks the start of the frame's GPU work."""
        self.begin_gpu_work()
        return 0, self.stream.ptr

    def _check_recording(self) -> None:
        if self.submitted and self._scheduler.closed:
            raise RuntimeError(f"frame {self.index}'s scheduler was closed: the frame takes no more work")
        if self.submitted:
            raise RuntimeError(f"frame {self.index} was already submitted: enqueue its work inside its with block "
                               "(or before submit())")

    def begin_gpu_work(self) -> None:
        """Start the frame's GPU timer now, before work about to be enqueued (done once; later calls do nothing).

        Raises
        ------
        RuntimeError
            If the frame was already submitted (the work would be outside its
            fence), or its scheduler was closed.
        """
        self._check_recording()
        if not self.started:
            self.started = True
            self.span = self._scheduler._completion.start_span(self.stream)

    @contextlib.contextmanager
    def _timed(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stats.submit_ms += (time.perf_counter() - start) * 1e3

    # -- GPU work ----------------------------------------------------------------
    def _upload_params(self) -> None:
        if self.launched or self._slot.params is None:
            return
        self.begin_gpu_work()
        self._slot.params.push(self.stream)
        self.launched = True

    def launch(self, pipeline: Any, sbt: Any, width: int, height: int = 1, depth: int = 1) -> None:
        """Enqueue ``optixLaunch`` with this frame's parameters (copied to the device on the first launch)."""
        self._check_recording()
        if self._slot.params is None:
            raise RuntimeError("this scheduler was created without params_dtype; it has no launch parameters")
        self._scheduler.ctx.require_own(pipeline, "the pipeline")
        with self._timed(), _nvtx.annotate("optixasync.launch"):
            self._upload_params()
            start = time.perf_counter()
            pipeline.launch(
                sbt, self._slot.params.device, width, height, depth, stream=self.stream,
                params_size=self._scheduler.params_dtype.itemsize,
            )
            self.stats.launch_ms += (time.perf_counter() - start) * 1e3

    def buffer(self, name: str, shape: Any, dtype: Any) -> Any:
        """A device array owned by this slot, kept across frames (reallocated if shape or dtype change).

        Frames in other slots have their own, so frame ``k+1`` can write its
        buffer while frame ``k``'s is still being read.
        """
        self._check_recording()
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in np.atleast_1d(shape))
        current = self._slot.buffers.get(name)
        if current is None or current.shape != shape or current.dtype != dtype:
            with self._timed():
                current = self._scheduler.ctx.memory.empty(shape, dtype, self.stream)
                self._slot.buffers[name] = current
        return current

    def upload(self, array: Any) -> Any:
        """Copy a host array to a new device array through pinned staging, in this frame's stream order.

        The device array is held until the frame retires, then freed in stream order.
        """
        self._check_recording()
        with self._timed(), _nvtx.annotate("optixasync.upload"):
            self.begin_gpu_work()
            device = self._scheduler.ctx.upload(array, self.stream)  # staging held until the copy has passed
            self.holds.append(device)
        return device

    def readback(self, device_array: Any, name: str) -> None:
        """Enqueue a copy of ``device_array`` into pinned memory; delivered as ``result[name]`` (zero-copy).

        The pinned buffer is leased for this frame from the context's pool
        and goes back to it once the result and every view of it are gone.
        """
        self._check_recording()
        if any(n == name for n, _ in self.readbacks):
            raise ValueError(f"readback {name!r} already requested in frame {self.index}")
        with self._timed(), _nvtx.annotate("optixasync.readback"):
            self.begin_gpu_work()
            view = self._scheduler.ctx.pinned.download(device_array, self.stream)
            self.readbacks.append((name, view))  # the view keeps the pinned block alive

    def hold(self, *objects: Any) -> None:
        """Keep ``objects`` alive until this frame has completed (temporaries used by its GPU work)."""
        self._check_recording()
        self.holds.extend(objects)

    def __repr__(self) -> str:
        return f"<Frame {self.index} slot={self.slot} {'launched' if self.launched else 'recording'}>"
