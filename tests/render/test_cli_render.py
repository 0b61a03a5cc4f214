"""``optixasync render``: argument checking without a GPU (exit status 2, one line), --help without CuPy; on a GPU, renders.

The CPU tests run the command with CuPy made unimportable, so a bad argument
that reached the GPU code would show up as an import error, not a clean message.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fake_gpu import FakeDeviceScene, FakeIntegrator, FakeScheduler, install

from optixasync import cli

# The command's own pieces (its plan, argument parser, stats line, camera swing) are pure logic with no public door
# beyond running the command, which these tests also do.
from optixasync.cli._render import RenderPlan, add_arguments, plan_from_args
from optixasync.cli._render_gpu import format_stats
from optixasync.cli._scene import SceneChoice
from optixasync.render import Stage
from optixasync.render._updates import swing_camera
from optixasync.scheduler import FrameStats, SchedulerStats

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env(extra_path: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(extra_path)] if extra_path is not None else []
    paths += [str(REPO_ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


@pytest.fixture
def no_cupy(tmp_path) -> Path:
    """A folder whose ``cupy`` package raises on import: put first on PYTHONPATH, it hides the real one."""
    package = tmp_path / "blocked" / "cupy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('raise ImportError("cupy is blocked: this command must not touch the GPU")\n')
    return package.parent


def run_render(args: list[str], cwd: Path, blocked: Path | None = None, timeout: float = 120):
    return subprocess.run([sys.executable, "-m", "optixasync", "render", *args], cwd=cwd, env=_env(blocked),
                          capture_output=True, text=True, timeout=timeout)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


@pytest.fixture
def mesh_files(tmp_path) -> dict[str, Path]:
    files = {
        "fbx": tmp_path / "model.fbx",
        "empty": tmp_path / "empty.obj",
        "tetra": tmp_path / "tetra.obj",
    }
    files["fbx"].write_text("not a mesh we read")
    files["empty"].write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    files["tetra"].write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    files["badsky"] = tmp_path / "sky.png"
    files["badsky"].write_bytes(b"not read")
    files["nansky"] = tmp_path / "nansky.npy"
    np.save(files["nansky"], np.full((4, 8, 3), np.nan, np.float32))
    files["badglb"] = tmp_path / "badglb.glb"
    files["badglb"].write_bytes(b"glTF\x02\x00\x00\x00truncated")
    files["quadglb"] = _textured_quad_glb(tmp_path / "quad.glb")
    files["folder"] = tmp_path / "a_folder.png"
    files["folder"].mkdir()
    return files


# -- help ----------------------------------------------------------------------------------------------------------


def test_help_without_cupy(no_cupy, tmp_path):
    result = run_render(["--help"], tmp_path, no_cupy)
    assert result.returncode == 0, result.stderr
    for option in ("--scene", "--spp", "--max-depth", "--frames", "--frames-in-flight", "--spp-per-frame",
                   "--progressive", "--out", "--seed"):
        assert option in result.stdout
    top = subprocess.run([sys.executable, "-m", "optixasync", "--help"], cwd=tmp_path, env=_env(no_cupy),
                         capture_output=True, text=True, timeout=120)
    assert top.returncode == 0, top.stderr
    assert "render" in top.stdout


def test_example_help_without_cupy(no_cupy, tmp_path):
    result = subprocess.run([sys.executable, str(REPO_ROOT / "examples" / "path_tracer.py"), "--help"], cwd=tmp_path,
                            env=_env(no_cupy), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--frames-in-flight" in result.stdout and "Cornell box" in result.stdout


# -- bad input -----------------------------------------------------------------------------------------------------

BAD_INPUT = [
    (["--scene", "nonexistent"], "unknown scene 'nonexistent'"),
    (["--scene", "{tmp}/missing.obj"], "mesh file not found"),
    (["--scene", "{tmp}/missing.gltf"], "glTF file not found"),
    (["--scene", "{tmp}/missing.glb"], "glTF file not found"),
    (["--scene", "{fbx}"], "unsupported mesh format '.fbx'"),
    (["--scene", "{empty}"], "contains no faces"),
    (["--out", "image.jpg"], "unsupported image format '.jpg'"),
    (["--out", "image"], "unsupported image format 'no suffix'"),
    (["--width", "0"], "--width must be a positive integer, got 0"),
    (["--height", "-5"], "--height must be a positive integer, got -5"),
    (["--spp", "0"], "--spp must be a positive integer"),
    (["--max-depth", "0"], "--max-depth must be a positive integer"),
    (["--seed", "-1"], "--seed must be >= 0"),
    (["--frames", "0"], "--frames must be a positive integer"),
    (["--frames", "3", "--out", "anim.exr"], "use .png"),
    (["--progressive", "3", "--out", "still.exr"], "use .png"),
    (["--frames", "3", "--progressive", "3"], "exclude each other"),
    (["--frames-in-flight", "0", "--frames", "2"], "--frames-in-flight must be a positive integer"),
    (["--scene", "cloth", "--cells", "0"], "--cells must be in 1..4096, got 0"),
    (["--scene", "cloth", "--cells", "46339"], "--cells must be in 1..4096, got 46339"),
    (["--out", "{tmp}/no/such/folder/x.png"], "does not exist"),
    (["--out", "{tmp}"], "unsupported image format"),
    (["--out", "{tmp}/a_folder.png"], "is a folder, not a file"),
    (["--dt", "nan", "--frames", "2"], "--dt must be a positive number"),
    (["--env", "{tmp}/sky.hdr"], "--env: no such file"),
    (["--env", "1,2"], "is neither an image (.hdr, .rgbe, .exr, .npy) nor a radiance R,G,B"),
    (["--env", "=-1,0,0"], "nor a radiance R,G,B of numbers >= 0"),
    (["--env-scale", "-1"], "--env-scale must be a finite number > 0"),
    (["--env-scale", "0"], "--env-scale must be a finite number > 0"),
    (["--env", "{badsky}"], "sky.png' is neither an image"),
    (["--scene", "{quadglb}", "--env", "0,0,0"], "the scene has no light"),
    (["--env", "{tmp}/missing.exr"], "--env: no such file"),
    (["--env", "{nansky}"], "NaN"),
    (["--scene", "{badglb}"], "badglb.glb"),
    (["--gpus", "0,0"], "GPU 0 is listed twice"),
    (["--gpus", "first"], "comma-separated"),
    (["--gpus", "0", "--scheduler", "tcp://host:8786"], "exclude each other"),
    (["--gpus", "0", "--progressive", "3"], "not --progressive"),
    (["--scheduler", "tcp://host:8786", "--denoise"], "does not denoise"),
    (["--scheduler", " "], "needs an address"),
]


def _fill(args: list[str], tmp_path: Path, files: dict[str, Path]) -> list[str]:
    return [a.format(tmp=tmp_path, **{k: str(v) for k, v in files.items()}) for a in args]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_in_process(args, message, tmp_path, mesh_files, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)  # any GPU work would fail with an ImportError
    monkeypatch.chdir(tmp_path)
    status = cli.main(["render", *_fill(args, tmp_path, mesh_files)])
    captured = capsys.readouterr()
    assert status == 2, captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("optixasync render: error: ")
    assert message in lines[0]
    assert captured.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in mesh_files.values())  # no output


def test_an_unknown_gpu_is_bad_input_and_no_gpu_at_all_is_a_machine_that_cannot(tmp_path, monkeypatch, capsys):
    """``--gpus 7`` on a machine with two GPUs names one that is not there (2); with none visible, ``--gpus all``
    and ``--gpus 0`` cannot run here, as every other no-driver case (1)."""
    import optixasync._driver as driver

    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(driver, "device_count", lambda: 2)
    assert cli.main(["render", "--gpus", "7", "--quiet"]) == 2
    assert "there is no GPU 7: 2 visible" in capsys.readouterr().err
    monkeypatch.setattr(driver, "device_count", lambda: 0)
    for gpus in ("all", "0"):
        assert cli.main(["render", "--gpus", gpus, "--quiet"]) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "no CUDA device is visible" in lines[0], lines
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "message"), [BAD_INPUT[i] for i in (0, 2, 4, 5, 6, 8)])
def test_bad_input_subprocess(args, message, tmp_path, mesh_files, no_cupy):
    result = run_render(_fill(args, tmp_path, mesh_files), tmp_path, no_cupy)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_non_integer_size_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["render", "--width", "wide"])
    assert info.value.code == 2
    assert "invalid int value: 'wide'" in capsys.readouterr().err


# -- plans -----------------------------------------------------------------------------------------------------------


def test_default_plan_is_the_cornell_box_still():
    plan = plan_from_args(parse([]))
    assert plan == RenderPlan(scene=SceneChoice("cornell_box", None, "cornell_box"), mode="still",
                              out=Path("cornell_box.png"), count=0, width=512, height=512, spp=256, max_depth=8,
                              samples_per_launch=0, seed=0, frames_in_flight=2, spp_per_frame=16, dt=1 / 30,
                              quiet=False)


def test_frames_plan_defaults_to_the_cloth():
    plan = plan_from_args(parse(["--frames", "10"]))
    assert (plan.mode, plan.scene.kind, plan.count, plan.out) == ("frames", "cloth", 10, Path("out.png"))
    assert (plan.frames_in_flight, plan.spp_per_frame) == (2, 16)
    plan = plan_from_args(parse(["--frames", "4", "--scene", "cornell_box", "--frames-in-flight", "3"]))
    assert (plan.scene.kind, plan.frames_in_flight) == ("cornell_box", 3)


def test_progressive_and_file_plans(mesh_files):
    plan = plan_from_args(parse(["--progressive", "5", "--spp-per-frame", "4", "--scene", str(mesh_files["tetra"])]))
    assert (plan.mode, plan.scene.kind, plan.scene.path, plan.count) == ("progressive", "asset", mesh_files["tetra"],
                                                                         5)
    assert plan.out == Path("tetra.png")
    (mesh_files["tetra"].parent / "x").mkdir()
    out = mesh_files["tetra"].parent / "x" / "y.EXR"
    plan = plan_from_args(parse(["--out", str(out), "--width", "64", "--height", "32", "--spp", "3"]))
    assert (plan.out, plan.width, plan.height, plan.spp) == (out, 64, 32, 3)


def test_swing_camera_turns_about_the_target():
    from optixasync.scene import Camera

    camera = Camera(eye=(0.0, 0.5, 3.9), target=(0.0, 0.5, 0.0), up=(0.0, 1.0, 0.0), fov=40.0)
    turned = swing_camera(camera, 90.0)
    np.testing.assert_allclose(turned.eye, (3.9, 0.5, 0.0), atol=1e-12)
    np.testing.assert_allclose(turned.target, camera.target)
    assert turned.fov == 40.0
    back = swing_camera(turned, -90.0)
    np.testing.assert_allclose(back.eye, camera.eye, atol=1e-12)


def test_format_stats_reports_the_scheduler_numbers():
    stats = SchedulerStats()
    for k in range(5):  # 10 ms frames, 8 ms of GPU work each, back to back: 100 fps, GPU busy 0.8
        begin = 0.010 * k
        stats.add(FrameStats(index=k, submit_ms=0.2, gpu_ms=8.0, gap_us=2000.0, in_flight=2, ahead=1,
                             waited=k > 1, host_begin=begin, host_submit=begin + 0.0002, host_done=begin + 0.010))
    summary = stats.summary()
    assert summary["gpu_busy"] == pytest.approx(8.0 * 5 / 50.0)
    line = format_stats(summary, 2)
    for expected in ("N=2", "100.0 fps", "5 frames", "frames in flight 2.00", "ahead 1.00", "waits/frame 0.60",
                     "GPU busy 80.0%", "GPU 8.00 ms/frame", "submit 0.200 ms/frame", "GPU gap 2000.0 us"):
        assert expected in line, line
    assert "GPU clock" not in line
    assert "(GPU clock 95.0%)" in format_stats({**summary, "gpu_utilization": 0.95}, 2)


# -- on a GPU ------------------------------------------------------------------------------------------------------


def _png(path: Path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path))


@pytest.mark.gpu
def test_render_still_png_and_exr(tmp_path):
    result = run_render(["--width", "48", "--height", "32", "--spp", "8", "--out", "box.png", "--quiet"], tmp_path,
                        timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    image = _png(tmp_path / "box.png")
    assert image.shape == (32, 48, 3) and image.dtype == np.uint8
    assert image.mean() > 10, "the Cornell box rendered black"
    assert "48x32, 8 spp" in result.stdout and "Msamples/s" in result.stdout
    try:
        import OpenEXR  # noqa: F401
    except ImportError:
        return
    result = run_render(["--width", "16", "--height", "16", "--spp", "4", "--out", "box.exr", "--quiet"], tmp_path,
                        timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "box.exr").stat().st_size > 0


@pytest.mark.gpu
def test_render_cloth_frames(tmp_path):
    args = ["--frames", "4", "--cells", "24", "--width", "32", "--height", "32", "--spp-per-frame", "2",
            "--out", "anim/f.png", "--quiet"]
    (tmp_path / "anim").mkdir()
    result = run_render(args, tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    files = sorted((tmp_path / "anim").iterdir())
    assert [p.name for p in files] == [f"f_{k:04d}.png" for k in range(4)]
    frames = [_png(p) for p in files]
    assert all(f.shape == (32, 32, 3) for f in frames)
    assert any(not np.array_equal(frames[0], f) for f in frames[1:]), "the cloth did not move"
    assert "fps" in result.stdout and "frames in flight" in result.stdout and "GPU busy" in result.stdout


@pytest.mark.gpu
def test_render_progressive_mesh_file(tmp_path, mesh_files):
    args = ["--scene", str(mesh_files["tetra"]), "--progressive", "4", "--spp-per-frame", "2", "--width", "24",
            "--height", "24", "--out", "p.png", "--quiet"]
    result = run_render(args, tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    image = _png(tmp_path / "p.png")
    assert image.shape == (24, 24, 3) and image.mean() > 10
    assert "4 frames x 2 spp = 8 spp" in result.stdout


def _roughness(image: np.ndarray) -> float:
    """Mean absolute difference of horizontally adjacent pixels: what noise adds and a denoiser removes."""
    image = image.astype(np.float64)
    return float(np.abs(np.diff(image, axis=1)).mean())


@pytest.mark.gpu
def test_render_denoise_still_and_progressive(tmp_path):
    from optixasync.denoise import available_denoisers

    state = available_denoisers().get("oidn-cuda", "")
    if not state.startswith("available"):
        pytest.skip(f"OIDN's CUDA device: {state}")
    size = ["--width", "96", "--height", "96", "--quiet"]
    runs = {name: run_render(size + args, tmp_path, timeout=600) for name, args in {
        "noisy": ["--spp", "4", "--out", "noisy.png"],
        "still": ["--spp", "4", "--denoise", "--out", "still.png"],
        "progressive": ["--progressive", "4", "--spp-per-frame", "1", "--denoise", "--out", "progressive.png"],
    }.items()}
    for name, result in runs.items():
        assert result.returncode == 0, name + ": " + result.stdout + result.stderr
    noisy, still, progressive = (_png(tmp_path / f"{name}.png") for name in ("noisy", "still", "progressive"))
    assert "96x96, 4 spp, denoised" in runs["still"].stdout
    assert "4 frames x 1 spp = 4 spp, denoised" in runs["progressive"].stdout
    for denoised in (still, progressive):
        assert denoised.shape == (96, 96, 3)
        assert _roughness(denoised) < 0.5 * _roughness(noisy), (_roughness(denoised), _roughness(noisy))
        # in 8-bit sRGB the noisy image's mean sits lower (a concave curve, clipped fireflies): a loose bound
        assert abs(denoised.mean() - noisy.mean()) < 0.25 * noisy.mean()
    assert abs(still.mean() - progressive.mean()) < 0.05 * still.mean()  # the same 4 spp, denoised both ways


# -- the GPU code path, driven by stand-ins (CPU) ---------------------------------------------------------------------


# -- the command's flows, over stand-ins of the GPU (tests/render/fake_gpu.py) ------------------------------------


@pytest.fixture
def fake_gpu(monkeypatch):
    install(monkeypatch)


class FakeDenoise(Stage):
    """The denoise stage's needs and outputs; 'denoises' to black, so that its images are told apart."""

    needs = frozenset({"radiance", "albedo", "normal"})
    writes = frozenset({"denoised"})
    instances: list = []

    def __init__(self) -> None:
        self.frames: list[int] = []
        self.closed = False
        FakeDenoise.instances.append(self)

    def record(self, frame, buffers) -> None:
        buffers["denoised"][...] = 0.0
        self.frames.append(frame.index)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_denoiser(fake_gpu, monkeypatch):
    import optixasync.denoise

    FakeDenoise.instances.clear()
    monkeypatch.setattr(optixasync.denoise, "Denoise", FakeDenoise)
    monkeypatch.setattr(optixasync.denoise, "oidn_library_path", lambda: "libOpenImageDenoise.so.2")


