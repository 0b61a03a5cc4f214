"""The render pipeline: from a scene to frames, through scene tables, an integrator and stages.

:class:`RenderPipeline` owns the path from a :class:`~optixasync.scene.Scene`
to images: the scene's device tables and structure (:class:`DeviceScene`),
an integrator compiled for the outputs asked of it (``"path"`` by default),
and the stages after each launch (tonemap, denoise, readback, file writing).
Every launch goes through a frame of a :class:`~optixasync.FrameScheduler`:

* :meth:`RenderPipeline.record` puts one launch (and the stages) into a frame
  of any scheduler made with ``params_dtype=pipeline.params_dtype``;
* :meth:`RenderPipeline.frames` runs progressive or animated frames through
  the pipeline's own scheduler, and yields their results in order;
* :meth:`RenderPipeline.render` renders a still: one frame of the pipeline's
  scheduler holding all of its launches, each with parameters of its own;
* :meth:`RenderPipeline.recorder` records frames of an application's own
  loop the same way every time. Frame graphs (off by default: ``graphs=True``)
  capture a slot's frame once and replay it: see :mod:`._graphs`.

Progressive frames add their samples to one accumulation buffer, ordered by
the frames' stream (one scheduler per pipeline for :meth:`record`). The random
numbers of a sample depend only on (seed, pixel, absolute sample index) and
the kernel adds samples one by one in sample order, so ``render(16)`` and
four ``record(frame, 4)`` give bitwise equal sums.

Blocking calls
--------------
* Creating a pipeline builds the scene's tables and structure and compiles
  the integrator (NVRTC on a PTX cache miss, then OptiX): set-up time.
  Emissive meshes given as device arrays are read back once (the emitter
  table).
* :meth:`RenderPipeline.render` (and :meth:`render_sums`) waits for its
  image (that is the point of the call), after each launch when a
  ``progress`` callback is given, and for the structure's compacted size
  before its launches.
* :meth:`RenderPipeline.frames` waits where its scheduler does: on a slot's
  fence when the host is ``frames_in_flight`` frames ahead, and for the last
  frames when it ends (drain).
* :meth:`RenderPipeline.close` waits for the launches it enqueued, the
  streams its graph frames ran on and the structure's last operation
  before destroying the program and the tables.
* ``optixLaunch`` blocks when the context has validation mode on.
Everything in :meth:`record`, :meth:`refit` and :meth:`reset` is
asynchronous: pinned parameter staging, stream-ordered memory, event
records and stream waits.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import Context, GpuTimer, Readiness, as_cupy_stream, create_stream, stream_handle, synchronize
from ..scene import Camera, Scene
from ..validation import as_int, coerce_options
from ._batch_setup import batch_variants, check_batch, check_batchable, lanes_compiled, make_integrator
from ._device_outputs import OutputLeases
from ._device_scene import DeviceScene, check_scene, host_emitter_table
from ._graphs import FrameWork, PipelineGraphs
from ._integrator import Integrator, Launch, integrator_class
from ._options import RenderOptions
from ._outputs import SINGLE_CAMERA_OUTPUTS, check_output_names
from ._params import MAX_SAMPLES, positive_int
from ._plan import DEFAULT, OutputPlan
from ._recorder import FrameRecorder, run_frames
from ._scene_edits import SceneEdits
from ._stages import Stage
from ._step import BatchFrames
from ._still import StillFrames
from ._views import Views
from ._worlds import Worlds

if TYPE_CHECKING:
    from ..scheduler import Frame, FrameResult, FrameScheduler, SchedulerOptions

__all__ = ["DEFAULT", "RenderPipeline"]


class RenderPipeline(BatchFrames, StillFrames, SceneEdits):
    """A scene rendered by an integrator, with stages after each launch (see the module documentation).

    Parameters
    ----------
    ctx : Context or CpuContext
        The GPU's context, or the CPU device's (:class:`~optixasync.cpu.CpuContext`: the pipeline is then a
        ``CpuRenderPipeline``, which runs the kernel's host build and serves stills and progressive frames;
        see ``optixasync.render._cpu_pipeline``).
    scene : Scene
        Checked and read at creation: later changes to its meshes are not seen (move dynamic meshes through
        :meth:`vertices` and :meth:`refit`).
    options : RenderOptions, dict or None
    integrator : str
        A registered integrator (:func:`optixasync.render.integrators`; ``"path"``, the path tracer).
    outputs : str or sequence of str
        What each frame produces (:data:`~optixasync.render.OUTPUTS`), made by the integrator or the stages.
    stages : sequence of Stage
        Run after each launch, in order (``[Denoise(), Tonemap()]`` denoises the image).
    readback : str, sequence of str or None
        Outputs copied to the host, as ``result[name]`` of the completed frame (default: ``outputs``).
    frames_in_flight : int
        Slots of the pipeline's own scheduler (:meth:`frames`, :meth:`render`).
    scheduler_options : SchedulerOptions, dict or None
        Options of that scheduler.
    stream : stream, optional
        The stream of the set-up and of the pipeline's own frames (default: a new non-blocking one).
    views : Views, optional
        A batch of views rendered by every launch (:class:`~optixasync.render.Views`): the outputs are
        (views, height, width, channels) arrays. Default: the scene's camera, (height, width, channels).
    worlds : Worlds, optional
        Copies of the scene differing in the poses of some meshes (:class:`~optixasync.render.Worlds`), moved by
        the ``transforms`` of :meth:`record` and :meth:`step`; each view traces its own world.
    graphs : bool
        Run the pipeline's own frames as CUDA graphs (its scheduler's ``graphs``; see :mod:`._graphs`). Off
        by default: frame graphs have not yet been checked on a GPU. A batch's frames always run eagerly.

    Attributes
    ----------
    ctx : Context
    scene : Scene
    device_scene : DeviceScene
        The scene's tables and structure.
    integrator : Integrator
    stages : list of Stage
    outputs, readback : tuple of str
    params_dtype : numpy dtype
        The integrator's launch parameters: ``FrameScheduler(ctx, n, params_dtype=pipeline.params_dtype)``.
    stream : cupy.cuda.Stream
    last_nonfinite : int
        NaN or Inf samples dropped by the last :meth:`render`.
    last_render_ms : float or None
        GPU time of all launches of the last :meth:`render` (timing events).
    graphs : PipelineGraphs
        The frame-graph side of the frames (graph or eager, their keys, the slots' frame values).

    Raises
    ------
    TypeError, ValueError
        On a context that is not one, bad options, outputs or stages the integrator cannot serve, a bad scene
        (no meshes, no light, emissive area zero), views or worlds that do not fit (a stage that takes no
        batch, more threads than a launch holds, more instances than a structure holds), before any GPU work.
    """

    def __new__(cls, ctx: Any = None, *args: Any, **kwargs: Any) -> Any:
        from ..cpu import CpuContext

        if isinstance(ctx, CpuContext):  # the CPU device's pipeline: made here, its one door
            from ._cpu_pipeline import CpuRenderPipeline

            return CpuRenderPipeline(ctx, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, ctx: Context, scene: Scene, options: RenderOptions | dict | None = None, *,
                 integrator: str = "path", outputs: str | Sequence[str] = ("image",), stages: Iterable[Stage] = (),
                 readback: Any = DEFAULT, frames_in_flight: int = 2,
                 scheduler_options: SchedulerOptions | dict | None = None, stream: Any = None,
                 graphs: bool = False, views: Views | None = None, worlds: Worlds | None = None) -> None:
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be an optixasync.Context (or CpuContext), got {type(ctx).__name__}")
        ctx.require_open()
        # Everything that can be wrong with the input is checked before the first GPU call.
        self._options = coerce_options(RenderOptions, options)
        self.scene = check_scene(scene)  # the one check of the scene in a run
        cls = integrator_class(integrator)
        self.outputs = check_output_names(outputs)
        self.stages = list(stages)
        for stage in self.stages:
            if not isinstance(stage, Stage):
                raise TypeError(f"stages must be Stage objects, got {type(stage).__name__}")
        self._plan = OutputPlan(cls, self.outputs, self.stages)
        self.readback = self._plan.check_readback(self.outputs if readback is DEFAULT else readback, staged=True)
        self.frames_in_flight = as_int("frames_in_flight", frames_in_flight, 1)
        if not isinstance(graphs, bool):
            raise TypeError(f"graphs must be a bool, got {type(graphs).__name__}")
        self._graphs_default = graphs
        self._stage_tuple = tuple(self.stages)
        self._scheduler_options = scheduler_options
        self.views, layout = check_batch(self.scene, self._options, self.stages, views, worlds)
        check_batchable(self.scene, self._options, cls, self._plan.written, views, worlds)
        self.batched = bool(views is not None or worlds is not None or cls.batched or
                            not self._plan.written <= SINGLE_CAMERA_OUTPUTS)
        emitters = host_emitter_table(scene)  # zero emissive area raises here, before any GPU work
        self.ctx = ctx
        self.stream = create_stream() if stream is None else as_cupy_stream(stream)
        self._closed = False
        self._lanes = lanes_compiled(self._options, self.views, self.batched)
        variants = batch_variants(self._plan.variants, self.batched, layout is not None, self._lanes)
        self.device_scene = DeviceScene(ctx, scene, self.stream, emitters, instances=layout is not None,
                                        checked=True)
        self.integrator: Integrator
        self.integrator, self._batch = make_integrator(ctx, cls, self.device_scene, variants, self.views, layout,
                                                       self.stream)
        self.params_dtype = cls.params_dtype
        self._camera = copy.copy(scene.camera)
        self._basis: tuple[Camera, tuple[np.ndarray, ...]] | None = None
        self._samples = 0
        self._sums_current = False  # whether the first-hit sums cover every sample of the accumulation
        self._accum = ctx.memory.empty(self._plane(4), np.float32, self.stream)
        self._leases = OutputLeases()
        self._sums: Any = None  # the first-hit sums, made on the first frame that asks
        self._buffers = Readiness()
        self._buffers.record(self.stream)  # the accumulation's allocation: frames on other streams come after it
        self._timer = GpuTimer()
        self._last_launch: dict[int, Any] = {}  # stream handle -> end event of this pipeline's last launch there
        self._scheduler: FrameScheduler | None = None
        self.graphs = PipelineGraphs(self)
        self.last_nonfinite = 0
        self.last_render_ms: float | None = None
        ctx.track(self)

    # -- state ---------------------------------------------------------------------------------------------------
    @property
    def options(self) -> RenderOptions:
        """The render options. May be replaced (seed, depths, sample counts) but not the image size, which
        sizes the buffers; replacing them restarts the progressive accumulation."""
        return self._options

    @options.setter
    def options(self, value: RenderOptions | dict) -> None:
        value = coerce_options(RenderOptions, value)
        if (value.width, value.height) != (self._options.width, self._options.height):
            raise ValueError(f"the image size is fixed at creation ({self._options.width}x{self._options.height}); "
                             f"got {value.width}x{value.height}: create another RenderPipeline")
        self._options = value
        self.reset()

    @property
    def camera(self) -> Camera:
        """The camera of the next launch; setting a different one restarts the progressive accumulation."""
        return self._camera

    @camera.setter
    def camera(self, value: Camera) -> None:
        if not isinstance(value, Camera):
            raise TypeError(f"camera must be an optixasync.scene.Camera, got {type(value).__name__}")
        if value != self._camera:
            self._camera = copy.copy(value)
            self.reset()

    @property
    def samples_done(self) -> int:
        """Samples per pixel in the progressive accumulation (0 after :meth:`reset`)."""
        return self._samples

    @property
    def accumulation(self) -> Any:
        """The progressive sums, a (height, width, 4) float32 device array: RGB sums, then dropped samples.

        Divide RGB by :attr:`samples_done` for the mean. Read it on the stream of the frames (or after they
        completed).
        """
        return self._accum

    @property
    def last_launch_ms(self) -> float | None:
        """GPU time of the newest finished eager launch (timing events; never waits), None until one has finished.

        A frame graph's launch is not timed apart: its frame's ``stats.gpu_ms`` covers it."""
        return self._timer.poll()

    @property
    def scheduler(self) -> FrameScheduler:
        """The pipeline's own scheduler (made on first use), on :attr:`stream`."""
        if self._scheduler is None:
            from ..scheduler import FrameScheduler

            self._check_open()
            self._scheduler = FrameScheduler(self.ctx, self.frames_in_flight, params_dtype=self.params_dtype,
                                             options=self._scheduler_options, stream=self.stream,
                                             graphs=self._graphs_default)
        return self._scheduler

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this RenderPipeline is closed")

    def camera_basis(self) -> tuple[np.ndarray, ...]:
        """The camera's basis for the image size, computed once per camera."""
        if self._basis is None or self._basis[0] != self._camera:
            self._basis = (copy.copy(self._camera), self._camera.basis(self._options.width, self._options.height))
        return self._basis[1]

    def order(self, stream: Any) -> int:
        """Make ``stream`` wait (on the GPU) for the scene's set-up, its last structure update and our buffers."""
        handle = stream_handle(stream)  # once: a frame given as the stream starts its GPU time here
        self._buffers.order(handle)
        return self.device_scene.order(handle)

    # -- scene changes ---------------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Restart the progressive accumulation: the next :meth:`record` overwrites instead of adding."""
        self._samples = 0

    # -- frames ------------------------------------------------------------------------------------------------
    def record(self, frame: Frame, spp: int = 1, *, readback: Any = DEFAULT, camera: Camera | None = None,
               stages: bool = True, graph: bool | None = None, views: Views | None = None, poses: Any = None,
               transforms: Any = None) -> dict[str, Any]:
        """Launch ``spp`` more samples per pixel into the accumulation inside ``frame``, then the stages.

        The frame's outputs (the pipeline's, and what its stages need) are written into the frame slot's buffers
        and the ``readback`` ones copied back (``result[name]``; None: none). A ``camera`` different from the
        current one restarts the accumulation. ``stages=False`` skips the stages (the viewer's denoise switch);
        outputs that need the first-hit sums restart the accumulation when the frames before did not keep them.
        One ``record`` per frame: it is the frame's launch and fills ``frame.params``.

        A pipeline with ``views`` takes new ``views`` (as many), or new ``poses`` for them ((views, 4, 4) or
        (views, 3, 4): numpy, or a device array read on the GPU); with ``worlds``, ``transforms`` of the movable
        meshes ((worlds, movable, 4, 4) or (..., 3, 4) float32, a torch tensor or any device array, read without
        a host copy: one kernel and one update of the instance structure on the frame's stream). New views,
        poses or transforms do not restart the accumulation: call :meth:`reset` (or pass ``frames(update=...)``)
        for each step's own image. Everything is checked before the frame's first GPU work.

        ``graph`` (default: the frame's ``graph``) runs the frame as its slot's CUDA graph (:mod:`._graphs`): this
        writes the parameters only; the launch, stages and readbacks are the frame's work, enqueued (or replayed)
        at submit. GPU work of your own reading the outputs then goes in ``sched.frame(work)`` (run after ours).

        Returns
        -------
        dict of str to device array
            The frame slot's output buffers, by name (valid on the frame's stream until the slot is reused).
        """
        self._check_open()
        spp = positive_int("spp", spp)
        names = self._plan.check_readback(self._default_readback(stages) if readback is DEFAULT else readback,
                                          staged=stages)
        return self._record(frame, spp, names, stages, graph, camera=camera, views=views, poses=poses,
                            transforms=transforms)

    def _record(self, frame: Frame, spp: int, names: tuple[str, ...], stages: bool, graph: bool | None,
                updates: tuple = (), camera: Camera | None = None, views: Views | None = None, poses: Any = None,
                transforms: Any = None, timed: bool = True) -> dict[str, Any]:
        """:meth:`record` with its arguments checked; ``updates``: frame updates whose GPU part the frame holds;
        ``timed=False``: no timing events around the launch (:meth:`step`: its frame's span times it, and the
        caller records the launch's end in ``_last_launch``)."""
        self._check_open()
        if frame.launched or isinstance(frame.work, FrameWork):
            raise RuntimeError("this frame has already launched with its parameters: call record() once per frame")
        if frame.params is None or frame.params.dtype != self.params_dtype:
            raise ValueError("the frame's parameters do not have the pipeline's layout: create the scheduler "
                             "with FrameScheduler(ctx, n, params_dtype=pipeline.params_dtype)")
        inputs = self._batch.check(frame.stream, views, poses, transforms)
        if self.graphs.lost_samples():
            self.reset()  # the graph frame before was aborted after counting its samples
        if camera is not None:
            self.camera = camera  # restarts the accumulation if it differs (only once the frame is known good)
        if self._samples + spp > MAX_SAMPLES:
            raise ValueError(f"{self._samples} + {spp} samples exceed the kernel's 32-bit sample index; reset() first")
        written = self._plan.integrator_outputs(stages)
        sums = self._plan.needs_sums(stages)
        if sums and self._samples > 0 and not self._sums_current:
            self.reset()  # the sums would not cover the earlier samples
        for stage in self._stage_tuple if stages else ():
            stage.prepare(frame, (self._options.height, self._options.width))  # a refusal adds no samples
        handle = self.order(frame)  # the frame as the stream: its GPU time starts here
        # Its launch reads the scene, the structures, the accumulation and the program: this pipeline lives until
        # the frame's fence has passed, whoever drops it (the scheduler hands the frame's holds to the context).
        frame.hold(self)
        self.device_scene.compact(frame.stream)  # once the size has arrived; never waits
        batch = self._batch.prepare(frame, inputs, self._options, self._camera) if self.batched else None
        buffers = self._frame_buffers(frame)
        launch = Launch(self._options, self.camera_basis(), self._accum, self._samples, spp, self._samples > 0,
                        self.device_scene.record, {name: buffers[name] for name in written},
                        self._first_hit_sums(frame) if sums else None, batch)
        if "rays" in written:
            with self.ctx.memory.scope(frame.stream):
                buffers["rays"].fill(0)  # counted from zero in every frame
        work = FrameWork(self, launch, buffers, self._stage_tuple if stages else (), names, updates,
                         self.graphs.values(frame, create=False) if updates else None, written)
        deferred = self.graphs.defer(frame, work, graph)  # a graph's frame: parameters written, its work at submit
        if not deferred and not timed:
            work.launch(frame)
        elif not deferred:
            span = self._timer.start(frame.stream)
            work.launch(frame)
            self._last_launch[handle] = self._timer.stop(span, frame.stream)
        # The launch has added the samples (a graph's frame: will add them): count them before anything can raise.
        self._samples += spp
        self._sums_current = sums
        if not deferred:
            work.finish(frame)
        return buffers.made()

    def _default_readback(self, stages: bool) -> tuple[str, ...]:
        return self._plan.default_readback(self.readback, stages)

    def _first_hit_sums(self, frame: Frame) -> Any:
        if self._sums is None:  # made on the frames' stream, which is the only one that uses it
            self._sums = self.ctx.memory.empty(self._plane(2, 4), np.float32, frame.stream)
        return self._sums

    def frames(self, count: int, spp: int = 1, *, update: Callable[[RenderPipeline, int, Frame], None] | None = None,
               accumulate: bool | None = None, readback: Any = DEFAULT, last_only: bool = False,
               stages: bool = True, graphs: bool | None = None) -> Iterator[FrameResult]:
        """Render ``count`` frames of ``spp`` samples through the pipeline's scheduler; their results, in order.

        ``update(pipeline, index, frame)`` (a frame update: :class:`~optixasync.render.ClothMotion`,
        :class:`~optixasync.render.CameraSwing`, or any callable) runs inside each frame before its launch.
        ``accumulate`` (default: without an update) adds every frame's samples to the progressive image;
        otherwise each frame is its own image. ``last_only`` reads back the last frame alone (a progressive
        still). The stages' :meth:`Stage.deliver` sees each result with readbacks before it is yielded. Results
        hold pinned memory until released: use them as ``with result:``, or drop them. ``graphs`` (default: the
        pipeline's) runs the frames as CUDA graphs, an update's GPU part included when it has one
        (:class:`~optixasync.render.GraphUpdate`: the cloth's vertices and refit).
        """
        self._check_open()
        count = as_int("count", count, 0)
        every = self.recorder(spp, update=update, accumulate=accumulate, readback=None if last_only else readback,
                              stages=stages, graph=graphs)
        last = self.recorder(spp, update=update, accumulate=accumulate, readback=readback, stages=stages,
                             graph=graphs) if last_only else every
        return run_frames(self, count, every, last, stages)  # the checks above at the call, the frames when iterated

    def recorder(self, spp: int = 1, *, update: Callable[[RenderPipeline, int, Frame], None] | None = None,
                 accumulate: bool | None = None, readback: Any = DEFAULT, stages: bool = True,
                 graph: bool | None = None) -> FrameRecorder:
        """Frames recorded the same way every time, into frames of any scheduler of the pipeline's layout.

        ``recorder.record(frame, index)`` is frame ``index`` of :meth:`frames` (its arguments, checked once). The
        record-once, replay-many door for applications driving their own frames (see :class:`FrameRecorder`).
        """
        return FrameRecorder(self, spp, update=update, accumulate=accumulate,
                             readback=self._default_readback(stages) if readback is DEFAULT else readback,
                             stages=stages, graph=graph)

    # -- lifetime --------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Wait for this pipeline's launches, then release its scheduler, stages, program and scene."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._scheduler is not None:
                self._scheduler.close()
            self.graphs.close()
            for event in self._last_launch.values():
                synchronize(event, "waiting for the pipeline's launches before closing it")
            synchronize(self.device_scene.ready.event, "waiting for the pipeline's set-up before closing it")
            # a refit or compaction enqueued on a frame's stream after the last launch: its buffers are freed next
            if self.device_scene.accel.ready.event is not None:
                synchronize(self.device_scene.accel.ready.event, "waiting for the structure's last build")
        finally:
            for stage in self.stages:
                stage.close()
            self.integrator.close()
            self._batch.close()
            self.device_scene.close()
            self._accum = self._sums = None
            self.ctx.deferred.collect()  # the frames that held this pipeline have passed

    def __enter__(self) -> RenderPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        o = self._options
        return (f"<optixasync.RenderPipeline {self.integrator.name}, {len(self.scene.meshes)} meshes, "
                f"{self.scene.num_triangles} triangles, {o.width}x{o.height}, outputs {list(self.outputs)}, "
                f"stages {self.stages}>")
