"""``python -m optixasync doctor``: one clear line and status 1 without a driver, a full report with one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# The driver probe (optixasync._driver) has no public door; doctor reads it, and the in-process test below
# makes it report a machine without a driver.
from optixasync import __version__, _driver, cli

REPO_ROOT = Path(__file__).resolve().parents[1]


def run_doctor(timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "optixasync", "doctor"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


VERSION_LINE = f"optixasync          : {__version__}"


@pytest.mark.skipif(_driver.load_cuda_library() is not None, reason="the NVIDIA driver is installed here (libcuda.so.1 loads)")
def test_doctor_without_a_driver():
    result = run_doctor(timeout=120)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    # doctor always names its version first; the problem itself is one line.
    assert len(lines) == 2, result.stdout
    assert lines[0] == VERSION_LINE
    assert lines[1].startswith("optixasync doctor:")
    assert "driver" in lines[1]
    assert lines[1] == f"optixasync doctor: {_driver.no_driver_message()}"


def test_doctor_reports_a_missing_driver_in_process(monkeypatch):
    monkeypatch.setattr(_driver, "load_cuda_library", lambda: None)
    lines: list[str] = []
    assert cli.doctor(out=lines.append) == 1
    assert lines == [VERSION_LINE, f"optixasync doctor: {_driver.no_driver_message()}"]


def test_main_without_a_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main([])
    assert info.value.code == 2
    assert "usage" in capsys.readouterr().err


def test_main_help_lists_doctor(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    assert "doctor" in capsys.readouterr().out


@pytest.mark.gpu
def test_doctor_on_a_gpu():
    result = run_doctor(timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output
    for expected in ("OptiX ABIs accepted", "87 (OptiX 8.0)", "NVRTC", "test pipeline", "pixels hit"):
        assert expected in result.stdout, f"{expected!r} missing from:\n{output}"
    pipeline_line = next(line for line in result.stdout.splitlines() if line.startswith("test pipeline"))
    assert "FAILED" not in pipeline_line
