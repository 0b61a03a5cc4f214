"""``optixasync render``: the path tracer from the command line (also ``examples/path_tracer.py``).

Three modes:

* a still image (default): ``PathTracer.render`` with a progress bar, written
  as PNG (8-bit sRGB) or EXR (linear float);
* ``--progressive N``: N frames of ``--spp-per-frame`` samples accumulated
  through the :class:`~optixasync.FrameScheduler`, the last one written;
* ``--frames N``: an animation (the cloth moves, or the camera swings around
  any other scene) through the scheduler with ``--frames-in-flight`` slots,
  one numbered PNG per frame, encoded on worker threads.

``--denoise`` denoises with :class:`~optixasync.denoise.FrameDenoiser` (Open
Image Denoise on the frame stream, guided by the first hit's albedo and
normal): every frame of the two frame modes, and a still rendered as one
scheduler frame of ``--spp`` samples (PNG: the tonemapped denoised image;
EXR: the linear one). The command drives the tracer and the denoiser, so it
sits above both layers, at the top of the package.

Every argument is checked, and a mesh file read, before the GPU is touched:
bad input gives one line on stderr and exit status 2. This module imports
nothing heavy at import time (no CuPy), so ``--help`` works anywhere.

Blocking calls
--------------
* Creating the :class:`~optixasync.Context` and the
  :class:`~optixasync.render.PathTracer`: set-up (driver, kernel compilation).
* A still: ``PathTracer.render`` waits for the image it returns, and the
  end-of-render timing event is waited for once, after it (by design).
* Frame modes: the scheduler's slot fence, only when the host is
  ``--frames-in-flight`` frames ahead (the designed wait);
  ``ImageWriter.submit``, only when 16 images are still being encoded
  (it bounds the memory a fast GPU could pile up); the final ``drain`` and
  the writer's ``close`` (the last frames and files).
* ``--denoise``: loading OIDN's library (before any GPU work, so that a
  missing extra is one line), creating its CUDA device, and the first frame
  of each slot, which commits that slot's filter (set-up, listed in
  :mod:`optixasync.denoise`); closing the denoiser waits for its work.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SCENE_NAMES", "RenderPlan", "add_arguments", "add_parser", "format_stats", "plan_from_args", "run"]

#: Built-in scenes of ``--scene`` (anything else must be a scene or mesh file).
SCENE_NAMES = ("cornell_box", "cloth", "materials")
#: Files ``--scene`` reads as whole scenes, with their materials, textures and camera (others: a mesh placed in
#: the Cornell box).
ASSET_SUFFIXES = (".gltf", ".glb")

_PROG = "optixasync render"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``render`` options to ``parser`` (shared by the subcommand and the example script)."""
    scene = parser.add_argument_group("scene")
    scene.add_argument("--scene", default=None, metavar="NAME|PATH",
                       help="cornell_box (default for a still), cloth (default with --frames), materials (a sphere "
                            "per BSDF under a sky), a glTF asset (.gltf .glb, needs pygltflib: its materials, "
                            "textures and camera), or a mesh file (.obj .ply .stl, needs trimesh) placed on the "
                            "floor of the Cornell box")
    scene.add_argument("--env", default=None, metavar="PATH|R,G,B",
                       help="environment light: an equirectangular HDR image (.hdr, .exr needs openexr, .npy) or a "
                            "constant radiance R,G,B (default: a glTF asset without lights gets a constant 1)")
    scene.add_argument("--env-scale", type=float, default=1.0, metavar="X",
                       help="multiplies the environment's radiance (default 1)")
    scene.add_argument("--cells", type=int, default=708, metavar="N",
                       help="cloth resolution: cells x cells quads, 2*cells^2 triangles (default 708: ~1M)")
    image = parser.add_argument_group("image")
    image.add_argument("--width", type=int, default=512, metavar="PX", help="image width in pixels (default 512)")
    image.add_argument("--height", type=int, default=512, metavar="PX", help="image height in pixels (default 512)")
    image.add_argument("--spp", type=int, default=256, metavar="N", help="samples per pixel of a still image (default 256)")
    image.add_argument("--max-depth", type=int, default=8, metavar="N", help="longest path, in bounces (default 8)")
    image.add_argument("--samples-per-launch", type=int, default=0, metavar="N",
                       help="samples per optixLaunch of a still (default 0: the tracer decides)")
    image.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default 0)")
    image.add_argument("--denoise", action="store_true",
                       help="denoise with Open Image Denoise on the GPU, guided by the first hit's albedo and normal "
                            "(needs optixasync[denoise]); a still is then one launch of --spp samples, and "
                            "progressive and animation frames are each denoised on the frame stream")
    image.add_argument("--out", default=None, metavar="FILE",
                       help="output file, .png or .exr by suffix (default: SCENE.png); with --frames the "
                            "base name of the numbered PNGs (default out.png -> out_0000.png, ...)")
    frames = parser.add_argument_group("frame pipeline")
    frames.add_argument("--frames", type=int, default=None, metavar="N",
                        help="render an animation of N frames through the frame scheduler")
    frames.add_argument("--progressive", type=int, default=None, metavar="N",
                        help="accumulate a still over N scheduler frames of --spp-per-frame samples")
    frames.add_argument("--frames-in-flight", type=int, default=2, metavar="N", help="scheduler slots (default 2)")
    frames.add_argument("--spp-per-frame", type=int, default=16, metavar="N", help="samples per pixel per frame (default 16)")
    frames.add_argument("--dt", type=float, default=1 / 30, metavar="S", help="animation time step in seconds (default 1/30)")
    frames.add_argument("--quiet", action="store_true", help="no progress bar")
    multi = parser.add_argument_group("several GPUs (a still is split by samples, --frames by frames)")
    multi.add_argument("--gpus", default=None, metavar="all|0,1",
                       help="render on these GPUs of this machine, one worker thread each")
    multi.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="render on the GPU workers of a Dask cluster, e.g. tcp://host:8786 "
                            "(needs the cluster extra)")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``render`` subcommand."""
    parser = subparsers.add_parser(
        "render", help="render a scene with the path tracer",
        description="Render the Cornell box, the animated cloth, the material scene, a glTF asset or a mesh file "
                    "with the OptiX path tracer, optionally lit by an environment (--env).",
    )
    add_arguments(parser)
    return parser


@dataclass(frozen=True)
class RenderPlan:
    """What ``render`` will do, checked and resolved from the arguments (no GPU involved).

    Attributes
    ----------
    scene : str
        ``"cornell_box"``, ``"cloth"``, ``"materials"``, ``"asset"`` (a glTF file) or ``"file"`` (a mesh file).
    mesh_path : Path or None
        The file for ``scene == "asset"`` or ``"file"``.
    mode : str
        ``"still"``, ``"progressive"`` or ``"frames"``.
    out : Path
        The output file (the base name of the numbered files for ``"frames"``).
    count : int
        Frames of the progressive or animation modes (0 for a still).
    env : str or None
        ``--env``: an environment image (``.hdr``, ``.exr``, ``.npy``) or a radiance ``R,G,B`` (or one grey value).
    env_scale : float
        ``--env-scale``: multiplies the environment's radiance.
    gpus : str or None
        ``--gpus``: ``all`` or device numbers; the render goes to :mod:`optixasync.multi`.
    scheduler : str or None
        ``--scheduler``: a Dask scheduler's address; the render goes to its workers.
    """

    scene: str
    mesh_path: Path | None
    mode: str
    out: Path
    count: int
    width: int
    height: int
    spp: int
    max_depth: int
    samples_per_launch: int
    seed: int
    cells: int
    frames_in_flight: int
    spp_per_frame: int
    dt: float
    quiet: bool = False
    denoise: bool = False
    env: str | None = None  # an environment image or R,G,B (the --env text)
    env_scale: float = 1.0
    gpus: str | None = None  # --gpus: this machine's GPUs, one worker each
    scheduler: str | None = None  # --scheduler: a Dask scheduler's address


def plan_from_args(args: argparse.Namespace) -> RenderPlan:
    """Check the arguments and resolve the defaults.

    Raises
    ------
    ValueError
        With a one-line message naming the bad argument.
    """
    from optixasync.render import check_image_path
    from optixasync.scene import MESH_SUFFIXES, check_mesh_path

    from ._render_multi import check_multi

    def positive(name: str, value: int | None) -> None:
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {value}")

    for name in ("width", "height", "spp", "max_depth", "frames", "progressive", "frames_in_flight",
                 "spp_per_frame", "cells"):
        positive(name, getattr(args, name))
    if args.samples_per_launch < 0:
        raise ValueError(f"--samples-per-launch must be >= 0, got {args.samples_per_launch}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if not (math.isfinite(args.dt) and args.dt > 0):
        raise ValueError(f"--dt must be a positive number of seconds, got {args.dt}")
    if args.frames is not None and args.progressive is not None:
        raise ValueError("--frames and --progressive exclude each other")
    mode = "frames" if args.frames is not None else "progressive" if args.progressive is not None else "still"

    name = args.scene if args.scene is not None else ("cloth" if mode == "frames" else "cornell_box")
    mesh_path = None
    if name in SCENE_NAMES:
        scene, stem = name, name
    elif Path(name).suffix == "" and not Path(name).exists():
        raise ValueError(f"unknown scene {name!r}: use {', '.join(SCENE_NAMES)} or a mesh file "
                         f"({' '.join(MESH_SUFFIXES)})")
    else:
        mesh_path = check_mesh_path(name)
        scene = "asset" if mesh_path.suffix.lower() in ASSET_SUFFIXES else "file"
        stem = mesh_path.stem
    env_scale = float(getattr(args, "env_scale", 1.0))
    if not (math.isfinite(env_scale) and env_scale > 0):
        raise ValueError(f"--env-scale must be a finite number > 0, got {env_scale}")

    gpus, scheduler = getattr(args, "gpus", None), getattr(args, "scheduler", None)
    check_multi(gpus, scheduler, mode, bool(getattr(args, "denoise", False)))
    if mode == "still":
        out = check_image_path(args.out if args.out is not None else f"{stem}.png")
    else:
        default = "out.png" if mode == "frames" else f"{stem}.png"
        out = check_image_path(args.out if args.out is not None else default, (".png",))
    count = {"still": 0, "progressive": args.progressive, "frames": args.frames}[mode]
    return RenderPlan(
        scene=scene, mesh_path=mesh_path, mode=mode, out=out, count=int(count or 0), width=args.width,
        height=args.height, spp=args.spp, max_depth=args.max_depth, samples_per_launch=args.samples_per_launch,
        seed=args.seed, cells=args.cells, frames_in_flight=args.frames_in_flight, spp_per_frame=args.spp_per_frame,
        dt=float(args.dt), quiet=bool(getattr(args, "quiet", False)), denoise=bool(getattr(args, "denoise", False)),
        env=getattr(args, "env", None), env_scale=env_scale, gpus=gpus, scheduler=scheduler,
    )


def _error(message: str, status: int) -> int:
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    """Run ``optixasync render``; returns the exit status (0 done, 2 bad input, 1 GPU or driver failure)."""
    from ._render_multi import multi_backend, run_multi

    try:
        plan = plan_from_args(args)
        options = _render_options(plan)
        scene, cloth = _build_scene(plan)  # reads the mesh file on the CPU: its errors are input errors
        backend = multi_backend(plan)  # an unknown GPU or a missing Dask is an input error too
    except (ValueError, TypeError, OSError) as exc:  # OSError: a file that cannot be read
        return _error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 2)
    except ImportError as exc:
        if "pip install" not in str(exc):  # a broken installation, not a missing optional extra
            raise
        return _error(str(exc), 2)  # trimesh, for a mesh file

    from optixasync.errors import OptixAsyncError

    try:
        if backend is not None:
            with contextlib.closing(backend):
                return run_multi(plan, options, scene, cloth, backend)
        return _run_gpu(plan, options, scene, cloth)
    except KeyboardInterrupt:
        return _error("interrupted", 130)
    except (OptixAsyncError, ImportError) as exc:  # CUDA failures arrive as CudaError
        return _error(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", 1)


def _render_options(plan: RenderPlan) -> Any:
    from optixasync.render import RenderOptions

    spp = plan.spp if plan.mode == "still" else plan.spp_per_frame
    return RenderOptions(width=plan.width, height=plan.height, spp=spp, samples_per_launch=plan.samples_per_launch,
                         max_depth=plan.max_depth, seed=plan.seed)


def _build_scene(plan: RenderPlan) -> tuple[Any, Any]:
    """(scene, cloth animation or None), built on the CPU, with the environment of ``--env``."""
    from optixasync.render import check_scene
    from optixasync.scene import ClothAnimation, cornell_box, load_gltf, load_into_cornell_box, material_scene

    environment = _environment(plan)  # before reading a (possibly large) asset: a bad --env fails fast
    cloth = None
    if plan.scene == "cloth":
        cloth = ClothAnimation(plan.cells)
        scene = cloth.scene()
    elif plan.scene == "file":
        assert plan.mesh_path is not None
        scene = load_into_cornell_box(plan.mesh_path)
    elif plan.scene == "asset":
        assert plan.mesh_path is not None
        scene = load_gltf(plan.mesh_path)
    elif plan.scene == "materials":
        scene = material_scene()
    else:
        scene = cornell_box()
    if plan.env is None and plan.env_scale != 1.0 and not (plan.scene == "asset" and not scene.emitters):
        print(f"{_PROG}: --env-scale is ignored: it scales --env (or the default light of an asset without lights)",
              file=sys.stderr)
    if environment is not None:
        scene.environment = environment
    elif plan.scene == "asset" and not scene.emitters and scene.environment is None:
        from optixasync.scene import Environment

        # An asset without lights would render black: light it evenly, as viewers do.
        print(f"{_PROG}: {plan.mesh_path} has no lights; using a constant white environment (see --env)",
              file=sys.stderr)
        scene.environment = Environment(radiance=(plan.env_scale,) * 3, name="default")
    return check_scene(scene), cloth  # a scene without light fails here, as bad input, before any GPU work


def _environment(plan: RenderPlan) -> Any:
    """The environment of ``--env`` (None without it): a file, or a constant ``R,G,B``."""
    from optixasync.scene import ENVIRONMENT_SUFFIXES, Environment, load_environment

    if plan.env is None:
        return None
    path = Path(plan.env)
    if path.suffix.lower() in ENVIRONMENT_SUFFIXES:  # an image file; anything else must be numbers
        if not path.is_file():
            raise ValueError(f"--env: no such file {plan.env!r}")
        return load_environment(path, scale=plan.env_scale)
    try:
        values = [float(p) for p in plan.env.split(",")]
    except ValueError:
        values = []
    if len(values) not in (1, 3):
        raise ValueError(f"--env: {plan.env!r} is neither an image ({', '.join(ENVIRONMENT_SUFFIXES)}) nor a "
                         "radiance R,G,B")
    rgb = values * 3 if len(values) == 1 else values
    return Environment(radiance=tuple(v * plan.env_scale for v in rgb), name="--env")


def _run_gpu(plan: RenderPlan, options: Any, scene: Any, cloth: Any) -> int:
    from .cuda import Context

    if plan.denoise:
        from optixasync.denoise import oidn_library_path

        oidn_library_path()  # the denoise extra is installed: checked before any GPU work
    with Context() as ctx:
        if plan.mode == "still" and not plan.denoise:
            return _render_still(ctx, plan, options, scene)
        return _render_frames(ctx, plan, options, scene, cloth)


def _progress_bar(total: int, unit: str, quiet: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, disable=quiet, dynamic_ncols=True, leave=False)


def _render_still(ctx: Any, plan: RenderPlan, options: Any, scene: Any) -> int:
    from optixasync.cuda import GpuSpan, create_stream, synchronize
    from optixasync.render import PathTracer, write_image

    stream = create_stream()
    launches = 0
    with PathTracer(ctx, scene, options, stream=stream) as tracer, _progress_bar(plan.spp, "spp", plan.quiet) as bar:
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
        bar = stack.enter_context(_progress_bar(count, "frame", plan.quiet))

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
        return _error("the last frame delivered no image", 1)
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
