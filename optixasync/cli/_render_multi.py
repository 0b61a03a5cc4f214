"""``optixasync render --gpus`` and ``--scheduler``: the render spread over several GPUs by :mod:`optixasync.multi`.

A still is split by samples (:meth:`~optixasync.multi.Farm.render`), ``--frames`` by frames
(:meth:`~optixasync.multi.Farm.frames`: the cloth moves, a glTF animation plays, or the camera swings, as in
one-GPU runs).
Progressive rendering and ``--denoise`` stay on one GPU.

Blocking calls
--------------
Creating the backend starts a thread per GPU (``--gpus``) or connects to the Dask scheduler
(``--scheduler``, at most 10 s); the farm's calls wait for the workers' results, by design (see
:mod:`optixasync.multi`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._progress import progress_bar

if TYPE_CHECKING:
    from ._render_plan import RenderPlan

__all__ = ["multi_backend", "run_multi"]


def multi_backend(plan: RenderPlan) -> Any:
    """The :mod:`optixasync.multi` backend of ``--gpus`` or ``--scheduler`` (None without them)."""
    if plan.gpus is not None:
        from optixasync.multi import LocalGPUs

        return LocalGPUs(plan.gpus)
    if plan.scheduler is not None:
        from optixasync.multi import DaskGPUs

        return DaskGPUs(plan.scheduler, timeout=10.0)
    return None


def run_multi(plan: RenderPlan, scene: Any, animation: Any, backend: Any) -> int:
    """A still split by samples, or ``--frames`` split by frames, over the backend's workers."""
    import time

    from optixasync.io import numbered_path, tonemap_srgb, write_image
    from optixasync.multi import Farm

    from ._render_plan import frame_update, render_options

    options = render_options(plan)

    with Farm(scene, options, backend=backend, frames_in_flight=plan.frames_in_flight) as farm:
        workers = backend.workers
        start = time.perf_counter()
        if plan.mode == "still":
            linear = farm.render(plan.spp)
            seconds = time.perf_counter() - start
            write_image(plan.out, linear if plan.out.suffix.lower() == ".exr" else tonemap_srgb(linear))
            samples = plan.width * plan.height * plan.spp
            print(f"{plan.out}: {plan.width}x{plan.height}, {plan.spp} spp on {workers} workers "
                  f"(samples {', '.join(f'{r.first}+{r.count}' for r in farm.last_parts)}), max depth "
                  f"{plan.max_depth}, wall {seconds * 1e3:.1f} ms, {samples / (seconds * 1e6):.1f} Msamples/s")
            return 0
        update = frame_update(plan, scene, animation)
        written = 0
        with progress_bar(plan.count, "frame", plan.quiet) as bar:
            for _output in farm.frames(plan.count, spp=plan.spp_per_frame, update=update, out=plan.out):
                written += 1
                bar.update(1)
        seconds = time.perf_counter() - start
    print(f"wrote {written} frames {numbered_path(plan.out, 0)} ... {numbered_path(plan.out, plan.count - 1)}: "
          f"{plan.width}x{plan.height}, {plan.spp_per_frame} spp/frame on {workers} workers, "
          f"{written / seconds:.1f} fps")
    return 0
