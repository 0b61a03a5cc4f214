"""Running fuzz cases: a seed's cases, a corpus file, a child process for isolated targets, the rotating search.

The gating run is :func:`run_seed` with :data:`FIXED_SEED` for every target, and :func:`replay` of every file
in the corpus: the same cases every time. :func:`search` draws new seeds from the clock for a given time and
writes each case that fails into the corpus (one JSON file per case, named by its content's hash), where the
gating run replays it from then on.

Blocking calls
--------------
None (host work; an isolated target waits for its child process).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._harness import CaseFailure, make_folders
from ._target import TARGETS, Target, get_target, run_case

__all__ = ["FIXED_SEED", "SearchReport", "corpus_files", "replay", "run_seed", "save_case", "search"]

#: The seed of the gating run.
FIXED_SEED = 20260101
#: A child process's bound (it runs one seed of an isolated target: 60 cases of milliseconds).
_CHILD_SECONDS = 600
#: What starts the child's lines of records (anything else on its output is the decoder's).
_MARK = "@fuzz "


@contextlib.contextmanager
def _folders(target: Target, root: Path | None) -> Iterator[Path]:
    with contextlib.ExitStack() as stack:
        base = Path(root) if root is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        asset, _private = make_folders(base)
        target.prepare(asset)
        yield asset


def run_seed(target: str | Target, seed: int, *, root: Path | None = None, count: int | None = None,
             on_failure: Callable[[CaseFailure], None] | None = None) -> Counter:
    """Run the ``count`` (default: the target's) cases of ``seed``; their outcomes counted.

    Raises
    ------
    CaseFailure
        At the first failing case, without ``on_failure``; with it, each failure is handed to it and the run
        goes on.
    """
    target = get_target(target) if isinstance(target, str) else target
    if target.isolated:
        return _run_child(target, ["--seed", str(seed), "--count", str(count or target.cases)], f"seed {seed}",
                          on_failure)
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    with _folders(target, root) as asset:
        for k in range(count or target.cases):
            case = target.generate(rng, k % target.valid_every == 0)
            try:
                outcomes[run_case(target, case, asset, f"{target.name} case {k} of seed {seed}")] += 1
            except CaseFailure as failure:
                if on_failure is None:
                    raise
                outcomes["failed"] += 1
                on_failure(failure)
    return outcomes


def replay(path: str | Path, *, root: Path | None = None) -> Counter:
    """Run one corpus file: its case (``"case"``) or its seed's cases (``"seed"``); their outcomes counted.

    Raises
    ------
    CaseFailure
        If the case (or one of the seed's) fails again.
    """
    entry = json.loads(Path(path).read_text(encoding="utf-8"))
    target = get_target(entry["target"])
    if "seed" in entry:
        return run_seed(target, int(entry["seed"]), root=root)
    if target.isolated:
        return _run_child(target, ["--case", str(path)], f"corpus file {Path(path).name}", None)
    with _folders(target, root) as asset:
        return Counter([run_case(target, entry["case"], asset, f"{target.name} corpus file {Path(path).name}")])


def corpus_files(corpus: str | Path, target: str | None = None) -> list[Path]:
    """The corpus's case files (``<corpus>/<target>/*.json``), sorted."""
    base = Path(corpus)
    folders = [base / target] if target else sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    return sorted(f for folder in folders for f in folder.glob("*.json"))


def save_case(corpus: str | Path, target: str, case: dict[str, Any], found: str, error: str) -> Path:
    """Write a failing case into ``<corpus>/<target>/<hash>.json``; its path (the same case, the same file)."""
    text = json.dumps(case, sort_keys=True)
    folder = Path(corpus) / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    entry = {"target": target, "found": found, "error": error[:500], "case": case}
    path.write_text(json.dumps(entry, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


@dataclass
class SearchReport:
    """What :func:`search` did, per target: seeds and cases run, failures, the corpus files written."""

    seeds: Counter = field(default_factory=Counter)
    cases: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)
    written: list[Path] = field(default_factory=list)

    def table(self) -> str:
        """The report as a plain-text table."""
        lines = [f"{'target':<10} {'seeds':>6} {'cases':>8} {'failures':>9}"]
        for name in sorted(self.seeds):
            lines.append(f"{name:<10} {self.seeds[name]:>6} {self.cases[name]:>8} {self.failures[name]:>9}")
        lines += [f"new corpus file: {p}" for p in self.written]
        return "\n".join(lines)


def search(minutes: float, *, targets: list[str] | None = None, corpus: str | Path = "tests/fuzz/corpus",
           first_seed: int | None = None, log: Callable[[str], None] | None = None) -> SearchReport:
    """Run new seeds (from the clock, or from ``first_seed`` on) of ``targets`` in turn for ``minutes``.

    Each failing case is written into ``corpus`` (see :func:`save_case`). A seed is always run to its end, so the
    time may be exceeded by one seed's cases.
    """
    from . import _targets  # noqa: F401  (registers the targets)

    names = list(targets) if targets else sorted(TARGETS)
    for name in names:
        get_target(name)
    report = SearchReport()
    seed = int(time.time() * 1000) % 2_000_000_000 if first_seed is None else int(first_seed)
    deadline = time.monotonic() + minutes * 60.0
    while True:
        for name in names:
            def failed(failure: CaseFailure, name: str = name, seed: int = seed) -> None:
                report.failures[name] += 1
                case = getattr(failure, "case", None)
                if case is not None:
                    report.written.append(save_case(corpus, name, case, f"seed {seed}", str(failure)))
                if log is not None:
                    log(f"FAIL {failure}")

            outcomes = run_seed(name, seed, on_failure=failed)
            report.seeds[name] += 1
            report.cases[name] += sum(outcomes.values())
        seed += 1
        if time.monotonic() >= deadline:
            return report


# -- isolated targets: one child process per seed or corpus file --------------------------------------------------
def _run_child(target: Target, args: list[str], what: str,
               on_failure: Callable[[CaseFailure], None] | None) -> Counter:
    """Run a seed's cases (or a corpus file) of ``target`` in a child; a crash fails the case it was running."""
    command = [sys.executable, "-m", "optixasync.testing.fuzz", "--child", target.name, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=_CHILD_SECONDS,
                          env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    outcomes: Counter = Counter()
    current: dict[str, Any] | None = None
    for line in done.stdout.splitlines():
        if not line.startswith(_MARK):
            continue  # the decoder's own output
        record = json.loads(line[len(_MARK):])
        if "case" in record:
            current = record
        elif "outcome" in record:
            outcomes[record["outcome"]] += 1
            current = None
        elif "failure" in record:
            failure = CaseFailure(record["failure"])
            failure.case = current["case"] if current else None  # type: ignore[attr-defined]
            outcomes["failed"] += 1
            current = None
            if on_failure is None:
                raise failure
            on_failure(failure)
    if done.returncode != 0:
        where = current["where"] if current else what
        failure = CaseFailure(f"{where}: the child process ended with status {done.returncode}:\n"
                              f"{done.stderr[-3000:]}")
        failure.case = current["case"] if current else None  # type: ignore[attr-defined]
        if on_failure is None:
            raise failure
        outcomes["failed"] += 1
        on_failure(failure)
    return outcomes


def child_main(name: str, seed: int | None, count: int | None, case_file: str | None) -> int:
    """The child's side: print each case before running it, then its outcome or failure (one JSON per line)."""
    target = get_target(name)

    def emit(record: dict[str, Any]) -> None:
        print(_MARK + json.dumps(record), flush=True)

    with _folders(target, None) as asset:
        if case_file is not None:
            cases = [(f"{name} corpus file {Path(case_file).name}",
                      json.loads(Path(case_file).read_text(encoding="utf-8"))["case"])]
        else:
            rng = random.Random(seed)
            cases = ((f"{name} case {k} of seed {seed}", target.generate(rng, k % target.valid_every == 0))
                     for k in range(count or target.cases))
        for where, case in cases:
            emit({"where": where, "case": case})
            try:
                emit({"outcome": run_case(target, case, asset, where)})
            except CaseFailure as failure:
                emit({"failure": str(failure)})
    return 0
