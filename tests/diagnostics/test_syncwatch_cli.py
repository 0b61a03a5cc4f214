"""``optixasync syncwatch``: argument handling, running the script as __main__, the report at exit (no GPU:
CUPTI is replaced by the stand-in of ``_syncwatch_fakelib``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import _syncwatch_fakelib as fakelib
import pytest

from optixasync import cli
from optixasync.cli._syncwatch import Target, TargetError, parse_target

# Private on purpose: CUPTI is swapped for the stand-in through the watch's loader, and the command line's target
# parsing (script, -m module, argv) is pure logic whose parts no public call returns.
from optixasync.diagnostics import _syncwatch as sw

REPO_ROOT = Path(__file__).resolve().parents[2]
FAKELIB = os.path.abspath(fakelib.__file__)


@pytest.fixture
def cupti(monkeypatch):
    fake = fakelib.FakeCupti()
    monkeypatch.setattr(sw, "load_cupti", lambda: fake)
    monkeypatch.setattr(sw, "_activity_registered", False)
    monkeypatch.setattr(fakelib, "CURRENT", fake, raising=False)
    yield fake
    assert fake.callback is None


def write_script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "user_script.py"
    path.write_text(textwrap.dedent(body))
    return path


def line_of(path: Path, marker: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if marker in line)


def test_parse_target_forms(tmp_path):
    script = write_script(tmp_path, "pass\n")
    assert parse_target(["--", "python", str(script), "-x", "1"]) == Target(str(script), None, [str(script), "-x", "1"])
    assert parse_target(["python3.11", str(script)]) == Target(str(script), None, [str(script)])
    assert parse_target([sys.executable, str(script)]).path == str(script)
    assert parse_target([str(script)]).argv == [str(script)]
    assert parse_target(["--", "-m", "json.tool", "--sort-keys"]) == Target(None, "json.tool", ["json.tool", "--sort-keys"])
    with pytest.raises(TargetError, match="no script given"):
        parse_target(["--", "python"])
    with pytest.raises(TargetError, match="no such file"):
        parse_target(["python", str(tmp_path / "missing.py")])
    with pytest.raises(TargetError, match="-m needs a module"):
        parse_target(["-m"])
    with pytest.raises(TargetError, match="unsupported interpreter option '-c'"):
        parse_target(["python", "-c", "print(1)"])


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["syncwatch", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--json", "--stack", "--fail-on-stall", "--skip", "script.py"):
        assert option in out


def test_top_level_help_lists_syncwatch(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "syncwatch" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["syncwatch", "--", "python", "does/not/exist.py"], "cannot run 'does/not/exist.py': no such file"),
    (["syncwatch"], "no script given"),
    (["syncwatch", "--", "python", "-c", "1"], "unsupported interpreter option"),
])
def test_bad_targets_exit_2_with_one_clean_line(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_runs_the_script_as_main_with_its_args_and_reports(cupti, tmp_path, capsys):
    script = write_script(tmp_path, """\
        import sys
        import _syncwatch_fakelib as lib
        assert __name__ == "__main__"
        print("args", sys.argv[1:])
        lib.CURRENT.cuda_call("cuStreamSynchronize", 1, ms=1.0)  # STALL
        lib.CURRENT.cuda_call("cuMemcpyHtoDAsync_v2", 2, memcpy=(2, 3))
        sys.exit(3)
    """)
    argv_before = list(sys.argv)
    json_path = tmp_path / "report.json"
    status = cli.main(["syncwatch", "--skip", FAKELIB, "--json", str(json_path), "--", "python", str(script),
                       "--frames", "5"])
    assert status == 3  # the script's own status
    assert sys.argv == argv_before
    captured = capsys.readouterr()
    assert "args ['--frames', '5']" in captured.out
    stall_line = line_of(script, "# STALL")
    assert "cuStreamSynchronize" in captured.err and f"user_script.py:{stall_line}" in captured.err
    data = json.loads(json_path.read_text())
    assert [(s["api"], s["user"]["line"]) for s in data["stalls"]] == [("cuStreamSynchronize", stall_line)]
    assert data["summary"]["async_copies_ok"] == 1


def test_script_exception_still_reports(cupti, tmp_path, capsys):
    script = write_script(tmp_path, """\
        import _syncwatch_fakelib as lib
        lib.CURRENT.cuda_call("cuMemcpyDtoH_v2", 1)
        raise ValueError("boom")
    """)
    assert cli.main(["syncwatch", "--skip", FAKELIB, str(script)]) == 1
    err = capsys.readouterr().err
    assert "ValueError: boom" in err and "cuMemcpyDtoH_v2" in err


def test_fail_on_stall(cupti, tmp_path, capsys):
    clean = write_script(tmp_path, "import _syncwatch_fakelib as lib\nlib.CURRENT.cuda_call('cuLaunchKernel', 1)\n")
    assert cli.main(["syncwatch", "--fail-on-stall", "--", str(clean)]) == 0
    assert "no host stalls" in capsys.readouterr().err
    dirty = tmp_path / "dirty.py"
    dirty.write_text("import _syncwatch_fakelib as lib\nlib.CURRENT.cuda_call('cuStreamSynchronize', 1)\n")
    assert cli.main(["syncwatch", "--fail-on-stall", "--", str(dirty)]) == 1
    assert cli.main(["syncwatch", "--", str(dirty)]) == 0


def test_module_target(cupti, tmp_path, monkeypatch, capsys):
    (tmp_path / "watched_mod.py").write_text("import _syncwatch_fakelib as lib\nlib.CURRENT.cuda_call('cuStreamSynchronize', 1)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli.main(["syncwatch", "--skip", FAKELIB, "--", "-m", "watched_mod"]) == 0
    assert "watched_mod.py:2" in capsys.readouterr().err


def test_without_cupti_python_exit_1_naming_the_extra(tmp_path):
    script = write_script(tmp_path, "print('never runs')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO_ROOT)])
    (tmp_path / "cupti").mkdir()
    (tmp_path / "cupti" / "__init__.py").write_text("raise ImportError('cupti-python is not installed here')\n")
    result = subprocess.run([sys.executable, "-m", "optixasync", "syncwatch", "--", "python", str(script)],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr  # as doctor, render and view for a missing extra
    assert "never runs" not in result.stdout
    assert "cupti-python" in result.stderr and "optixasync[diagnostics]" in result.stderr
    assert "Traceback" not in result.stderr


def test_importing_the_cli_and_diagnostics_loads_nothing_heavy():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("OPTIXASYNC_NVTX", None)
    code = ("import sys; from optixasync import cli; import optixasync.diagnostics; "
            "print(sorted(m for m in ('cupy', 'cupti', 'nvtx', 'rich') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
