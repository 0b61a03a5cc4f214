"""The doc-claims records: ``docs/checked.py`` writes them from a JUnit report, the hook shows them, and the
committed ``docs/checked.json`` covers every feature of ``docs/features.json`` (written by the script, not by hand).

Also the claims the records replaced: no page says its GPU tests ran on a GPU they have not run on.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def hook(monkeypatch):
    """The mkdocs hook, with mkdocs' PluginError stood in when mkdocs is not installed (the docs extra)."""
    try:
        import mkdocs.exceptions  # noqa: F401
    except ImportError:
        exceptions = types.ModuleType("mkdocs.exceptions")
        exceptions.PluginError = type("PluginError", (Exception,), {})
        monkeypatch.setitem(sys.modules, "mkdocs", types.ModuleType("mkdocs"))
        monkeypatch.setitem(sys.modules, "mkdocs.exceptions", exceptions)
    return load(DOCS / "hooks" / "checked.py", "checked_hook")


def junit(path: Path, cases: list[tuple[str, str]]) -> Path:
    """A JUnit report of ``cases``: (classname, outcome) with outcome passed, failed or skipped."""
    body = {"passed": "", "failed": "<failure message='x'/>", "skipped": "<skipped message='no GPU'/>"}
    rows = "".join(f"<testcase classname='{c}' name='t{k}'>{body[o]}</testcase>" for k, (c, o) in enumerate(cases))
    path.write_text(f"<?xml version='1.0'?><testsuites><testsuite name='pytest'>{rows}</testsuite></testsuites>")
    return path


def test_the_script_counts_a_features_tests_and_keeps_what_a_skipping_run_did_not_check(tmp_path):
    script = load(DOCS / "checked.py", "checked_script")
    features = json.loads((DOCS / "features.json").read_text())["features"]
    cpu_file = features["CPU device"]["cpu"][0].removesuffix(".py").replace("/", ".")
    gpu_file = features["CPU device"]["gpu"][0].removesuffix(".py").replace("/", ".")
    report = junit(tmp_path / "a.xml", [(cpu_file, "passed"), (cpu_file, "passed"), (cpu_file, "skipped"),
                                         (gpu_file + ".TestX", "failed")])
    counts = script.outcomes(report)
    assert counts[features["CPU device"]["cpu"][0]] == {"passed": 2, "skipped": 1}
    assert counts[features["CPU device"]["gpu"][0]] == {"failed": 1}  # a class's cases count for its file
    records = {"CPU device": {"gpu": {"commit": "old", "passed": 5}}, "gone": {}}
    stamp = {"commit": "abc1234", "date": "2026-12-05", "machine": "CPU: test"}
    changed = script.update(records, features, counts, "cpu", stamp)
    assert "CPU device" in changed and "gone" not in records
    assert records["CPU device"]["cpu"] == {**stamp, "passed": 2, "failed": 0, "skipped": 1}
    assert records["CPU device"]["gpu"] == {"commit": "old", "passed": 5}  # another side: untouched
    skipping = script.outcomes(junit(tmp_path / "b.xml", [(cpu_file, "skipped")]))
    script.update(records, features, skipping, "cpu", {**stamp, "commit": "new"})
    assert records["CPU device"]["cpu"]["commit"] == "abc1234"  # a run that checked nothing changes nothing


def test_the_script_writes_the_records_file(tmp_path):
    features = json.loads((DOCS / "features.json").read_text())["features"]
    test = features["Path tracer"]["cpu"][0].removesuffix(".py").replace("/", ".")
    out = tmp_path / "checked.json"
    result = subprocess.run([sys.executable, str(DOCS / "checked.py"), "--junit",
                             str(junit(tmp_path / "r.xml", [(test, "passed")])), "--where", "cpu", "--machine", "here",
                             "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    records = json.loads(out.read_text())
    assert records["Path tracer"]["cpu"]["passed"] == 1 and records["Path tracer"]["cpu"]["machine"] == "here"
    assert set(records) == set(features)


def test_the_committed_records_cover_every_feature_and_were_written_by_the_script():
    features = json.loads((DOCS / "features.json").read_text())["features"]
    records = json.loads((DOCS / "checked.json").read_text())
    assert set(records) == set(features)
    for name, feature in features.items():
        for side in ("cpu", "gpu"):
            for test in feature[side]:
                assert (ROOT / test).is_file(), f"{name}: no test file {test}"
        for page in feature["pages"]:
            assert (DOCS / page).is_file(), f"{name}: no page {page}"
        record = records[name]["cpu"]
        assert record is not None, f"{name} has no record of a run without a GPU: run docs/checked.py"
        assert set(record) == {"commit", "date", "machine", "passed", "failed", "skipped"}
        assert record["passed"] > 0 and record["failed"] == 0, (name, record)


def test_the_hook_appends_each_pages_features(hook):
    features = {"A": {"pages": ["p.md"]}, "B": {"pages": ["p.md", "q.md"]}}
    records = {"A": {"cpu": {"machine": "CPU: x", "commit": "abc", "date": "2026-12-05", "passed": 3, "failed": 0,
                             "skipped": 2}, "gpu": None},
               "B": {"cpu": None, "gpu": {"machine": "NVIDIA H200", "commit": "def", "date": "2026-12-01",
                                           "passed": 1, "failed": 1, "skipped": 0}}}
    text = hook.section("p.md", features, records)
    assert hook.HEADING in text
    assert "| A | CPU: x, commit `abc`, 2026-12-05: 3 passed, 2 skipped | not yet |" in text
    assert "| B | not yet | NVIDIA H200, commit `def`, 2026-12-01: 1 passed, **1 failed** |" in text
    assert "| A |" not in hook.section("q.md", features, records)
    assert hook.section("other.md", features, records) == ""


def test_the_hook_renders_the_committed_records_on_the_pages(hook):
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="cpu-device.md"))
    text = hook.on_page_markdown("# Page\n", page=page)
    assert "| CPU device |" in text and "| Path tracer |" not in text
    benchmarks = hook.on_page_markdown("intro\n\n<!-- checked -->\n", page=types.SimpleNamespace(
        file=types.SimpleNamespace(src_uri="benchmarks.md")))
    assert hook.MARKER not in benchmarks and "| Path tracer |" in benchmarks and "| Denoiser |" in benchmarks


def test_no_page_claims_gpu_runs_that_the_records_do_not_show():
    """The contradictions the records replaced: views.md said its GPU tests "run on an H200" while the
    benchmarks page said not yet measured; tutorials said they "run as written"."""
    views = (DOCS / "views.md").read_text()
    assert "run on an H200" not in views
    for page in sorted((DOCS / "tutorials").glob("*.md")):
        assert "runs as written" not in " ".join(page.read_text().split()), page.name
