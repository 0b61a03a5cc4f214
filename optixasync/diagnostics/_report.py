"""The stall report: which calls blocked the host, for how long, and which line of the user's code made them.

:func:`build_report` turns the raw calls of a watch into a
:class:`SyncReport`: it classifies each call, joins async copies with the
memory kinds CUPTI reported, separates the frame scheduler's designed waits,
decides which OptiX calls blocked, and attributes everything to the user's
line.

Blocking calls
--------------
None: pure logic, no CUDA call.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._collector import RawCall
from ._records import (
    ASYNC_MEMCPY,
    CATEGORY_HELP,
    IMPLICIT_SYNC,
    OPTIX,
    PAGEABLE,
    PAGEABLE_MEMCPY,
    SyncRecord,
    classify,
    memory_kind_name,
)
from ._stack import FrameFilter, designed_wait

__all__ = ["ReportOptions", "SyncDetected", "SyncReport", "build_report"]

_DESIGNABLE = {"event-sync", "stream-sync", IMPLICIT_SYNC}  # only a fence wait can be a designed wait


class SyncDetected(AssertionError):
    """Raised by :meth:`SyncReport.assert_no_sync`: the host waited where it should not have.

    Attributes
    ----------
    records : list of SyncRecord
        The offending calls.
    """

    def __init__(self, message: str, records: list[SyncRecord]) -> None:
        super().__init__(message)
        self.records = records


@dataclass(frozen=True)
class ReportOptions:
    """How raw calls become a report.

    Attributes
    ----------
    optix_block_ms : float
        An OptiX call that took at least this long on the host counts as blocked
        even when no synchronizing driver call was seen inside it.
    slow_async_ms : float
        An async copy whose memory kinds CUPTI did not report is kept as a stall
        when it took at least this long (else it is only counted).
    """

    optix_block_ms: float = 1.0
    slow_async_ms: float = 1.0


@dataclass
class SyncReport:
    """What one syncwatch saw.

    Attributes
    ----------
    stalls : list of SyncRecord
        Calls that blocked (or could block) the host, designed waits excluded,
        in the order they ended.
    designed : list of SyncRecord
        The designed waits (slot fences, an OptiX context's launch queue, the
        completion thread, ``drain``/``result``/``close``), reported apart, each
        with its cause in ``record.designed``.
    optix_calls : list of SyncRecord
        Every timed OptiX call, blocked or not (``record.blocked``).
    counts : dict
        ``async_copies_ok`` (async copies from pinned or device memory: not
        stalls), ``async_copies_unresolved`` (memory kind not reported by
        CUPTI, and quick), ``callback_errors``.
    duration_ms : float
        Wall time of the watch.
    """

    stalls: list[SyncRecord] = field(default_factory=list)
    designed: list[SyncRecord] = field(default_factory=list)
    optix_calls: list[SyncRecord] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0
    errors: list[str] = field(default_factory=list)

    # -- queries ---------------------------------------------------------------
    @property
    def stall_ms(self) -> float:
        """Host time in stalls; a driver call inside a blocked OptiX call is counted once (in the OptiX call)."""
        return sum(r.host_ms for r in self.stalls if r.inside is None or r.category == OPTIX)

    def at(self, filename: str, line: int | None = None, *, designed: bool = False) -> list[SyncRecord]:
        """Stalls (or designed waits) attributed to ``filename`` (suffix match) and ``line``."""
        pool = self.designed if designed else self.stalls
        out = []
        for record in pool:
            if record.user_frame is None:
                continue
            name, number, _ = record.user_frame
            if (name == filename or name.endswith(filename)) and (line is None or number == line):
                out.append(record)
        return out

    def groups(self, records: Iterable[SyncRecord] | None = None) -> list[dict[str, Any]]:
        """Records grouped by (API, user line, inside), largest total host time first."""
        buckets: dict[tuple, list[SyncRecord]] = {}
        for record in self.stalls if records is None else records:
            key = (record.api, record.user_frame, record.inside, record.category, record.designed)
            buckets.setdefault(key, []).append(record)
        out = []
        for (api, user, inside, category, designed), items in buckets.items():
            times = [r.host_ms for r in items]
            out.append({
                "api": api, "category": category, "calls": len(items), "total_ms": sum(times), "max_ms": max(times),
                "where": items[0].where, "code": items[0].code, "inside": inside, "designed": designed,
                "memory": items[0].memory, "user": user, "example": items[0],
            })
        out.sort(key=lambda g: -g["total_ms"])
        return out

    def designed_by_cause(self) -> dict[str, dict[str, float]]:
        """The designed waits per cause (``slot fence``, ``optix queue``...): calls and total host ms."""
        out: dict[str, dict[str, float]] = {}
        for record in self.designed:
            entry = out.setdefault(str(record.designed), {"calls": 0, "total_ms": 0.0})
            entry["calls"] += 1
            entry["total_ms"] += record.host_ms
        return out

    def launch_stalls(self) -> int:
        """``optixLaunch`` calls that blocked the host (the count the steady-state target is 0 for)."""
        return sum(1 for r in self.optix_calls if r.api == "optixLaunch" and r.blocked)

    def optix_summary(self) -> dict[str, dict[str, float]]:
        """Per OptiX entry point: calls, blocked calls, median / max / total host ms."""
        out: dict[str, dict[str, float]] = {}
        for name in sorted({r.api for r in self.optix_calls}):
            times = [r.host_ms for r in self.optix_calls if r.api == name]
            out[name] = {
                "calls": len(times),
                "blocked": sum(1 for r in self.optix_calls if r.api == name and r.blocked),
                "median_ms": statistics.median(times),
                "max_ms": max(times),
                "total_ms": sum(times),
            }
        return out

    # -- checks ------------------------------------------------------------------
    def assert_no_sync(self, *, include_designed: bool = False, ignore: Sequence[str] = (),
                       min_ms: float = 0.0) -> None:
        """Raise :class:`SyncDetected` if any call blocked the host.

        Parameters
        ----------
        include_designed : bool
            Count the scheduler's designed waits too (slot fences...).
        ignore : sequence of str
            API names (``cuMemHostAlloc``) or categories (``alloc``) not to count.
        min_ms : float
            Ignore calls shorter than this.
        """
        pool = list(self.stalls) + (list(self.designed) if include_designed else [])
        ignored = set(ignore)
        bad = [r for r in pool if r.api not in ignored and r.category not in ignored and r.host_ms >= min_ms]
        if bad:
            lines = [f"{len(bad)} host stall(s) where none were expected:"]
            for group in self.groups(bad)[:20]:
                inside = f" inside {group['inside']}" if group["inside"] else ""
                lines.append(f"  {group['api']}{inside} x{group['calls']} ({group['total_ms']:.3f} ms) at "
                             f"{group['where']}: {group['code']}")
            raise SyncDetected("\n".join(lines), bad)

    # -- output ------------------------------------------------------------------
    def headline(self) -> str:
        ok = self.counts.get("async_copies_ok", 0)
        causes = ", ".join(f"{cause} x{int(v['calls'])}" for cause, v in self.designed_by_cause().items())
        text = (f"syncwatch: {len(self.stalls)} stall(s), {self.stall_ms:.3f} ms of host time, in "
                f"{self.duration_ms / 1e3:.3f} s; {len(self.designed)} designed wait(s) "
                f"({sum(r.host_ms for r in self.designed):.3f} ms{': ' + causes if causes else ''}); "
                f"{ok} async copies from pinned or device memory")
        unresolved = self.counts.get("async_copies_unresolved", 0)
        if unresolved:
            text += f"; {unresolved} async copies of unreported memory kind"
        return text

    def render(self, *, designed: bool = True, optix: bool = True, stack: int = 0, width: int = 140,
               color: bool = False) -> str:
        """The report as text (rich tables when ``rich`` is installed, plain text otherwise)."""
        from ._render import render_plain, render_rich

        try:
            return render_rich(self, designed=designed, optix=optix, stack=stack, width=width, color=color)
        except ImportError:  # rich is not installed
            return render_plain(self, designed=designed, optix=optix, stack=stack)

    def print(self, file: Any = None, **kwargs: Any) -> None:
        """Print :meth:`render` to ``file`` (default stdout)."""
        import sys

        print(self.render(**kwargs), file=file or sys.stdout)

    def __str__(self) -> str:
        return self.render()

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": {
                "stalls": len(self.stalls),
                "stall_ms": self.stall_ms,
                "designed_waits": len(self.designed),
                "designed_ms": sum(r.host_ms for r in self.designed),
                "launch_stalls": self.launch_stalls(),
                "duration_ms": self.duration_ms,
                **self.counts,
            },
            "stalls": [r.to_dict() for r in self.stalls],
            "designed": [r.to_dict() for r in self.designed],
            "designed_by_cause": self.designed_by_cause(),
            "optix": self.optix_summary(),
            "optix_calls": [r.to_dict() for r in self.optix_calls],
            "categories": {name: CATEGORY_HELP[name] for name in sorted({r.category for r in self.stalls})},
            "errors": list(self.errors),
        }

    def to_json(self, path: str | None = None) -> str:
        """JSON of :meth:`to_dict`; written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text


