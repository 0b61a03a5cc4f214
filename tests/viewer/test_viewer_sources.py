"""Frame sources and the publish boundary, without a server: CPU renderer, callback source, mailbox."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import pytest

from optixasync.viewer import (
    CallbackFrameSource,
    CpuFrameSource,
    CpuRenderer,
    FrameMeta,
    FrameSource,
    NullSink,
    Settings,
    Viewer,
)
from optixasync.viewer._mailbox import FrameMailbox


class RecordingSink(NullSink):
    """Keeps every published frame's meta (and the last image)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.metas: list[FrameMeta] = []
        self.image = None

    def publish(self, image, meta) -> None:
        super().publish(image, meta)
        self.metas.append(meta)
        self.image = image


def wait_until(predicate, timeout: float = 10.0) -> None:
    end = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > end:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def test_cpu_renderer_accumulates_and_restarts_on_camera_change():
    renderer = CpuRenderer(seed=1)
    settings = Settings(width=48, height=32, max_depth=3)
    camera = CpuRenderer.default_camera()
    renderer.add_samples(camera, settings, 1)
    one = renderer.image().astype(np.float32)
    renderer.add_samples(camera, settings, 31)
    many = renderer.image().astype(np.float32)
    assert renderer.samples == 32
    assert many.shape == (32, 48, 4) and (many[..., 3] == 255).all()
    # converging: the noise of one sample is larger than the change between 32 and 48 samples
    renderer.add_samples(camera, settings, 16)
    more = renderer.image().astype(np.float32)
    assert np.abs(one - more).mean() > 2 * np.abs(many - more).mean()
    moved = type(camera)((1.0, 2.0, 7.0), camera.target, camera.up, camera.fov)
    renderer.add_samples(moved, settings, 1)
    assert renderer.samples == 1
    assert 20 < many[..., :3].mean() < 250  # not black, not white


def test_denoise_smooths_the_image():
    renderer = CpuRenderer(seed=2)
    settings = Settings(width=64, height=48, max_depth=2)
    renderer.add_samples(CpuRenderer.default_camera(), settings, 1)
    rough = renderer.image(False).astype(np.float32)
    smooth = renderer.image(True).astype(np.float32)

    def roughness(image):
        return np.abs(np.diff(image[..., :3], axis=1)).mean()

    assert roughness(smooth) < 0.8 * roughness(rough)


def test_cpu_source_follows_the_state():
    source = CpuFrameSource(40, 30, max_samples=10**9)
    assert isinstance(source, FrameSource)
    sink = RecordingSink(source.initial_camera, source.initial_settings)
    source.start(sink)
    try:
        wait_until(lambda: len(sink.metas) >= 5)
        metas = list(sink.metas)
        assert [m.frame_id for m in metas] == list(range(1, len(metas) + 1))
        assert all(m.camera_id == 1 for m in metas)
        assert [m.samples for m in metas[:5]] == [1, 2, 3, 4, 5]
        version = sink.state.move_camera("orbit", 0.2, 0.0).version
        wait_until(lambda: sink.metas[-1].camera_id == version)
        first_new = next(m for m in sink.metas if m.camera_id == version)
        assert first_new.samples == 1  # accumulation restarted
        version = sink.state.update_settings(spp=3, denoise=True, width=20, height=16).version
        wait_until(lambda: sink.metas[-1].camera_id == version)
        assert sink.metas[-1].denoise and sink.image.shape == (16, 20, 4)
        assert source.last_state.settings.spp == 3
    finally:
        source.stop()
    assert not source.running and source.error is None


def test_converged_cpu_source_sleeps_until_the_state_changes():
    source = CpuFrameSource(16, 16, max_samples=4)
    sink = RecordingSink(source.initial_camera, source.initial_settings)
    source.start(sink)
    try:
        wait_until(lambda: sink.metas and sink.metas[-1].samples == 4)
        count = len(sink.metas)
        time.sleep(0.2)
        assert len(sink.metas) == count  # idle: nothing new to show
        sink.state.move_camera("zoom", 1.0)
        wait_until(lambda: len(sink.metas) > count)
        assert sink.metas[-1].samples <= 4 and sink.metas[-1].camera_id == 2
    finally:
        source.stop()


