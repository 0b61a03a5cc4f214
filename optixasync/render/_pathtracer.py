"""The path tracer: a :class:`~optixasync.scene.Scene` rendered by ``kernels/pathtracer.cu``.

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

Calls that may block the host, and why
--------------------------------------
* :class:`PathTracer` creation compiles the kernel (NVRTC on a PTX cache
  miss, then OptiX) and creates the pipeline: set-up time. Emissive meshes
  given as device arrays are read back once, to build the emitter table.
* :meth:`PathTracer.render` waits for its image (that is the point of the
  call), after each launch when a ``progress`` callback is given, and, on
  its first call, for the structure's compacted size (it compacts then).
* :meth:`PathTracer.close` waits for the launches it has enqueued before
  destroying the pipeline.
* ``optixLaunch`` blocks when the context has validation mode on.
Everything in :meth:`record`, :meth:`refit` and :meth:`reset` is
asynchronous: pinned parameter staging, stream-ordered memory, event
records and stream waits.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from .._options import coerce_options
from .._optix._types import CompileDebugLevel, CompileOptimizationLevel, TraversableGraphFlags
from ..accel import AccelOptions, GeometryAccel, TriangleInput
from ..accel._inputs import is_device_array
from ..cuda import record_event, stream_handle, timing_event
from ..program import CompileOptions, ModuleOptions, PipelineOptions, ShaderBindingTable
from ..scene import Camera, Scene
from ._emitters import EmitterTable, build_emitter_table
from ._layout import MESH_EMISSIVE, MESH_RECORD, MESH_TWO_SIDED, PATH_PARAMS
from ._options import RenderOptions
from ._tonemap import tonemap_srgb

__all__ = ["PathTracer", "PIPELINE_OPTIONS", "MODULE_OPTIONS", "COMPILE_OPTIONS", "fill_params", "mesh_records",
           "launch_plan"]

#: Pipeline-wide options: 3 payloads (t, primitive, mesh), one GAS traced directly, no exception checks.
PIPELINE_OPTIONS = PipelineOptions(num_payload_values=3, num_attribute_values=2,
                                   traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS)
#: Full OptiX optimisation, no debug information.
MODULE_OPTIONS = ModuleOptions(opt_level=CompileOptimizationLevel.LEVEL_3, debug_level=CompileDebugLevel.NONE)
#: NVRTC with fast math (approximate rsqrt, sincos, pow; flush denormals).
COMPILE_OPTIONS = CompileOptions(use_fast_math=True)

#: Samples per launch of :meth:`PathTracer.render` when a progress callback is given and the options say 0.
PROGRESS_SAMPLES_PER_LAUNCH = 16
_MAX_SAMPLES = 2**32 - 1  # the kernel's sample index is a 32-bit unsigned int


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a positive integer, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def launch_plan(total: int, per_launch: int) -> list[tuple[int, int]]:
    """``(sample_offset, spp)`` of each launch that renders ``total`` samples, ``per_launch`` at a time."""
    return [(start, min(per_launch, total - start)) for start in range(0, total, per_launch)]


def fill_params(params: Any, *, options: RenderOptions, camera: Camera, accum: int, image: int, meshes: int,
                emitters: int, num_emitters: int, handle: int, sample_offset: int, spp: int,
                basis: tuple[np.ndarray, ...] | None = None) -> None:
    """Write ``PathTracerParams`` into ``params`` (a numpy scalar of :data:`PATH_PARAMS`, pinned or not).

    ``accum``, ``image``, ``meshes`` and ``emitters`` are device addresses (``image`` 0: no tonemap).
    A launch with ``sample_offset`` 0 overwrites the accumulation; later ones add to it. ``basis`` is
    ``camera.basis(width, height)`` when the caller has it already.
    """
    eye, u, v, w = basis if basis is not None else camera.basis(options.width, options.height)
    params["accum"], params["image"], params["meshes"], params["emitters"] = accum, image, meshes, emitters
    params["handle"] = handle
    params["eye"], params["cam_u"], params["cam_v"], params["cam_w"] = eye, u, v, w
    params["width"], params["height"] = options.width, options.height
    params["sample_offset"], params["spp"], params["accumulate"] = sample_offset, spp, int(sample_offset > 0)
    params["seed"], params["max_depth"], params["rr_depth"] = options.seed, options.max_depth, options.rr_depth
    params["num_emitters"] = num_emitters
    params["inv_total"] = 1.0 / (sample_offset + spp)


def mesh_records(scene: Scene, vertex_pointers: list[int], index_pointers: list[int],
                 emitter_offsets: np.ndarray) -> np.ndarray:
    """The ``MeshRecord`` array of ``scene`` (host), given the device addresses of each mesh's arrays."""
    records = np.zeros(len(scene.meshes), MESH_RECORD)
    for k, mesh in enumerate(scene.meshes):
        material = mesh.material
        records[k]["vertices"], records[k]["indices"] = vertex_pointers[k], index_pointers[k]
        records[k]["reflectance"], records[k]["emission"] = material.reflectance, material.emission
        records[k]["emitter_offset"] = int(emitter_offsets[k])
        records[k]["flags"] = (MESH_TWO_SIDED if material.two_sided else 0) | (MESH_EMISSIVE if material.is_emissive else 0)
    return records


