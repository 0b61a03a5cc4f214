"""``optixasync render --gpus`` and ``--scheduler``: the render spread over several GPUs by :mod:`optixasync.multi`.

A still is split by samples (:meth:`~optixasync.multi.Farm.render`), ``--frames`` by frames
(:meth:`~optixasync.multi.Farm.frames`: the cloth moves, or the camera swings, as in one-GPU runs).
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
    from ._render import RenderPlan

__all__ = ["check_multi", "multi_backend", "run_multi"]


def check_multi(gpus: str | None, scheduler: str | None, mode: str, denoise: bool) -> None:
    """The several-GPU options' own rules (whether the GPUs exist is asked of the driver later)."""
    if gpus is None and scheduler is None:
        return
    if gpus is not None and scheduler is not None:
        raise ValueError("--gpus and --scheduler exclude each other (a Dask cluster's workers choose their GPUs)")
    flag = "--gpus" if gpus is not None else "--scheduler"
    if mode == "progressive":
        raise ValueError(f"{flag} renders a still (split by samples) or --frames (split by frames), not --progressive")
    if denoise:
        raise ValueError(f"{flag} does not denoise yet: render without --denoise")
    if gpus is not None:
        from optixasync.multi import parse_gpus

        parse_gpus(gpus, available=1 << 16)  # the text's form; the devices themselves are checked at the start
    elif not scheduler.strip():
        raise ValueError("--scheduler needs an address such as tcp://host:8786")


def multi_backend(plan: RenderPlan) -> Any:
    """The :mod:`optixasync.multi` backend of ``--gpus`` or ``--scheduler`` (None without them)."""
    if plan.gpus is not None:
        from optixasync.multi import LocalGPUs

        return LocalGPUs(plan.gpus)
    if plan.scheduler is not None:
        from optixasync.multi import DaskGPUs

        return DaskGPUs(plan.scheduler, timeout=10.0)
    return None


def run_multi(plan: RenderPlan, scene: Any, cloth: Any, backend: Any) -> int:
    """A still split by samples, or ``--frames`` split by frames, over the backend's workers."""
    import time

    from optixasync.multi import CameraSwing, ClothMotion, Farm
    from optixasync.render import numbered_path, tonemap_srgb, write_image

    from ._render_gpu import render_options

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
        update = ClothMotion(cloth, plan.dt) if cloth is not None else CameraSwing(scene.camera, plan.count)
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
