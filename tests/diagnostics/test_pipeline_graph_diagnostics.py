"""The render pipeline's graph frames in the diagnostics: syncwatch times each replay's graph launch like an
OptiX call, at the user's line; the Chrome trace and the statistics show replays and captures as frames, with
how each ran and why.

CUDA and OptiX are the recording stand-ins (``StubCuda``, ``StubRender``), CUPTI the fake of
``_syncwatch_fakelib``.
"""

from __future__ import annotations

import inspect
import os

import _syncwatch_fakelib as fakelib
import pytest

from optixasync.diagnostics import _syncwatch as sw
from optixasync.diagnostics import chrome_trace, syncwatch
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import cornell_box
from optixasync.testing import StubCuda, StubRender

FAKELIB = os.path.abspath(fakelib.__file__)
HERE = os.path.abspath(__file__)


@pytest.fixture
def cupti(monkeypatch):
    fake = fakelib.FakeCupti()
    monkeypatch.setattr(sw, "load_cupti", lambda: fake)
    monkeypatch.setattr(sw, "_activity_registered", False)
    return fake


@pytest.fixture
def pipeline():
    with StubCuda() as cuda, StubRender(cuda):
        p = RenderPipeline(cuda.context(), cornell_box(), RenderOptions(width=8, height=6), graphs=True,
                           scheduler_options={"completion_thread": False})
        yield p
        p.close()


def frames(p, first: int, count: int, recorder) -> int:
    """Record ``count`` frames (their results released); returns the line of the submit."""
    line = 0
    for k in range(first, first + count):
        frame = p.scheduler.begin_frame()
        recorder.record(frame, k)
        line = inspect.currentframe().f_lineno + 1
        p.scheduler.submit(frame)
        for result in p.scheduler.poll():
            result.release()
    return line


def test_syncwatch_times_each_replayed_frame_graph_at_the_users_line(cupti, pipeline):
    recorder = pipeline.recorder(readback="image")
    frames(pipeline, 0, 6, recorder)  # the eager frames and the captures
    with syncwatch(skip=[FAKELIB]) as watch:
        line = frames(pipeline, 6, 10, recorder)
    launches = [c for c in watch.report.optix_calls if c.api == "cuGraphLaunch"]
    assert len(launches) == 10 and not any(c.blocked for c in launches)
    assert {c.user_frame for c in launches} == {(HERE, line, "frames")}
    assert watch.report.stalls == []
    assert [s.graph for s in pipeline.scheduler.stats.frames[6:]] == ["replay"] * 10


def test_the_chrome_trace_names_replays_and_captures_with_their_reasons(pipeline):
    for result in pipeline.frames(6):
        result.release()
    events = [e for e in chrome_trace(pipeline.scheduler)["traceEvents"] if e.get("ph") == "X" and e["tid"] == 1
              and e["pid"] == 1]
    names = [e["name"] for e in events]
    assert names[:2] == ["frame 0", "frame 1"] and names[2:4] == ["frame 2 (graph capture)", "frame 3 (graph capture)"]
    assert names[4:] == ["frame 4 (graph replay)", "frame 5 (graph replay)"]
    assert events[2]["args"]["graph_reason"] == "first frame of this shape on the slot"
    assert events[0]["args"]["graph"] == "eager"
    summary = pipeline.scheduler.stats.summary()
    assert summary["graphs"] == {"replay": 2, "capture": 2, "eager": 2}
