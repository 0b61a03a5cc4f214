"""``optixasync render``: the path tracer from the command line (also ``examples/path_tracer.py``).

Three modes:

* a still image (default): ``--spp`` samples per pixel, written as PNG
  (8-bit sRGB) or EXR (linear float);
* ``--progressive N``: N frames of ``--spp-per-frame`` samples accumulated
  through the frame scheduler, the last one written;
* ``--frames N``: an animation (the cloth moves, a glTF file's node
  animation plays at ``--dt`` seconds a frame, or the camera swings around
  any other scene) with ``--frames-in-flight`` slots, one numbered PNG per
  frame, encoded on worker threads and written atomically.

``--device cpu`` renders a still or a progressive still with the same kernel
built for the CPU (:class:`~optixasync.CpuContext`, ``--threads``), through
:mod:`._render_cpu`; without a C++ compiler it exits with status 1.

``--denoise`` denoises with Open Image Denoise on the frame stream, guided by
the first hit's albedo and normal. ``--gpus`` and ``--scheduler`` spread the
render over several GPUs (:mod:`._render_multi`).

Every argument is checked, and the scene built on the CPU, before the GPU is
touched: bad input gives one line on stderr and exit status 2; a machine
that cannot run it (no driver, no GPU, a missing extra) 1; Ctrl-C 130. This
module imports nothing heavy at import time (no CuPy), so ``--help`` works
anywhere.

Blocking calls
--------------
Listed in :mod:`._render_gpu` (one GPU) and :mod:`._render_multi` (several).
"""

from __future__ import annotations

import argparse
import contextlib

from .._exit import run_command
from ._render_plan import RenderPlan, plan_from_args
from ._scene import add_scene_arguments, build_scene

__all__ = ["RenderPlan", "add_arguments", "add_parser", "plan_from_args", "run"]

_PROG = "optixasync render"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``render`` options to ``parser`` (shared by the subcommand and the example script)."""
    add_scene_arguments(parser)
    image = parser.add_argument_group("image")
    image.add_argument("--width", type=int, default=512, metavar="PX", help="image width in pixels (default 512)")
    image.add_argument("--height", type=int, default=512, metavar="PX", help="image height in pixels (default 512)")
    image.add_argument("--spp", type=int, default=256, metavar="N", help="samples per pixel of a still image (default 256)")
    image.add_argument("--max-depth", type=int, default=8, metavar="N", help="longest path, in bounces (default 8)")
    image.add_argument("--samples-per-launch", type=int, default=0, metavar="N",
                       help="samples per optixLaunch of a still (default 0: the renderer decides)")
    image.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default 0)")
    image.add_argument("--denoise", action="store_true",
                       help="denoise with Open Image Denoise on the GPU, guided by the first hit's albedo and normal "
                            "(needs optixasync[denoise]); progressive and animation frames are each denoised on "
                            "the frame stream")
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
    device = parser.add_argument_group("device")
    device.add_argument("--device", default="gpu", choices=("gpu", "cpu"),
                        help="gpu (OptiX, the default) or cpu: the same kernel built for this machine's CPU by its "
                             "C++ compiler (a still or --progressive; no GPU, driver or CuPy needed)")
    device.add_argument("--threads", type=int, default=None, metavar="N",
                        help="threads of --device cpu (default: the CPUs this process may run on)")
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
        description="Render the Cornell box, the animated cloth, the material scene, a scene file (glTF, OBJ) or a "
                    "mesh file with the OptiX path tracer, optionally lit by an environment (--env).",
    )
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run ``optixasync render``; returns the exit status (0 done, 1 the machine cannot, 2 bad input, 130)."""
    return run_command(_PROG, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from ._render_multi import multi_backend, run_multi

    plan = plan_from_args(args)
    # reads the files on the CPU: their errors are input errors
    scene, animation = build_scene(plan.scene, _PROG, frames=plan.mode == "frames")
    if plan.device == "cpu":
        from ._render_cpu import run_cpu

        return run_cpu(plan, scene)
    backend = multi_backend(plan)  # an unknown GPU or a missing Dask: before any GPU work
    if backend is not None:
        with contextlib.closing(backend):
            return run_multi(plan, scene, animation, backend)
    from ._render_gpu import run_gpu

    return run_gpu(plan, scene, animation)
