"""Saving and recording what a viewer shows: PNG, linear EXR, MP4 clips, camera paths (CPU; no server needed)."""

from __future__ import annotations

import io
import json
import sys
import threading
import time

import numpy as np
import pytest

from optixasync.errors import MissingExtraError
from optixasync.viewer import CameraPath, CameraPose, Capture, CpuFrameSource, Viewer, ViewerState
from optixasync.viewer._mailbox import FrameMailbox
from optixasync.viewer._messages import parse_message


def wait_until(predicate, timeout: float = 10.0) -> None:
    end = time.perf_counter() + timeout
    while not predicate():
        assert time.perf_counter() < end, "timed out"
        time.sleep(0.01)


def gradient(height: int = 24, width: int = 32) -> np.ndarray:
    image = np.zeros((height, width, 4), np.uint8)
    image[..., 0] = np.linspace(0, 255, width, dtype=np.uint8)[None, :]
    image[..., 1] = np.linspace(0, 255, height, dtype=np.uint8)[:, None]
    image[..., 2], image[..., 3] = 90, 255
    return image


def capture_of(image: np.ndarray | None, tmp_path, source=None) -> Capture:
    mailbox = FrameMailbox()
    if image is not None:
        mailbox.put(image, {"frame_id": 1, "camera_id": 1, "samples": 1})
        mailbox.take()  # taken by the pump: the latest frame is still what a capture saves
    return Capture(ViewerState(), mailbox, source, tmp_path)


def test_save_png_writes_the_newest_frame(tmp_path):
    from PIL import Image

    image = gradient()
    capture = capture_of(image, tmp_path)
    path = capture.save_image()
    assert path.parent == tmp_path and path.suffix == ".png"
    with Image.open(path) as picture:
        assert np.array_equal(np.asarray(picture.convert("RGBA")), image)
    named = capture.save_image(tmp_path / "shots" / "a.PNG")
    assert named.is_file() and capture.new_path(".png") != path


def test_save_refuses_before_a_frame_and_a_bad_suffix(tmp_path):
    with pytest.raises(LookupError, match="no frame yet"):
        capture_of(None, tmp_path).save_image()
    with pytest.raises(ValueError, match="unsupported image format"):
        capture_of(gradient(), tmp_path).save_image(tmp_path / "a.jpg")


def read_exr(path) -> np.ndarray:
    openexr = pytest.importorskip("OpenEXR", reason="reading EXR needs OpenEXR (pip install 'optixasync[exr]')")
    with openexr.File(str(path)) as exr:
        channels = exr.channels()
        if "RGB" in channels:
            return np.asarray(channels["RGB"].pixels, np.float32)
        return np.stack([np.asarray(channels[c].pixels, np.float32) for c in "RGB"], axis=-1)


def test_save_exr_from_the_8_bit_image_uses_the_inverse_srgb_curve(tmp_path):
    from optixasync.io import srgb_to_linear

    image = gradient()
    path = capture_of(image, tmp_path).save_image(tmp_path / "frame.exr")
    assert np.allclose(read_exr(path), srgb_to_linear(image[..., :3]), atol=1e-6)


def test_save_exr_from_the_cpu_source_keeps_its_linear_values(tmp_path):
    source = CpuFrameSource(40, 30, max_samples=4)
    viewer = Viewer(source, directory=tmp_path)
    source.start(viewer)  # publishes into the viewer's mailbox without a server
    try:
        wait_until(lambda: viewer.stats()["published"] >= 4)  # one sample per frame: converged at 4
    finally:
        source.stop()
    linear = source.linear_image()
    assert linear.shape == (30, 40, 3) and linear.dtype == np.float32 and linear.max() > 1.0  # the sun's highlights
    assert viewer.capture.linear_image()[1] is True
    path = viewer.capture.save_image(tmp_path / "linear.exr")
    assert np.allclose(read_exr(path), linear, atol=1e-6)


