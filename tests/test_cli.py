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
from optixasync.cli._doctor import WITHOUT_A_GPU, doctor

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
NO_GPU_LINE = f"without a GPU       : {WITHOUT_A_GPU}"


@pytest.mark.skipif(_driver.load_cuda_library() is not None, reason="the NVIDIA driver is installed here (libcuda.so.1 loads)")
def test_doctor_without_a_driver():
    result = run_doctor(timeout=120)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    # doctor always names its version first (its report, on stdout), then what works without a GPU; the
    # problem is one line on stderr.
    assert result.stdout.splitlines() == [VERSION_LINE, NO_GPU_LINE], result.stdout
    assert result.stderr.splitlines() == [f"optixasync doctor: error: {_driver.no_driver_message()}"], result.stderr


def test_doctor_reports_a_missing_driver_in_process(monkeypatch):
    monkeypatch.setattr(_driver, "load_cuda_library", lambda: None)
    lines: list[str] = []
    errors: list[str] = []
    assert doctor(out=lines.append, err=errors.append) == 1
    assert lines == [VERSION_LINE, NO_GPU_LINE]
    assert errors == [f"optixasync doctor: error: {_driver.no_driver_message()}"]


@pytest.fixture
def a_driver(monkeypatch):
    """A machine whose driver answers doctor's first questions: version 550.54, CUDA 12.4, one GPU."""
    monkeypatch.setattr(_driver, "load_cuda_library", lambda: object())
    monkeypatch.setattr(_driver, "driver_version", lambda: "550.54")
    monkeypatch.setattr(_driver, "driver_cuda_version", lambda: 12040)
    monkeypatch.setattr(_driver, "devices", lambda: [_driver.DeviceInfo(0, "Stand-in GPU", (9, 0), 2**37)])


def test_doctor_names_the_extra_of_the_driver_cuda_version(a_driver, monkeypatch):
    monkeypatch.setattr(_driver, "devices", lambda: [])  # stop after the driver line
    lines: list[str] = []
    assert doctor(out=lines.append, err=lines.append) == 1
    assert lines[1] == "driver              : 550.54, CUDA 12.4 -> install optixasync[cuda12]"


def test_doctor_with_an_unknown_cuda_version_recommends_no_extra(a_driver, monkeypatch):
    monkeypatch.setattr(_driver, "driver_cuda_version", lambda: None)
    monkeypatch.setattr(_driver, "devices", lambda: [])
    lines: list[str] = []
    assert doctor(out=lines.append, err=lines.append) == 1
    assert lines[1] == "driver              : 550.54, CUDA unknown"


def test_doctor_asks_the_driver_about_each_abi_once(a_driver, monkeypatch):
    from optixasync import program
    from optixasync._optix import ABI_TABLES, _loader

    asked: list[int] = []
    monkeypatch.setattr(_driver, "load_optix_library", lambda: object())
    monkeypatch.setattr(_loader, "probe_abi", lambda lib, abi: asked.append(abi) or (0 if abi in (87, 93) else 7801))

    def no_nvrtc():
        raise RuntimeError("no NVRTC here")  # doctor stops at the next line

    monkeypatch.setattr(program, "nvrtc_version", no_nvrtc)
    lines: list[str] = []
    assert doctor(out=lines.append, err=lines.append) == 1
    assert sorted(asked) == sorted(ABI_TABLES)
    assert ("OptiX ABIs accepted : 87 (OptiX 8.0), 93 (OptiX 8.1); refused: 105, 118 (a newer driver accepts them)"
            in lines)
    assert ("OptiX ABI chosen    : 87 (OptiX 8.0) by default; Context(abi='newest') takes 93 (OptiX 8.1)"
            in lines)


