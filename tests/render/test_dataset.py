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
    assert header["layout"] == 2 and header["meshes"] == ["floor", "box"]
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


def folder_bytes(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


ALL_FORMATS = dict(outputs=("image", "radiance", "depth", "normal", "mesh_id"), formats=("png", "npz", "npy", "exr", "rle"))


def test_an_interrupted_run_resumes_to_the_same_bytes(gpu, tmp_path):
    scene = table_scene()
    calls: list[int] = []

    def stop_after_the_first_variation(done, count):
        calls.append(done)
        raise KeyboardInterrupt

    part = tmp_path / "part"
    with pytest.raises(KeyboardInterrupt):
        write_dataset(FakeContext(), scene, part, options(**ALL_FORMATS), progress=stop_after_the_first_variation)
    assert calls == [4]
    complete = sorted(int(p.stem) for p in part.glob("0*.json") if "." not in p.stem)
    # whole variations only (the frames in flight when it stopped may have been written too), the first among them
    assert complete[:4] == [0, 1, 2, 3] and all(k // 4 in {c // 4 for c in complete} for k in complete)
    assert not list(part.glob(".*partial*"))  # no half-written file left behind
    (part / "000002.depth.npy").unlink()  # a sample whose files are not all there is not complete
    first = (part / "000001.json").read_bytes()
    report = write_dataset(FakeContext(), scene, part, options(**ALL_FORMATS))
    assert 2 in report.rendered and 1 not in report.rendered and report.skipped == len(complete) - 1
    assert sorted(report.rendered + [k for k in complete if k != 2]) == list(range(10))
    assert (part / "000001.json").read_bytes() == first  # left alone
    again = write_dataset(FakeContext(), scene, part, options(**ALL_FORMATS))
    assert again.rendered == [] and again.skipped == 10
    # the resumed folder holds, byte for byte, what one uninterrupted run writes
    whole = tmp_path / "whole"
    write_dataset(FakeContext(), scene, whole, options(**ALL_FORMATS), workers=1, frames_in_flight=1)
    got, want = folder_bytes(part), folder_bytes(whole)
    assert sorted(got) == sorted(want) and len(want) == 1 + 10 * 8
    assert [name for name in want if got[name] != want[name]] == []


def test_one_pipeline_for_the_run_and_the_variations_as_table_updates(gpu, tmp_path):
    from fake_gpu import FakeDeviceScene, FakeIntegrator, FakeScheduler

    from optixasync.render._dataset import variation_of

    scene = table_scene()
    report = write_dataset(FakeContext(), scene, tmp_path, options(), frames_in_flight=3)
    assert len(FakeDeviceScene.instances) == len(FakeIntegrator.instances) == len(FakeScheduler.instances) == 1
    sched, device = FakeScheduler.instances[0], FakeDeviceScene.instances[0]
    assert sched.n == 3 and len(sched.frames) == report.variations == 3
    assert [len(f.launches) for f in sched.frames] == [1, 1, 1] and all(f.launches[0].spp == 2 for f in sched.frames)
    assert [stream for _u, stream in device.table_updates] == sched.frames  # on each frame's own stream
    for variation, (update, _stream) in enumerate(device.table_updates):
        materials, scale = variation_of(scene, options(), variation)
        assert update.light_scale == scale
        assert sorted(update.materials.values(), key=repr) == sorted(materials.values(), key=repr)
    last, _scale = variation_of(scene, options(), 2)
    assert device.updates.materials == list(last.values())
    # the last variation's batch is filled up with its last view; its samples 8 and 9 alone are written
    assert sorted(int(p.stem) for p in tmp_path.glob("0*.json")) == list(range(10))
    assert report.gpu_ms == 3 * 4.0 and report.seconds > 0 and report.samples_per_s > 0


def test_a_slow_disk_holds_the_renders_back(gpu, tmp_path, monkeypatch):
    import time

    from fake_gpu import FakeScheduler

    import optixasync.render._dataset as dataset

    real, seen = dataset.write_sample, []

    def slow(folder, o, index, arrays, meta, names):
        if index == 0:  # waits until the loop has submitted 10 frames, which backpressure must prevent
            for _ in range(200):
                if len(FakeScheduler.instances[0].frames) >= 10:
                    break
                time.sleep(0.01)
            seen.append(len(FakeScheduler.instances[0].frames))
        real(folder, o, index, arrays, meta, names)

    monkeypatch.setattr(dataset, "write_sample", slow)
    report = write_dataset(FakeContext(), table_scene(), tmp_path, options(count=40, views_per_variation=2),
                           workers=1, max_pending=2, frames_in_flight=2)
    # sample 0 in the worker and one more queued: the loop stops at the third frame's hand-over
    assert seen == [3] and report.rendered == list(range(40)) and report.disk_wait_s > 0


def test_the_sample_writer_holds_at_most_max_pending():
    import threading

    from optixasync.render._dataset_files import SampleWriter

    gate, written = threading.Event(), []
    writer = SampleWriter(lambda k, arrays, meta: (gate.wait(), written.append(k)), workers=1, max_pending=2)
    writer.submit(0, {}, {})
    writer.submit(1, {}, {})
    assert not writer._slots.acquire(blocking=False)  # a third would wait
    assert writer.done() == []
    gate.set()
    assert sorted(writer.close()) == [0, 1] and written == [0, 1]


def test_a_failed_write_stops_the_run(gpu, tmp_path, monkeypatch):
    import optixasync.render._dataset as dataset

    def full_disk(folder, o, index, arrays, meta, names):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dataset, "write_sample", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_dataset(FakeContext(), table_scene(), tmp_path, options(count=40))
    assert not list(tmp_path.glob("0*.json"))


def test_instance_masks_as_coco_rle_decode_to_the_ids(tmp_path):
    pytest.importorskip("pycocotools")
    from pycocotools import mask

    from optixasync.render._dataset_files import coco_masks

    ids = np.full((6, 8, 1), 0xFFFFFFFF, np.uint32)
    ids[1:3, 2:7] = 0
    ids[4:, :3] = 1
    masks = coco_masks(ids, ["floor", "box"])
    assert [m["mesh_id"] for m in masks] == [0, 1] and [m["name"] for m in masks] == ["floor", "box"]
    for m in masks:
        rle = {"size": m["segmentation"]["size"], "counts": m["segmentation"]["counts"].encode()}
        np.testing.assert_array_equal(mask.decode(rle), ids[..., 0] == m["mesh_id"])
    assert masks[0]["area"] == 10 and masks[0]["bbox"] == [2.0, 1.0, 5.0, 2.0]


def test_rle_without_pycocotools_names_the_extra(gpu, tmp_path, monkeypatch):
    import sys

    from optixasync.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "pycocotools", None)
    with pytest.raises(MissingExtraError, match=r"optixasync\[dataset\]"):
        write_dataset(FakeContext(), table_scene(), tmp_path, options(formats=("png", "rle")))


@pytest.mark.parametrize("encoder", ["pillow", "imagecodecs"])
def test_each_png_encoder_writes_the_pixels(tmp_path, encoder):
    if encoder == "imagecodecs":
        pytest.importorskip("imagecodecs")
    from optixasync.render._dataset_files import write_png

    rgb = np.random.default_rng(5).integers(0, 256, (7, 9, 3), dtype=np.uint8)
    write_png(tmp_path / "a.png", rgb, 1, encoder)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "a.png")), rgb)


