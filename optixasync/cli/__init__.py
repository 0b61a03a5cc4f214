"""The ``optixasync`` command: ``doctor``, ``render``, ``view``, ``syncwatch``, and ``--version``.

A thin layer over the public API, in one package: each subcommand is a
module with ``add_parser(subparsers)`` and ``run(args) -> int``
(:data:`SUBCOMMAND_MODULES`), ``render`` and ``view`` share one
``--scene``/``--env`` resolver (:mod:`._scene`), and every subcommand turns
its errors into one line on stderr and an exit status through one ladder
(:func:`optixasync.errors.exit_status`): 0 done, 1 this machine cannot do it
(no driver, no GPU, a missing extra, a GPU failure), 2 bad input, 130
interrupted. The modules import nothing heavy at import time, so
``optixasync --help`` works without CuPy or a GPU.

Blocking calls
--------------
``doctor`` initialises the driver, compiles and launches a test pipeline and
waits for it; ``render`` and ``view`` list theirs in their modules.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNAVAILABLE
from ._progress import progress_bar

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_UNAVAILABLE", "SUBCOMMAND_MODULES", "main",
           "progress_bar"]

#: Subcommand name -> module with ``add_parser(subparsers)`` and ``run(args)``.
SUBCOMMAND_MODULES = {
    "doctor": "optixasync.cli._doctor",
    "render": "optixasync.cli._render",
    "view": "optixasync.cli._view",
    "syncwatch": "optixasync.cli._syncwatch",
}


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run the subcommand; returns the exit status."""
    from .._version import __version__

    parser = argparse.ArgumentParser(prog="optixasync", description="OptiX from Python with an asynchronous frame pipeline")
    parser.add_argument("--version", action="version", version=f"optixasync {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, path in SUBCOMMAND_MODULES.items():
        try:
            modules[name] = importlib.import_module(path)
        except ImportError as exc:
            # A package outside optixasync that is not installed (an optional extra) hides the subcommand; a
            # module of optixasync that fails to import is a bug to see, not a missing command.
            if exc.name is not None and exc.name.split(".")[0] == "optixasync":
                raise
            continue
        modules[name].add_parser(sub)
    args = parser.parse_args(argv)
    return int(modules[args.command].run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