def test_doctor_names_the_abis_of_an_r580_driver():
    from optixasync.cli._doctor import describe_abis

    assert describe_abis({87: 0, 93: 0, 105: 0, 118: 7801}) == [
        "OptiX ABIs accepted : 87 (OptiX 8.0), 93 (OptiX 8.1), 105 (OptiX 9.0); refused: 118 (a newer driver "
        "accepts them)",
        "OptiX ABI chosen    : 87 (OptiX 8.0) by default; Context(abi='newest') takes 105 (OptiX 9.0)",
    ]
    assert describe_abis({87: 7801, 93: 7801, 105: 7801, 118: 7801}) == [
        "OptiX ABIs accepted : none; refused: 87, 93, 105, 118 (a newer driver accepts them)"]


def test_doctor_describes_what_the_device_reports():
    from optixasync._optix import DeviceProperties
    from optixasync.cli._doctor import describe_properties

    common = dict(max_trace_depth=31, max_traversable_graph_depth=31, max_primitives_per_gas=2**29,
                  max_instances_per_ias=2**24, max_instance_id=2**28 - 1, visibility_mask_bits=8,
                  max_sbt_records_per_gas=2**28, max_sbt_offset=2**28 - 1)
    h200 = DeviceProperties(abi=105, rtcore_version=0, shader_execution_reordering=False, cooperative_vectors=True,
                            cluster_accel=True, max_cluster_vertices=256, max_cluster_triangles=256, **common)
    lines = describe_properties(h200)
    assert lines[:4] == ["RT cores            : none (rtcore version 0: OptiX traces on the SMs)",
                         "shader reordering   : no", "cooperative vectors : yes", "cluster accel       : yes"]
    assert lines[4] == ("limits              : trace depth 31, graph depth 31, 536870912 primitives per GAS, "
                        "16777216 instances per IAS, 8-bit visibility masks")
    rtx = DeviceProperties(abi=87, rtcore_version=10, shader_execution_reordering=True, cooperative_vectors=None,
                           cluster_accel=None, max_cluster_vertices=None, max_cluster_triangles=None, **common)
    assert describe_properties(rtx)[:4] == ["RT cores            : yes (RT core version 1.0)",
                                            "shader reordering   : yes",
                                            "cooperative vectors : not reported by ABI 87",
                                            "cluster accel       : not reported by ABI 87"]


def test_doctor_reports_a_library_without_the_entry_point(a_driver, monkeypatch):
    from optixasync._optix import _loader
    from optixasync.errors import DriverNotFoundError

    def no_entry(lib, abi):
        raise DriverNotFoundError("libnvoptix.so.1 has no optixQueryFunctionTable entry point")

    monkeypatch.setattr(_driver, "load_optix_library", lambda: object())
    monkeypatch.setattr(_loader, "probe_abi", no_entry)
    lines: list[str] = []
    assert doctor(out=lines.append, err=lines.append) == 1
    assert lines[-1] == "optixasync doctor: error: OptiX: libnvoptix.so.1 has no optixQueryFunctionTable entry point"


def test_a_subcommand_whose_dependency_is_not_installed_is_left_out(monkeypatch, capsys):
    monkeypatch.setitem(cli.SUBCOMMAND_MODULES, "extra", "optixasync_stand_in_extra_that_is_not_installed")
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    assert "extra" not in capsys.readouterr().out


def test_a_broken_subcommand_module_of_optixasync_is_raised(monkeypatch):
    monkeypatch.setitem(cli.SUBCOMMAND_MODULES, "broken", "optixasync._no_such_subcommand_module")
    with pytest.raises(ImportError) as info:
        cli.main(["--help"])
    assert info.value.name == "optixasync._no_such_subcommand_module"


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
    for expected in ("OptiX ABIs accepted", "87 (OptiX 8.0)", "OptiX ABI chosen", "NVRTC", "test pipeline",
                     "pixels hit", "RT cores", "shader reordering", "cooperative vectors", "cluster accel", "limits"):
        assert expected in result.stdout, f"{expected!r} missing from:\n{output}"
    pipeline_line = next(line for line in result.stdout.splitlines() if line.startswith("test pipeline"))
    assert "FAILED" not in pipeline_line
