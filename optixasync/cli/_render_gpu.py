"""``optixasync render`` on one GPU: a still, a progressive still or an animation, through a render pipeline.

Blocking calls
--------------
* Creating the :class:`~optixasync.Context` and the
  :class:`~optixasync.render.RenderPipeline`: set-up (driver, kernel
  compilation, the scene's tables and structure).
* A still waits for the image it writes, by design.
* Frame modes: the pipeline's slot fence, only when the host is
  ``--frames-in-flight`` frames ahead (the designed wait); the image writer,
  only when 16 images are still being encoded (it bounds the memory a fast
  GPU could pile up); the last frames and files, when the run ends.
* ``--denoise``: loading OIDN's library (before any GPU work, so that a
  missing extra is one line), creating its CUDA device, and the first frame
  of each slot, which commits that slot's filter (set-up, listed in
  :mod:`optixasync.denoise`); closing the pipeline waits for its work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._exit import fail
from ..errors import EXIT_OK, EXIT_UNAVAILABLE
from ._progress import progress_bar

if TYPE_CHECKING:
    from ._render_plan import RenderPlan

__all__ = ["format_stats", "run_gpu"]

_PROG = "optixasync render"


def _stages(plan: RenderPlan) -> list[Any]:
    """The pipeline's stages: denoise and tonemap with ``--denoise``, the numbered files with ``--frames``."""
    from optixasync.render import Tonemap, WriteImages

    stages: list[Any] = []
    if plan.denoise:
        from optixasync.denoise import Denoise

        stages += [Denoise(), Tonemap("denoised")]
    if plan.mode == "frames":
        stages.append(WriteImages(plan.out))
    return stages


def run_gpu(plan: RenderPlan, scene: Any, animation: Any) -> int:
    """Render ``plan`` on one GPU (this process's current device); returns the exit status."""
    from optixasync.cuda import Context
    from optixasync.render import RenderPipeline

    from ._render_plan import render_options

    if plan.denoise:
        from optixasync.denoise import oidn_library_path

        oidn_library_path()  # the denoise extra is installed: checked before any GPU work
    outputs = ("image", "denoised") if plan.denoise else ("image",)
    with Context() as ctx, RenderPipeline(ctx, scene, render_options(plan), outputs=outputs, stages=_stages(plan),
                                          readback=None, frames_in_flight=plan.frames_in_flight) as pipeline:
        if plan.mode == "still":
            return _render_still(pipeline, plan)
        return _render_frames(pipeline, plan, scene, animation)


def _render_still(pipeline: Any, plan: RenderPlan) -> int:
    from optixasync.io import tonemap_srgb, write_image

    linear_out = plan.out.suffix.lower() == ".exr"
    with progress_bar(plan.spp, "spp", plan.quiet) as bar:
        def progress(samples_done: int) -> None:
            bar.update(samples_done - bar.n)

        if plan.denoise:  # the stages run once, on the still's mean
            name = "denoised" if linear_out else "image"
            with pipeline.still(plan.spp, progress, readback=name) as result:
                image = np.array(result[name][..., :3])
        else:
            linear = pipeline.render(plan.spp, progress=progress)
            image = linear if linear_out else tonemap_srgb(linear)
    write_image(plan.out, image)
    gpu_ms = float(pipeline.last_render_ms or 0.0)
    samples = plan.width * plan.height * plan.spp
    denoised = ", denoised" if plan.denoise else ""
    print(f"{plan.out}: {plan.width}x{plan.height}, {plan.spp} spp{denoised}, max depth {plan.max_depth}, "
          f"GPU time {gpu_ms:.1f} ms, {samples / (max(gpu_ms, 1e-9) * 1e3):.1f} Msamples/s")
    return EXIT_OK


def _render_frames(pipeline: Any, plan: RenderPlan, scene: Any, motion: Any) -> int:
    """The scheduler's modes: an animation (numbered files) or a progressive still (the last frame written)."""
    from optixasync.io import numbered_path, write_image

    from ._render_plan import frame_update

    animation = plan.mode == "frames"
    update = frame_update(plan, scene, motion) if animation else None
    name = "image"
    if plan.denoise and not animation and plan.out.suffix.lower() == ".exr":
        name = "denoised"  # a denoised progressive still to EXR: the linear denoised image
    final = None
    with progress_bar(plan.count, "frame", plan.quiet) as bar:
        for result in pipeline.frames(plan.count, plan.spp_per_frame, update=update, readback=name,
                                      last_only=not animation):
            with result:
                if not animation and result.readbacks:
                    final = np.array(result[name][..., :3])
            bar.update(1)
    summary = pipeline.scheduler.stats.summary(skip=min(plan.frames_in_flight, max(0, plan.count - 2)))
    denoised = ", denoised" if plan.denoise else ""
    if animation:
        first, last = numbered_path(plan.out, 0), numbered_path(plan.out, plan.count - 1)
        print(f"wrote {plan.count} frames {first} ... {last}: {plan.width}x{plan.height}, {plan.spp_per_frame} "
              f"spp/frame{denoised}, max depth {plan.max_depth}")
    elif final is None:
        fail(_PROG, "the last frame delivered no image")
        return EXIT_UNAVAILABLE
    else:
        write_image(plan.out, final)
        print(f"{plan.out}: {plan.width}x{plan.height}, {plan.count} frames x {plan.spp_per_frame} spp = "
              f"{plan.count * plan.spp_per_frame} spp{denoised}, max depth {plan.max_depth}")
    print(format_stats(summary, plan.frames_in_flight))
    return EXIT_OK


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
