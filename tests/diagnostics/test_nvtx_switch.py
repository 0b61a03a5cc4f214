"""The NVTX switch: off by default and free (no nvtx import, one shared no-op), on through the env or a call."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from optixasync.cuda import _nvtx
from optixasync.diagnostics import MissingExtraError, disable_nvtx, enable_nvtx, nvtx_enabled

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def restore_nvtx():
    saved = (_nvtx.annotate, _nvtx._domain, dict(_nvtx._ranges))
    yield
    _nvtx.annotate, _nvtx._domain = saved[0], saved[1]
    _nvtx._ranges.clear()
    _nvtx._ranges.update(saved[2])


class FakeDomain:
    def __init__(self):
        self.events: list[tuple[str, object]] = []
        self.registered: list[tuple[str, int]] = []

    def get_event_attributes(self, message, color):
        self.registered.append((message, color))
        return ("attrs", message)

    def push_range(self, attributes):
        self.events.append(("push", attributes))

    def pop_range(self):
        self.events.append(("pop", None))


def run_python(code: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(_nvtx.NVTX_ENV, None)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_off_by_default_and_a_shared_noop(restore_nvtx):
    disable_nvtx()
    assert not nvtx_enabled()
    first, second = _nvtx.annotate("optixasync.launch"), _nvtx.annotate("optixasync.upload")
    assert first is second is _nvtx._NO_RANGE
    with first:
        pass


def test_import_does_not_load_nvtx():
    result = run_python("import sys, optixasync, optixasync.diagnostics; print('nvtx' in sys.modules)", {})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_enable_pushes_and_pops_named_ranges(restore_nvtx, monkeypatch):
    domain = FakeDomain()
    monkeypatch.setattr(_nvtx, "_domain", domain)
    _nvtx._ranges.clear()
    enable_nvtx()
    assert nvtx_enabled()
    for _ in range(3):
        with _nvtx.annotate("optixasync.launch"):
            pass
    with _nvtx.nvtx_range("optixasync.readback"):
        pass
    assert domain.events == [("push", ("attrs", "optixasync.launch")), ("pop", None)] * 3 + [
        ("push", ("attrs", "optixasync.readback")), ("pop", None)]
    # attributes are registered once per name, with the phase's colour
    assert domain.registered == [("optixasync.launch", _nvtx.RANGE_COLORS["optixasync.launch"]),
                                 ("optixasync.readback", _nvtx.RANGE_COLORS["optixasync.readback"])]
    disable_nvtx()
    assert _nvtx.annotate("optixasync.launch") is _nvtx._NO_RANGE


def test_a_range_pops_when_the_body_raises(restore_nvtx, monkeypatch):
    domain = FakeDomain()
    monkeypatch.setattr(_nvtx, "_domain", domain)
    _nvtx._ranges.clear()
    enable_nvtx()
    with pytest.raises(KeyError):
        with _nvtx.annotate("optixasync.submit"):
            raise KeyError("x")
    assert [e[0] for e in domain.events] == ["push", "pop"]


def test_enable_without_the_package_names_it(restore_nvtx, monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)
    monkeypatch.setattr(_nvtx, "_domain", None)
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
    code = "from optixasync.cuda import _nvtx; print(_nvtx.nvtx_enabled(), _nvtx.annotate('optixasync.launch') is _nvtx._NO_RANGE)"
    on = run_python(code, {_nvtx.NVTX_ENV: "1"})
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == ["True", "False"]
    off = run_python(code, {_nvtx.NVTX_ENV: "0"})
    assert off.stdout.split() == ["False", "True"]


def test_environment_variable_without_the_package_fails_clearly(tmp_path):
    (tmp_path / "nvtx.py").write_text("raise ImportError('no nvtx here')\n")  # shadows any installed nvtx
    env = {_nvtx.NVTX_ENV: "1", "PYTHONPATH": str(tmp_path)}
    result = run_python("import optixasync", env)
    assert result.returncode != 0
    assert "MissingExtraError" in result.stderr and "pip install" in result.stderr and "'nvtx'" in result.stderr


def test_env_parsing():
    assert _nvtx._env_requests_nvtx({"OPTIXASYNC_NVTX": "yes"})
    assert _nvtx._env_requests_nvtx({"OPTIXASYNC_NVTX": " TRUE "})
    assert not _nvtx._env_requests_nvtx({"OPTIXASYNC_NVTX": "0"})
    assert not _nvtx._env_requests_nvtx({})
