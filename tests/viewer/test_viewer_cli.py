"""``optixasync view``: arguments, the one-line errors (exit 2), a real ``--cpu`` server stopped by a signal."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from optixasync import cli
from optixasync.cli import _view as _cli

REPO_ROOT = Path(__file__).resolve().parents[2]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="optixasync")
    _cli.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["view", *argv])


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def test_arguments():
    args = parse("--scene", "s.glb", "--env", "sky.exr", "--width", "640", "--height", "360", "--port", "0",
                 "--host", "0.0.0.0", "--cpu")
    assert (args.scene, args.env, args.width, args.height, args.port, args.host, args.cpu) == \
        ("s.glb", "sky.exr", 640, 360, 0, "0.0.0.0", True)
    defaults = parse()
    assert defaults.host == "127.0.0.1" and not defaults.cpu


@pytest.mark.parametrize("problem", [lambda: __import__("optixasync").errors.DriverNotFoundError("no driver here"),
                                     lambda: __import__("optixasync").errors.CudaError(100, "cudaErrorNoDevice",
                                                                                        "no GPU here")])
def test_when_the_gpu_source_cannot_start_run_says_so_in_one_line(capsys, monkeypatch, problem):
    pytest.importorskip("aiohttp")
    import optixasync.viewer

    error = problem()

    def no_source(*args, **kwargs):
        raise error

    monkeypatch.setattr(optixasync.viewer, "PathTracerSource", no_source)
    assert _cli.run(parse("--port", "0")) == 1  # the machine cannot run it: the CLI's status for that
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("optixasync view: error:") and "here" in lines[0], lines
    assert "--cpu" in lines[0]


def test_view_builds_the_scene_render_builds(monkeypatch, tmp_path):
    """``--scene`` and ``--env`` go through the same resolver as ``optixasync render``: the asset keeps its own
    materials and camera (it is not placed in the Cornell box) and the sky is the --env one."""
    pytest.importorskip("aiohttp")
    pytest.importorskip("pygltflib")
    import optixasync.viewer
    from optixasync.scene import Camera, Material, Mesh, Scene

    made = {}

    class Stop(Exception):
        pass

    def source(scene, **kwargs):
        made["scene"] = scene
        raise Stop

    asset = Scene([Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32), np.array([[0, 1, 2]], np.int32),
                        Material((0.2, 0.4, 0.6)), name="tri")], Camera((0, 0, 3), (0, 0, 0)))
    monkeypatch.setattr("optixasync.scene.load_scene", lambda path, **kw: asset)
    (tmp_path / "asset.glb").write_bytes(b"glTF")
    monkeypatch.setattr(optixasync.viewer, "PathTracerSource", source)
    with pytest.raises(Stop):
        _cli.run(parse("--port", "0", "--scene", str(tmp_path / "asset.glb"), "--env", "0.5,0.25,1"))
    scene = made["scene"]
    assert scene is asset and [m.name for m in scene.meshes] == ["tri"]
    assert scene.environment.radiance == (0.5, 0.25, 1.0)


def test_without_aiohttp_run_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # import aiohttp raises ImportError
    assert _cli.run(parse("--cpu", "--port", "0")) == 1  # a missing extra: exit 1, as doctor and render
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'optixasync[viewer]'" in err[0]


def test_a_bad_scene_file_is_bad_input(capsys, tmp_path):
    pytest.importorskip("aiohttp")
    assert _cli.run(parse("--port", "0", "--env", str(tmp_path / "missing.hdr"))) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.hdr" in err[0]


@pytest.mark.parametrize("argv", [("--width", "0"), ("--port", "70000"), ("--encoders", "0"), ("--max-fps", "-1")])
def test_bad_arguments_exit_2(argv, capsys):
    assert _cli.run(parse("--cpu", *argv)) == 2
    assert capsys.readouterr().err.startswith("optixasync view: error:")


def test_importing_the_cli_module_imports_no_server():
    code = "import sys, optixasync.cli._view; print('aiohttp' in sys.modules or 'cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=python_env(), timeout=60)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_view_cpu_serves_until_stopped(stop_signal):
    pytest.importorskip("aiohttp")
    process = subprocess.Popen([sys.executable, "-m", "optixasync", "view", "--cpu", "--port", "0", "--width", "64",
                                "--height", "48"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=python_env())
    try:
        line = process.stdout.readline()
        assert line.startswith("optixasync view: serving on http://127.0.0.1:"), line + process.stderr.read()
        url = line.split("serving on ")[1].split()[0]
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200 and b"<canvas" in response.read()
        process.send_signal(stop_signal)
        _, err = process.communicate(timeout=20)
        assert process.returncode == 0 and "Traceback" not in err, err
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def test_the_top_level_cli_lists_view(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["view", "--help"])
    assert info.value.code == 0
    assert "--cpu" in capsys.readouterr().out