def test_still_flow_with_stand_ins(fake_gpu, tmp_path, capsys):
    status = cli.main(["render", "--width", "8", "--height", "6", "--spp", "32", "--out", str(tmp_path / "s.png"),
                       "--quiet"])
    out = capsys.readouterr().out
    assert status == 0
    (scene,) = FakeDeviceScene.instances
    assert scene.stream == "stream" and scene.closed
    (sched,) = FakeScheduler.instances
    # a still: one frame of the pipeline's scheduler; with the progress bar, launches of 16 samples
    (frame,) = sched.frames
    assert [(la.spp, la.offset, la.own_params) for la in frame.launches] == [(16, 0, True), (16, 16, True)]
    image = _png(tmp_path / "s.png")
    assert image.shape == (6, 8, 3) and (image == 188).all()  # 0.5 linear through the sRGB curve
    # two launches of 20 ms of GPU time -> 8*6*32 samples / 40 ms
    assert "8x6, 32 spp, max depth 8, GPU time 40.0 ms, 0.0 Msamples/s" in out


def test_still_flow_of_several_launches_reports_the_whole_render(fake_gpu, tmp_path, capsys):
    status = cli.main(["render", "--width", "100", "--height", "100", "--spp", "32", "--samples-per-launch", "8",
                       "--out", str(tmp_path / "s.png"), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0
    (frame,) = FakeScheduler.instances[0].frames
    assert [(la.spp, la.offset) for la in frame.launches] == [(8, 0), (8, 8), (8, 16), (8, 24)]
    # four launches of 20 ms -> 100*100*32 samples / 80 ms
    assert "100x100, 32 spp, max depth 8, GPU time 80.0 ms, 4.0 Msamples/s" in out


def test_frames_flow_with_stand_ins(fake_gpu, tmp_path, capsys):
    (tmp_path / "a").mkdir()
    status = cli.main(["render", "--scene", "cornell_box", "--frames", "5", "--frames-in-flight", "3", "--width", "8",
                       "--height", "6", "--spp-per-frame", "4", "--out", str(tmp_path / "a" / "f.png"), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0
    (sched,) = FakeScheduler.instances
    assert sched.n == 3 and sched.stream == "stream" and sched.closed
    assert sched.params_dtype == FakeIntegrator.params_dtype
    assert [(f.launches[0].spp, f.launches[0].offset, sorted(f.readbacks)) for f in sched.frames] == [
        (4, 0, ["image"])] * 5  # each animation frame is its own image
    eyes = np.array([f.launches[0].basis[0] for f in sched.frames], np.float64)
    np.testing.assert_allclose(np.linalg.norm(eyes, axis=1), 3.9, rtol=1e-6)  # swinging about the target
    angles = np.radians(15.0 * np.sin(2 * np.pi * np.arange(5) / 5))  # a +-15 degree swing over the animation
    np.testing.assert_allclose(eyes, np.stack([3.9 * np.sin(angles), 0 * angles, 3.9 * np.cos(angles)], 1), atol=1e-6)
    files = sorted((tmp_path / "a").iterdir())
    assert [p.name for p in files] == [f"f_{k:04d}.png" for k in range(5)]  # written atomically: no temporaries
    for path in files:
        assert (_png(path) == 188).all() and _png(path).shape == (6, 8, 3)
    assert "wrote 5 frames" in out and "scheduler N=3" in out and "GPU busy 80.0%" in out
    assert "waits/frame 1.00" in out and "frames in flight 3.00 (ahead 2.00)" in out


def test_cloth_frames_move_the_cloth(fake_gpu, tmp_path, capsys, monkeypatch):
    from optixasync.render import ClothMotion

    moves = []
    monkeypatch.setattr(ClothMotion, "move", lambda self, pipeline, t, stream: moves.append((self.cloth.cells, t, stream)))
    status = cli.main(["render", "--frames", "3", "--cells", "5", "--dt", "0.5", "--width", "8", "--height", "6",
                       "--out", str(tmp_path / "c.png"), "--quiet"])
    assert status == 0, capsys.readouterr().err
    (sched,) = FakeScheduler.instances
    # each step is given its frame as the stream (so the cloth's GPU work is timed with the frame)
    assert [(cells, t) for cells, t, _ in moves] == [(5, 0.0), (5, 0.5), (5, 1.0)]
    assert [stream for _, _, stream in moves] == sched.frames
    assert [f.launches[0].spp for f in sched.frames] == [16] * 3
    eyes = {tuple(np.round(f.launches[0].basis[0], 6)) for f in sched.frames}
    assert len(eyes) == 1  # the cloth moves, the camera stays
    assert len(list(tmp_path.glob("c_*.png"))) == 3


def test_gltf_frames_play_the_files_node_animation(fake_gpu, tmp_path, capsys):
    """--frames on an animated glTF file: frame k places the moving mesh at k * dt of its first animation (the
    instance structure and records updated on the frame), its camera stays; a skin warns once, in one line."""
    from optixasync.testing import GltfBuilder

    g = GltfBuilder()
    triangle = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    moving = g.node(mesh=g.mesh(triangle), name="mover")
    still = g.node(mesh=g.mesh(triangle), translation=[0.0, 0.0, -2.0], skin=0)
    g.add("skins", {"joints": [still]})
    times = g.accessor(np.array([0.0, 1.0], np.float32))
    values = g.accessor(np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], np.float32))
    g.add("animations", {"samplers": [{"input": times, "output": values}],
                         "channels": [{"sampler": 0, "target": {"node": moving, "path": "translation"}}]})
    g.scene(moving, still)
    path = g.write_gltf(tmp_path / "slide.gltf")
    status = cli.main(["render", "--scene", str(path), "--frames", "3", "--dt", "0.25", "--width", "8", "--height",
                       "6", "--spp-per-frame", "2", "--out", str(tmp_path / "f.png"), "--quiet"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    (sched,) = FakeScheduler.instances
    (device,) = FakeDeviceScene.instances
    assert device.scene.instanced == [0]  # the animated mesh is an instance; the still one is flattened
    assert [stream for _, stream in device.placements] == sched.frames  # on each frame, as its stream
    np.testing.assert_allclose([m[0, :, 3] for m, _ in device.placements], [[0, 0, 0], [0.5, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal([m[1] for m, _ in device.placements], [np.eye(3, 4)] * 3)
    eyes = {tuple(np.round(f.launches[0].basis[0], 6)) for f in sched.frames}
    assert len(eyes) == 1  # the mesh moves, the camera stays
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and warnings[0].startswith("optixasync render: warning: ") and "skins" in warnings[0]
    assert len(list(tmp_path.glob("f_*.png"))) == 3


def test_progressive_flow_with_stand_ins(fake_gpu, tmp_path, capsys):
    status = cli.main(["render", "--progressive", "4", "--spp-per-frame", "2", "--width", "8", "--height", "6",
                       "--out", str(tmp_path / "p.png"), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0
    (sched,) = FakeScheduler.instances
    # accumulate: no reset, no camera change; only the last frame is read back
    assert [(f.launches[0].offset, sorted(f.readbacks)) for f in sched.frames] == [
        (0, []), (2, []), (4, []), (6, ["image"])]
    assert (_png(tmp_path / "p.png") == 188).all()
    assert "4 frames x 2 spp = 8 spp" in out


def test_denoised_still_runs_the_stages_once_on_all_samples(fake_denoiser, tmp_path, capsys):
    status = cli.main(["render", "--denoise", "--width", "8", "--height", "6", "--spp", "32",
                       "--out", str(tmp_path / "d.png"), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0
    (sched,) = FakeScheduler.instances
    (frame,) = sched.frames
    assert [(la.spp, la.offset, la.outputs) for la in frame.launches] == [
        (16, 0, ["albedo", "normal", "radiance"]), (16, 16, ["albedo", "normal", "radiance"])]
    (denoiser,) = FakeDenoise.instances
    assert denoiser.frames == [0] and denoiser.closed and sched.closed
    assert (_png(tmp_path / "d.png") == 0).all() and _png(tmp_path / "d.png").shape == (6, 8, 3)  # the denoised
    assert "8x6, 32 spp, denoised, max depth 8" in out


def test_denoised_progressive_denoises_every_frame(fake_denoiser, tmp_path, capsys):
    status = cli.main(["render", "--denoise", "--progressive", "3", "--spp-per-frame", "2", "--width", "8",
                       "--height", "6", "--out", str(tmp_path / "p.png"), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0
    (sched,) = FakeScheduler.instances
    assert [sorted(f.readbacks) for f in sched.frames] == [[], [], ["image"]]
    assert FakeDenoise.instances[0].frames == [0, 1, 2]
    assert (_png(tmp_path / "p.png") == 0).all()
    assert "3 frames x 2 spp = 6 spp, denoised" in out


def test_denoise_without_oidn_is_one_line_before_the_gpu(fake_gpu, monkeypatch, tmp_path, capsys):
    import optixasync.denoise
    from optixasync.denoise._errors import missing_pyoidn

    def missing():
        raise missing_pyoidn()

    monkeypatch.setattr(optixasync.denoise, "oidn_library_path", missing)
    status = cli.main(["render", "--denoise", "--spp", "4", "--out", str(tmp_path / "d.png"), "--quiet"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.count("\n") == 1 and err.startswith("optixasync render: error: ") and "optixasync[denoise]" in err
    assert FakeDeviceScene.instances == [] and FakeScheduler.instances == []  # nothing was built on the GPU
    assert not (tmp_path / "d.png").exists()


def _textured_quad_glb(path: Path) -> Path:
    """A .glb: one quad facing +z with a 1x2 texture (red | green), its camera looking at it from +z."""
    import json
    import struct
    from io import BytesIO

    from PIL import Image

    png = BytesIO()
    Image.fromarray(np.array([[[255, 0, 0], [0, 255, 0]]], np.uint8)).save(png, format="PNG")
    positions = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    uvs = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
    indices = np.array([0, 1, 2, 0, 2, 3], np.uint32)
    parts = [positions.tobytes(), uvs.tobytes(), indices.tobytes(), png.getvalue()]
    views, offset = [], 0
    for part in parts:
        views.append({"buffer": 0, "byteOffset": offset, "byteLength": len(part)})
        offset += len(part) + (-len(part) % 4)
    blob = b"".join(p + b"\0" * (-len(p) % 4) for p in parts)
    doc = {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0, 1]}],
        "nodes": [{"mesh": 0}, {"camera": 0, "translation": [0, 0, 3]}],
        "cameras": [{"type": "perspective", "perspective": {"yfov": 0.6, "znear": 0.01}}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}, "indices": 2, "material": 0}]}],
        "materials": [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicFactor": 0.0}}],
        "textures": [{"source": 0, "sampler": 0}], "samplers": [{"magFilter": 9728}],
        "images": [{"bufferView": 3, "mimeType": "image/png"}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [-1, -1, 0], "max": [1, 1, 0]},
            {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC2"},
            {"bufferView": 2, "componentType": 5125, "count": 6, "type": "SCALAR"}],
        "bufferViews": views, "buffers": [{"byteLength": len(blob)}],
    }
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + struct.pack("<II", len(blob), 0x004E4942) + blob
    path.write_bytes(struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)
    return path


@pytest.mark.gpu
def test_render_a_gltf_asset_with_an_environment(tmp_path):
    asset = _textured_quad_glb(tmp_path / "quad.glb")
    np.save(tmp_path / "sky.npy", np.ones((8, 16, 3), np.float32))
    result = run_render(["--scene", str(asset), "--env", str(tmp_path / "sky.npy"), "--width", "32", "--height", "32",
                         "--spp", "64", "--out", "quad.png", "--quiet"], tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    image = _png(tmp_path / "quad.png").astype(np.float64)
    # The file's camera sees the texture: red on the left half, green on the right, lit by the sky.
    left, right = image[8:24, 4:12], image[8:24, 20:28]
    assert left[..., 0].mean() > 3 * left[..., 1].mean() and right[..., 1].mean() > 3 * right[..., 0].mean()
    result = run_render(["--scene", str(asset), "--width", "16", "--height", "16", "--spp", "4", "--out", "lit.png",
                         "--quiet"], tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no lights; using a constant white environment" in result.stderr
    assert _png(tmp_path / "lit.png").mean() > 20


@pytest.mark.gpu
def test_render_on_several_gpus_by_samples_and_by_frames(tmp_path):
    import cupy

    gpus = "all" if cupy.cuda.runtime.getDeviceCount() > 1 else "0"
    result = run_render(["--gpus", gpus, "--width", "32", "--height", "32", "--spp", "32", "--out", "still.png",
                         "--quiet"], tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "32 spp on" in result.stdout and "samples 0+" in result.stdout
    assert _png(tmp_path / "still.png").mean() > 20
    result = run_render(["--gpus", gpus, "--scene", "cornell_box", "--frames", "5", "--spp-per-frame", "2",
                         "--width", "24", "--height", "24", "--out", "f.png", "--quiet"], tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wrote 5 frames" in result.stdout
    frames = [_png(tmp_path / f"f_{k:04d}.png") for k in range(5)]
    assert not np.array_equal(frames[0], frames[1])  # the camera swings


@pytest.mark.gpu
def test_render_the_material_scene(tmp_path):
    result = run_render(["--scene", "materials", "--width", "48", "--height", "27", "--spp", "4", "--out", "m.png",
                         "--quiet"], tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    image = _png(tmp_path / "m.png")
    assert image.shape == (27, 48, 3) and image.mean() > 30


def test_plans_of_the_material_scene_a_gltf_asset_and_an_environment(tmp_path):
    from optixasync.cli._render import plan_from_args
    from optixasync.cli._scene import _environment

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    plan = plan_from_args(parser.parse_args(["--scene", "materials", "--env", "0.5", "--env-scale", "2"]))
    choice = plan.scene
    assert (choice.kind, plan.out, choice.env, choice.env_scale) == ("materials", Path("materials.png"), "0.5", 2.0)
    assert _environment(choice).radiance == (1.0, 1.0, 1.0)  # one number is grey, times the scale
    asset = _textured_quad_glb(tmp_path / "quad.glb")
    plan = plan_from_args(parser.parse_args(["--scene", str(asset), "--env", "0.1,0.2,0.3"]))
    assert (plan.scene.kind, plan.scene.path, plan.out) == ("asset", asset, Path("quad.png"))
    np.testing.assert_allclose(_environment(plan.scene).radiance, (0.1, 0.2, 0.3))
    np.save(tmp_path / "sky.npy", np.full((4, 8, 3), 0.25, np.float32))
    plan = plan_from_args(parser.parse_args(["--env", str(tmp_path / "sky.npy"), "--env-scale", "4"]))
    environment = _environment(plan.scene)
    assert environment.image.shape == (4, 8, 3) and environment.scale == 4.0