def _ms(call: RawCall) -> float:
    return (call.end_ns - call.start_ns) / 1e6


def _record(call: RawCall, category: str, frames: FrameFilter, inside: str | None) -> SyncRecord:
    return SyncRecord(
        api=call.name, category=category, host_ms=_ms(call), start_ns=call.start_ns, end_ns=call.end_ns,
        thread=call.thread, stack=call.stack, user_frame=frames.user_frame(call.stack), inside=inside,
        correlation_id=call.correlation_id,
        extra={"synchronized": call.synced} if call.synced else {},
    )


def build_report(
    driver: Sequence[RawCall],
    optix: Sequence[RawCall],
    syncs: Sequence[RawCall] = (),
    memcpy_kinds: dict[int, tuple[int, int, int]] | None = None,
    *,
    frames: FrameFilter | None = None,
    options: ReportOptions | None = None,
    duration_ms: float = 0.0,
    errors: Sequence[str] = (),
) -> SyncReport:
    """Classify, join and attribute the raw calls of one watch.

    Parameters
    ----------
    driver, optix, syncs : sequences of RawCall
        Finished driver calls, OptiX calls and lone synchronizations.
    memcpy_kinds : dict
        Correlation id -> (source kind, destination kind, bytes) from CUPTI's MEMCPY activity records.
    """
    frames = frames or FrameFilter()
    options = options or ReportOptions()
    memcpy_kinds = memcpy_kinds or {}
    optix_names = {call.call_id: call.name for call in optix}
    report = SyncReport(duration_ms=duration_ms, errors=list(errors))
    ok = unresolved = 0
    stalls_inside: set[int] = set()

    for call in sorted(list(driver) + list(syncs), key=lambda c: c.end_ns):
        category = IMPLICIT_SYNC if call.kind == "sync" else classify(call.name)
        if category is None or category == OPTIX:
            continue
        inside = optix_names.get(call.parent) if call.parent else None
        record = _record(call, category, frames, inside)
        if category == ASYNC_MEMCPY:
            kinds = memcpy_kinds.get(call.correlation_id)
            if kinds is not None:
                src, dst, nbytes = kinds
                record.memory = f"{memory_kind_name(src)} -> {memory_kind_name(dst)}"
                record.nbytes = nbytes
                if PAGEABLE not in (src, dst):
                    ok += 1
                    continue
                record.category = PAGEABLE_MEMCPY
            elif record.host_ms < options.slow_async_ms:
                unresolved += 1
                continue
            else:
                record.memory = "not reported"
        if record.category in _DESIGNABLE:
            record.designed = designed_wait(call.stack, call.thread)
        if record.designed is not None:
            report.designed.append(record)
            continue
        report.stalls.append(record)
        if call.parent:
            stalls_inside.add(call.parent)

    for call in sorted(optix, key=lambda c: c.end_ns):
        inside = optix_names.get(call.parent) if call.parent else None
        record = _record(call, OPTIX, frames, inside)
        record.blocked = call.call_id in stalls_inside or record.host_ms >= options.optix_block_ms
        report.optix_calls.append(record)
        if record.blocked:
            report.stalls.append(record)
    report.stalls.sort(key=lambda r: r.end_ns)
    report.counts = {"async_copies_ok": ok, "async_copies_unresolved": unresolved, "callback_errors": len(errors)}
    return report
