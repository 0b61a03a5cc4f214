"""Write the doc-claims records: where each feature of ``docs/features.json`` was last checked, from a test run.

    python -m pytest -q -p no:cacheprovider --junitxml=report.xml
    python docs/checked.py --junit report.xml --where cpu            # this machine, no GPU: the host build
    python docs/checked.py --junit report.xml --where gpu            # on a GPU machine: names the GPU

Each feature lists the tests that check it without a GPU (``cpu``: the host build of the kernel, NVRTC
compiles, logic) and on one (``gpu``). For the side ``--where`` names, the feature's test cases in the JUnit
report are counted (passed, failed, skipped, by file); when any ran (passed or failed), the feature's record
of that side becomes this run's: its counts, the commit (``git rev-parse --short HEAD``, ``+`` when the tree
has changes), the date and the machine (the CPU's model, or the GPU's name from the driver). A run where all
of them were skipped leaves the older record: it checked nothing. The records go to ``--out`` (default
``docs/checked.json``, which the mkdocs hook ``docs/hooks/checked.py`` shows on the feature's pages).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FEATURES = ROOT / "docs" / "features.json"
RECORDS = ROOT / "docs" / "checked.json"


def case_file(case: ElementTree.Element) -> str:
    """The test file of a JUnit test case: ``tests.render.test_x[.Class]`` -> ``tests/render/test_x.py``."""
    parts = (case.get("classname") or "").split(".")
    for n in range(len(parts), 0, -1):
        path = "/".join(parts[:n]) + ".py"
        if (ROOT / path).is_file():
            return path
    return "/".join(parts) + ".py"


def outcomes(junit: Path) -> dict[str, Counter]:
    """Counts of ``passed``, ``failed`` and ``skipped`` test cases per test file of a JUnit report."""
    counts: dict[str, Counter] = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
        counts.setdefault(case_file(case), Counter())[outcome] += 1
    return counts


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")


def machine(where: str) -> str:
    if where == "gpu":
        sys.path.insert(0, str(ROOT))
        from optixasync._driver import devices

        found = devices()
        return found[0].name if found else "GPU (unnamed)"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"CPU: {line.split(':', 1)[1].strip()}"
    except OSError:
        pass
    return f"CPU: {platform.processor() or platform.machine()}"


def update(records: dict, features: dict, counts: dict[str, Counter], where: str, stamp: dict) -> list[str]:
    """Update ``records`` in place from ``counts``; the features whose record of ``where`` changed."""
    changed = []
    for name, feature in features.items():
        total: Counter = Counter()
        for test in feature[where]:
            total += counts.get(test, Counter())
        entry = records.setdefault(name, {})
        for side in ("cpu", "gpu"):
            entry.setdefault(side, None)  # None: never checked there
        if total["passed"] + total["failed"] == 0:
            continue  # this run checked nothing of it: keep what was
        entry[where] = {**stamp, "passed": total["passed"], "failed": total["failed"], "skipped": total["skipped"]}
        changed.append(name)
    for stale in set(records) - set(features):
        del records[stale]
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", required=True, type=Path, help="pytest's --junitxml report")
    parser.add_argument("--where", required=True, choices=("cpu", "gpu"), help="which side the run checked")
    parser.add_argument("--machine", default=None, help="what ran it (default: the CPU's model or the GPU's name)")
    parser.add_argument("--out", type=Path, default=RECORDS, help="the records (default docs/checked.json)")
    args = parser.parse_args(argv)
    features = json.loads(FEATURES.read_text())["features"]
    source = args.out if args.out.is_file() else RECORDS
    records = json.loads(source.read_text()) if source.is_file() else {}
    stamp = {"commit": commit(), "date": datetime.date.today().isoformat(),
             "machine": args.machine or machine(args.where)}
    changed = update(records, features, outcomes(args.junit), args.where, stamp)
    args.out.write_text(json.dumps(dict(sorted(records.items())), indent=1) + "\n")
    print(f"{args.out}: {args.where} records of {len(changed)} of {len(features)} features from {args.junit} "
          f"({stamp['machine']}, commit {stamp['commit']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
