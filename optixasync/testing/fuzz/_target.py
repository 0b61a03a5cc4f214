"""A fuzz target: what it generates, how a case runs, what it must satisfy; and the registry of targets.

A case is a JSON object (bytes as base64), so that a failing one can be kept in the corpus as it was, whatever
the generators become later. Every ``valid_every``-th case of a seed is an unmutated valid input, which must load
(outcome ``"ok"``): the gating run checks that the loaders accept what they document, case by case, instead of
counting outcomes over random ones.

Blocking calls
--------------
None.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from ._harness import LIMITS, CaseFailure, check_case, decode

__all__ = ["FileTarget", "TARGETS", "Target", "get_target", "register", "run_case"]

#: The targets by name (filled by :func:`register`).
TARGETS: dict[str, Target] = {}


class Target:
    """One input surface under fuzzing (a loader, a parser).

    Attributes
    ----------
    name : str
    cases : int
        Cases per seed in the gating run.
    allowed : tuple of exception types
        The documented exceptions: any of them is a refusal, anything else a failure.
    valid_every : int
        Case ``k`` of a seed with ``k % valid_every == 0`` is a valid input that must load.
    isolated : bool
        Whether its cases run in a child process (a C++ decoder whose crash must not end the run).
    """

    name: ClassVar[str] = ""
    cases: ClassVar[int] = 100
    allowed: ClassVar[tuple[type[BaseException], ...]] = ()
    valid_every: ClassVar[int] = 8
    isolated: ClassVar[bool] = False

    def prepare(self, folder: Path) -> None:
        """Write the files every case may name into the asset folder (once per run)."""

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        """A case (JSON-able); ``valid``: an unmutated input the target must accept."""
        raise NotImplementedError

    def call(self, case: dict[str, Any], folder: Path) -> Callable[[], object]:
        """Write what ``case`` needs into ``folder``; the call to check."""
        raise NotImplementedError

    def verify(self, case: dict[str, Any], outcome: str, value: object) -> None:
        """Rules beyond the harness's (state kept within bounds, a refused header), by assertion."""


class FileTarget(Target):
    """A loader of files: a case is ``{"files": {name: base64}, "open": name}``; the call loads ``open``."""

    load: ClassVar[Callable[..., object]]

    def __init__(self) -> None:
        self._written: list[str] = []  # the files of the case before: removed before the next is written

    def call(self, case: dict[str, Any], folder: Path) -> Callable[[], object]:
        for stale in self._written:
            (folder / stale).unlink(missing_ok=True)
        self._written = list(case["files"])
        for name, data in case["files"].items():
            (folder / name).write_bytes(decode(data))
        return partial(type(self).load, folder / case["open"], limits=LIMITS)


def register(cls: type[Target]) -> type[Target]:
    """Add a target class to :data:`TARGETS` (a class decorator)."""
    TARGETS[cls.name] = cls()
    return cls


def get_target(name: str) -> Target:
    """The target ``name``.

    Raises
    ------
    ValueError
        For a name no target has (naming those that exist).
    """
    target = TARGETS.get(name)  # the package imports the targets' modules, which register them
    if target is None:
        raise ValueError(f"no fuzz target {name!r}; the targets are {sorted(TARGETS)}")
    return target


def run_case(target: Target, case: dict[str, Any], folder: Path, where: str) -> str:
    """Run one case under the harness's checks and the target's rules; its outcome.

    Raises
    ------
    CaseFailure
        If the case broke a rule (its ``case`` attribute is the case), a valid case was refused, or a corpus
        case's recorded outcome (``"expect"``) changed.
    """
    try:
        outcome, value = check_case(target.call(case, folder), folder, target.allowed, where)
        if case.get("valid") and outcome != "ok":
            raise CaseFailure(f"{where}: a valid input was refused ({outcome})")
        expected = case.get("expect")
        if expected is not None and outcome != expected:
            raise CaseFailure(f"{where}: outcome {outcome}, the corpus expects {expected}")
        try:
            target.verify(case, outcome, value)
        except AssertionError as exc:
            if isinstance(exc, CaseFailure):
                raise
            raise CaseFailure(f"{where}: {exc}") from exc
    except CaseFailure as failure:
        failure.case = case  # type: ignore[attr-defined]
        raise
    return outcome
