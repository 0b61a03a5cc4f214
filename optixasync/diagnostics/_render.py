"""Text of a :class:`~optixasync.diagnostics.SyncReport`: rich tables, or plain text without rich."""

from __future__ import annotations

import io
import os
from typing import Any

from ._records import CATEGORY_HELP

__all__ = ["render_plain", "render_rich", "short_path"]


def short_path(filename: str, parts: int = 2) -> str:
    """The last ``parts`` components of a path (full paths make the table unreadable)."""
    pieces = filename.replace("\\", "/").split("/")
    return "/".join(pieces[-parts:]) if len(pieces) > parts else filename


def _where(group: dict[str, Any]) -> str:
    user = group["user"]
    if user is None:
        return "<no Python caller>"
    return f"{short_path(user[0])}:{user[1]}"


def _inside(group: dict[str, Any]) -> str:
    """The note column: the OptiX call it happened in, the memory kinds, what CUPTI saw synchronized."""
    parts = []
    if group["inside"]:
        parts.append(f"in {group['inside']}")
    if group["memory"]:
        parts.append(group["memory"])
    synced = group["example"].extra.get("synchronized")
    if synced:
        parts.append(f"synchronized {synced}")
    if group["example"].thread not in ("", "MainThread"):
        parts.append(f"thread {group['example'].thread}")
    return ", ".join(parts)


def _stack_lines(record: Any, depth: int) -> list[str]:
    """``depth`` frames from the user's line outward (the library frames inside it are counted, not shown)."""
    stack = list(record.stack)
    start = stack.index(record.user_frame) if record.user_frame in stack else 0
    lines = [f"      ({start} library frame(s) inside)"] if start else []
    return lines + [f"      {short_path(f)}:{line} in {fn}" for f, line, fn in stack[start:start + depth]]


def render_rich(report: Any, *, designed: bool = True, optix: bool = True, stack: int = 0, width: int = 140,
                color: bool = False) -> str:
    from rich.console import Console
    from rich.table import Table

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="auto" if color else None,
                      no_color=not color, highlight=False)
    console.print(report.headline())
    groups = report.groups()
    if groups:
        table = Table(title="host stalls (your line first; largest total first)", title_justify="left", expand=False)
        for name, justify in (("API", "left"), ("why", "left"), ("calls", "right"), ("total ms", "right"),
                              ("max ms", "right"), ("where", "left"), ("code", "left"), ("note", "left")):
            # API and file:line stay on one line (they are what one searches for); code and note wrap.
            table.add_column(name, justify=justify, overflow="fold", no_wrap=name in ("API", "where"))
        for g in groups:
            table.add_row(g["api"], g["category"], str(g["calls"]), f"{g['total_ms']:.3f}", f"{g['max_ms']:.3f}",
                          _where(g), g["code"], _inside(g))
        console.print(table)
        if stack:
            for g in groups:
                console.print(f"  {g['api']} at {_where(g)}:")
                for line in _stack_lines(g["example"], stack):
                    console.print(line)
    else:
        console.print("no host stalls")
    if designed and report.designed:
        table = Table(title="designed waits (the frame scheduler; not stalls)", title_justify="left")
        for name, justify in (("wait", "left"), ("API", "left"), ("calls", "right"), ("total ms", "right"),
                              ("max ms", "right"), ("where", "left")):
            table.add_column(name, justify=justify, overflow="fold", no_wrap=name in ("API", "where"))
        for g in report.groups(report.designed):
            table.add_row(g["designed"] or "", g["api"], str(g["calls"]), f"{g['total_ms']:.3f}", f"{g['max_ms']:.3f}",
                          _where(g))
        console.print(table)
    if optix and report.optix_calls:
        table = Table(title="OptiX calls and graph launches (host time inside the call)", title_justify="left")
        for name in ("entry point", "calls", "blocked", "median ms", "max ms", "total ms"):
            table.add_column(name, justify="left" if name == "entry point" else "right")
        for name, s in report.optix_summary().items():
            table.add_row(name, str(s["calls"]), str(s["blocked"]), f"{s['median_ms']:.3f}", f"{s['max_ms']:.3f}",
                          f"{s['total_ms']:.3f}")
        console.print(table)
    categories = sorted({r.category for r in report.stalls})
    for category in categories:
        console.print(f"  {category}: {CATEGORY_HELP[category]}")
    if report.errors:
        console.print(f"  {len(report.errors)} callback error(s), first: {report.errors[0]}")
    return buffer.getvalue().rstrip() + os.linesep


def render_plain(report: Any, *, designed: bool = True, optix: bool = True, stack: int = 0) -> str:
    lines = [report.headline()]
    groups = report.groups()
    if groups:
        lines.append("host stalls:")
        for g in groups:
            extra = _inside(g)
            lines.append(f"  {g['api']:<24} {g['category']:<16} x{g['calls']:<5} total {g['total_ms']:9.3f} ms  "
                         f"max {g['max_ms']:9.3f} ms  {_where(g)}  {g['code']}" + (f"  ({extra})" if extra else ""))
            if stack:
                lines.extend(_stack_lines(g["example"], stack))
    else:
        lines.append("no host stalls")
    if designed and report.designed:
        lines.append("designed waits (the frame scheduler; not stalls):")
        for g in report.groups(report.designed):
            lines.append(f"  {g['designed']:<18} {g['api']:<22} x{g['calls']:<5} total {g['total_ms']:9.3f} ms  "
                         f"max {g['max_ms']:9.3f} ms  {_where(g)}")
    if optix and report.optix_calls:
        lines.append("OptiX calls and graph launches (host time inside the call):")
        for name, s in report.optix_summary().items():
            lines.append(f"  {name:<20} calls {s['calls']:<6} blocked {s['blocked']:<6} median {s['median_ms']:.3f} ms  "
                         f"max {s['max_ms']:.3f} ms")
    for category in sorted({r.category for r in report.stalls}):
        lines.append(f"  {category}: {CATEGORY_HELP[category]}")
    if report.errors:
        lines.append(f"  {len(report.errors)} callback error(s), first: {report.errors[0]}")
    return "\n".join(lines) + "\n"
