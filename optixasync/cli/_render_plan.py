"""What ``optixasync render`` will do: its arguments checked and resolved into a :class:`RenderPlan` (no GPU).

Blocking calls
--------------
None: argument checks (the named files are only checked to exist).
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._scene import SceneChoice, choose_scene

__all__ = ["RenderPlan", "check_device", "check_multi", "frame_update", "plan_from_args", "render_options"]


@dataclass(frozen=True)
class RenderPlan:
    """What ``render`` will do, checked and resolved from the arguments (no GPU involved).

    Attributes
    ----------
    scene : SceneChoice
        What ``--scene``, ``--env``, ``--env-scale`` and ``--cells`` name.
    mode : str
        ``"still"``, ``"progressive"`` or ``"frames"``.
    out : Path
        The output file (the base name of the numbered files for ``"frames"``); its folder exists and is
        writable.
    count : int
        Frames of the progressive or animation modes (0 for a still).
    gpus : str or None
        ``--gpus``: ``all`` or device numbers; the render goes to :mod:`optixasync.multi`.
    scheduler : str or None
        ``--scheduler``: a Dask scheduler's address; the render goes to its workers.
    device : str
        ``--device``: ``"gpu"`` (OptiX) or ``"cpu"`` (the kernel's host build, :class:`~optixasync.CpuContext`).
    threads : int or None
        ``--threads`` of the CPU device (None: the CPUs this process may run on).
    """

    scene: SceneChoice
    mode: str
    out: Path
    count: int
    width: int
    height: int
    spp: int
    max_depth: int
    samples_per_launch: int
    seed: int
    frames_in_flight: int
    spp_per_frame: int
    dt: float
    quiet: bool = False
    denoise: bool = False
    gpus: str | None = None
    scheduler: str | None = None
    device: str = "gpu"
    threads: int | None = None

    @property
    def frame_spp(self) -> int:
        """Samples per pixel of one launch of the mode: ``--spp`` for a still, ``--spp-per-frame`` otherwise."""
        return self.spp if self.mode == "still" else self.spp_per_frame


def plan_from_args(args: argparse.Namespace) -> RenderPlan:
    """Check the arguments and resolve the defaults (nothing is read, nothing touches the GPU).

    Raises
    ------
    ValueError
        With a one-line message naming the bad argument.
    """
    for name in ("width", "height", "spp", "max_depth", "frames", "progressive", "frames_in_flight",
                 "spp_per_frame"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {value}")
    if args.samples_per_launch < 0:
        raise ValueError(f"--samples-per-launch must be >= 0, got {args.samples_per_launch}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if not (math.isfinite(args.dt) and args.dt > 0):
        raise ValueError(f"--dt must be a positive number of seconds, got {args.dt}")
    if args.frames is not None and args.progressive is not None:
        raise ValueError("--frames and --progressive exclude each other")
    mode = "frames" if args.frames is not None else "progressive" if args.progressive is not None else "still"
    scene = choose_scene(args, "cloth" if mode == "frames" else "cornell_box")
    gpus, scheduler = args.gpus, args.scheduler
    check_multi(gpus, scheduler, mode, bool(args.denoise))
    device, threads = check_device(args.device, args.threads, mode, bool(args.denoise), gpus, scheduler)
    out = _check_out(args.out, mode, scene.stem)
    count = {"still": 0, "progressive": args.progressive, "frames": args.frames}[mode]
    return RenderPlan(
        scene=scene, mode=mode, out=out, count=int(count or 0), width=args.width, height=args.height, spp=args.spp,
        max_depth=args.max_depth, samples_per_launch=args.samples_per_launch, seed=args.seed,
        frames_in_flight=args.frames_in_flight, spp_per_frame=args.spp_per_frame, dt=float(args.dt),
        quiet=bool(args.quiet), denoise=bool(args.denoise), gpus=gpus, scheduler=scheduler, device=device,
        threads=threads,
    )


def _check_out(out: str | None, mode: str, stem: str) -> Path:
    """``--out`` with its default: a supported suffix, in an existing folder that this process may write to."""
    from optixasync.io import check_image_path

    if mode == "still":
        path = check_image_path(out if out is not None else f"{stem}.png")
    else:
        path = check_image_path(out if out is not None else ("out.png" if mode == "frames" else f"{stem}.png"),
                                (".png",))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"--out: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"--out: the folder {str(folder)!r} is not writable")
    if path.is_dir():
        raise ValueError(f"--out: {str(path)!r} is a folder, not a file")
    return path


def check_device(device: str, threads: int | None, mode: str, denoise: bool, gpus: str | None,
                 scheduler: str | None) -> tuple[str, int | None]:
    """``--device`` and ``--threads``: what the CPU device renders (a still or a progressive still), checked."""
    if device not in ("gpu", "cpu"):
        raise ValueError(f"--device must be gpu or cpu, got {device!r}")
    if device == "gpu":
        if threads is not None:
            raise ValueError("--threads sets the CPU device's threads: use it with --device cpu")
        return device, None
    if threads is not None:
        from optixasync.validation import as_int

        from ..cpu._context import MAX_THREADS

        try:
            threads = as_int("--threads", threads, 1, MAX_THREADS)
        except (TypeError, ValueError) as exc:
            raise ValueError(str(exc)) from None
    for flag, used in (("--frames", mode == "frames"), ("--denoise", denoise), ("--gpus", gpus is not None),
                       ("--scheduler", scheduler is not None)):
        if used:
            raise ValueError(f"--device cpu renders a still or --progressive frames; {flag} needs the GPU")
    return device, threads


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


def render_options(plan: RenderPlan) -> Any:
    """The :class:`~optixasync.render.RenderOptions` of ``plan``."""
    from optixasync.render import RenderOptions

    return RenderOptions(width=plan.width, height=plan.height, spp=plan.frame_spp,
                         samples_per_launch=plan.samples_per_launch, max_depth=plan.max_depth, seed=plan.seed)


def frame_update(plan: RenderPlan, scene: Any, animation: Any) -> Any:
    """The frame update of ``--frames``: the cloth moves, a glTF node animation or USD time samples play, or the
    camera swings.

    ``animation`` is what :func:`~optixasync.cli._scene.build_scene` gave beside the scene.
    """
    from optixasync.render import CameraSwing, ClothMotion, NodeMotion
    from optixasync.scene import ClothAnimation, NodeAnimation, UsdAnimation

    if isinstance(animation, ClothAnimation):
        return ClothMotion(animation, plan.dt)
    if isinstance(animation, (NodeAnimation, UsdAnimation)):
        return NodeMotion(animation, plan.dt)
    return CameraSwing(scene.camera, plan.count)  # +-15 degrees over the animation