def test_callback_source_counts_frames_per_state():
    def render(view):
        return np.full((8, 8, 3), view.version % 256, np.uint8)

    source = CallbackFrameSource(render, fps_limit=500)
    sink = RecordingSink()
    source.start(sink)
    try:
        wait_until(lambda: len(sink.metas) >= 3)
        sink.state.update_settings(spp=2)
        wait_until(lambda: sink.metas[-1].camera_id == 2)
    finally:
        source.stop()
    first_of_new = next(m for m in sink.metas if m.camera_id == 2)
    assert first_of_new.samples == 1 and sink.metas[2].samples == 3


def test_frame_meta_from_a_mapping_keeps_unknown_keys_as_extra():
    meta = FrameMeta.coerce({"frame_id": 3, "camera_id": 2, "samples": 9, "fps": float("nan"), "gpu_busy": 0.99,
                             "render_ms": 1.5})
    assert meta.frame_id == 3 and meta.extra == {"render_ms": 1.5}
    stats = meta.stats()
    assert stats["fps"] is None and stats["gpu_busy"] == 0.99 and stats["render_ms"] == 1.5


def test_mailbox_keeps_only_the_newest_and_counts_drops():
    box = FrameMailbox()
    images = [np.zeros((2, 2, 4), np.uint8) for _ in range(3)]
    refs = [weakref.ref(a) for a in images]
    for k, image in enumerate(images):
        box.put(image, {"frame_id": k})
    del images, image
    gc.collect()
    assert box.published == 3 and box.dropped == 2
    assert refs[0]() is None and refs[1]() is None  # replaced frames are let go at once
    frame = box.take()
    assert frame is not None and frame.seq == 3 and frame.meta == {"frame_id": 2}
    woken = threading.Event()
    assert box.take(woken.set) is None
    box.put(np.zeros((2, 2, 3), np.uint8), {})
    assert woken.is_set()


def test_publish_checks_the_image_and_never_waits_without_a_server():
    viewer = Viewer()
    with pytest.raises(ValueError):
        viewer.publish(np.zeros((4, 4), np.uint8), {})
    with pytest.raises(ValueError):
        viewer.publish(np.zeros((4, 4, 3), np.float32), {})
    with pytest.raises(TypeError):
        viewer.publish([[0]], {})
    image = np.zeros((1080, 1920, 4), np.uint8)
    times = []
    for k in range(2000):
        start = time.perf_counter()
        viewer.publish(image, FrameMeta(k, 1, k))
        times.append(time.perf_counter() - start)
    assert viewer.stats()["published"] == 2000 and viewer.stats()["dropped"] == 1999
    assert float(np.median(times)) < 1e-4  # microseconds: no copy, no encode, no wait


def test_numpy_numbers_in_frame_meta_become_json_numbers():
    import json

    meta = FrameMeta(np.int64(4), 1, np.int32(16), fps=np.float32(59.5), frames_in_flight=np.int64(2),
                     gpu_busy=np.float64("nan"), submit_ms=np.float32(0.25), extra={"render_ms": np.float32(1.5)})
    stats = meta.stats()
    assert stats == {"fps": 59.5, "frames_in_flight": 2, "gpu_busy": None, "submit_ms": 0.25, "denoise": False,
                     "render_ms": 1.5}
    assert all(type(v) in (int, float, bool, type(None)) for v in stats.values())
    json.dumps(stats)  # what the encoder thread does with every frame


def test_publish_refuses_meta_without_its_ids():
    viewer = Viewer()
    image = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match="frame_id"):
        viewer.publish(image, {"camera_id": 1, "samples": 1})
    with pytest.raises(TypeError, match="meta"):
        viewer.publish(image, 7)
    assert viewer.stats()["published"] == 0