def test_camera_path_interpolates_saves_and_loads(tmp_path):
    a = CameraPose((0.0, 1.0, 5.0), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0), 40.0)
    b = CameraPose((2.0, 1.0, 5.0), (0.0, 1.0, 0.0), (0.0, 1.0, 0.0), 60.0)
    path = CameraPath([(0.0, a), (2.0, b)])
    mid = path.pose_at(0.5)
    assert mid.eye == pytest.approx((0.5, 1.0, 5.0)) and mid.fov == pytest.approx(45.0)
    assert path.pose_at(-1) == a and path.pose_at(9) == b and path.duration == 2.0
    loaded = CameraPath.load(path.save(tmp_path / "p" / "path.json"))
    assert loaded == path


@pytest.mark.parametrize("text, match", [
    ("not json", "not JSON"),
    ('{"format": "other"}', "not a camera path"),
    ('{"format": "optixasync-camera-path", "keys": []}', "at least one key"),
    ('{"format": "optixasync-camera-path", "keys": [{"t": 1, "eye": [0,0,1], "target": [0,0,0], "fov": 40},'
     ' {"t": 1, "eye": [0,0,2], "target": [0,0,0], "fov": 40}]}', "increase"),
    ('{"format": "optixasync-camera-path", "keys": [{"t": 0, "eye": [0,0], "target": [0,0,0], "fov": 40}]}',
     "eye must be 3 numbers"),
    ('{"format": "optixasync-camera-path", "keys": [{"t": 0, "eye": [0,0,NaN], "target": [0,0,0], "fov": 40}]}',
     "finite"),
    ('{"format": "optixasync-camera-path", "keys": [{"t": 0, "eye": [0,0,1], "target": [0,0,0]}]}', "fov"),
    ('{"format": "optixasync-camera-path", "keys": [{"t": 0, "eye": [0,0,1], "target": [0,0,0], "fov": 1,'
     ' "x": 1}]}', "expected an object"),
])
def test_a_bad_camera_path_file_is_a_value_error(tmp_path, text, match):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        CameraPath.load(path)


def test_a_recorded_path_plays_back_to_where_it_ended(tmp_path):
    state = ViewerState()
    capture = Capture(state, FrameMailbox(), None, tmp_path)
    start = state.snapshot().camera
    capture.record_path()
    for _ in range(5):
        state.move_camera("orbit", 0.05, 0.01)
        time.sleep(0.02)
    end = state.snapshot().camera
    path = capture.stop_path()
    assert len(path) >= 3 and path.keys[0][1] == start and path.keys[-1][1] == end
    state.move_camera("reset")
    seen = []
    watcher = threading.Thread(target=lambda: [seen.append(state.wait_for_change(state.version, 1.0).camera)
                                               for _ in range(3)])
    watcher.start()
    player = capture.play_path(speed=4.0)
    assert player.wait(10) and player.poses_set >= 2
    watcher.join()
    assert state.snapshot().camera.eye == pytest.approx(end.eye, abs=1e-9)
    assert seen  # the camera moved while the path played
    with pytest.raises(RuntimeError, match="no camera path"):
        capture.stop_path()
    with pytest.raises(LookupError):
        Capture(state, FrameMailbox()).play_path()


def publishing(mailbox: FrameMailbox, image: np.ndarray, stop: threading.Event) -> threading.Thread:
    def run() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            mailbox.put(image.copy(), {"frame_id": k, "camera_id": 1, "samples": k})
            time.sleep(0.01)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_clip_records_the_frames_as_mp4(tmp_path):
    ffmpeg = pytest.importorskip("imageio_ffmpeg", reason="clips need imageio-ffmpeg (pip install 'optixasync[video]')")
    image = gradient(48, 64)
    mailbox, stop = FrameMailbox(), threading.Event()
    capture = Capture(ViewerState(), mailbox, None, tmp_path)
    thread = publishing(mailbox, image, stop)
    try:
        clip = capture.record_clip(fps=20)
        with pytest.raises(RuntimeError, match="already recording"):
            capture.record_clip()
        wait_until(lambda: clip.frames_written >= 8)
        path = capture.stop_clip()
    finally:
        stop.set()
        thread.join()
    assert path.suffix == ".mp4" and path.stat().st_size > 0
    reader = ffmpeg.read_frames(str(path))
    meta = reader.__next__()
    frames = [np.frombuffer(f, np.uint8).reshape(48, 64, 3) for f in reader]
    assert meta["size"] == (64, 48) and len(frames) == clip.frames_written
    assert np.abs(frames[-1].astype(int) - image[..., :3]).mean() < 12  # H.264 is lossy; the picture is the same


