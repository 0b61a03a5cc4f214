"""The path tracer: a :class:`~optixasync.scene.Scene` rendered by ``kernels/pathtracer.cu``.

The renderer holds what is about images and samples (options, camera, the
accumulation buffer, launches and their timing); the compiled program is a
:class:`~optixasync.render.PathTracerProgram` and the scene's device data a
:class:`~optixasync.render.DeviceScene`.

Two ways to use it:

* :meth:`PathTracer.render` (offline): a number of samples per pixel,
  returned as a linear float32 image. It waits for the result.
* :meth:`PathTracer.record` (interactive): one launch of a few samples per
  pixel inside a :class:`~optixasync.FrameScheduler` frame, added to a
  persistent accumulation buffer and tonemapped to sRGB in the same launch.
  Frames of one scheduler run on one stream, so sharing the accumulation
  buffer between them is ordered by the stream; use one scheduler per tracer.

The random numbers of a sample depend only on (seed, pixel, absolute sample
index) and the kernel adds samples one by one in sample order, so the sums
do not depend on how the samples were split into launches or frames:
``render(16)`` and four ``record(frame, 4)`` give bitwise equal sums.

Blocking calls
--------------
* :class:`PathTracer` creation compiles the kernel (NVRTC on a PTX cache
  miss, then OptiX) and creates the pipeline: set-up time. Emissive meshes
  given as device arrays are read back once, to build the emitter table
  (:class:`~optixasync.render.DeviceScene`).
* :meth:`PathTracer.render` waits for its image (that is the point of the
  call), after each launch when a ``progress`` callback is given, and, on
  its first call, for the structure's compacted size (it compacts then).
* :meth:`PathTracer.close` waits for the launches it has enqueued and for
  the structure's last build, refit or compaction before destroying the
  pipeline and freeing the scene's buffers.
* ``optixLaunch`` blocks when the context has validation mode on.
Everything in :meth:`record`, :meth:`refit` and :meth:`reset` is
asynchronous: pinned parameter staging, stream-ordered memory, event
records and stream waits.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..cuda import GpuSpan, GpuTimer, Readiness, as_cupy_stream, elapsed_ms, synchronize
from ..scene import Camera, Scene
from ..validation import as_int, coerce_options
from ._device_scene import DeviceScene, check_scene, host_emitter_table
from ._layout import PATH_PARAMS
from ._options import RenderOptions
from ._params import MAX_SAMPLES, fill_params, positive_int
from ._program import PathTracerProgram
from ._tonemap import tonemap_srgb

if TYPE_CHECKING:
    from ..cuda import Context
    from ..scheduler import Frame

__all__ = ["PROGRESS_SAMPLES_PER_LAUNCH", "DenoiseInputs", "PathTracer"]

#: Samples per launch of :meth:`PathTracer.render` when a progress callback is given and the options say 0.
PROGRESS_SAMPLES_PER_LAUNCH = 16


class DenoiseInputs(NamedTuple):
    """A frame's denoiser inputs: (height, width, 4) float32 device arrays of the frame's slot, running means.

    ``color`` is the mean radiance (rgb, w = 1), ``albedo`` the mean first-hit
    albedo in [0, 1], ``normal`` the mean first-hit normal facing the camera
    (xyz in [-1, 1], w = 0). Written by the frame's launch, on its stream.
    """

    color: Any
    albedo: Any
    normal: Any


class PathTracer:
    """Path-trace a scene with OptiX: progressive (:meth:`record`) or offline (:meth:`render`).

    Parameters
    ----------
    ctx : Context
        Usually an :class:`optixasync.Context`.
    scene : Scene
        Read at creation: later changes to the scene's meshes are not seen
        (move dynamic meshes through :meth:`vertices` and :meth:`refit`).
    options : RenderOptions, dict or None
    stream : stream, optional
        Set-up stream (uploads, the build) and the stream of :meth:`render`
        (default: the context's stream). Frames wait for the set-up on the GPU.

    Attributes
    ----------
    params_dtype : numpy dtype
        The launch-parameter layout, for ``FrameScheduler(ctx, n, params_dtype=tracer.params_dtype)``.
    program : PathTracerProgram
        The compiled kernel and pipeline.
    device_scene : DeviceScene
        The scene on the device: structure, records, emitters, SBT.
    accel : GeometryAccel
        ``device_scene.accel``: one GAS, build input ``i`` = mesh ``i`` (compacted
        by the first :meth:`record` that finds the size arrived, or by :meth:`render`).
    emitters : EmitterTable
        ``device_scene.emitters``, the host copy of the emitter table.
    camera : Camera
        The camera of the next launch (a different one restarts the accumulation).
    options : RenderOptions
        Replaceable, except for the image size.
    last_nonfinite : int
        NaN or Inf samples dropped by the last :meth:`render`.
    last_render_ms : float or None
        GPU time of all launches of the last :meth:`render` (timing events).

    Raises
    ------
    TypeError, ValueError
        On a context that is not one, bad options or a bad scene (no meshes, emissive
        area zero), before any GPU work.
    """

    params_dtype: np.dtype = PATH_PARAMS

    def __init__(self, ctx: Context, scene: Scene, options: RenderOptions | dict | None = None, *,
                 stream: Any = None) -> None:
        from ..cuda import Context

        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be an optixasync.Context, got {type(ctx).__name__}")
        ctx.require_open()
        # Everything that can be wrong with the input is checked before the first GPU call.
        self._options = coerce_options(RenderOptions, options)
        self.scene = check_scene(scene)
        self._camera = copy.copy(scene.camera)
        self._samples = 0
        self.ctx = ctx
        self.stream = ctx.stream if stream is None else as_cupy_stream(stream)
        self._closed = False
        self._timer = GpuTimer()
        self._last_launch: dict[int, Any] = {}  # stream handle -> end event of this tracer's last launch there
        self.last_nonfinite = 0
        self.last_render_ms: float | None = None
        self._basis: tuple[Camera, tuple[np.ndarray, ...]] | None = None
        emitters = host_emitter_table(scene)  # before compiling: zero emissive area raises here
        self.program = PathTracerProgram(ctx, instanced=bool(scene.instanced))
        self.device_scene = DeviceScene(ctx, scene, self.program, self.stream, emitters)
        self.accel = self.device_scene.accel
        self.emitters = self.device_scene.emitters
        self._accum = ctx.memory.empty((self.options.height, self.options.width, 4), np.float32, self.stream)
        self._aov_sums: Any = None  # the denoiser inputs' running sums, made on the first frame that asks
        self._aov_current = False  # whether those sums cover every sample in the accumulation
        self._buffers = Readiness()
        self._buffers.record(self.stream)  # the accumulation's allocation: frames on other streams come after it
        ctx.track(self)

    # -- properties ----------------------------------------------------------------------------------------------
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
                             f"got {value.width}x{value.height}: create another PathTracer")
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
    def last_launch_ms(self) -> float | None:
        """GPU time of the newest finished launch (timing events; never waits), None until one has finished."""
        return self._timer.poll()

    @property
    def accumulation(self) -> Any:
        """The progressive sums, a (height, width, 4) float32 device array: RGB sums, then dropped samples.

        Divide RGB by :attr:`samples_done` for the mean. Read it on the stream of the frames (or after
        they completed).
        """
        return self._accum

    def vertices(self, mesh_index: int, stream: Any = None) -> Any:
        """The device vertex array (V, 3) float32 of mesh ``mesh_index``, read by the GAS and the shading.

        To move a dynamic mesh, write new positions here on the frame's stream, then call :meth:`refit`
        on the same stream. Pass that ``stream`` here to order it after the tracer's set-up (the initial
        upload of these vertices) before the first write; it costs nothing once done.
        """
        return self.device_scene.vertices(mesh_index, stream)

    def _camera_basis(self) -> tuple[np.ndarray, ...]:
        """The camera's basis, computed once per camera (every frame of a still camera reuses it)."""
        if self._basis is None or self._basis[0] != self._camera:
            self._basis = (copy.copy(self._camera), self._camera.basis(self._options.width, self._options.height))
        return self._basis[1]

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this PathTracer is closed")

    def _fill(self, params: Any, *, accum: Any, image: int, sample_offset: int, spp: int,
              aovs: tuple[int, int, int, int] | None = None, accumulate: bool | None = None) -> None:
        scene = self.device_scene
        fill_params(params, options=self.options, camera=self.camera, accum=int(accum.data.ptr), image=image,
                    meshes=scene.records_pointer, emitters=scene.emitters_pointer, num_emitters=len(scene.emitters),
                    handle=scene.handle, sample_offset=sample_offset, spp=spp, basis=self._camera_basis(), aovs=aovs,
                    environment=scene.environment_pointer, environment_probability=scene.environment_probability,
                    instanced=scene.instanced, accumulate=accumulate)

    def _order(self, stream: Any) -> int:
        """Make ``stream`` wait (on the GPU) for the scene's set-up, its last structure update and our buffers."""
        self._buffers.order(stream)
        return self.device_scene.order(stream)

    def _denoise_inputs(self, frame: Frame) -> tuple[DenoiseInputs, tuple[int, int, int, int]]:
        opts = self.options
        shape = (opts.height, opts.width, 4)
        if self._aov_sums is None:  # made on the frames' stream, which is the only one that uses it
            self._aov_sums = self.ctx.memory.empty((opts.height, opts.width, 2, 4), np.float32, frame.stream)
        inputs = DenoiseInputs(*(frame.buffer(name, shape, np.float32) for name in ("color", "albedo", "normal")))
        pointers = (int(self._aov_sums.data.ptr), *(int(a.data.ptr) for a in inputs))
        return inputs, pointers  # type: ignore[return-value]

    # -- progressive -----------------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Restart the progressive accumulation: the next :meth:`record` overwrites instead of adding."""
        self._samples = 0

    def refit(self, stream: Any = None) -> None:
        """Refit the structure after dynamic vertices changed, ordered on ``stream`` (default: the tracer's).

        Also restarts the accumulation (the old samples show the old geometry).

        Raises
        ------
        ValueError
            If the scene has no dynamic mesh.
        """
        self._check_open()
        self.device_scene.refit(self.stream if stream is None else stream)
        self.reset()

    def record(self, frame: Frame, spp: int = 1, *, readback: str | None = "image", camera: Camera | None = None,
               denoise_inputs: bool = False) -> DenoiseInputs | None:
        """Launch ``spp`` more samples per pixel into the accumulation, inside ``frame``.

        The running mean is tonemapped to sRGB ``uint8`` (height, width, 4) (alpha 255) into
        ``frame.buffer("image", ...)`` by the same launch, and read back as ``result[readback]``
        (``readback=None``: no readback). A ``camera`` different from the current one restarts the
        accumulation. One ``record`` per frame: it is the frame's launch and fills ``frame.params``.

        With ``denoise_inputs``, the same launch also writes the denoiser's inputs into the frame's
        ``color``, ``albedo`` and ``normal`` buffers (float32 (height, width, 4), running means) and
        returns them as :class:`DenoiseInputs`; the frames' albedo and normal sums restart with the
        accumulation. The radiance is the same with or without them. Asking for them after frames
        that did not restarts the accumulation (their sums would not cover the earlier samples).
        """
        self._check_open()
        spp = positive_int("spp", spp)
        if readback is not None and not isinstance(readback, str):
            raise TypeError(f"readback must be a name (str) or None, got {type(readback).__name__}")
        if frame.launched:
            raise RuntimeError("this frame has already launched with its parameters: call record() once per frame")
        params = frame.params
        if params is None or params.dtype != PATH_PARAMS:
            raise ValueError("the frame's parameters do not have the path tracer's layout: create the scheduler "
                             "with FrameScheduler(ctx, n, params_dtype=tracer.params_dtype)")
        if camera is not None:
            self.camera = camera  # restarts the accumulation if it differs (only once the frame is known good)
        if self._samples + spp > MAX_SAMPLES:
            raise ValueError(f"{self._samples} + {spp} samples exceed the kernel's 32-bit sample index; reset() first")
        if denoise_inputs and self._samples > 0 and not self._aov_current:
            self.reset()
        handle = self._order(frame)  # the frame as the stream: its GPU time starts here
        stream = frame.stream
        self.device_scene.compact(stream)  # once the size has arrived; never waits
        opts = self.options
        image = frame.buffer("image", (opts.height, opts.width, 4), np.uint8)
        inputs, aovs = self._denoise_inputs(frame) if denoise_inputs else (None, None)
        self._fill(params, accum=self._accum, image=int(image.data.ptr), sample_offset=self._samples, spp=spp,
                   aovs=aovs)
        span = self._timer.start(stream)
        if denoise_inputs:
            frame.launch(self.program.pipeline_aovs, self.device_scene.sbt_aovs, opts.width, opts.height)
        else:
            frame.launch(self.program.pipeline, self.device_scene.sbt, opts.width, opts.height)
        self._last_launch[handle] = self._timer.stop(span, stream)
        # The launch has added the samples: count them before anything else can raise.
        self._samples += spp
        self._aov_current = denoise_inputs
        if readback is not None:
            frame.readback(image, readback)
        return inputs

    # -- offline ---------------------------------------------------------------------------------------------------
    def render(self, spp: int | None = None, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Render ``spp`` samples per pixel (default ``options.spp``) and return the linear RGB mean.

        Waits for the image: that is the point of the call. Runs on the tracer's stream, after its
        set-up and the structure's last refit, with its own accumulation buffer (the progressive one is
        left alone). The samples go in launches of ``options.samples_per_launch`` (0: all in one, or
        16 per launch with ``progress``); every launch is enqueued before the first wait, so the GPU
        never idles between them, and ``progress(samples_done)`` is called as each one finishes.

        Returns
        -------
        numpy.ndarray
            (height, width, 3) float32, row 0 at the top.
        """
        total = self.options.spp if spp is None else positive_int("spp", spp)
        sums = self._render_sums(0, total, progress)
        return sums[..., :3] / np.float32(total)

    def render_sums(self, first_sample: int, spp: int) -> np.ndarray:
        """Render the absolute samples ``first_sample`` ... ``first_sample + spp - 1`` and return their sums.

        The building block of splitting one image over several GPUs: the random numbers of a sample
        depend only on (seed, pixel, absolute sample index), so disjoint ranges rendered anywhere add up
        to the image :meth:`render` gives for their union, up to the order of the float32 additions.
        Waits for the result, as :meth:`render` does (``options.samples_per_launch`` applies).

        Returns
        -------
        numpy.ndarray
            (height, width, 4) float32, row 0 at the top: the RGB sums of the range's samples, then the
            number of its samples that were NaN or Inf and dropped. Divide by the total sample count.

        Raises
        ------
        ValueError
            If the range does not fit the kernel's 32-bit sample index.
        """
        first = as_int("first_sample", first_sample, 0)
        count = positive_int("spp", spp)
        return self._render_sums(first, count, None).copy()

    def _render_sums(self, first: int, total: int, progress: Callable[[int], None] | None) -> np.ndarray:
        """Samples ``first`` ... ``first + total - 1`` into a fresh accumulation; a pinned view of the sums."""
        from ._params import launch_plan

        self._check_open()
        if first + total > MAX_SAMPLES:
            raise ValueError(f"samples {first} ... {first + total - 1} exceed the kernel's 32-bit sample index")
        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable (it receives the samples done so far)")
        per_launch = self.options.samples_per_launch or (
            min(PROGRESS_SAMPLES_PER_LAUNCH, total) if progress is not None else total)
        ctx, opts, stream = self.ctx, self.options, self.stream
        handle = self._order(stream)
        self.device_scene.compact(stream, wait=True)  # offline: waiting for the size costs nothing here
        accum = ctx.memory.empty((opts.height, opts.width, 4), np.float32, stream)
        keep: list[Any] = [accum]
        launches: list[tuple[int, GpuSpan]] = []  # (samples done after it, its GPU span)
        for offset, count in launch_plan(total, per_launch):
            params = np.zeros((), PATH_PARAMS)
            self._fill(params, accum=accum, image=0, sample_offset=first + offset, spp=count, accumulate=offset > 0)
            params_device = self.device_scene._upload_struct(params, stream)
            keep.append(params_device)
            span = GpuSpan.begin(stream)
            self.program.pipeline.launch(self.device_scene.sbt, params_device, opts.width, opts.height, stream=stream)
            span.stop(stream)
            launches.append((offset + count, span))
        self._last_launch[handle] = launches[-1][1].end
        staging, host = ctx.pinned.array((opts.height, opts.width, 4), np.float32)
        staging.copy_from_device_async(accum, stream)
        done = ctx.deferred.after(stream, staging, *keep)
        gpu_ms = 0.0
        for samples, span in launches:
            # with progress: wait for each launch in turn; without: for the last (then all have finished)
            synchronize(span.end if progress is not None else launches[-1][1].end, "waiting for the render")
            ms = elapsed_ms(span.start, span.end)
            gpu_ms += ms
            self._timer.last_ms = ms  # inside progress(), last_launch_ms is the launch just finished
            if progress is not None:
                progress(samples)
        synchronize(done, "waiting for the rendered image")
        self.last_render_ms = gpu_ms
        self.last_nonfinite = int(host[..., 3].sum())
        return host

    @staticmethod
    def tonemap(linear: np.ndarray) -> np.ndarray:
        """Linear RGB (H, W, 3) to sRGB ``uint8`` (H, W, 3) with the kernel's curve (host, numpy)."""
        return tonemap_srgb(linear)

    # -- lifetime --------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Wait for this tracer's launches, then destroy its device scene, pipeline, programs and module."""
        if self._closed:
            return
        self._closed = True
        for event in self._last_launch.values():
            synchronize(event, "waiting for the tracer's launches before closing it")
        synchronize(self.device_scene.ready.event, "waiting for the tracer's set-up before closing it")
        # a refit or compaction enqueued on a frame's stream after the last launch: its buffers are freed next
        if self.device_scene.accel.ready.event is not None:
            synchronize(self.device_scene.accel.ready.event, "waiting for the structure's last build before closing it")
        self.device_scene.close()
        self.program.close()
        self._accum = self._aov_sums = None

    def __enter__(self) -> PathTracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        o = self.options
        return (f"<optixasync.PathTracer {len(self.scene.meshes)} meshes, {self.scene.num_triangles} triangles, "
                f"{len(self.emitters)} emitter triangles, {o.width}x{o.height}, max_depth={o.max_depth}>")
