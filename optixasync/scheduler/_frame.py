"""One frame being recorded: its slot, parameters, handle, GPU span, readbacks, temporaries and work.

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

A frame may carry a **work** function (``sched.frame(work)``): the GPU work
that is the same every frame except for the parameters, run when the frame
is submitted, after the ``with`` block has written the parameters. It is
what a frame graph captures (:mod:`._graphs`); without a graph it runs
eagerly, with the same result.

The hot path is written flat (no context managers, timing by hand, the
stream's handle kept as an int): these methods run several times per frame
and their Python cost is the frame's submit cost (``benchmarks/bench_submit.py``).

Blocking calls
--------------
None: pinned copies, stream-ordered allocations and event records.
``optixLaunch`` in :meth:`Frame.launch` blocks when the context has
validation mode on. With ``optix_queue_limit`` on, :meth:`Frame.launch`
waits on the oldest queued launch's event when the context's launch queue is
full (the designed wait ``optix queue``, in ``stats.queue_wait_ms``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..cuda import GpuSpan, _nvtx, capture_of
from ..errors import GraphCaptureError
from ._results import FrameHandle
from ._slot import Slot
from ._stats import FrameStats

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["Frame", "FrameOwner"]

_clock = time.perf_counter


class FrameOwner(Protocol):
    """What a :class:`Frame` asks of its scheduler."""

    ctx: Context
    stream: Any
    params_dtype: np.dtype | None
    frames_in_flight: int
    queue_token: object  # who launches, for the context's launch queue (its waits' causes)
    stats: Any  # the scheduler's SchedulerStats (counts the launch-queue waits by cause)

    @property
    def closed(self) -> bool:
        """Whether the scheduler was closed."""

    def start_span(self, stream: Any) -> GpuSpan | None:
        """The GPU span of a frame's work, starting now on ``stream`` (None without timing)."""


