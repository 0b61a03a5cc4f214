"""The wheel carries the kernels, the typing marker and the licence (CPU; builds a wheel in a temporary directory)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="the 'build' package is not installed: pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, f"python -m build --wheel failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    wheels = sorted(out.glob("optixasync-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_the_wheel_is_the_one_the_install_page_names(wheel: Path) -> None:
    """docs/install.md tells a user to install ``dist/<this name>``: the name the build writes."""
    assert f"dist/{wheel.name}[cuda13]" in (ROOT / "docs" / "install.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", [
    "optixasync/kernels/pathtracer.cu",
    "optixasync/kernels/optixasync_device.h",
    "optixasync/kernels/host/pathtracer_host.cpp",
    "optixasync/py.typed",
])
def test_wheel_contains(wheel_files: set[str], path: str) -> None:
    assert path in wheel_files


def test_wheel_carries_every_kernel_file_under_the_package(wheel_files: set[str]) -> None:
    kernels = ROOT / "kernels"
    expected = {
        "optixasync/kernels/" + p.relative_to(kernels).as_posix()
        for p in kernels.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    }
    assert expected, "kernels/ is empty"
    assert expected <= wheel_files, sorted(expected - wheel_files)
    assert not [name for name in wheel_files if name.startswith("kernels/")], "kernels/ must live inside the package"


def test_wheel_has_the_license_in_its_dist_info(wheel_files: set[str]) -> None:
    licenses = [name for name in wheel_files if ".dist-info/" in name and name.rsplit("/", 1)[-1] == "LICENSE"]
    assert licenses, sorted(name for name in wheel_files if ".dist-info/" in name)
