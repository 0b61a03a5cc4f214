"""MkDocs hook: where each feature a page describes was last checked, from the records of the test runs.

``docs/features.json`` names each feature's pages and tests; ``docs/checked.json`` holds, per feature, the last
run that checked it without a GPU (``cpu``: the host build of the kernel, NVRTC, logic) and on a GPU
(``gpu``): commit, date, machine and the test counts, written by ``docs/checked.py`` from a pytest JUnit report,
never by hand. This hook appends a section "Where this was last checked" to every page a feature names, one
row per feature, and replaces the marker ``<!-- checked -->`` (the benchmarks page) with the table of all of
them. The build fails (``PluginError``) when a feature names a page that does not exist or has no record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

MARKER = "<!-- checked -->"
DOCS = Path(__file__).resolve().parents[1]
HEADING = "## Where this was last checked"


def _load() -> tuple[dict[str, Any], dict[str, Any]]:
    features = json.loads((DOCS / "features.json").read_text())["features"]
    records = json.loads((DOCS / "checked.json").read_text())
    for name, feature in features.items():
        if name not in records:
            raise PluginError(f"docs/checked.json has no record of the feature {name!r}: run docs/checked.py")
        for page in feature["pages"]:
            if not (DOCS / page).is_file():
                raise PluginError(f"docs/features.json: the feature {name!r} names a missing page {page!r}")
    return features, records


def cell(record: dict[str, Any] | None) -> str:
    """One side's record as a table cell: machine, commit, date and counts, or "not yet"."""
    if not record:
        return "not yet"
    counts = f"{record['passed']} passed"
    if record.get("failed"):
        counts += f", **{record['failed']} failed**"
    if record.get("skipped"):
        counts += f", {record['skipped']} skipped"
    return f"{record['machine']}, commit `{record['commit']}`, {record['date']}: {counts}"


def table(names: list[str], records: dict[str, Any]) -> str:
    rows = ["| Feature | Without a GPU (host build, NVRTC, logic) | On a GPU |", "|---|---|---|"]
    rows += [f"| {name} | {cell(records[name].get('cpu'))} | {cell(records[name].get('gpu'))} |" for name in names]
    return "\n".join(rows)


def section(page: str, features: dict[str, Any], records: dict[str, Any]) -> str:
    """The section a page gets: its features' rows (empty for a page no feature names)."""
    names = [name for name, feature in features.items() if page in feature["pages"]]
    if not names:
        return ""
    return (f"\n\n{HEADING}\n\nFrom the records of the test runs (`docs/checked.json`, written by "
            f"`docs/checked.py` from pytest's report; not by hand): the last run of each feature's tests on each "
            f"side, with its machine and commit. \"not yet\": its tests have not run there.\n\n"
            f"{table(names, records)}\n")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    features, records = _load()
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, table(list(features), records))
    return markdown + section(page.file.src_uri, features, records)
