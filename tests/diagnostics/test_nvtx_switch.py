"""The NVTX switch: off by default and free (no nvtx import, one shared no-op), on through the env or a call.

What the ranges emit is observed through a stand-in ``nvtx`` module put first on the path of a fresh interpreter,
which records the domain's calls: the switch is then exercised only through its public functions
(``optixasync.cuda.nvtx_range``, ``optixasync.diagnostics.enable_nvtx`` and friends) and the environment variable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from optixasync.cuda import nvtx_range
from optixasync.diagnostics import MissingExtraError, disable_nvtx, enable_nvtx, nvtx_enabled

REPO_ROOT = Path(__file__).resolve().parents[2]
NVTX_ENV = "OPTIXASYNC_NVTX"

# ARGB colours of the phases (optixasync.cuda's phase table), so the timeline reads at a glance.
LAUNCH_COLOR = 0xFF4CAF50
READBACK_COLOR = 0xFF9C27B0

FAKE_NVTX = '''
"""A stand-in for the nvtx package: one recording domain per name."""

DOMAINS = {}


class Domain:
    def __init__(self, name):
        self.name = name
        self.events = []
        self.registered = []

    def get_event_attributes(self, message, color):
        self.registered.append((message, color))
        return ["attrs", message]

    def push_range(self, attributes):
        self.events.append(["push", attributes])

    def pop_range(self):
        self.events.append(["pop", None])


def get_domain(name):
    return DOMAINS.setdefault(name, Domain(name))
'''


@pytest.fixture
def restore_nvtx():
    """Leave the switch as the test found it."""
    was_on = nvtx_enabled()
    yield
    enable_nvtx(was_on)


@pytest.fixture
def fake_nvtx(tmp_path) -> Path:
    directory = tmp_path / "fake_nvtx"
    directory.mkdir()
    (directory / "nvtx.py").write_text(FAKE_NVTX)
    return directory


def run_python(code: str, env_extra: dict[str, str], *args: str, path: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(NVTX_ENV, None)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(path) if path else "", str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
    )
    command = [sys.executable, *args] if args else [sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def run_with_fake_nvtx(fake_nvtx: Path, body: str, env_extra: dict[str, str] | None = None) -> dict:
    """Run ``body`` in a fresh interpreter with the stand-in nvtx; it leaves what to report in ``out``."""
    code = "import json, nvtx\nout = {}\n" + textwrap.dedent(body) + (
        "\nd = nvtx.DOMAINS.get('optixasync')\n"
        "out['domains'] = sorted(nvtx.DOMAINS)\n"
        "out['events'] = d.events if d else []\n"
        "out['registered'] = d.registered if d else []\n"
        "print(json.dumps(out))\n"
    )
    result = run_python(code, env_extra or {}, path=fake_nvtx)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_off_by_default_and_a_shared_noop(restore_nvtx):
    disable_nvtx()
    assert not nvtx_enabled()
    first, second = nvtx_range("optixasync.launch"), nvtx_range("optixasync.upload")
    assert first is second  # one shared no-op, whatever the name
    with first as entered:
        assert entered is None


def test_import_does_not_load_nvtx():
    result = run_python("import sys, optixasync, optixasync.diagnostics; print('nvtx' in sys.modules)", {})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_off_by_default_in_a_fresh_interpreter(fake_nvtx):
    out = run_with_fake_nvtx(fake_nvtx, """
        import sys
        from optixasync.cuda import nvtx_enabled, nvtx_range
        out['enabled'] = nvtx_enabled()
        with nvtx_range('optixasync.launch'):
            pass
        out['shared'] = nvtx_range('optixasync.launch') is nvtx_range('optixasync.upload')
        out['imported'] = 'optixasync.cuda' in sys.modules
    """)
    assert out["enabled"] is False and out["shared"] is True and out["imported"] is True
    assert out["domains"] == [] and out["events"] == []  # off: nothing registered, nothing pushed


def test_enable_pushes_and_pops_named_ranges(fake_nvtx):
    out = run_with_fake_nvtx(fake_nvtx, """
        from optixasync.cuda import nvtx_range
        from optixasync.diagnostics import disable_nvtx, enable_nvtx, nvtx_enabled
        enable_nvtx()
        out['enabled'] = nvtx_enabled()
        for _ in range(3):
            with nvtx_range('optixasync.launch'):
                pass
        with nvtx_range('optixasync.readback'):
            pass
        disable_nvtx()
        out['enabled_after'] = nvtx_enabled()
        out['shared_after'] = nvtx_range('optixasync.launch') is nvtx_range('optixasync.upload')
    """)
    assert out["enabled"] is True
    assert out["domains"] == ["optixasync"]
    assert out["events"] == [["push", ["attrs", "optixasync.launch"]], ["pop", None]] * 3 + [
        ["push", ["attrs", "optixasync.readback"]], ["pop", None]]
    # attributes are registered once per name, with the phase's colour
    assert out["registered"] == [["optixasync.launch", LAUNCH_COLOR], ["optixasync.readback", READBACK_COLOR]]
    # switched off: back to the shared no-op
    assert out["enabled_after"] is False and out["shared_after"] is True


def test_a_range_pops_when_the_body_raises(fake_nvtx):
    out = run_with_fake_nvtx(fake_nvtx, """
        from optixasync.cuda import nvtx_range
        from optixasync.diagnostics import enable_nvtx
        enable_nvtx()
        try:
            with nvtx_range('optixasync.submit'):
                raise KeyError('x')
        except KeyError:
            out['raised'] = True
    """)
    assert out["raised"] is True
    assert [e[0] for e in out["events"]] == ["push", "pop"]


def test_enable_without_the_package_names_it(restore_nvtx, monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)  # "import nvtx" raises ImportError
    disable_nvtx()
    with pytest.raises(MissingExtraError, match=r"pip install 'optixasync\[diagnostics\]'") as info:
        enable_nvtx()
    assert info.value.package == "nvtx"
    assert not nvtx_enabled()


def test_missing_extra_error_pickles():
    import pickle

    error = pickle.loads(pickle.dumps(MissingExtraError("feature X", "some-package", "extra")))
    assert error.package == "some-package" and error.extra == "extra" and "feature X" in str(error)


def test_environment_variable_switches_it_on():
    pytest.importorskip("nvtx")
    code = ("from optixasync.cuda import nvtx_enabled, nvtx_range; "
            "print(nvtx_enabled(), nvtx_range('optixasync.launch') is nvtx_range('optixasync.upload'))")
    on = run_python(code, {NVTX_ENV: "1"})
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == ["True", "False"]
    off = run_python(code, {NVTX_ENV: "0"})
    assert off.stdout.split() == ["False", "True"]


def test_environment_variable_without_the_package_warns(tmp_path):
    (tmp_path / "nvtx.py").write_text("raise ImportError('no nvtx here')\n")  # shadows any installed nvtx
    env = {NVTX_ENV: "1", "PYTHONPATH": str(tmp_path)}
    result = run_python("import optixasync; from optixasync.cuda import nvtx_enabled; print(nvtx_enabled())", env)
    assert result.returncode == 0, result.stderr  # the import succeeds
    assert result.stdout.split() == ["False"]  # and the ranges stay off
    assert "Traceback" not in result.stderr
    assert "RuntimeWarning" in result.stderr
    assert NVTX_ENV in result.stderr and "pip install" in result.stderr and "'nvtx'" in result.stderr
    cli = run_python("", env, "-m", "optixasync", "--help")
    assert cli.returncode == 0, cli.stderr
    assert "usage" in cli.stdout
    assert "Traceback" not in cli.stderr
    assert "pip install" in cli.stderr and "'nvtx'" in cli.stderr


@pytest.mark.parametrize(("value", "on"), [("yes", True), (" TRUE ", True), ("0", False), (None, False)])
def test_env_parsing(fake_nvtx, value, on):
    env = {} if value is None else {NVTX_ENV: value}
    out = run_with_fake_nvtx(fake_nvtx, """
        from optixasync.cuda import nvtx_enabled
        out['enabled'] = nvtx_enabled()
    """, env)
    assert out["enabled"] is on
