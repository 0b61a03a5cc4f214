"""``optixasync syncwatch -- python script.py [args]``: run a script under syncwatch, print the stalls at exit.

The script runs in this process (as ``python script.py`` would run it:
``__main__``, its own ``sys.argv``, its directory first on ``sys.path``),
inside one :func:`~optixasync.diagnostics.syncwatch`; when it ends, by
returning, ``sys.exit`` or an exception, the report goes to stderr. The exit
status is the script's; before the script runs, as for the other commands,
2 for a bad target and 1 when the machine cannot watch (no CUPTI package,
no driver). Nothing heavy is imported until ``run``.
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import sys
import traceback
from dataclasses import dataclass

from .._exit import fail
from ..errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_UNAVAILABLE

__all__ = ["Target", "add_parser", "parse_target", "run"]

_PROG = "optixasync syncwatch"

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?(\.exe)?$", re.IGNORECASE)

_EPILOG = """examples:
  optixasync syncwatch -- python examples/validation_demo.py --frames 60
  optixasync syncwatch --json stalls.json --stack 6 -- my_render.py
  optixasync syncwatch --fail-on-stall -- python -m my_package.render
"""


@dataclass(frozen=True)
class Target:
    """What to run: a script path or a module name (``-m``), and its arguments."""

    path: str | None
    module: str | None
    argv: list[str]


class TargetError(ValueError):
    """The command after ``--`` does not name a runnable script."""


def parse_target(command: list[str]) -> Target:
    """Understand ``[--] [python] script.py args`` and ``[--] [python] -m module args``.

    Raises
    ------
    TargetError
        With a message for the user, when nothing runnable is named.
    """
    command = list(command)
    if command and command[0] == "--":
        command = command[1:]
    if command and (_PYTHON.match(os.path.basename(command[0])) or command[0] == sys.executable):
        command = command[1:]
    if not command:
        raise TargetError("no script given: optixasync syncwatch -- python script.py [args]")
    if command[0] == "-m":
        if len(command) < 2:
            raise TargetError("-m needs a module name")
        return Target(None, command[1], [command[1]] + command[2:])
    if command[0].startswith("-"):
        raise TargetError(f"unsupported interpreter option {command[0]!r}: only a script path or -m module can be run")
    path = command[0]
    if not os.path.isfile(path):
        raise TargetError(f"cannot run {path!r}: no such file")
    return Target(path, None, command)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "syncwatch",
        help="run a Python script and report every call that blocked the host, with the line that caused it",
        description="Run a Python script under optixasync.diagnostics.syncwatch (CUPTI) and print, at exit, "
                    "every CUDA or OptiX call that made the host wait, attributed to your line of code.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    parser.add_argument("--stack", type=int, default=0, metavar="N", help="show N frames of each stall's stack")
    parser.add_argument("--no-designed", action="store_true", help="leave the scheduler's designed waits out")
    parser.add_argument("--optix-block-ms", type=float, default=1.0, metavar="MS",
                        help="an OptiX call this long counts as blocked (default 1.0)")
    parser.add_argument("--skip", action="append", default=[], metavar="PATH",
                        help="a directory or file of library code: its frames are never reported as your line "
                             "(repeatable)")
    parser.add_argument("--fail-on-stall", action="store_true",
                        help="exit with status 1 when a stall was found (if the script itself succeeded)")
    # dest "target": the top-level parser keeps the subcommand's name in "command".
    parser.add_argument("target", nargs=argparse.REMAINDER, metavar="-- [python] script.py [args]",
                        help="the script to run and its arguments (or -m module)")


def _run_target(target: Target) -> int:
    """Run the script or module as ``__main__``; returns its exit status."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = list(target.argv)
    if target.path is not None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target.path)))
    else:
        sys.path.insert(0, os.getcwd())
    try:
        if target.path is not None:
            runpy.run_path(target.path, run_name="__main__")
        else:
            runpy.run_module(target.module, run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def run(args: argparse.Namespace) -> int:
    try:
        target = parse_target(args.target)
    except TargetError as exc:
        fail(_PROG, str(exc))
        return EXIT_BAD_INPUT
    from ..diagnostics import MissingExtraError, SyncWatch

    watch = SyncWatch(optix_block_ms=args.optix_block_ms, skip=[os.path.abspath(p) for p in args.skip])
    try:
        watch.__enter__()
    except (MissingExtraError, RuntimeError) as exc:  # the machine cannot watch (no CUPTI package, no driver)
        fail(_PROG, str(exc))
        return EXIT_UNAVAILABLE
    try:
        status = _run_target(target)
    finally:
        watch.__exit__(None, None, None)
    report = watch.report
    assert report is not None
    sys.stdout.flush()
    print(report.render(designed=not args.no_designed, stack=args.stack), file=sys.stderr)
    if args.json:
        report.to_json(args.json)
        print(f"optixasync syncwatch: report written to {args.json}", file=sys.stderr)
    if status == 0 and args.fail_on_stall and report.stalls:
        return 1
    return status
