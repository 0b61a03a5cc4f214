"""Every example and benchmark, and the CLI, on a machine that cannot run them: one line, the CLI's exit status.

The scripts run as subprocesses, as a user runs them, with CuPy made unimportable
(a script that imported it before asking the driver would fail with an import error
instead of the one line). Each must print exactly one line on stderr,
``<script>: <reason>``, where the reason is the driver probe's own text
(``optixasync._driver.unavailable_reason()``, what ``optixasync doctor`` prints for
the same condition), nothing on stdout, no traceback, and exit with status 1
(``optixasync.cli.EXIT_UNAVAILABLE``). The helpers behind that
(``optixasync.testing.run_main``, ``child_output``) are tested in-process below.

The subprocess tests need a machine where optixasync cannot run (the usual
CPU-only CI machine); where it can, the scripts would run their measurements,
and they skip.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# The driver probe has no public door; the scripts, the CLI and the suite's GPU skip all ask it.
from optixasync import _driver, cli
from optixasync.errors import CudaError, DriverNotFoundError, MissingExtraError
from optixasync.testing import _entry, child_output, require_gpu, run_main

REPO_ROOT = Path(__file__).resolve().parents[1]
REASON = _driver.unavailable_reason()
NO_DRIVER = _driver.load_cuda_library() is None

#: The subprocess tests need a machine that cannot run optixasync; the in-process ones run anywhere.
cannot_run_here = pytest.mark.skipif(REASON is None, reason="optixasync can run on a GPU here: the scripts would measure")

#: The scripts, each run without arguments; path_tracer.py goes through ``optixasync render`` (its own prefix).
SCRIPTS = [
    "examples/hello_triangle.py",
    "examples/validation_demo.py",
    "examples/path_tracer.py",
    "benchmarks/bench_accel.py",
    "benchmarks/bench_compile.py",
    "benchmarks/bench_pathtracer.py",
    "benchmarks/bench_pipeline.py",
    "benchmarks/bench_primitives.py",
    "benchmarks/bench_startup.py",
    "benchmarks/bench_longrun.py",
    "benchmarks/bench_views.py",
    "benchmarks/bench_commits.py",
]
#: The CLI commands, run as ``python -m optixasync ...``.
COMMANDS = {
    "doctor": ["doctor"],
    "render": ["render"],
    "render-bad-width": ["render", "--width", "0"],
    "syncwatch-python-c": ["syncwatch", "--", "python", "-c", "pass"],
    "syncwatch-script": ["syncwatch", "--", "python", "examples/hello_triangle.py"],
}
TIMEOUT_S = 120  # each command takes about half a second; the bound only stops a hang


def _env(blocked: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(blocked), str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTHONDEVMODE", None)  # -X dev would show tracebacks on purpose
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Every script and command, run at once (each is a fresh interpreter of about half a second)."""
    blocked = tmp_path_factory.mktemp("blocked")
    (blocked / "cupy").mkdir()
    (blocked / "cupy" / "__init__.py").write_text(
        'raise ImportError("cupy is blocked: this script must ask the driver before importing it")\n')
    env = _env(blocked)
    jobs = {script: [sys.executable, script] for script in SCRIPTS}
    jobs.update({name: [sys.executable, "-m", "optixasync", *args] for name, args in COMMANDS.items()})

    def run(command: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        futures = {name: pool.submit(run, command) for name, command in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def one_line(result: subprocess.CompletedProcess) -> str:
    """The only line on stderr, after checking there is no traceback and nothing on stdout."""
    output = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stdout + result.stderr, output
    assert result.stdout == "", output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, output
    return lines[0]


# -- the scripts ------------------------------------------------------------------------------------------------------


@cannot_run_here
@pytest.mark.parametrize("script", [s for s in SCRIPTS if not s.endswith("path_tracer.py")])
def test_script_without_a_gpu_prints_the_reason_in_one_line(runs, script):
    result = runs[script]
    line = one_line(result)
    assert result.returncode == cli.EXIT_UNAVAILABLE, line
    assert line == f"{Path(script).name}: error: {REASON}"
    if NO_DRIVER:
        assert "no NVIDIA driver" in line and _driver.CUDA_LIBRARY in line


@cannot_run_here
def test_path_tracer_example_answers_as_optixasync_render(runs):
    """examples/path_tracer.py is ``optixasync render`` (same code): the same line and status."""
    result = runs["examples/path_tracer.py"]
    line = one_line(result)
    assert result.returncode == cli.EXIT_UNAVAILABLE, line
    assert line == one_line(runs["render"])
    assert line.startswith("optixasync render: error: ")
    if NO_DRIVER:
        assert line == f"optixasync render: error: {REASON}"


# -- the CLI ----------------------------------------------------------------------------------------------------------


@cannot_run_here
def test_doctor_gives_the_same_reason(runs):
    result = runs["doctor"]
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert result.returncode == cli.EXIT_UNAVAILABLE, result.stdout + result.stderr
    if NO_DRIVER or REASON.startswith("no CUDA device"):  # doctor's own lines for these two conditions
        assert result.stderr.splitlines() == [f"optixasync doctor: error: {REASON}"], result.stderr


@cannot_run_here
def test_render_gives_the_same_reason(runs):
    result = runs["render"]
    line = one_line(result)
    assert result.returncode == cli.EXIT_UNAVAILABLE, line
    if NO_DRIVER:
        assert line == f"optixasync render: error: {REASON}"


@cannot_run_here
def test_render_checks_its_arguments_before_the_machine(runs):
    result = runs["render-bad-width"]
    line = one_line(result)
    assert result.returncode == cli.EXIT_BAD_INPUT, line
    assert line.startswith("optixasync render: error:") and "--width" in line


@cannot_run_here
def test_syncwatch_refuses_python_c_as_bad_input(runs):
    """``-c`` is not a script syncwatch can run: bad input (2), whatever the machine."""
    result = runs["syncwatch-python-c"]
    line = one_line(result)
    assert result.returncode == cli.EXIT_BAD_INPUT, line
    assert line == ("optixasync syncwatch: error: unsupported interpreter option '-c': only a script path or -m module "
                    "can be run")


@cannot_run_here
def test_syncwatch_without_cupti_or_driver_stops_before_the_script(runs):
    """syncwatch starts CUPTI before the script: without it (or without a driver) it exits with 1, the CLI's
    status for a machine that cannot run the command."""
    result = runs["syncwatch-script"]
    line = one_line(result)  # the script never ran: no second line of its own
    assert result.returncode == cli.EXIT_UNAVAILABLE, line
    assert line.startswith("optixasync syncwatch")
    try:
        import cupti  # noqa: F401
    except ImportError:
        assert "'cupti-python'" in line and "pip install 'optixasync[diagnostics]'" in line, line


# -- a failing child of bench_startup.py ------------------------------------------------------------------------------


@cannot_run_here
def test_bench_startup_child_fails_with_one_line_and_the_parent_forwards_it(tmp_path):
    script = REPO_ROOT / "benchmarks" / "bench_startup.py"
    env = _env(tmp_path)  # nothing blocked: the child imports what it measures
    child = subprocess.run([sys.executable, "-c", runpy.run_path(str(script))["CHILD"]], cwd=REPO_ROOT, env=env,
                           capture_output=True, text=True, timeout=TIMEOUT_S)
    line = one_line(child)
    assert child.returncode == cli.EXIT_UNAVAILABLE
    if NO_DRIVER:
        assert line == f"bench_startup.py: error: {REASON}"
    parent = subprocess.run(  # the parent's own probe skipped: its run_child meets the failing child
        [sys.executable, "-c", f"import runpy; runpy.run_path({str(script)!r})['run_child']({str(tmp_path)!r})"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert one_line(parent) == line
    assert parent.returncode == child.returncode


# -- the helpers, in-process ------------------------------------------------------------------------------------------


def _raise(exc: BaseException):
    def main() -> None:
        raise exc

    return main


@pytest.mark.skipif(sys.flags.dev_mode, reason="python -X dev shows these tracebacks on purpose")
@pytest.mark.parametrize("exc, status, text", [
    (DriverNotFoundError(_driver.no_driver_message()), 1, f"prog: error: {_driver.no_driver_message()}"),
    (MissingExtraError("loading mesh files", "trimesh", "mesh"), 1,
     "prog: error: loading mesh files needs the 'trimesh' package, which is not installed: "
     "pip install 'optixasync[mesh]' (or pip install trimesh)"),
    (CudaError(2, "cudaErrorMemoryAllocation", "out of memory\nsecond line"), 1,
     "prog: error: CudaError: cudaErrorMemoryAllocation: out of memory"),
    (ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib"), 1,
     "prog: error: needs the 'matplotlib' package, which is not installed: pip install matplotlib"),
    (ValueError("--cells must be positive"), 2, "prog: error: --cells must be positive"),
    (TypeError("width must be an integer"), 2, "prog: error: width must be an integer"),
    (OSError(28, "No space left on device"), 2, "prog: error: [Errno 28] No space left on device"),
    (KeyboardInterrupt(), 130, "prog: error: interrupted"),
])
def test_call_main_turns_each_condition_into_one_line_and_its_status(capsys, exc, status, text):
    assert _entry.call_main(_raise(exc), "prog") == status
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == text + "\n"


def test_call_main_keeps_the_traceback_of_bugs_and_passes_the_status_through(capsys):
    with pytest.raises(ZeroDivisionError):
        _entry.call_main(_raise(ZeroDivisionError("a bug")), "prog")
    with pytest.raises(ModuleNotFoundError):  # a broken installation of optixasync itself
        _entry.call_main(_raise(ModuleNotFoundError("No module named 'optixasync.nope'", name="optixasync.nope")), "prog")
    assert _entry.call_main(lambda: None, "prog") == 0
    assert _entry.call_main(lambda: 3, "prog") == 3
    with pytest.raises(SystemExit) as info:  # argparse's exit 2 and require_gpu's exit 1 go through untouched
        run_main(_raise(SystemExit(2)), "prog")
    assert info.value.code == 2
    assert capsys.readouterr().err == ""


def test_the_scripts_exit_statuses_are_the_clis():
    assert (_entry.EXIT_UNAVAILABLE, _entry.EXIT_BAD_INPUT) == (cli.EXIT_UNAVAILABLE, cli.EXIT_BAD_INPUT)


def test_require_gpu_prints_the_probes_reason_or_nothing(monkeypatch, capsys):
    monkeypatch.setattr(_driver, "unavailable_reason", lambda: "no CUDA device: the reason")
    with pytest.raises(SystemExit) as info:
        require_gpu("prog")
    assert info.value.code == cli.EXIT_UNAVAILABLE
    assert capsys.readouterr().err == "prog: error: no CUDA device: the reason\n"
    monkeypatch.setattr(_driver, "unavailable_reason", lambda: None)
    require_gpu("prog")  # a usable machine: nothing printed, no exit
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("code, stderr, status, line", [
    (2, "prog: error: bad\n", 2, "prog: error: bad"),  # the child named us: as it is
    (1, "Traceback (most recent call last):\n  ...\nRuntimeError: boom\n", 1,
     "prog: error: child process failed (exit status 1): RuntimeError: boom"),
    (7, "", 1, "prog: error: child process failed (exit status 7): exit status 7, nothing on stderr"),
])
def test_child_output_exits_with_the_childs_line(capsys, code, stderr, status, line):
    command = [sys.executable, "-c", f"import sys; sys.stderr.write({stderr!r}); sys.exit({code})"]
    with pytest.raises(SystemExit) as info:
        child_output(command, "prog")
    assert info.value.code == status
    assert capsys.readouterr().err == line + "\n"
    assert child_output([sys.executable, "-c", "print('{\"ok\": 1}')"], "prog") == '{"ok": 1}\n'
