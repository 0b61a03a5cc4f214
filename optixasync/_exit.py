"""The one exit ladder of the command line, the examples and the benchmarks.

Every subcommand of ``optixasync`` and every script runs its body through
:func:`run_command`: an exception of the ladder becomes one line on stderr,
``prog: error: message``, and the exit status
:func:`optixasync.errors.exit_status` gives it (0 done, 1 this machine cannot
do it, 2 bad input, 130 interrupted). Other exceptions are bugs: they keep
their traceback (and ``python -X dev`` keeps it for all of them). While the
body runs, a warning is one line on stderr too, ``prog: warning: message``,
not Python's two lines of file, line and source.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any, TextIO

from .errors import exit_status, one_line

__all__ = ["fail", "run_command", "warning_line"]


def fail(prog: str, message: str) -> None:
    """Print ``prog: error: message`` (its first line) on stderr."""
    lines = str(message).strip().splitlines()
    print(f"{prog}: error: {lines[0] if lines else message}", file=sys.stderr, flush=True)


def warning_line(prog: str) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints ``prog: warning: message`` (its first line) on stderr."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        lines = str(message).strip().splitlines()
        target: Any = file if file is not None else sys.stderr
        print(f"{prog}: warning: {lines[0] if lines else category.__name__}", file=target, flush=True)

    return show


def run_command(prog: str, body: Callable[[], int | None]) -> int:
    """Run ``body()`` and return its exit status; an exception of the ladder is one line on stderr.

    Raises
    ------
    BaseException
        What is not on the ladder (a bug), and everything under ``python -X dev``.
    """
    try:
        with warnings.catch_warnings():  # restores the caller's warning display (and filters) when done
            warnings.showwarning = warning_line(prog)
            return int(body() or 0)
    except BaseException as exc:
        status = exit_status(exc)
        if status is None or (sys.flags.dev_mode and not isinstance(exc, KeyboardInterrupt)):
            raise
        fail(prog, "interrupted" if isinstance(exc, KeyboardInterrupt) else one_line(exc))
        return status