def test_the_png_encoder_is_an_option_resolved_at_creation(monkeypatch, tmp_path, gpu):
    import importlib.util

    from optixasync.errors import MissingExtraError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "imagecodecs" else real(name, *a))
    assert options().png_encoder == "pillow" and options(png_encoder="pillow").png_encoder == "pillow"
    with pytest.raises(MissingExtraError, match=r"optixasync\[dataset\]"):
        write_dataset(FakeContext(), table_scene(), tmp_path, options(png_encoder="imagecodecs"))
    with pytest.raises(ValueError, match="png_encoder must be auto, imagecodecs or pillow"):
        options(png_encoder="cv2")


def test_arrays_are_stored_compact(gpu, tmp_path):
    write_dataset(FakeContext(), table_scene(), tmp_path, options(count=2, outputs=("image", "normal", "depth"),
                                                                 formats=("png", "npy")))
    header = json.loads((tmp_path / "dataset.json").read_text())
    assert header["outputs"]["normal"]["channels"] == 3 and header["outputs"]["depth"]["channels"] == 1
    assert np.load(tmp_path / "000001.normal.npy").shape == (6, 8, 3)
    assert np.load(tmp_path / "000001.depth.npy").shape == (6, 8)


def test_npy_alone_holds_the_image_too(gpu, tmp_path):
    write_dataset(FakeContext(), table_scene(), tmp_path, options(count=2, outputs=("image", "radiance", "depth"),
                                                                 formats=("npy",)))
    image = np.load(tmp_path / "000001.image.npy")
    assert image.shape == (6, 8, 4) and image.dtype == np.uint8 and (image[..., 3] == 255).all()
    assert np.load(tmp_path / "000001.radiance.npy").shape == (6, 8, 3)
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.exr"))


