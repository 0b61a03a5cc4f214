"""``benchmarks/gpu_checks.sh``: its help, its refusals before anything runs, and an exit status that says."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_checks.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                                reason="needs bash and coreutils' timeout")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=120, env=env)


def test_help_prints_the_usage_and_exits_0():
    for flag in ("--help", "-h"):
        result = run(flag)
        assert result.returncode == 0 and result.stderr == ""
        assert "PART is one of" in result.stdout and "Exit status" in result.stdout
        assert "mkdir" not in result.stdout and "#" not in result.stdout


@pytest.mark.parametrize("args, message", [((), "OUTDIR and at least one PART"), (("{out}",), "no PART after"),
                                           (("{out}", "doctor", "bogus"), "unknown part 'bogus'")])
def test_bad_arguments_exit_2_before_anything_runs(tmp_path, args, message):
    out = tmp_path / "out"
    result = run(*(a.format(out=out) for a in args))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not out.exists()  # nothing created, nothing run


@pytest.mark.parametrize("status, expected", [(0, 0), (3, 1)])
def test_the_exit_status_says_whether_a_part_failed(tmp_path, status, expected):
    """The doctor part through a stand-in ``python`` that exits with ``status``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f"#!/bin/sh\necho stand-in\nexit {status}\n")
    (bin_dir / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = run(str(tmp_path / "out"), "doctor", env=env)
    assert result.returncode == expected, result.stdout + result.stderr
    assert f"== doctor: exit {status}" in result.stdout and "tail:" not in result.stderr