def test_a_clip_without_frames_or_without_the_extra_fails_clearly(tmp_path, monkeypatch):
    pytest.importorskip("imageio_ffmpeg", reason="clips need imageio-ffmpeg (pip install 'optixasync[video]')")
    capture = Capture(ViewerState(), FrameMailbox(), None, tmp_path)
    capture.record_clip(fps=50)
    time.sleep(0.05)
    with pytest.raises(RuntimeError, match="no frame was recorded"):
        capture.stop_clip()
    with pytest.raises(ValueError, match=".mp4"):
        capture.record_clip(tmp_path / "clip.avi")
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    with pytest.raises(MissingExtraError, match=r"optixasync\[video\]"):
        capture.record_clip()


def test_capture_commands_are_checked_and_carried_out(tmp_path):
    capture = capture_of(gradient(), tmp_path)
    reply = capture.handle(parse_message(json.dumps({"type": "save", "format": "png"})))
    assert (tmp_path / reply["file"]).is_file() and reply["note"] == ""
    pytest.importorskip("OpenEXR", reason="EXR files need OpenEXR (pip install 'optixasync[exr]')")
    reply = capture.handle(parse_message(json.dumps({"type": "save", "format": "exr"})))
    assert reply["file"].endswith(".exr") and reply["note"] == "from the 8-bit image"  # no linear source here
    capture.handle(parse_message('{"type": "record", "what": "path", "on": true}'))
    reply = capture.handle(parse_message('{"type": "record", "what": "path", "on": false}'))
    assert CameraPath.load(tmp_path / reply["file"]).duration >= 0
    capture.handle(parse_message('{"type": "play", "on": true}'))
    capture.handle(parse_message('{"type": "play", "on": false}'))
    assert capture.player is None
    for bad in ('{"type": "save", "format": "jpg"}', '{"type": "save"}', '{"type": "record", "what": "clip"}',
                '{"type": "record", "what": "x", "on": true}', '{"type": "play", "on": 1}',
                '{"type": "save", "format": "png", "path": "/etc/passwd"}'):
        with pytest.raises(ValueError):
            parse_message(bad)


def test_the_repr_of_a_received_frame_is_its_jpeg():
    from PIL import Image

    from optixasync.viewer._client import ReceivedFrame
    from optixasync.viewer._encode import JpegEncoder

    data = JpegEncoder(90, "pillow").encode(gradient())
    frame = ReceivedFrame({"mime": "image/jpeg"}, data, 0.0)
    with Image.open(io.BytesIO(frame._repr_jpeg_())) as picture:
        assert picture.size == (32, 24)


def test_save_messages_are_bounded_per_minute_for_all_peers(tmp_path):
    """Any peer could send unlimited saves (13 MB of PNGs in 10 s at 1080p): at most saves_per_minute a minute."""
    capture = capture_of(gradient(), tmp_path)
    now = [1000.0]
    capture._clock = lambda: now[0]  # the minute, on a clock of the test's
    capture.saves_per_minute = 3
    save = parse_message('{"type": "save", "format": "png"}')
    names = {capture.handle(save)["file"] for _ in range(3)}
    with pytest.raises(RuntimeError, match="at most 3 a minute"):
        capture.handle(save)
    assert len(names) == 3 and len(list(tmp_path.glob("*.png"))) == 3
    now[0] += 61.0  # a minute later
    assert capture.handle(save)["file"] not in names