def test_exr_without_openexr_names_the_extra_before_any_render(gpu, tmp_path, monkeypatch):
    import sys

    from fake_gpu import FakeScheduler

    from optixasync.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "OpenEXR", None)
    with pytest.raises(MissingExtraError, match=r"optixasync\[exr\]"):
        write_dataset(FakeContext(), table_scene(), tmp_path, options(outputs=("radiance",), formats=("exr",)))
    assert FakeScheduler.instances == []


def test_npz_bytes_do_not_depend_on_the_time(tmp_path, monkeypatch):
    import time

    from optixasync.render._dataset_files import write_npz

    arrays = {"depth": np.arange(12, dtype=np.float32).reshape(3, 4), "mesh_id": np.ones((3, 4), np.uint32)}
    write_npz(tmp_path / "a.npz", arrays)
    monkeypatch.setattr(time, "localtime", lambda *a: time.struct_time((2031, 5, 6, 7, 8, 9, 0, 1, 0)))
    monkeypatch.setattr(time, "time", lambda: 1.95e9)
    write_npz(tmp_path / "b.npz", arrays)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz") as loaded:
        np.testing.assert_array_equal(loaded["depth"], arrays["depth"])
        assert loaded["mesh_id"].dtype == np.uint32


def test_a_folder_of_other_options_is_refused(gpu, tmp_path):
    write_dataset(FakeContext(), table_scene(), tmp_path, options(count=2))
    with pytest.raises(ValueError, match=r"made with other options \(seed differ\)"):
        write_dataset(FakeContext(), table_scene(), tmp_path, options(count=2, seed=4))
    with pytest.raises(ValueError, match=r"\(png_encoder differ\)"):  # the files' bytes would differ
        write_dataset(FakeContext(), table_scene(), tmp_path, options(count=2, png_encoder="pillow"
                                                                      if options().png_encoder == "imagecodecs"
                                                                      else "imagecodecs"))


@pytest.mark.parametrize("kwargs, match", [
    ({"count": 0}, "dataset count"),
    ({"outputs": ("image", "zbuffer")}, "unknown output 'zbuffer'"),
    ({"outputs": ("rays",)}, "per-pixel outputs"),
    ({"formats": ("jpg",)}, "formats are png, npz, npy, exr, rle"),
    ({"formats": ("rle",), "outputs": ("image",)}, "rle .instance masks. needs the mesh_id output"),
    ({"png_compression": 10}, "png_compression"),
    ({"light_scale": (0, 1)}, "light_scale must be > 0"),
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
    (["--formats", "gif"], "formats are png, npz, npy, exr, rle"),
    (["--scene", "nowhere.glb"], "nowhere.glb"),
    (["--workers", "0"], "--workers must be >= 1"),
    (["--png-compression", "12"], "png_compression"),
])
def test_the_command_refuses_bad_input_before_the_gpu(tmp_path, capsys, argv, match):
    from optixasync import cli

    status = cli.main(["dataset", "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert status == cli.EXIT_BAD_INPUT and err.startswith("optixasync dataset: error: ") and match in err
    assert not (tmp_path / "out").exists()


def test_the_writer_over_the_real_pipeline_on_the_stub_cuda_leaves_no_memory(tmp_path):
    """The real device scene, placement (its rewrites through pinned staging), scheduler and pipeline."""
    from optixasync.scene import cornell_box
    from optixasync.testing import StubCuda, StubRender

    scene = cornell_box()
    scene.environment = Environment(radiance=(0.1, 0.1, 0.1))  # its record rewritten too
    with StubCuda() as stub, StubRender(stub):
        ctx = stub.context()
        report = write_dataset(ctx, scene, tmp_path, DatasetOptions(count=5, width=8, height=8, spp=1,
                                                                    views_per_variation=2))
        assert report.rendered == [0, 1, 2, 3, 4] and report.variations == 3
        ctx.close()
        assert stub.used_bytes() == 0
    assert sorted(p.name for p in tmp_path.glob("0*.json")) == [f"{k:06d}.json" for k in range(5)]


def test_the_command_writes_a_dataset_over_the_stand_ins(gpu, tmp_path, capsys, monkeypatch):
    import optixasync
    from optixasync import cli

    monkeypatch.setattr(optixasync, "Context", FakeContext)

    status = cli.main(["dataset", "--out", str(tmp_path), "--count", "5", "--width", "8", "--height", "6",
                       "--spp", "1", "--views-per-variation", "2", "--formats", "png,npy", "--workers", "2",
                       "--quiet"])
    captured = capsys.readouterr()
    out = captured.out
    assert status == 0, captured.err
    assert "5 samples rendered in 3 variations, 0 found complete" in out and "samples/s" in out
    assert sorted(p.name for p in tmp_path.glob("000004*")) == ["000004.depth.npy", "000004.json",
                                                                 "000004.mesh_id.npy", "000004.png"]
