"""``optixasync dataset`` refuses what it cannot do before any work: a count or spp beyond its bounds (a to-do list
of 10^12 samples was being built, one file check each), an ``--out`` that is a file (checked after the GPU set-up
before). On this machine without a GPU, exit status 2 (bad input) rather than 1 (the machine cannot) shows the
refusal came first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from optixasync.render import DatasetOptions

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("field, value, match", [("count", 10**12, r"dataset count must be in \[1, 10000000\]"),
                                                 ("spp", 10**12, r"dataset spp must be in \[1, 4294967295\]")])
def test_counts_beyond_the_bounds_are_refused(field, value, match):
    with pytest.raises(ValueError, match=match):
        DatasetOptions(**{field: value})


@pytest.mark.parametrize("extra, message", [(["--count", str(10**12)], "dataset count must be in"),
                                            (["--spp", str(10**12)], "dataset spp must be in"),
                                            ([], "is a file")])
def test_the_command_refuses_before_the_gpu(tmp_path, extra, message):
    target = tmp_path / "taken"
    target.write_text("a file")
    out = str(target) if not extra else str(tmp_path / "new")
    done = subprocess.run([sys.executable, "-m", "optixasync", "dataset", "--out", out, "--quiet", *extra],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and message in done.stderr, (done.returncode, done.stderr[-500:])
    assert not (tmp_path / "new").exists()
