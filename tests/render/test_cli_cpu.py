"""``optixasync render --device cpu``: the Cornell box and a glTF asset from the command line, with CuPy blocked.

The command's PNG is compared, pixel for pixel, with the host-build tests' own kernel rendering the same scene
(same seed, same options) through the sRGB curve of the writer. Refusals are bad input (status 2, one line);
no C++ compiler is a machine that cannot (status 1, one line). Skipped without a C++ compiler where a render
is needed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from host_build import build_pathtracer_library, compiler, host_render
from test_cli_render import _env

from optixasync.io import tonemap_srgb
from optixasync.scene import cornell_box, load_scene

needs_compiler = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (c++, g++ or clang++) for the "
                                                               "CPU device")


@pytest.fixture
def no_cupy(tmp_path) -> Path:
    package = tmp_path / "blocked" / "cupy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('raise ImportError("cupy is blocked: the CPU device must not need it")\n')
    return package.parent


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("cli_cpu_host"), (0, 1))


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "optixasync", "render", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def cpu_env(blocked: Path, cache: Path) -> dict[str, str]:
    env = _env(blocked)
    env["OPTIXASYNC_CACHE_DIR"] = str(cache)
    return env


def read_png(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


OPTIONS = ["--width", "24", "--height", "16", "--spp", "4", "--max-depth", "5", "--seed", "9", "--quiet"]


@needs_compiler
def test_the_cornell_box_on_the_cpu_device(host_kernel, no_cupy, tmp_path):
    result = run(["--device", "cpu", "--threads", "2", *OPTIONS, "--out", "box.png"], tmp_path,
                 cpu_env(no_cupy, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    assert "CPU (2 threads)" in result.stdout and "Msamples/s" in result.stdout
    expected = tonemap_srgb(host_render(host_kernel, cornell_box(), 4, width=24, height=16, max_depth=5, seed=9))
    np.testing.assert_array_equal(read_png(tmp_path / "box.png"), expected)


@needs_compiler
def test_a_gltf_asset_on_the_cpu_device(host_kernel, no_cupy, tmp_path):
    from test_cpu_pipeline import marker_scene

    path, _ = marker_scene(tmp_path)
    result = run(["--device", "cpu", "--scene", str(path), "--env", "0.3,0.3,0.4", *OPTIONS, "--out", "asset.png"],
                 tmp_path, cpu_env(no_cupy, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    scene = load_scene(path)
    from optixasync.scene import Environment

    scene.environment = Environment(radiance=(0.3, 0.3, 0.4))
    expected = tonemap_srgb(host_render(host_kernel, scene, 4, width=24, height=16, max_depth=5, seed=9))
    image = read_png(tmp_path / "asset.png")
    assert image.max() > 0
    np.testing.assert_array_equal(image, expected)


@needs_compiler
def test_a_progressive_still_on_the_cpu_device(host_kernel, no_cupy, tmp_path):
    result = run(["--device", "cpu", "--progressive", "3", "--spp-per-frame", "2", *OPTIONS, "--out", "p.png"],
                 tmp_path, cpu_env(no_cupy, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    assert "3 frames x 2 spp = 6 spp" in result.stdout
    expected = host_render(host_kernel, cornell_box(), 6, width=24, height=16, max_depth=5, seed=9)
    # the kernel's own tonemap of the accumulation (the IMAGE output), within one level of the writer's curve
    diff = np.abs(read_png(tmp_path / "p.png").astype(int) - tonemap_srgb(expected).astype(int))
    assert diff.max() <= 1


@pytest.mark.parametrize("args, message", [
    (["--frames", "3"], "--frames needs the GPU"),
    (["--denoise"], "--denoise needs the GPU"),
    (["--gpus", "0"], "--gpus needs the GPU"),
    (["--threads", "0"], "--threads must be"),
])
def test_what_the_cpu_device_does_not_do_is_bad_input(no_cupy, tmp_path, args, message):
    result = run(["--device", "cpu", *args], tmp_path, cpu_env(no_cupy, tmp_path / "cache"))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_threads_without_the_cpu_device_is_bad_input(no_cupy, tmp_path):
    result = run(["--threads", "2"], tmp_path, cpu_env(no_cupy, tmp_path / "cache"))
    assert result.returncode == 2 and "use it with --device cpu" in result.stderr


def test_no_compiler_exits_1_with_one_line(no_cupy, tmp_path):
    env = cpu_env(no_cupy, tmp_path / "cache")
    env.pop("CXX", None)
    env["PATH"] = str(tmp_path / "empty")  # no c++, g++ or clang++
    result = run(["--device", "cpu", "--out", "x.png", "--quiet"], tmp_path, env)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "C++17 compiler, and none was found" in lines[0], result.stderr
    assert not (tmp_path / "x.png").exists()
