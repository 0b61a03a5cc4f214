"""The notebook widget's kernel side without a browser: the comm messages, the backpressure, the threads."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from optixasync.errors import MissingExtraError
from optixasync.notebook._session import WidgetSession
from optixasync.viewer import CpuFrameSource
from optixasync.viewer._wire import split_payload


def wait_until(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    end = time.perf_counter() + timeout
    while not predicate():
        assert time.perf_counter() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


class Page:
    """What the page receives on the comm."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.frames: list[dict] = []
        self.texts: list[dict] = []

    def send(self, content: dict, buffers: list[bytes] | None) -> None:
        with self.lock:
            if content["kind"] == "frame":
                assert buffers and len(buffers) == 1
                self.frames.append(split_payload(buffers[0])[0])
            else:
                assert content["kind"] == "text" and buffers is None
                self.texts.append(json.loads(content["text"]))


def optixasync_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("optixasync"))


@pytest.fixture
def session(tmp_path):
    page = Page()
    running = WidgetSession(page.send, CpuFrameSource(48, 32, max_samples=10**9), directory=tmp_path)
    running.page = page
    yield running
    running.close()


def send_input(session: WidgetSession, message: dict) -> None:
    session.on_message({"kind": "input", "text": json.dumps(message)})


def test_a_view_gets_hello_then_frames_paced_by_its_acks(session):
    page = session.page
    time.sleep(0.2)
    assert page.frames == [] and session.stats()["published"] > 0  # no view yet: nothing is encoded or sent
    session.on_message({"kind": "connect"})
    wait_until(lambda: len(page.frames) == 2, what="two frames")
    assert page.texts[0]["type"] == "hello" and page.texts[0]["max_unacked"] == 2
    time.sleep(0.3)
    assert len(page.frames) == 2  # newest-frame-only backpressure: nothing more until the view acknowledges
    send_input(session, {"type": "ack", "seq": page.frames[-1]["seq"]})
    wait_until(lambda: len(page.frames) == 4, what="two more frames")
    seqs = [f["seq"] for f in page.frames]
    assert seqs == sorted(seqs) and page.frames[0]["width"] == 48


def test_input_moves_the_camera_and_gets_a_reply(session):
    page = session.page
    session.on_message({"kind": "connect"})
    before = session.state.snapshot()
    send_input(session, {"type": "orbit", "dx": 0.1, "dy": 0.0, "id": 7})
    wait_until(lambda: any(t.get("id") == 7 for t in page.texts), what="the reply")
    reply = next(t for t in page.texts if t.get("id") == 7)
    assert reply["type"] == "applied" and reply["camera_id"] > before.version
    assert session.state.snapshot().camera.eye != before.camera.eye
    send_input(session, {"type": "orbit", "dx": "far", "id": 8})
    wait_until(lambda: any(t.get("id") == 8 for t in page.texts), what="the refusal")
    assert next(t for t in page.texts if t.get("id") == 8)["type"] == "ignored"
    session.on_message({"kind": "nonsense"})  # logged and ignored
    session.on_message("not a dict")


def test_the_save_button_writes_into_the_directory(session, tmp_path):
    page = session.page
    session.on_message({"kind": "connect"})
    wait_until(lambda: page.frames, what="a frame")
    send_input(session, {"type": "save", "format": "png", "id": 3})
    wait_until(lambda: any(t.get("id") == 3 for t in page.texts), what="the reply")
    reply = next(t for t in page.texts if t.get("id") == 3)
    assert reply["type"] == "done" and (tmp_path / reply["file"]).is_file()


def test_close_leaves_no_thread():
    page = Page()
    before = optixasync_threads()
    session = WidgetSession(page.send, CpuFrameSource(32, 16, max_samples=10**9))
    session.on_message({"kind": "connect"})
    wait_until(lambda: page.frames, what="a frame")
    assert {"optixasync-notebook", "optixasync-cpu-source"} <= set(optixasync_threads())
    session.close()
    session.close()  # idempotent
    assert optixasync_threads() == before
    session.on_message({"kind": "connect"})  # after close: ignored, no error
    with pytest.raises(TypeError, match="FrameSource"):
        WidgetSession(page.send, 42)


def test_the_widget_closes_its_session(tmp_path):
    pytest.importorskip("anywidget", reason="the notebook widget needs anywidget (pip install 'optixasync[notebook]')")
    from optixasync.notebook import ViewerWidget

    widget = ViewerWidget(CpuFrameSource(32, 16), directory=tmp_path)
    assert "function mountViewer" in widget._esm and "msg:custom" in widget._esm and ".oxa-root" in widget._css
    assert widget.state.snapshot().settings.width == 32 and widget.capture.directory == tmp_path
    widget.close()
    assert widget.closed and not [t for t in optixasync_threads() if t == "optixasync-notebook"]


def test_without_anywidget_the_widget_names_the_extra(monkeypatch):
    import optixasync.notebook as notebook

    monkeypatch.setitem(sys.modules, "anywidget", None)
    monkeypatch.delitem(sys.modules, "optixasync.notebook._widget", raising=False)
    with pytest.raises(MissingExtraError, match=r"pip install 'optixasync\[notebook\]'"):
        notebook.ViewerWidget  # noqa: B018


def test_the_cpu_source_stops_rendering_when_the_view_takes_no_frame(tmp_path):
    """A closed tab acknowledges nothing: after two frames its view has no room, and the render loop pauses
    (it renders no frame while paused); an acknowledgement resumes it."""
    page = Page()
    source = CpuFrameSource(48, 32, max_samples=10**9)
    source.idle_after = 0.0  # pause as soon as no view has room
    session = WidgetSession(page.send, source, directory=tmp_path)
    try:
        wait_until(lambda: source.paused, what="the loop to pause before any view connects")
        session.on_message({"kind": "connect"})
        wait_until(lambda: len(page.frames) == 2, what="two frames")
        wait_until(lambda: source.paused, what="the loop to pause with two frames unacknowledged")
        loops = source.loops
        time.sleep(0.3)
        assert source.paused and source.loops == loops  # a paused loop renders nothing
        send_input(session, {"type": "ack", "seq": page.frames[-1]["seq"]})
        wait_until(lambda: source.loops > loops, what="the loop to render again after an acknowledgement")
    finally:
        session.close()


def test_frames_say_when_a_camera_path_has_ended(session):
    """The page's "play path" button follows the frames' ``play`` field: the path's number, and whether it
    still plays; a short path ends, and the frames after say so."""
    from optixasync.viewer import CameraPath

    page = session.page
    session.on_message({"kind": "connect"})
    wait_until(lambda: len(page.frames) >= 1, what="a frame")
    assert page.frames[-1]["play"] == {"id": 0, "playing": False}
    pose = session.state.snapshot().camera
    moved = type(pose)(tuple(c + 0.5 for c in pose.eye), pose.target, pose.up, pose.fov)
    player = session.capture.play_path(CameraPath([(0.0, pose), (0.1, moved)]))
    assert player.wait(10.0)
    assert session.state.play == (1, False)

    def ended() -> bool:
        send_input(session, {"type": "ack", "seq": page.frames[-1]["seq"]})
        return page.frames[-1]["play"] == {"id": 1, "playing": False}

    wait_until(ended, what="a frame saying that the path ended")
