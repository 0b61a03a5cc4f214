"""``optixasync view``: serve the live viewer on a local web server and print its URL.

The GPU source path-traces the scene ``--scene`` and ``--env`` name, built by
the same resolver as ``optixasync render`` (so a glTF asset shows with its
materials, camera and sky); ``--cpu`` serves it from the CPU device (the same
kernel built for the CPU by its C++ compiler, ``--threads``), and ``--cpu``
without ``--scene`` or ``--env`` the NumPy demo renderer, which needs neither
a GPU nor a compiler. This module imports nothing heavy at import time (no aiohttp, no
CuPy), so ``optixasync --help`` works anywhere. Problems give one line on
stderr and the CLI's exit status: 2 for bad input (sizes, port, files), 1
when the machine cannot run it (aiohttp missing, no GPU or driver, a port
in use).

Blocking calls
--------------
Listed by the viewer (:mod:`optixasync.viewer`) and its GPU source: creating
the context, compiling the kernel and building the scene is set-up; serving
runs until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from .._exit import fail, run_command
from ._scene import add_scene_arguments, build_scene, choose_scene

__all__ = ["add_parser", "run"]

_PROG = "optixasync view"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``view`` subcommand."""
    parser = subparsers.add_parser(
        "view", help="show the path tracer live in the browser",
        description="Start a local web server showing the progressive render live: drag to orbit, right-drag "
                    "to pan, wheel to zoom, WASD/QE to move; controls for denoising, samples per frame, "
                    "resolution and max depth.",
    )
    add_scene_arguments(parser, cloth=False)
    parser.add_argument("--width", type=int, default=None, metavar="PX",
                        help="starting image width in pixels (default 960; with --cpu 480, with --cpu --scene 320)")
    parser.add_argument("--height", type=int, default=None, metavar="PX",
                        help="starting image height in pixels (default 540; with --cpu 270, with --cpu --scene "
                             "180)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; any other is reachable from the network and needs "
                             "--allow-host or the token of the URL it prints)")
    parser.add_argument("--allow-host", action="append", default=None, metavar="NAME",
                        help="beyond loopback: a host name or address other machines use to reach the viewer "
                             "(repeat for several); requests naming another host are refused")
    parser.add_argument("--token", default=None, metavar="TOKEN",
                        help="the token every request must carry (?token=, at least 16 URL-safe characters); "
                             "default: a random one when bound beyond loopback without --allow-host")
    parser.add_argument("--port", type=int, default=8765, metavar="P", help="port to bind (default 8765; 0: any free)")
    parser.add_argument("--cpu", action="store_true",
                        help="render on the CPU, no GPU needed: --scene/--env through the CPU device (the same "
                             "kernel, built by the C++ compiler), or without them the NumPy demo scene")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="threads of the CPU device with --cpu --scene (default: the CPUs this process may use)")
    parser.add_argument("--quality", type=int, default=80, metavar="Q", help="JPEG quality, 10-95 (default 80)")
    parser.add_argument("--encoders", type=int, default=2, metavar="N", help="JPEG encoder threads (default 2)")
    parser.add_argument("--max-fps", type=float, default=None, metavar="F",
                        help="most frames sent per second (default: as many as the browser takes)")
    parser.add_argument("--save-dir", default=".", metavar="DIR",
                        help="where the page's save and record buttons write their files (default: the working "
                             "directory)")
    return parser


def _check(args: argparse.Namespace) -> None:
    for name in ("width", "height"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name} must be a positive integer, got {value}")
    if args.threads is not None:
        if not (args.cpu and (args.scene or args.env)):
            raise ValueError("--threads sets the CPU device's threads: use it with --cpu --scene")
        if not 1 <= args.threads <= 1024:
            raise ValueError(f"--threads must be in 1..1024, got {args.threads}")
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be in 0..65535, got {args.port}")
    if not 10 <= args.quality <= 95:
        raise ValueError(f"--quality must be in 10..95, got {args.quality}")
    if not 1 <= args.encoders <= 64:
        raise ValueError(f"--encoders must be in 1..64, got {args.encoders}")
    if args.max_fps is not None and not args.max_fps > 0:
        raise ValueError(f"--max-fps must be positive, got {args.max_fps}")
    if not Path(args.save_dir).is_dir():
        raise ValueError(f"--save-dir must be an existing folder, got {args.save_dir!r}")


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C or SIGTERM; the exit status."""
    return run_command(_PROG, lambda: _serve(args))


def _serve(args: argparse.Namespace) -> int:
    _check(args)
    from ..errors import EXIT_UNAVAILABLE, MissingExtraError, OptixAsyncError, one_line
    from ..viewer._access import AccessPolicy

    try:
        access = AccessPolicy.create(args.host, args.allow_host, args.token)
    except ValueError as exc:  # bad input, before anything is started
        raise ValueError(f"--allow-host/--token: {exc}") from None
    try:
        import aiohttp  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("the viewer", "aiohttp", "viewer") from exc
    from ..viewer import CpuDeviceSource, CpuFrameSource, PathTracerSource, Viewer

    if args.cpu and (args.scene or args.env):  # the scene through the CPU device: a compiler is needed (exit 1)
        scene, _cloth = build_scene(choose_scene(args), _PROG)
        source = CpuDeviceSource(scene, args.width or 320, args.height or 180, threads=args.threads)
    elif args.cpu:
        source = CpuFrameSource(args.width or 480, args.height or 270)
    else:
        scene, _cloth = build_scene(choose_scene(args), _PROG)  # a bad file is bad input, before any GPU work
        try:
            source = PathTracerSource(scene, width=args.width or 960, height=args.height or 540)
        except OptixAsyncError as exc:  # no driver, no GPU, a missing extra: say where the CPU renderer is
            fail(_PROG, f"cannot start the GPU source: {one_line(exc)} (use --cpu for the CPU renderer)")
            return EXIT_UNAVAILABLE
    logging.basicConfig(level=logging.INFO, format=f"{_PROG}: %(message)s")
    viewer = Viewer(source, host=args.host, port=args.port, quality=args.quality, encoders=args.encoders,
                    max_fps=args.max_fps, directory=args.save_dir, allowed_hosts=sorted(access.hosts),
                    token=access.token or False)
    try:
        url = viewer.start()
    except OSError as exc:  # a port in use: this machine cannot serve there (exit status 1)
        raise OptixAsyncError(f"cannot serve on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    _stop_on_sigterm()  # before the line that tells a supervisor the server is up: a SIGTERM right after it
    try:  # must stop it cleanly, not kill it; so must a Ctrl-C that comes before serve_forever is entered
        print(f"{_PROG}: serving on {url} (Ctrl-C to stop)", flush=True)
        viewer.serve_forever()
    except KeyboardInterrupt:
        viewer.stop()
    return 0


def _stop_on_sigterm() -> None:
    """Make SIGTERM stop the server cleanly, as Ctrl-C does (main thread only)."""
    import signal
    import threading

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)
