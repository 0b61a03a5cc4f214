"""The dataset writer on the CPU, over the stand-ins of the GPU: its files, their JSON, and resuming a run.

The renders are the stand-in integrator's (constant images); what is tested is the writer's: the layout
``dataset.json`` describes, the cameras' intrinsics and poses round-tripping through JSON, every sample written
once across an interruption and a resumed run, and a folder of other options refused.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from fake_gpu import FakeContext, install
from PIL import Image

from optixasync.render import DatasetOptions, Views, write_dataset
from optixasync.render._dataset import _centre_and_radius, camera_of
from optixasync.scene import Camera, Environment, Material, Scene, cube, rectangle


@pytest.fixture
def gpu(monkeypatch):
    install(monkeypatch)


def table_scene() -> Scene:
    floor = rectangle(np.array([[2, 0, 0, 0], [0, 0, 2, 0], [0, -2, 0, 0]]), Material((0.5, 0.5, 0.5)), "floor")
    box = cube(np.diag([0.3, 0.3, 0.3, 1.0]), Material((0.8, 0.2, 0.1)), "box")
    scene = Scene([floor, box], Camera((0, 1, 3), (0, 0, 0)))
    scene.environment = Environment(radiance=(0.5, 0.6, 0.7))
    return scene


def options(**kw) -> DatasetOptions:
    base = dict(count=10, width=8, height=6, spp=2, outputs=("image", "depth", "mesh_id"), views_per_variation=4,
                seed=3)
    return DatasetOptions(**{**base, **kw})


def test_the_files_and_their_json(gpu, tmp_path):
    scene = table_scene()
    report = write_dataset(FakeContext(), scene, tmp_path, options())
    assert report.rendered == list(range(10)) and report.skipped == 0 and report.variations == 3
    header = json.loads((tmp_path / "dataset.json").read_text())
    assert header["layout"] == 1 and header["meshes"] == ["floor", "box"]
    assert header["outputs"]["depth"] == {"dtype": "float32", "channels": 1,
                                          "meaning": header["outputs"]["depth"]["meaning"]}
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [f"{k:06d}.json" for k in range(10)] + ["dataset.json"]
    centre, radius = _centre_and_radius(scene)
    for k in (0, 7):
        meta = json.loads((tmp_path / f"{k:06d}.json").read_text())
        expected = camera_of(options(), k, centre, radius)
        np.testing.assert_allclose(meta["K"], expected["K"])
        np.testing.assert_allclose(meta["cam_to_world_opencv"], expected["cam_to_world_opencv"])
        pose_gl = np.asarray(meta["cam_to_world_opengl"])
        np.testing.assert_allclose(pose_gl[:3, 2], -np.asarray(meta["cam_to_world_opencv"])[:3, 2])  # looks along -z
        assert meta["files"] == {"image": f"{k:06d}.png", "arrays": f"{k:06d}.npz"} and meta["variation"] == k // 4
        image = np.asarray(Image.open(tmp_path / meta["files"]["image"]))
        assert image.shape == (6, 8, 3) and image.dtype == np.uint8
        with np.load(tmp_path / meta["files"]["arrays"]) as arrays:
            assert sorted(arrays) == ["depth", "mesh_id"]
            assert arrays["depth"].shape == (6, 8) and arrays["mesh_id"].dtype == np.uint32
    # the intrinsics and poses make the views again: the camera looks at the scene's centre
    meta = json.loads((tmp_path / "000003.json").read_text())
    views = Views.pinhole(meta["K"], np.asarray(meta["cam_to_world_opencv"])[None])
    forward = views.poses[0][:, 2]
    to_centre = centre - views.poses[0][:, 3]
    np.testing.assert_allclose(forward, to_centre / np.linalg.norm(to_centre), atol=1e-9)


def test_an_interrupted_run_resumes_without_duplicates(gpu, tmp_path):
    scene = table_scene()
    calls: list[int] = []

    def stop_after_the_first_variation(done, count):
        calls.append(done)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_dataset(FakeContext(), scene, tmp_path, options(), progress=stop_after_the_first_variation)
    assert calls == [4] and sorted(p.stem for p in tmp_path.glob("0*.json")) == [f"{k:06d}" for k in range(4)]
    (tmp_path / "000002.npz").unlink()  # a sample whose files are not all there is not complete
    first = json.loads((tmp_path / "000001.json").read_text())
    report = write_dataset(FakeContext(), scene, tmp_path, options())
    assert report.skipped == 3 and report.rendered == [2, 4, 5, 6, 7, 8, 9] and report.variations == 3
    assert json.loads((tmp_path / "000001.json").read_text()) == first  # left alone
    again = write_dataset(FakeContext(), scene, tmp_path, options())
    assert again.rendered == [] and again.skipped == 10
    # the resumed folder holds what one uninterrupted run writes
    whole = tmp_path / "whole"
    write_dataset(FakeContext(), scene, whole, options())
    for k in range(10):
        assert json.loads((whole / f"{k:06d}.json").read_text()) == json.loads((tmp_path / f"{k:06d}.json").read_text())


def test_a_folder_of_other_options_is_refused(gpu, tmp_path):
    write_dataset(FakeContext(), table_scene(), tmp_path, options(count=2))
    with pytest.raises(ValueError, match="made with other options"):
        write_dataset(FakeContext(), table_scene(), tmp_path, options(count=2, seed=4))


@pytest.mark.parametrize("kwargs, match", [
    ({"count": 0}, "dataset count"),
    ({"outputs": ("image", "zbuffer")}, "unknown output 'zbuffer'"),
    ({"outputs": ("rays",)}, "per-pixel outputs"),
    ({"formats": ("jpg",)}, "formats are png, npz and exr"),
    ({"fov": (10, 200)}, "fov must be inside"),
    ({"distance": (3, 1)}, "low <= high"),
    ({"color_jitter": 2}, "color_jitter"),
])
def test_bad_dataset_options(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        options(**kwargs)


@pytest.mark.parametrize("argv, match", [
    (["--count", "0"], "dataset count must be >= 1"),
    (["--outputs", "depth,bogus"], "unknown output 'bogus'"),
    (["--formats", "gif"], "formats are png, npz and exr"),
    (["--scene", "nowhere.glb"], "nowhere.glb"),
])
def test_the_command_refuses_bad_input_before_the_gpu(tmp_path, capsys, argv, match):
    from optixasync import cli

    status = cli.main(["dataset", "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert status == cli.EXIT_BAD_INPUT and err.startswith("optixasync dataset: error: ") and match in err
    assert not (tmp_path / "out").exists()
