"""The ``optixasync`` command: ``doctor``, ``render``, ``view``, ``syncwatch``, ``dataset``, and ``--version``.

A thin layer over the public API, in one package: each subcommand is a
module with ``add_parser(subparsers)`` and ``run(args) -> int``
(:data:`SUBCOMMAND_MODULES`), ``render`` and ``view`` share one
``--scene``/``--env`` resolver (:mod:`._scene`), and every subcommand turns
its errors into one line on stderr and an exit status through one ladder
(:func:`optixasync.errors.exit_status`): 0 done, 1 this machine cannot do it
(no driver, no GPU, a missing extra, a GPU failure), 2 bad input, 130
interrupted; a warning is one line too (``prog: warning: ...``). An
option's value that starts with a minus sign and a digit (``--env -1,0,0``)
is read as the value, not as another option. The modules import nothing
heavy at import time, so ``optixasync --help`` works without CuPy or a GPU.

Blocking calls
--------------
``doctor`` initialises the driver, compiles and launches a test pipeline and
waits for it; ``render`` and ``view`` list theirs in their modules.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from ..errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNAVAILABLE
from ._progress import progress_bar

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_UNAVAILABLE", "NEGATIVE_VALUE", "SUBCOMMAND_MODULES",
           "ArgumentParser", "main", "progress_bar"]

#: Subcommand name -> module with ``add_parser(subparsers)`` and ``run(args)``.
SUBCOMMAND_MODULES = {
    "doctor": "optixasync.cli._doctor",
    "render": "optixasync.cli._render",
    "view": "optixasync.cli._view",
    "syncwatch": "optixasync.cli._syncwatch",
    "dataset": "optixasync.cli._dataset",
}


#: A token that is a value, not an option, when it starts with a minus sign: ``-1``, ``-.5``, ``-1,0,0``, ``-2e3``.
NEGATIVE_VALUE = re.compile(r"^-\.?\d")


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, reading every token that starts with ``-`` and a digit as a value (``--env -1,0,0``).

    argparse reads as values only tokens that look like one negative number (``-1``, ``-0.5``); a list such as
    ``-1,0,0`` would be taken for an option and the command refused. No option of optixasync starts with a
    digit, so this reading is never ambiguous. Subcommands' parsers are of this class too.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._negative_number_matcher = NEGATIVE_VALUE  # the pattern argparse asks (CPython 3.10 to 3.13)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run the subcommand; returns the exit status."""
    from .._version import __version__

    parser = ArgumentParser(prog="optixasync", description="OptiX from Python with an asynchronous frame pipeline")
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