def _check_scene(scene: Any) -> Scene:
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be an optixasync.scene.Scene, got {type(scene).__name__}")
    if not scene.meshes:
        raise ValueError("the scene has no meshes: there is nothing to render")
    return scene


class _LaunchTimer:
    """Timing events around launches; the GPU time of the newest finished launch, read without waiting."""

    def __init__(self) -> None:
        self._pending: deque[tuple[Any, Any]] = deque()
        self._free: list[tuple[Any, Any]] = []
        self.last_ms: float | None = None

    def start(self, stream: Any) -> tuple[Any, Any]:
        pair = self._free.pop() if self._free else (timing_event(), timing_event())
        pair[0].record(stream)
        return pair

    def stop(self, pair: tuple[Any, Any], stream: Any) -> Any:
        pair[1].record(stream)
        self._pending.append(pair)
        self.poll()
        return pair[1]

    def poll(self) -> float | None:
        import cupy

        while self._pending and self._pending[0][1].done:
            pair = self._pending.popleft()
            self.last_ms = float(cupy.cuda.get_elapsed_time(pair[0], pair[1]))
            self._free.append(pair)  # both events have passed: safe to record again
        return self.last_ms


class PathTracer:
    """Path-trace a scene with OptiX: progressive (:meth:`record`) or offline (:meth:`render`).

    Parameters
    ----------
    ctx : Context
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
    accel : GeometryAccel
        One GAS, build input ``i`` = mesh ``i``; built with ``allow_update``
        when a mesh is dynamic, with ``allow_compaction`` otherwise (compacted
        by the first :meth:`record` that finds the size arrived, or by :meth:`render`).
    camera : Camera
        The camera of the next launch (a different one restarts the accumulation).
    options : RenderOptions
        Replaceable, except for the image size.
    emitters : EmitterTable
        The host copy of the emitter table.
    last_nonfinite : int
        NaN or Inf samples dropped by the last :meth:`render`.
    last_render_ms : float or None
        GPU time of all launches of the last :meth:`render` (timing events).

    Raises
    ------
    TypeError, ValueError
        On bad options or a bad scene (no meshes, emissive area zero), before any GPU work.
    """

    params_dtype: np.dtype = PATH_PARAMS

    def __init__(self, ctx: Any, scene: Scene, options: RenderOptions | dict | None = None, *,
                 stream: Any = None) -> None:
        # Everything that can be wrong with the input is checked before the first GPU call.
        self._samples = 0
        self._options = coerce_options(RenderOptions, options)
        self.scene = _check_scene(scene)
        self._camera = copy.copy(scene.camera)
        host_meshes = [not m.on_device for m in scene.meshes]
        emissive_on_host = all(host_meshes[k] for k in scene.emitters)
        self.emitters: EmitterTable = build_emitter_table(scene.meshes) if emissive_on_host else EmitterTable(
            np.zeros(0), np.zeros(0, np.uint32), 0.0)

        self.ctx = ctx
        self.stream = ctx.stream if stream is None else stream
        stream_handle(self.stream)  # rejects the legacy default stream
        self._closed = False
        self._timer = _LaunchTimer()
        self._last_event: dict[int, Any] = {}  # stream handle -> event after this tracer's last launch there
        self._ready_for: set[int] = set()
        self._accel_ready_for: dict[int, Any] = {}
        self.last_nonfinite = 0
        self.last_render_ms: float | None = None
        self._basis: tuple[Camera, tuple[np.ndarray, ...]] | None = None

        self.module = ctx.create_module("pathtracer.cu", pipeline_options=PIPELINE_OPTIONS,
                                        module_options=MODULE_OPTIONS, compile_options=COMPILE_OPTIONS)
        self.raygen = ctx.create_raygen(self.module, "__raygen__pathtrace")
        self.miss_radiance = ctx.create_miss(self.module, "__miss__radiance")
        self.miss_shadow = ctx.create_miss(self.module, "__miss__shadow")
        self.hit = ctx.create_hitgroup(self.module, closesthit="__closesthit__radiance")
        self.pipeline = ctx.create_pipeline([self.raygen, self.miss_radiance, self.miss_shadow, self.hit],
                                            max_trace_depth=1)

        import cupy

        stream = self.stream
        self._vertices = [self._to_device(m.vertices, stream) for m in scene.meshes]
        self._indices = [self._to_device(m.indices, stream) for m in scene.meshes]
        if not emissive_on_host:  # set-up only: the emitter table needs world positions on the host
            host = [cupy.asnumpy(self._vertices[k], stream=stream) if k in scene.emitters else None
                    for k in range(len(scene.meshes))]
            self.emitters = build_emitter_table(scene.meshes, host)
        dynamic = bool(scene.dynamic)
        self.accel = GeometryAccel(
            ctx, [TriangleInput(v, i) for v, i in zip(self._vertices, self._indices, strict=True)],
            AccelOptions(allow_update=dynamic, allow_compaction=not dynamic), stream=stream)
        records = mesh_records(scene, [int(v.data.ptr) for v in self._vertices],
                               [int(i.data.ptr) for i in self._indices], self.emitters.offsets)
        self._records = self._upload_struct(records, stream)
        self._emitter_table = self._upload_struct(self.emitters.entries, stream) if len(self.emitters) else None
        self.sbt = ShaderBindingTable(ctx, self.raygen, [self.miss_radiance, self.miss_shadow],
                                      [self.hit] * len(scene.meshes), stream=stream)
        self._accum = ctx.memory.empty((self.options.height, self.options.width, 4), np.float32, stream)
        self._ready = record_event(stream)  # later streams wait for the set-up on the GPU, never the host
        self._ready_for.add(stream_handle(stream))

    def _to_device(self, array: Any, stream: Any) -> Any:
        import cupy

        if is_device_array(array):
            return cupy.asarray(array)  # no copy: the GAS and the kernel read the caller's memory
        return self.ctx.upload(np.ascontiguousarray(array), stream)

    def _upload_struct(self, array: np.ndarray, stream: Any) -> Any:
        """Upload a structured array as raw bytes (the device side only needs the address)."""
        return self.ctx.upload(np.frombuffer(np.ascontiguousarray(array).tobytes(), np.uint8), stream)

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
        index = int(mesh_index)
        if not 0 <= index < len(self._vertices):
            raise IndexError(f"mesh index {mesh_index} out of range: the scene has {len(self._vertices)} meshes")
        if stream is not None:
            self._order(stream)
        return self._vertices[index]

    # -- stream ordering -----------------------------------------------------------------------------------------
    def _order(self, stream: Any) -> int:
        """Make ``stream`` wait (on the GPU) for the set-up and the structure's last operation."""
        import cupy

        handle = stream_handle(stream)
        if handle not in self._ready_for:
            cupy.cuda.runtime.streamWaitEvent(handle, self._ready.ptr, 0)
            self._ready_for.add(handle)
        ready = getattr(self.accel, "ready", None)
        if ready is not None and self._accel_ready_for.get(handle) is not ready:
            cupy.cuda.runtime.streamWaitEvent(handle, ready.ptr, 0)
            self._accel_ready_for[handle] = ready
        return handle

    def _camera_basis(self) -> tuple[np.ndarray, ...]:
        """The camera's basis, computed once per camera (every frame of a still camera reuses it)."""
        if self._basis is None or self._basis[0] != self._camera:
            self._basis = (copy.copy(self._camera), self._camera.basis(self._options.width, self._options.height))
        return self._basis[1]

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this PathTracer is closed")

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
        if not self.scene.dynamic:
            raise ValueError("the scene has no dynamic mesh: nothing to refit (create meshes with dynamic=True)")
        stream = self.stream if stream is None else stream
        self._order(stream)
        self.accel.refit(self._vertices, stream)
        self._accel_ready_for[stream_handle(stream)] = self.accel.ready  # recorded on this very stream
        self.reset()

    def record(self, frame: Any, spp: int = 1, *, readback: str | None = "image", camera: Camera | None = None) -> None:
        """Launch ``spp`` more samples per pixel into the accumulation, inside ``frame``.

        The running mean is tonemapped to sRGB ``uint8`` (height, width, 4) (alpha 255) into
        ``frame.buffer("image", ...)`` by the same launch, and read back as ``result[readback]``
        (``readback=None``: no readback). A ``camera`` different from the current one restarts the
        accumulation. One ``record`` per frame: it is the frame's launch and fills ``frame.params``.
        """
        self._check_open()
        spp = _positive_int("spp", spp)
        if readback is not None and not isinstance(readback, str):
            raise TypeError(f"readback must be a name (str) or None, got {type(readback).__name__}")
        if camera is not None:
            self.camera = camera  # restarts the accumulation if it differs
        if frame.launched:
            raise RuntimeError("this frame has already launched with its parameters: call record() once per frame")
        if self._samples + spp > _MAX_SAMPLES:
            raise ValueError(f"{self._samples} + {spp} samples exceed the kernel's 32-bit sample index; reset() first")
        params = frame.params
        if params is None or params.dtype != PATH_PARAMS:
            raise ValueError("the frame's parameters do not have the path tracer's layout: create the scheduler "
                             "with FrameScheduler(ctx, n, params_dtype=tracer.params_dtype)")
        stream = frame.stream
        handle = self._order(stream)
        if self.accel.options.allow_compaction and not self.accel.compacted and self.accel.compact(stream=stream):
            self._accel_ready_for[handle] = self.accel.ready
        opts = self.options
        image = frame.buffer("image", (opts.height, opts.width, 4), np.uint8)
        fill_params(params, options=opts, camera=self.camera, accum=int(self._accum.data.ptr),
                    image=int(image.data.ptr), meshes=int(self._records.data.ptr), emitters=self._emitter_pointer,
                    num_emitters=len(self.emitters), handle=self.accel.handle, sample_offset=self._samples, spp=spp,
                    basis=self._camera_basis())
        pair = self._timer.start(stream)
        frame.launch(self.pipeline, self.sbt, opts.width, opts.height)
        self._last_event[handle] = self._timer.stop(pair, stream)
        if readback is not None:
            frame.readback(image, readback)
        self._samples += spp

    # -- offline ---------------------------------------------------------------------------------------------------
    @property
    def _emitter_pointer(self) -> int:
        return int(self._emitter_table.data.ptr) if self._emitter_table is not None else 0

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
        self._check_open()
        total = self.options.spp if spp is None else _positive_int("spp", spp)
        if total > _MAX_SAMPLES:
            raise ValueError(f"spp {total} exceeds the kernel's 32-bit sample index")
        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable (it receives the samples done so far)")
        per_launch = self.options.samples_per_launch or (
            min(PROGRESS_SAMPLES_PER_LAUNCH, total) if progress is not None else total)
        ctx, opts, stream = self.ctx, self.options, self.stream
        handle = self._order(stream)
        if self.accel.options.allow_compaction and not self.accel.compacted:
            self.accel.compact(wait=True, stream=stream)  # offline: waiting for the size costs nothing here
            self._accel_ready_for[handle] = self.accel.ready
        accum = ctx.memory.empty((opts.height, opts.width, 4), np.float32, stream)
        keep: list[Any] = [accum]
        launches: list[tuple[int, Any, Any]] = []  # (samples done after it, start event, end event)
        for offset, count in launch_plan(total, per_launch):
            params = np.zeros((), PATH_PARAMS)
            fill_params(params, options=opts, camera=self.camera, accum=int(accum.data.ptr), image=0,
                        meshes=int(self._records.data.ptr), emitters=self._emitter_pointer,
                        num_emitters=len(self.emitters), handle=self.accel.handle, sample_offset=offset, spp=count,
                        basis=self._camera_basis())
            params_device = self._upload_struct(params, stream)
            keep.append(params_device)
            start, end = timing_event(), timing_event()
            start.record(stream)
            self.pipeline.launch(self.sbt, params_device, opts.width, opts.height, stream=stream)
            end.record(stream)
            launches.append((offset + count, start, end))
        self._last_event[handle] = launches[-1][2]
        staging, host = ctx.pinned.array((opts.height, opts.width, 4), np.float32)
        staging.copy_from_device_async(accum, stream)
        done = ctx.deferred.after(stream, staging, *keep)
        import cupy

        gpu_ms = 0.0
        for samples, start, end in launches:
            # with progress: wait for each launch in turn; without: for the last (then all have finished)
            (end if progress is not None else launches[-1][2]).synchronize()
            ms = float(cupy.cuda.get_elapsed_time(start, end))
            gpu_ms += ms
            self._timer.last_ms = ms  # inside progress(), last_launch_ms is the launch just finished
            if progress is not None:
                progress(samples)
        done.synchronize()
        self.last_render_ms = gpu_ms
        self.last_nonfinite = int(host[..., 3].sum())
        return host[..., :3] / np.float32(total)

    @staticmethod
    def tonemap(linear: np.ndarray) -> np.ndarray:
        """Linear RGB (H, W, 3) to sRGB ``uint8`` (H, W, 3) with the kernel's curve (host, numpy)."""
        return tonemap_srgb(linear)

    # -- lifetime --------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Wait for this tracer's launches, then destroy its pipeline, programs and module."""
        if self._closed:
            return
        self._closed = True
        for event in self._last_event.values():
            event.synchronize()
        self._ready.synchronize()
        for obj in (self.pipeline, self.hit, self.miss_shadow, self.miss_radiance, self.raygen, self.module):
            obj.close()
        self.sbt.close()
        self.accel.close()

    def __enter__(self) -> PathTracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        o = self.options
        return (f"<optixasync.PathTracer {len(self.scene.meshes)} meshes, {self.scene.num_triangles} triangles, "
                f"{len(self.emitters)} emitter triangles, {o.width}x{o.height}, max_depth={o.max_depth}>")

