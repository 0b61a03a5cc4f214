"""``optixasync render`` on one GPU: a still, a progressive still, or an animation through the frame scheduler.

Blocking calls
--------------
* Creating the :class:`~optixasync.Context` and the renderer: set-up
  (driver, kernel compilation, the scene's structure).
* A still waits for the image it writes, by design.
* Frame modes: the scheduler's slot fence, only when the host is
  ``--frames-in-flight`` frames ahead (the designed wait); the image writer's
  ``submit``, only when 16 images are still being encoded (it bounds the
  memory a fast GPU could pile up); the final ``drain`` and the writer's
  ``close`` (the last frames and files).
* ``--denoise``: loading OIDN's library (before any GPU work, so that a
  missing extra is one line), creating its CUDA device, and the first frame
  of each slot, which commits that slot's filter (set-up, listed in
  :mod:`optixasync.denoise`); closing the denoiser waits for its work.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from .._exit import fail
from ._progress import progress_bar

if TYPE_CHECKING:
    from ._render import RenderPlan

__all__ = ["format_stats", "render_options", "run_gpu"]

_PROG = "optixasync render"


def render_options(plan: RenderPlan) -> Any:
    """The :class:`~optixasync.render.RenderOptions` of ``plan``."""
    from optixasync.render import RenderOptions

    return RenderOptions(width=plan.width, height=plan.height, spp=plan.frame_spp,
                         samples_per_launch=plan.samples_per_launch, max_depth=plan.max_depth, seed=plan.seed)


def run_gpu(plan: RenderPlan, scene: Any, cloth: Any) -> int:
    """Render ``plan`` on one GPU (this process's current device); returns the exit status."""
    from optixasync.cuda import Context

    options = render_options(plan)

    if plan.denoise:
        from optixasync.denoise import oidn_library_path

        oidn_library_path()  # the denoise extra is installed: checked before any GPU work
    with Context() as ctx:
        if plan.mode == "still" and not plan.denoise:
            return _render_still(ctx, plan, options, scene)
        return _render_frames(ctx, plan, options, scene, cloth)


def _render_still(ctx: Any, plan: RenderPlan, options: Any, scene: Any) -> int:
    from optixasync.cuda import GpuSpan, create_stream, synchronize
    from optixasync.render import PathTracer, write_image

    stream = create_stream()
    launches = 0
    with PathTracer(ctx, scene, options, stream=stream) as tracer, progress_bar(plan.spp, "spp", plan.quiet) as bar:
        def progress(samples_done: int) -> None:
            nonlocal launches
            launches += 1
            bar.update(samples_done - bar.n)

        # GPU time of the whole render: events on its stream before the first launch and after the image
        # came back (the launches run back to back; the readback adds ~0.1 ms).
        span = GpuSpan.begin(stream)
        linear = tracer.render(plan.spp, progress=progress)
        synchronize(span.stop(stream))
        gpu_ms = float(span.ms)
        if launches == 1 and tracer.last_launch_ms is not None:
            gpu_ms = float(tracer.last_launch_ms)  # one launch: its own timing events, exactly
        image = linear if plan.out.suffix.lower() == ".exr" else tracer.tonemap(linear)
    write_image(plan.out, image)
    samples = plan.width * plan.height * plan.spp
    print(f"{plan.out}: {plan.width}x{plan.height}, {plan.spp} spp, max depth {plan.max_depth}, "
          f"GPU time {gpu_ms:.1f} ms, {samples / (gpu_ms * 1e3):.1f} Msamples/s")
    return 0


def _render_frames(ctx: Any, plan: RenderPlan, options: Any, scene: Any, cloth: Any) -> int:
    """The scheduler's modes: an animation, a progressive still, or a denoised still (one frame of ``--spp``)."""
    from optixasync.cuda import create_stream
    from optixasync.multi import CameraSwing
    from optixasync.render import ImageWriter, PathTracer, numbered_path
    from optixasync.scheduler import FrameScheduler

    animation = plan.mode == "frames"
    count = plan.count if plan.mode != "still" else 1
    swing = CameraSwing(scene.camera, count)
    spp = plan.spp if plan.mode == "still" else plan.spp_per_frame
    linear_out = plan.out.suffix.lower() == ".exr"  # a denoised still to EXR: the linear denoised image
    # One stream for the tracer's set-up (builds, uploads) and the frames, so every frame is ordered after it.
    stream = create_stream()
    written = 0
    final = None
    with contextlib.ExitStack() as stack:
        tracer = stack.enter_context(PathTracer(ctx, scene, options, stream=stream))
        writer = stack.enter_context(ImageWriter())
        sched = stack.enter_context(FrameScheduler(ctx, plan.frames_in_flight, params_dtype=tracer.params_dtype,
                                                   stream=stream))
        record = _frame_recorder(stack, plan, tracer, sched.stream)  # the denoiser closes before the scheduler
        bar = stack.enter_context(progress_bar(count, "frame", plan.quiet))

        def consume(results: list[Any]) -> None:
            nonlocal written, final
            for result in results:
                if animation:
                    writer.submit(numbered_path(plan.out, result.index), result["image"][..., :3])
                    written += 1
                elif result.readbacks:
                    final = result["denoised" if linear_out else "image"]
                bar.update(1)

        for k in range(count):
            with sched.frame() as f:
                camera = None
                if animation:
                    if cloth is not None:
                        cloth.update(tracer, k * plan.dt, f)  # the frame as the stream: timed with it
                    else:  # a still scene: swing the camera +-15 degrees over the animation
                        camera = swing(tracer, k, f)
                    tracer.reset()  # each animation frame is its own image
                record(f, spp, animation or k == count - 1, camera, linear_out)
            consume(sched.poll())
        consume(sched.drain())
        summary = sched.stats.summary(skip=min(plan.frames_in_flight, max(0, count - 2)))
    _report_frames(plan, count, spp, written, final)
    if final is None and not animation:
        fail(_PROG, "the last frame delivered no image")
        return 1
    print(format_stats(summary, plan.frames_in_flight))
    return 0


def _frame_recorder(stack: contextlib.ExitStack, plan: RenderPlan, tracer: Any, stream: Any) -> Any:
    """``record(frame, spp, read_back, camera, linear)``: the tracer's launch, denoised with ``--denoise``.

    A read-back frame reads its ``image`` (sRGB ``uint8``); with ``linear``, a denoised frame reads its
    linear ``denoised`` image instead.
    """
    if not plan.denoise:
        def record(frame: Any, spp: int, read_back: bool, camera: Any, linear: bool) -> None:
            tracer.record(frame, spp, readback="image" if read_back else None, camera=camera)
        return record

    from optixasync.denoise import FrameDenoiser

    denoiser = stack.enter_context(FrameDenoiser(tracer, stream, frames_in_flight=plan.frames_in_flight))

    def record_denoised(frame: Any, spp: int, read_back: bool, camera: Any, linear: bool) -> None:
        denoised = denoiser.record(frame, spp, readback="image" if read_back and not linear else None, camera=camera)
        if read_back and linear:
            frame.readback(denoised, "denoised")
    return record_denoised


def _report_frames(plan: RenderPlan, count: int, spp: int, written: int, final: Any) -> None:
    """Write the still of the progressive and denoised modes; print what was written."""
    from optixasync.render import numbered_path, write_image

    denoised = ", denoised" if plan.denoise else ""
    if plan.mode == "frames":
        first, last_file = numbered_path(plan.out, 0), numbered_path(plan.out, count - 1)
        print(f"wrote {written} frames {first} ... {last_file}: {plan.width}x{plan.height}, "
              f"{spp} spp/frame{denoised}, max depth {plan.max_depth}")
    elif final is not None:
        write_image(plan.out, final[..., :3])
        frames = f"{count} frames x {spp} spp = " if plan.mode == "progressive" else ""
        print(f"{plan.out}: {plan.width}x{plan.height}, {frames}{count * spp} spp{denoised}, "
              f"max depth {plan.max_depth}")


def format_stats(summary: dict[str, Any], frames_in_flight: int) -> str:
    """One line of the scheduler's numbers: fps, frames in flight, run-ahead, waits, GPU busy, times."""
    def mean(key: str) -> float:
        value = summary.get(key)
        return float(value["mean"]) if isinstance(value, dict) else float("nan")

    def median(key: str) -> float:
        value = summary.get(key)
        return float(value["median"]) if isinstance(value, dict) else float("nan")

    utilization = ""
    if "gpu_utilization" in summary:  # on the GPU's own clock, when the scheduler has GPU timestamps
        utilization = f" (GPU clock {100 * float(summary['gpu_utilization']):.1f}%)"
    return (f"scheduler N={frames_in_flight}: {summary.get('fps', float('nan')):.1f} fps over "
            f"{summary.get('frames', 0)} frames | frames in flight {mean('in_flight'):.2f} "
            f"(ahead {mean('ahead'):.2f}) | waits/frame {summary.get('waits_per_frame', float('nan')):.2f} | "
            f"GPU busy {100 * float(summary.get('gpu_busy', float('nan'))):.1f}%{utilization} | GPU {median('gpu_ms'):.2f} ms/frame | "
            f"submit {median('submit_ms'):.3f} ms/frame | GPU gap {median('gap_us'):.1f} us")
