"""``view --cpu --scene X``: the scene through the CPU device, its frames the host build's, its refusals.

:class:`~optixasync.viewer.CpuDeviceSource` runs ``RenderPipeline(CpuContext(), scene)`` progressively; its
accumulated image is compared, bit for bit, with the host-build tests' kernel rendering the same camera.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from optixasync import cli
from optixasync.scene import cornell_box
from optixasync.viewer import CpuDeviceSource, ViewerState, to_scene_camera

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "render"))
from host_build import build_pathtracer_library, compiler, host_render  # noqa: E402

needs_compiler = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (c++, g++ or clang++) for the "
                                                               "CPU device")


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("OPTIXASYNC_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "viewer-cpu-cache"))


@needs_compiler
def test_the_source_accumulates_the_host_builds_samples(tmp_path):
    scene = cornell_box()
    source = CpuDeviceSource(scene, 24, 16, threads=2)
    state = ViewerState(source.initial_camera, source.initial_settings)
    view = state.snapshot()
    assert (view.settings.width, view.settings.height) == (24, 16)
    try:
        for expected_samples in (1, 2, 3):
            image, meta = source.render(view)
            assert meta["samples"] == expected_samples and meta["extra"]["source"] == "cpu-device"
        assert image.shape == (16, 24, 4) and image.dtype == np.uint8 and image[..., :3].max() > 0
        scene.camera = to_scene_camera(view.camera)
        lib = build_pathtracer_library(tmp_path / "host", (0, 1))
        expected = host_render(lib, scene, 3, width=24, height=16, max_depth=source.initial_settings.max_depth)
        np.testing.assert_array_equal(source.linear_image(), expected)
        moved = state.move_camera("orbit", 0.2, 0.0)  # a new camera restarts the accumulation
        assert source.render(moved)[1]["samples"] == 1
    finally:
        source.close()


@pytest.mark.parametrize("args, message", [
    (["--cpu", "--scene", "cornell_box", "--threads", "0"], "--threads must be in 1..1024"),
    (["--threads", "2"], "use it with --cpu --scene"),
    (["--cpu", "--threads", "2"], "use it with --cpu --scene"),
    (["--width", "0"], "--width must be a positive integer, got 0"),
])
def test_bad_cpu_device_arguments_are_bad_input(capsys, args, message):
    assert cli.main(["view", *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_without_a_compiler_view_cpu_scene_exits_1(capsys, monkeypatch):
    pytest.importorskip("aiohttp")
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", "")
    assert cli.main(["view", "--cpu", "--scene", "cornell_box", "--port", "0"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "C++17 compiler, and none was found" in lines[0], lines
