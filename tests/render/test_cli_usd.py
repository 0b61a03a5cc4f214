"""``optixasync render --scene x.usda``: the one scene resolver reads USD stages, stills and ``--frames``.

Over the stand-ins of the GPU (``fake_gpu.py``): what the command hands the device is checked, not pixels.
"""

from __future__ import annotations

import numpy as np
import pytest
from fake_gpu import FakeDeviceScene, FakeScheduler, install

pytest.importorskip("pxr", reason="the usd extra (usd-core) is not installed")
from pxr import Gf, Usd, UsdGeom, UsdLux  # noqa: E402

from optixasync import cli  # noqa: E402
from optixasync.cli._scene import choose_scene  # noqa: E402


@pytest.fixture
def fake_gpu(monkeypatch):
    install(monkeypatch)


def sliding_stage(path, light=True):
    stage = Usd.Stage.CreateNew(str(path))
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(24)
    stage.SetTimeCodesPerSecond(24)
    mover = UsdGeom.Xform.Define(stage, "/Mover")
    op = mover.AddTranslateOp()
    op.Set(Gf.Vec3d(0, 0, 0), 0)
    op.Set(Gf.Vec3d(2, 0, 0), 24)
    for name, parent in (("Tri", "/Mover"), ("Still", "")):
        mesh = UsdGeom.Mesh.Define(stage, f"{parent}/{name}")
        mesh.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (0, 1, 0)])
        mesh.CreateFaceVertexCountsAttr([3])
        mesh.CreateFaceVertexIndicesAttr([0, 1, 2])
    UsdGeom.Camera.Define(stage, "/Cam").AddTranslateOp().Set(Gf.Vec3d(0, 0, 5))
    if light:
        UsdLux.DistantLight.Define(stage, "/Sun").CreateNormalizeAttr(True)
    stage.GetRootLayer().Save()
    return path


def test_usd_frames_play_the_time_samples(fake_gpu, tmp_path, capsys):
    path = sliding_stage(tmp_path / "slide.usda")
    status = cli.main(["render", "--scene", str(path), "--frames", "3", "--dt", "0.25", "--width", "8", "--height",
                       "6", "--spp-per-frame", "2", "--out", str(tmp_path / "f.png"), "--quiet"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    (sched,) = FakeScheduler.instances
    (device,) = FakeDeviceScene.instances
    assert device.scene.instanced == [0]  # the moving mesh is an instance; the still one is flattened
    assert [stream for _, stream in device.placements] == sched.frames
    np.testing.assert_allclose([m[0, :, 3] for m, _ in device.placements], [[0, 0, 0], [0.5, 0, 0], [1, 0, 0]])
    assert len(list(tmp_path.glob("f_*.png"))) == 3


def test_usd_still_and_an_unlit_stage(fake_gpu, tmp_path, capsys):
    path = sliding_stage(tmp_path / "dark.usdc", light=False)
    status = cli.main(["render", "--scene", str(path), "--width", "8", "--height", "6", "--spp", "2", "--out",
                       str(tmp_path / "s.png"), "--quiet"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "has no lights; using a constant white environment" in captured.err
    (device,) = FakeDeviceScene.instances
    assert len(device.scene.meshes) == 2 and device.scene.environment is not None


def test_usd_bad_input_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "bad.usda").write_text("#usda 1.0\ndef Mesh \"M\" {\n int[] faceVertexCounts = [3,\n}\n")
    status = cli.main(["render", "--scene", str(tmp_path / "bad.usda"), "--width", "8", "--height", "6",
                       "--out", str(tmp_path / "s.png")])
    err = capsys.readouterr().err
    assert status == 2 and "malformed USD layer" in err and len(err.strip().splitlines()) == 1
    import argparse

    with pytest.raises(ValueError, match="scene file not found"):
        choose_scene(argparse.Namespace(scene=str(tmp_path / "none.usdz")))
