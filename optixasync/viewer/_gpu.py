"""The GPU frame source of ``optixasync view``: the path tracer, progressive, through the frame scheduler.

:class:`PathTracerSource` runs a render loop on a thread of its own. Each
iteration reads the viewer's state, restarts the accumulation when the
camera or the settings changed, records one frame (``spp`` samples,
denoised on the frame's stream when asked) and lets the scheduler run up to
``frames_in_flight`` frames ahead. A frame's image reaches the viewer from
the scheduler's completion thread as a zero-copy view of the frame's pinned
readback buffer (``sink.publish`` is O(1)); the viewer holds it while it
encodes, which keeps the buffer out of the pool until then.

Blocking calls
--------------
* Creating the source creates the :class:`~optixasync.Context`; the first
  frame of a size compiles the kernel and builds the scene (set-up).
* ``denoise_available=None`` asks :func:`~optixasync.denoise.available_denoisers`,
  which creates and releases an OIDN device per backend (set-up).
* Each image size gets its own pipeline: a new tracer and scheduler, and,
  when OIDN works, a denoiser (OIDN's CUDA device; its filter is committed
  on the first denoised frame of each slot, which allocates device memory
  and may synchronize the device). Changing the size closes the old
  pipeline (its frames are waited for) and frees the pinned blocks of the
  old size (``cuMemFreeHost``), so a page that tries many sizes does not
  pile up pinned memory.
* The scheduler's pinned pool grows (``cuMemHostAlloc``) when the viewer
  holds more frames' images than before, e.g. while a first tab connects.
* In the loop, only the scheduler's slot fence when the GPU is
  ``frames_in_flight`` frames behind (the designed wait).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from ._scene import pose_from_scene_camera, to_scene_camera
from ._source import FrameMeta, FrameSink, SourceThread
from ._state import Settings, ViewState

__all__ = ["PathTracerSource"]

_log = logging.getLogger("optixasync.viewer")
#: Samples per pixel after which a still image is left as it is (the loop sleeps until something changes).
MAX_SAMPLES = 16384


class _Pipeline:
    """Tracer, scheduler and denoiser of one image size."""

    def __init__(self, ctx: Any, scene: Any, width: int, height: int, frames_in_flight: int, denoise: bool) -> None:
        from optixasync.render import PathTracer, RenderOptions
        from optixasync.scheduler import FrameScheduler

        self.size = (width, height)
        self.tracer = PathTracer(ctx, scene, RenderOptions(width=width, height=height))
        self.sched = FrameScheduler(ctx, frames_in_flight, params_dtype=self.tracer.params_dtype,
                                    stream=self.tracer.stream, options={"keep_results": False})
        self.denoiser: Any = None
        if denoise:
            from optixasync.denoise import FrameDenoiser

            self.denoiser = FrameDenoiser(self.tracer, self.sched.stream, frames_in_flight=frames_in_flight)

    def close(self) -> None:
        self.sched.close()
        if self.denoiser is not None:
            self.denoiser.close()
        self.tracer.close()


class PathTracerSource(SourceThread):
    """A :class:`~optixasync.viewer.FrameSource` that path-traces ``scene`` on the GPU.

    Parameters
    ----------
    scene : optixasync.scene.Scene
    width, height : int
        The starting image size (the page may change it).
    frames_in_flight : int
        Scheduler slots.
    denoise_available : bool or None
        Whether the page's denoise switch works (None: ask OIDN whether its CUDA device is available).
    ctx : optixasync.Context, optional
        The context to render with (default: a new one, closed by :meth:`close`).
    spp : int
        Samples per pixel per frame to start with.

    Attributes
    ----------
    loops : int
        Frames recorded so far (one per iteration of the loop).
    published : int
        Frames handed to the viewer.
    error : BaseException or None
        What ended the loop, if it failed.
    """

    def __init__(self, scene: Any, width: int = 960, height: int = 540, frames_in_flight: int = 2,
                 denoise_available: bool | None = None, ctx: Any = None, spp: int = 1) -> None:
        from ..cuda import Context

        self.scene = scene
        self._own_ctx = ctx is None
        self.ctx = Context() if ctx is None else ctx
        self.frames_in_flight = int(frames_in_flight)
        if denoise_available is None:
            from optixasync.denoise import available_denoisers

            denoise_available = available_denoisers().get("oidn-cuda", "").startswith("available")
        self.denoise_available = bool(denoise_available)
        self.initial_camera = pose_from_scene_camera(scene.camera)
        self.initial_settings = Settings(width=int(width), height=int(height), denoise=self.denoise_available, spp=spp)
        super().__init__("optixasync-gpu-source")
        self.loops = 0
        self.published = 0
        self.error: BaseException | None = None

    # -- FrameSource: start() and stop() from SourceThread (stopping the loop waits for its frames) ----------------
    def close(self) -> None:
        """Stop, and close the context if the source made it."""
        self.stop()
        if self._own_ctx:
            self.ctx.close()

    # -- the loop -----------------------------------------------------------------------------------------------
    def _run(self, sink: FrameSink) -> None:
        pipeline: _Pipeline | None = None
        version = -1
        shown_denoise: bool | None = None  # whether the newest recorded frame was denoised
        fps, last = 0.0, time.perf_counter()
        try:
            from optixasync.cuda import use_device

            use_device(self.ctx.device_id)  # CuPy's current device is per thread
            while not self._stop.is_set():
                view = sink.state.snapshot()
                settings = view.settings
                denoise = settings.denoise and self.denoise_available
                if pipeline is None or pipeline.size != (settings.width, settings.height):
                    if pipeline is not None:
                        pipeline.close()
                        self.ctx.pinned.release()  # the old size's readback blocks: no frame holds them now
                    # the denoiser is made whenever OIDN works, so that the page's switch needs no rebuild
                    pipeline = _Pipeline(self.ctx, self.scene, settings.width, settings.height,
                                         self.frames_in_flight, self.denoise_available)
                    version = -1
                tracer = pipeline.tracer
                if view.version != version:
                    self._apply(tracer, view)
                    version = view.version
                if tracer.samples_done >= MAX_SAMPLES and denoise == shown_denoise:
                    # converged and shown as asked: wait for a change instead of spinning
                    sink.state.wait_for_change(view.version, timeout=0.05)
                    continue
                self._record(pipeline, sink, view, denoise, fps)
                shown_denoise = denoise
                now = time.perf_counter()
                fps = 1.0 / max(now - last, 1e-9) if self.loops == 1 else 0.9 * fps + 0.1 / max(now - last, 1e-9)
                last = now
        except BaseException as exc:  # keep it for the owner; the viewer keeps serving the last frame
            self.error = exc
            _log.exception("the GPU source stopped")
        finally:
            if pipeline is not None:
                pipeline.close()

    @staticmethod
    def _apply(tracer: Any, view: ViewState) -> None:
        """Give the tracer the view's camera and depth (either restarts the accumulation when it changed)."""
        tracer.camera = to_scene_camera(view.camera)
        if tracer.options.max_depth != view.settings.max_depth:
            tracer.options = dataclasses.replace(tracer.options, max_depth=view.settings.max_depth)

    def _record(self, pipeline: _Pipeline, sink: FrameSink, view: ViewState, denoise: bool, fps: float) -> None:
        sched, tracer = pipeline.sched, pipeline.tracer
        spp = view.settings.spp
        with sched.frame() as f:
            if pipeline.denoiser is not None:
                pipeline.denoiser.record(f, spp, denoise=denoise)
            else:
                tracer.record(f, spp)
        self.loops += 1
        frame_id = self.loops  # increasing across image sizes (a new scheduler counts its frames from 0)
        samples = tracer.samples_done
        in_flight = sched.in_flight

        def deliver(handle: Any) -> None:  # on the completion thread: O(1), the image is a view of pinned memory
            result = handle.result()
            stats = result.stats
            busy = stats.gpu_ms * fps / 1e3 if stats.gpu_ms == stats.gpu_ms else None
            sink.publish(result["image"], FrameMeta(
                frame_id=frame_id, camera_id=view.version, samples=samples, fps=fps, frames_in_flight=in_flight,
                gpu_busy=min(1.0, busy) if busy is not None else None, submit_ms=stats.submit_ms, denoise=denoise,
                extra={"gpu_ms": round(stats.gpu_ms, 3)}))
            self.published += 1

        f.handle.add_done_callback(deliver)
