"""``python -m optixasync.testing.fuzz --minutes N [--target T]``: the rotating fuzz search (see ``_run``)."""

from __future__ import annotations

import argparse
import sys

from ._run import child_main, search


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m optixasync.testing.fuzz",
                                     description="Run new fuzz seeds for a while; write failing cases to the corpus.")
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to search (default 1)")
    parser.add_argument("--target", action="append", help="a target to search (repeatable; default: all)")
    parser.add_argument("--corpus", default="tests/fuzz/corpus", help="where failing cases are written")
    parser.add_argument("--seed", type=int, help="the first seed (default: from the clock)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child, args.seed, args.count, args.case)
    if args.minutes <= 0:
        parser.error("--minutes must be positive")
    try:
        report = search(args.minutes, targets=args.target, corpus=args.corpus, first_seed=args.seed,
                        log=lambda line: print(line, file=sys.stderr, flush=True))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.table())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