def _as_shape(shape: Any) -> tuple[int, ...]:
    """A shape as a tuple of ints; tuples of ints and ints pass through without numpy."""
    if type(shape) is tuple:
        for s in shape:
            if type(s) is not int:
                break
        else:
            return shape
    elif type(shape) is int:
        return (shape,)
    return tuple(int(s) for s in np.atleast_1d(shape))


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
    ctx : Context
        The scheduler's context.
    frames_in_flight : int
        The scheduler's slot count (stages that keep state per slot size it by this).
    launched : bool
        Whether the frame's parameters are on their way to the device (its first launch, or
        :meth:`upload_params`).
    work : callable or None
        The frame's work function (``sched.frame(work)``), called with the frame at submit.
    key : object
        What the frame's work depends on besides its buffers (``sched.frame(work, key=...)``).
    graph : bool
        Whether the frame asked to run as a frame graph.
    capturing : bool
        Whether the work is being captured into the slot's graph right now.
    eager_reason : str or None
        Set by the frame's recorder when its work cannot go into a graph (an uncapturable stage): a frame
        that asked for a graph then runs eagerly, counted and logged with this reason.
    destinations : Destinations
        The pinned destinations its readbacks land in: the slot's (``slot_destinations``), or one of
        its frame graphs' own.
    stats : FrameStats
        Filled as the frame is recorded and when it retires.
    """

    def __init__(self, owner: FrameOwner, index: int, slot: Slot, stats: FrameStats, handle: FrameHandle) -> None:
        self._owner = owner
        self.index = index
        self.slot = slot.index
        self._slot = slot
        self.stream = owner.stream
        self._handle = int(self.stream.ptr)  # the raw stream handle, for the copies
        self.ctx = owner.ctx
        self.frames_in_flight = owner.frames_in_flight
        self.params = slot.params_view
        self.stats = stats
        self.handle = handle
        self.launched = False
        self.submitted = False  # set by submit() or close(): the frame's methods refuse work from then on
        self.started = False  # whether GPU work of this frame has been enqueued (its timer started)
        self.span: GpuSpan | None = None  # timing events around the frame's GPU work
        self.error: BaseException | None = None  # what aborted the recording, if anything
        self.holds: list[Any] = []  # per-frame staging and temporaries, released when the frame retires
        self.readbacks: list[tuple[str, np.ndarray]] = []  # name, view of the slot's pinned destination for it
        self.work: Callable[[Frame], Any] | None = None
        self.key: Any = None
        self.graph = False
        self.capturing = False
        self.eager_reason: str | None = None
        self.destinations = slot.destinations  # where readbacks land (a frame graph's own set, when replayed)
        self.slot_destinations = slot.destinations

    # -- the stream protocol -------------------------------------------------------------------------------------
    def __cuda_stream__(self) -> tuple[int, int]:
        """The scheduler's stream, for any call that takes a stream; marks the start of the frame's GPU work."""
        if self.submitted or not self.started:
            self.begin_gpu_work()
        return 0, self._handle

    def _check_recording(self) -> None:
        if self.submitted and self._owner.closed:
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
        if self.submitted:
            self._check_recording()
        if not self.started:
            self.started = True
            self.span = self._owner.start_span(self.stream)

    # -- parameters ----------------------------------------------------------------------------------------------
    def upload_params(self) -> None:
        """Enqueue the copy of :attr:`params` to the device now (the first launch does it otherwise); once per frame.

        Work of the frame that reads the parameters on the GPU (through :meth:`param_address`) comes after it.
        """
        staged = self._slot.params
        if self.launched or staged is None:
            return
        if not self.started:
            self.begin_gpu_work()
        staged.push(self._handle)
        self.launched = True

    @property
    def device_params(self) -> Any:
        """The device copy of the parameters (a ``cupy.cuda.MemoryPointer``; None without a parameter layout)."""
        staged = self._slot.params
        return staged.device if staged is not None else None

    def param_address(self, name: str) -> int:
        """The device address of parameter field ``name``, for kernels of the frame's own that read it on the GPU.

        Enqueues the parameters' upload first (:meth:`upload_params`), so write them before asking. A frame
        graph's kernels read per-frame values this way: their arguments are fixed at capture, the memory's
        contents are not.

        Raises
        ------
        RuntimeError
            Without a parameter layout.
        KeyError
            If the layout has no field ``name``.
        """
        staged = self._slot.params
        if staged is None:
            raise RuntimeError("this scheduler was created without params_dtype; it has no launch parameters")
        fields = self._owner.params_dtype.fields
        if name not in fields:
            raise KeyError(f"the parameter layout has no field {name!r}; it has {sorted(fields)}")
        self.upload_params()
        return int(staged.device.ptr) + int(fields[name][1])

    # -- GPU work ----------------------------------------------------------------
    def launch(self, pipeline: Any, sbt: Any, width: int, height: int = 1, depth: int = 1, *,
               params_size: int | None = None, params: Any = None) -> None:
        """Enqueue ``optixLaunch`` with this frame's parameters (copied to the device on the first launch).

        ``params_size`` launches with the leading bytes of the parameters only (default: all of them):
        a layout that starts with the program's launch parameters and carries more fields for the
        frame's own kernels (:meth:`param_address`). ``params`` (a numpy value of the scheduler's
        ``params_dtype``) gives this launch parameters of its own instead, uploaded through pinned staging and
        held until the frame retires: several launches of one frame with different parameters (the samples of
        a still, launch after launch; such a frame runs eagerly).
        """
        if self.submitted:
            self._check_recording()
        staged = self._slot.params
        if staged is None:
            raise RuntimeError("this scheduler was created without params_dtype; it has no launch parameters")
        size = staged.nbytes
        if params_size is not None:
            if isinstance(params_size, bool) or not isinstance(params_size, int) or not 0 < params_size <= size:
                raise ValueError(f"params_size must be an int in [1, {size}] (the parameters' size), "
                                 f"got {params_size!r}")
            size = params_size
        owner = self._owner
        if pipeline.ctx is not owner.ctx:
            owner.ctx.require_own(pipeline, "the pipeline")
        if self.capturing and pipeline.pipeline_options.exception_flags:
            raise GraphCaptureError("a launch of a pipeline compiled with exception checks "
                                    "(PipelineOptions.exception_flags): frames that debug exceptions run eagerly, "
                                    "each launch where its error can be seen")
        start = _clock()
        with _nvtx.annotate("optixasync.launch"):
            if params is not None:
                device = self._own_params(params)
            else:
                if not self.launched:
                    self.upload_params()
                device = staged.device_ptr
            holds = self.holds
            if not holds or holds[-1] is not sbt:  # the program and its records live until the frame's fence
                holds.append(pipeline)
                holds.append(sbt)
            launch = _clock()
            wait = pipeline.launch(sbt, device, width, height, depth, stream=self._handle, params_size=size,
                                   queue_owner=owner.queue_token)
        end = _clock()
        stats = self.stats
        waited = 0.0 if wait is None else self._count_queue_wait(wait)
        stats.launch_ms += (end - launch) * 1e3 - waited
        stats.submit_ms += (end - start) * 1e3 - waited

    def _count_queue_wait(self, wait: Any) -> float:
        """Count the launch queue's wait before a launch (designed, by cause); its ms, kept out of the launch's."""
        stats = self.stats
        stats.queue_waits += 1
        stats.queue_wait_ms += wait.ms
        self._owner.stats.count_queue_wait(wait.cause)
        return wait.ms

    def _own_params(self, params: Any) -> int:
        """A launch's own parameters on the device (uploaded on the frame's stream, held until it retires)."""
        if params.dtype != self._owner.params_dtype:
            raise ValueError("the launch's params do not have the scheduler's params_dtype")
        if not self.started:
            self.begin_gpu_work()
        device = self._owner.ctx.upload(np.frombuffer(params.tobytes(), np.uint8), self._handle)
        self.holds.append(device)
        return int(device.data.ptr)

    def buffer(self, name: str, shape: Any, dtype: Any) -> Any:
        """A device array owned by this slot, kept across frames (reallocated if shape or dtype change).

        Frames in other slots have their own, so frame ``k+1`` can write its
        buffer while frame ``k``'s is still being read.
        """
        if self.submitted:
            self._check_recording()
        shape = _as_shape(shape)
        current = self._slot.buffers.get(name)
        if current is not None and current.shape == shape and current.dtype == dtype:
            return current
        start = _clock()
        current = self._owner.ctx.memory.empty(shape, np.dtype(dtype), self.stream)
        self._slot.store(name, current)
        self.stats.submit_ms += (_clock() - start) * 1e3
        return current

    def upload(self, array: Any) -> Any:
        """Copy a host array to a new device array through pinned staging, in this frame's stream order.

        The device array is held until the frame retires, then freed in stream order.
        """
        if self.submitted:
            self._check_recording()
        start = _clock()
        with _nvtx.annotate("optixasync.upload"):
            self.begin_gpu_work()
            device = self._owner.ctx.upload(array, self.stream)  # staging held until the copy has passed
            self.holds.append(device)
        self.stats.submit_ms += (_clock() - start) * 1e3
        return device

    def readback(self, device_array: Any, name: str) -> None:
        """Enqueue a copy of ``device_array`` into pinned memory; delivered as ``result[name]`` (zero-copy).

        The pinned buffer is the slot's destination for ``name``: the result's array is a view of it,
        valid as long as anyone holds it (when the slot comes round while it is still held, the slot
        takes a new buffer and leaves that one to its holder, see :mod:`._slot`).
        """
        if self.submitted:
            self._check_recording()
        for taken, _view in self.readbacks:
            if taken == name:
                raise ValueError(f"readback {name!r} already requested in frame {self.index}")
        start = _clock()
        with _nvtx.annotate("optixasync.readback"):
            if not self.started:
                self.begin_gpu_work()
            destination = self.destinations.get(name, device_array.shape, device_array.dtype,
                                                      allocate=not self.capturing)
            if destination is None:
                raise GraphCaptureError(f"readback {name!r} has no fixed destination of its shape yet (a frame of "
                                        "this shape runs eagerly first and makes it)")
            destination.buffer.copy_from_device_async(device_array, self._handle, destination.buffer.nbytes)
            self.readbacks.append((name, destination.view))
        self.stats.submit_ms += (_clock() - start) * 1e3

    def hold(self, *objects: Any) -> None:
        """Keep ``objects`` alive until this frame has completed (temporaries used by its GPU work).

        Inside a capture they are kept as long as the slot's graph, whose every launch uses them.
        """
        if self.submitted:
            self._check_recording()
        self.holds.extend(objects)
        capture = capture_of(self._handle) if self.capturing else None
        if capture is not None:
            capture.hold(*objects)

    # -- the scheduler's side --------------------------------------------------------------------------------
    def run_work(self) -> None:
        """Enqueue the frame's work now: the parameters' upload, then ``work(frame)``."""
        self.upload_params()
        self.work(self)

    def snapshot(self) -> tuple[bool, int, int]:
        """What :meth:`rollback` restores (before a capture that may fail)."""
        return self.launched, len(self.holds), len(self.readbacks)

    def rollback(self, state: tuple[bool, int, int]) -> None:
        """Forget what was recorded since :meth:`snapshot` (a failed capture enqueued nothing)."""
        self.launched, holds, readbacks = state
        del self.holds[holds:]
        del self.readbacks[readbacks:]

    def retire(self) -> dict[str, np.ndarray]:
        """The readbacks, by name, for the frame's result; the frame lets go of them and of its temporaries."""
        readbacks = dict(self.readbacks)
        self.readbacks = []
        self.holds.clear()
        self.span = None
        self.work = None  # a work function that refers back to the frame would keep it (and its result) alive
        return readbacks

    def __repr__(self) -> str:
        return f"<Frame {self.index} slot={self.slot} {'launched' if self.launched else 'recording'}>"
