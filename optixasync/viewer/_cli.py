"""``optixasync view``: serve the live viewer on a local web server and print its URL.

This module imports nothing heavy at import time (no aiohttp, no CuPy), so
``optixasync --help`` works anywhere. ``--cpu`` serves the NumPy renderer;
otherwise the GPU source comes from :func:`optixasync.viewer._gpu.make_gpu_source`.
Problems give one line on stderr and the CLI's exit status: 2 for bad input
(sizes, port, a scene option the renderer lacks), 1 when the machine cannot
run it (aiohttp missing, no GPU or driver, a port in use).
"""

from __future__ import annotations

import argparse
import logging
import sys

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
    parser.add_argument("--scene", default=None, metavar="PATH", help="scene or mesh file for the GPU source")
    parser.add_argument("--env", default=None, metavar="PATH", help="environment map (not supported yet: the path tracer has no environment light)")
    parser.add_argument("--width", type=int, default=None, metavar="PX",
                        help="starting image width (default: the source's; 480 with --cpu)")
    parser.add_argument("--height", type=int, default=None, metavar="PX",
                        help="starting image height (default: the source's; 270 with --cpu)")
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
    parser.add_argument("--cpu", action="store_true", help="render on the CPU with NumPy (no GPU needed)")
    parser.add_argument("--quality", type=int, default=80, metavar="Q", help="JPEG quality, 10-95 (default 80)")
    parser.add_argument("--encoders", type=int, default=2, metavar="N", help="JPEG encoder threads (default 2)")
    parser.add_argument("--max-fps", type=float, default=None, metavar="F",
                        help="most frames sent per second (default: as many as the browser takes)")
    return parser


def _error(message: str, status: int = 2) -> int:
    print(f"{_PROG}: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C; the exit status."""
    for name in ("width", "height"):
        value = getattr(args, name)
        if value is not None and value < 1:
            return _error(f"--{name} must be at least 1, got {value}")
    if not 0 <= args.port <= 65535:
        return _error(f"--port must be in 0..65535, got {args.port}")
    if not 10 <= args.quality <= 95:
        return _error(f"--quality must be in 10..95, got {args.quality}")
    if not 1 <= args.encoders <= 64:
        return _error(f"--encoders must be in 1..64, got {args.encoders}")
    if args.max_fps is not None and not args.max_fps > 0:
        return _error(f"--max-fps must be positive, got {args.max_fps}")
    from ._access import AccessPolicy

    try:
        access = AccessPolicy.create(args.host, getattr(args, "allow_host", None), getattr(args, "token", None))
    except ValueError as exc:
        return _error(f"--allow-host/--token: {exc}")
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return _error("the viewer needs aiohttp: pip install 'optixasync[viewer]'", 1)
    from . import CpuFrameSource, Viewer

    if args.cpu:
        if args.scene or args.env:
            print(f"{_PROG}: --scene and --env are ignored with --cpu (the CPU renderer has one built-in scene)",
                  file=sys.stderr)
        source = CpuFrameSource(args.width or 480, args.height or 270)
    else:
        from ._gpu import make_gpu_source

        try:
            source = make_gpu_source(args)
        except (ValueError, TypeError) as exc:  # the arguments: a scene file, an option the renderer lacks
            return _error(str(exc).splitlines()[0], 2)
        except Exception as exc:  # no GPU, driver or extra
            return _error(f"cannot start the GPU source: {exc} (use --cpu for the CPU renderer)", 1)
    logging.basicConfig(level=logging.INFO, format=f"{_PROG}: %(message)s")
    viewer = Viewer(source, host=args.host, port=args.port, quality=args.quality, encoders=args.encoders,
                    max_fps=args.max_fps, allowed_hosts=sorted(access.hosts), token=access.token or False)
    try:
        url = viewer.start()
    except OSError as exc:
        return _error(f"cannot serve on {args.host}:{args.port}: {exc.strerror or exc}", 1)
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
