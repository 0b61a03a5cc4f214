"""``optixasync render --device cpu``: a still or a progressive still on the CPU device.

The pipeline is :class:`~optixasync.render.RenderPipeline` on a :class:`~optixasync.CpuContext`: the path
tracer's kernel built for this machine's CPU (a C++ compiler is needed: without one, exit status 1).

Blocking calls
--------------
All of it runs on the CPU and returns when done: building the kernel on a cache miss (the C++ compiler), the
scene's host tables, and the launches (``--threads`` threads each).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EXIT_OK
from ._progress import progress_bar

if TYPE_CHECKING:
    from ._render_plan import RenderPlan

__all__ = ["run_cpu"]


def run_cpu(plan: RenderPlan, scene: Any) -> int:
    """Render ``plan`` (a still or ``--progressive``) on the CPU device; the exit status."""
    from optixasync.cpu import CpuContext
    from optixasync.io import tonemap_srgb, write_image
    from optixasync.render import RenderPipeline

    from ._render_plan import render_options

    ctx = CpuContext(threads=plan.threads)  # no compiler: CompilerNotFoundError, exit status 1
    linear_out = plan.out.suffix.lower() == ".exr"
    with RenderPipeline(ctx, scene, render_options(plan)) as pipeline:
        if plan.mode == "still":
            with progress_bar(plan.spp, "spp", plan.quiet) as bar:
                linear = pipeline.render(plan.spp, progress=lambda done: bar.update(done - bar.n))
            image = linear if linear_out else tonemap_srgb(linear)
            spp, ms = plan.spp, float(pipeline.last_render_ms or 0.0)
        else:
            ms = 0.0
            with progress_bar(plan.count, "frame", plan.quiet) as bar:
                for result in pipeline.frames(plan.count, plan.spp_per_frame, last_only=True,
                                              readback=None if linear_out else "image"):
                    ms += result.launch_ms
                    if not linear_out and result.readbacks:
                        image = np.array(result["image"][..., :3])
                    bar.update(1)
            spp = pipeline.samples_done
            if linear_out:
                image = pipeline.accumulation[..., :3] / np.float32(spp)
    write_image(plan.out, image)
    samples = plan.width * plan.height * spp
    frames = f"{plan.count} frames x {plan.spp_per_frame} spp = " if plan.mode == "progressive" else ""
    print(f"{plan.out}: {plan.width}x{plan.height}, {frames}{spp} spp, max depth {plan.max_depth}, CPU "
          f"({ctx.threads} threads) {ms:.1f} ms, {samples / (max(ms, 1e-9) * 1e3):.3f} Msamples/s")
    return EXIT_OK
