"""The entry of the examples and benchmarks: one line and the CLI's exit status when they cannot run.

A script calls :func:`require_gpu` once its arguments are parsed, and runs
its ``main`` through :func:`run_main`. Where the machine cannot run it, it
prints one line on stderr, ``<script>: error: <reason>``, and exits with the status
the ``optixasync`` command gives for the same condition (see
:func:`optixasync.errors.exit_status`):

* 0 done;
* 1 the machine cannot run it: no driver, no GPU, no OptiX library, a
  missing extra (the reason is :func:`optixasync._driver.unavailable_reason`,
  the text ``optixasync doctor`` prints), or a GPU failure later
  (an :class:`~optixasync.errors.OptixAsyncError`);
* 2 bad input: argparse's own errors, and a ``ValueError`` or ``TypeError``
  from the library's checks of what the arguments asked for;
* 130 interrupted (Ctrl-C).

Other exceptions are bugs and keep their traceback. ``python -X dev
script.py`` shows the traceback of the conditions above too.

Blocking calls
--------------
:func:`require_gpu` initialises the driver once per process (``cuInit``,
through the driver probe): set-up time, before any measurement.
:func:`child_output` waits for the child process it runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

# Nothing else at import time (not even the CLI package, for its argparse): the scripts' children time
# ``import optixasync.testing``.
from .._exit import fail, run_command
from ..errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_UNAVAILABLE

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_UNAVAILABLE", "call_main", "child_output", "require_gpu",
           "run_main", "script_name"]


def script_name() -> str:
    """The running script's file name (``hello_triangle.py``), the prefix of its one-line messages."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and name != "-c" else "python"


def _say(prog: str | None, message: str) -> None:
    fail(prog or script_name(), message)


def require_gpu(prog: str | None = None) -> None:
    """Exit with one line and status 1 unless optixasync can run on a GPU here.

    The reason is :func:`optixasync._driver.unavailable_reason` (no driver,
    no CUDA device, no OptiX library, no CuPy for this driver): the same text
    ``optixasync doctor`` gives for the same condition.
    """
    from .._driver import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        _say(prog, reason)
        sys.exit(EXIT_UNAVAILABLE)


def call_main(main: Callable[[], int | None], prog: str | None = None) -> int:
    """Run ``main()`` and return the exit status, printing one line for the conditions of the module docstring.

    The command line's ladder (:func:`optixasync._exit.run_command`): other exceptions are bugs and keep
    their traceback, as do all of them under ``python -X dev``.
    """
    return run_command(prog or script_name(), main)


def run_main(main: Callable[[], int | None], prog: str | None = None) -> NoReturn:
    """``sys.exit(call_main(main, prog))``: the last line of a script."""
    sys.exit(call_main(main, prog))


def child_output(command: Sequence[str], prog: str | None = None, **kwargs: Any) -> str:
    """Run a measuring child process and return its stdout; if it fails, exit with its one line and status.

    The child's last line on stderr is its reason (a child run through
    :func:`run_main` prints exactly one); it is shown as it is when the child
    already named this script, else after ``prog: child process failed:``.
    The status is the child's when it is 1 or 2, else 1.
    """
    import subprocess

    proc = subprocess.run(list(command), capture_output=True, text=True, **kwargs)
    if proc.returncode == 0:
        return proc.stdout
    prog = prog or script_name()
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    reason = lines[-1].strip() if lines else f"exit status {proc.returncode}, nothing on stderr"
    if reason.startswith(f"{prog}: "):
        print(reason, file=sys.stderr, flush=True)
    else:
        _say(prog, f"child process failed (exit status {proc.returncode}): {reason}")
    sys.exit(proc.returncode if proc.returncode in (EXIT_UNAVAILABLE, EXIT_BAD_INPUT) else EXIT_UNAVAILABLE)
