"""Every shell command of the install and getting-started pages, run where it needs no GPU, else checked.

The commands are the lines of the pages' ``bash`` blocks, split at ``&&``, comments dropped. Each one meets
the first rule that matches it; a command no rule knows fails the test (add a rule). What each rule does:

* run here: ``optixasync doctor`` (its exit status and, without a driver, its output), ``optixasync view
  --cpu`` (on a free port: it serves the page and stops on SIGTERM), ``python -m venv`` and activating it,
  ``mkdir``;
* run elsewhere: ``python -m build`` (``tests/test_packaging.py`` builds the wheel and checks that its name is
  the one the install page gives), ``python -m pytest`` (this run);
* checked, not run (they need the network, a GPU or Docker): ``git clone`` names the project's repository and
  ``cd`` its folder; ``pip install`` names extras that exist and the wheel of this version; an ``optixasync
  render`` command is accepted by the command line's parser; ``docker run`` is left to the container docs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shlex
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from optixasync import _driver

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / "install.md", ROOT / "docs" / "getting-started.md"]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = importlib.import_module("optixasync._version").__version__


def page_commands(path: Path) -> list[tuple[int, list[str]]]:
    """``(line, tokens)`` of every command of the page's bash blocks."""
    found = []
    lines = path.read_text(encoding="utf-8").splitlines()
    inside = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            inside = stripped == "```bash" if not inside else False
            continue
        if inside and stripped:
            for part in stripped.split("&&"):
                tokens = shlex.split(part, comments=True)
                if tokens:
                    found.append((number, tokens))
    return found


COMMANDS = [(path, line, tokens) for path in PAGES for line, tokens in page_commands(path)]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


# -- the rules ---------------------------------------------------------------------------------------------------

def check_git_clone(tokens: list[str], tmp_path: Path) -> None:
    assert tokens[:2] == ["git", "clone"] and tokens[2] == PYPROJECT["project"]["urls"]["Source"], tokens


def check_cd(tokens: list[str], tmp_path: Path) -> None:
    assert tokens[1] == PYPROJECT["project"]["urls"]["Source"].rstrip("/").rsplit("/", 1)[1], tokens


def check_pip_install(tokens: list[str], tmp_path: Path) -> None:
    known = set(PYPROJECT["project"]["optional-dependencies"])
    for target in tokens[2:]:
        if target == "-e":
            continue
        match = re.fullmatch(r"(?P<where>[^\[]+)(\[(?P<extras>[^\]]+)\])?", target)
        assert match, target
        extras = set((match["extras"] or "").split(",")) - {""}
        assert extras <= known, f"{target}: no such extra {sorted(extras - known)}"
        where = match["where"]
        if where.startswith("dist/"):
            assert where == f"dist/optixasync-{VERSION}-py3-none-any.whl", where
        elif where not in (".", "build"):
            raise AssertionError(f"pip install of {where!r}: add a rule")
        if where == "build":
            assert any(r.startswith("build") for r in PYPROJECT["project"]["optional-dependencies"]["test"])


def run_venv(tokens: list[str], tmp_path: Path) -> None:
    assert tokens == ["python", "-m", "venv", ".venv"], tokens
    script = (f"{shlex.quote(sys.executable)} -m venv .venv && . .venv/bin/activate && "
              "python -c 'import sys; print(sys.prefix)'")
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == (tmp_path / ".venv").resolve()


def check_activate(tokens: list[str], tmp_path: Path) -> None:
    assert tokens == [".", ".venv/bin/activate"], tokens  # run with the venv command, which makes .venv


def run_mkdir(tokens: list[str], tmp_path: Path) -> None:
    assert subprocess.run(tokens, cwd=tmp_path, timeout=30).returncode == 0
    assert (tmp_path / tokens[-1]).is_dir()


def run_doctor(tokens: list[str], tmp_path: Path) -> None:
    assert tokens == ["optixasync", "doctor"], tokens
    done = subprocess.run([sys.executable, "-m", "optixasync", "doctor"], capture_output=True, text=True,
                          timeout=300, env=env(), cwd=tmp_path)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    if _driver.load_cuda_library() is None:
        assert done.returncode == 1 and "without a GPU" in done.stdout and "no NVIDIA driver" in done.stderr
    else:
        assert done.returncode in (0, 1), done.stderr


def check_render(tokens: list[str], tmp_path: Path) -> None:
    """Needs a GPU: here the command line's parser must accept it as written."""
    from optixasync.cli import SUBCOMMAND_MODULES

    parser = argparse.ArgumentParser(prog="optixasync", exit_on_error=False)
    sub = parser.add_subparsers(dest="command", required=True)
    importlib.import_module(SUBCOMMAND_MODULES["render"]).add_parser(sub)
    try:
        args = parser.parse_args(tokens[1:])
    except SystemExit as exc:
        raise AssertionError(f"optixasync does not accept {shlex.join(tokens)}") from exc
    assert args.command == "render"


def run_view_cpu(tokens: list[str], tmp_path: Path) -> None:
    """Serves the page (on a free port rather than 8765: tests may run side by side) and stops on SIGTERM."""
    pytest.importorskip("aiohttp", reason="optixasync view needs aiohttp (pip install 'optixasync[viewer]')")
    assert tokens == ["optixasync", "view", "--cpu"], tokens
    process = subprocess.Popen([sys.executable, "-m", "optixasync", "view", "--cpu", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=tmp_path)
    try:
        line = process.stdout.readline()
        assert "serving on http://127.0.0.1:" in line, line + process.stderr.read()
        url = line.split("serving on ")[1].split()[0]
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def check_pytest(tokens: list[str], tmp_path: Path) -> None:
    """This run is the suite; a marker expression names markers the project registers."""
    assert tokens[:3] == ["python", "-m", "pytest"], tokens
    registered = {m.split(":")[0] for m in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}
    if "-m" in tokens[3:]:
        names = set(re.findall(r"[A-Za-z_]+", tokens[tokens.index("-m", 3) + 1])) - {"not", "and", "or"}
        assert names <= registered, names


def check_build(tokens: list[str], tmp_path: Path) -> None:
    assert tokens == ["python", "-m", "build"], tokens  # tests/test_packaging.py builds and checks the wheel


def check_docker(tokens: list[str], tmp_path: Path) -> None:
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics" in tokens and "--gpus" in tokens, tokens


RULES = [
    (("git", "clone"), check_git_clone), (("cd",), check_cd), (("pip", "install"), check_pip_install),
    (("python", "-m", "venv"), run_venv), ((".",), check_activate), (("mkdir",), run_mkdir),
    (("optixasync", "doctor"), run_doctor), (("optixasync", "render"), check_render),
    (("optixasync", "view", "--cpu"), run_view_cpu), (("python", "-m", "pytest"), check_pytest),
    (("python", "-m", "build"), check_build), (("docker", "run"), check_docker),
]


def test_the_pages_have_commands():
    assert {path for path, _, _ in COMMANDS} == set(PAGES)
    assert any(tokens[:2] == ["optixasync", "doctor"] for _, _, tokens in COMMANDS)


@pytest.mark.parametrize("path, line, tokens", COMMANDS,
                         ids=[f"{p.name}:{n}:{' '.join(t)[:40]}" for p, n, t in COMMANDS])
def test_command(path, line, tokens, tmp_path):
    for prefix, rule in RULES:
        if tuple(tokens[:len(prefix)]) == prefix:
            rule(tokens, tmp_path)
            return
    raise AssertionError(f"{path.name}:{line}: no rule for {shlex.join(tokens)}: add one to {__file__}")
