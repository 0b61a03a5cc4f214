"""The one exit ladder of the command line, the examples and the benchmarks.

Every subcommand of ``optixasync`` and every script runs its body through
:func:`run_command`: an exception of the ladder becomes one line on stderr,
``prog: error: message``, and the exit status
:func:`optixasync.errors.exit_status` gives it (0 done, 1 this machine cannot
do it, 2 bad input, 130 interrupted). Other exceptions are bugs: they keep
their traceback (and ``python -X dev`` keeps it for all of them).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from .errors import exit_status, one_line

__all__ = ["fail", "run_command"]


def fail(prog: str, message: str) -> None:
    """Print ``prog: error: message`` (its first line) on stderr."""
    lines = str(message).strip().splitlines()
    print(f"{prog}: error: {lines[0] if lines else message}", file=sys.stderr, flush=True)


def run_command(prog: str, body: Callable[[], int | None]) -> int:
    """Run ``body()`` and return its exit status; an exception of the ladder is one line on stderr.

    Raises
    ------
    BaseException
        What is not on the ladder (a bug), and everything under ``python -X dev``.
    """
    try:
        return int(body() or 0)
    except BaseException as exc:
        status = exit_status(exc)
        if status is None or (sys.flags.dev_mode and not isinstance(exc, KeyboardInterrupt)):
            raise
        fail(prog, "interrupted" if isinstance(exc, KeyboardInterrupt) else one_line(exc))
        return status
