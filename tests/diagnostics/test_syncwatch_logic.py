"""syncwatch without a GPU: classification, attribution, designed waits, the pageable join, OptiX timing,
the report and ``assert_no_sync``, driven through a stand-in for CUPTI that makes the callbacks CUPTI makes."""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading

import _syncwatch_fakelib as fakelib
import pytest

# Private on purpose. The watch's parts (the collector of raw calls, the report builder, the stack filter and its
# designed-wait rule) are pure logic with no public door; CUPTI is swapped for the stand-in through the module's
# loader; and OptiX timing has one input, the binding's process-wide OptixApi cache, which is where a stand-in
# OptixApi must be put for a watch to time it without a driver.
from optixasync import scheduler
from optixasync._optix import _api
from optixasync.diagnostics import (
    MissingExtraError,
    ReportOptions,
    SyncDetected,
    SyncRecord,
    assert_no_sync,
    classify,
    syncwatch,
)
from optixasync.diagnostics import _syncwatch as sw
from optixasync.diagnostics._collector import Collector, RawCall
from optixasync.diagnostics._records import base_name
from optixasync.diagnostics._report import build_report
from optixasync.diagnostics._stack import FrameFilter, designed_wait

FAKELIB = os.path.abspath(fakelib.__file__)
HERE = os.path.abspath(__file__)
PAGEABLE, PINNED, DEVICE = 1, 2, 3


def next_line() -> int:
    """The line number after the caller's line (where the call under test is)."""
    return inspect.currentframe().f_back.f_lineno + 1


def assert_no_session_left_open(fake) -> None:
    """A watch started now subscribes afresh (an open session would be reused) and unsubscribes when it ends."""
    assert fake.callback is None, "a watch left CUPTI subscribed"
    before = fake.subscriptions
    with syncwatch():
        assert fake.callback is not None
    assert fake.subscriptions == before + 1, "a watch left its CUPTI session open"
    assert fake.callback is None, "a watch left CUPTI subscribed"


@pytest.fixture
def cupti(monkeypatch):
    monkeypatch.setattr(sw, "_activity_registered", False)
    probe = fakelib.FakeCupti()  # checks, on a CUPTI of its own, that no earlier watch left a session open
    monkeypatch.setattr(sw, "load_cupti", lambda: probe)
    assert_no_session_left_open(probe)
    fake = fakelib.FakeCupti()
    monkeypatch.setattr(sw, "load_cupti", lambda: fake)
    monkeypatch.setattr(sw, "_activity_registered", False)
    yield fake
    assert_no_session_left_open(fake)


# -- classification -------------------------------------------------------------------


@pytest.mark.parametrize("name, category", [
    ("cuStreamSynchronize", "stream-sync"),
    ("cuStreamSynchronize_ptsz", "stream-sync"),
    ("cuEventSynchronize", "event-sync"),
    ("cuCtxSynchronize", "context-sync"),
    ("cuCtxSynchronize_v2", "context-sync"),
    ("cuMemcpyDtoH_v2", "sync-memcpy"),
    ("cuMemcpyHtoD_v2_ptds", "sync-memcpy"),
    ("cuMemcpy", "sync-memcpy"),
    ("cuMemcpyHtoDAsync_v2", "async-memcpy"),
    ("cuMemcpyDtoHAsync_v2_ptsz", "async-memcpy"),
    ("cuMemcpyAsync", "async-memcpy"),
    ("cuMemsetD32_v2", "sync-memset"),
    ("cuMemAlloc_v2", "alloc"),
    ("cu64MemAlloc", "alloc"),
    ("cuMemHostAlloc", "alloc"),
    ("cuMemFree_v2", "free"),
    ("cuMemFreeHost", "free"),
    ("cuModuleLoadData", "module-load"),
    ("cuLibraryLoadData", "module-load"),
    ("optixLaunch", "optix"),
    ("optixAccelBuild", "optix"),
])
def test_blocking_calls_are_classified(name, category):
    assert classify(name) == category


@pytest.mark.parametrize("name", [
    "cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocFromPoolAsync_ptsz", "cuMemsetD32Async", "cuLaunchKernel",
    "cuEventRecord", "cuEventQuery", "cuStreamQuery", "cuStreamWaitEvent", "cuMemcpyDtoDAsync_v2", "cuCtxGetCurrent",
    "optixModuleCreate",
])
def test_non_blocking_calls_are_not(name):
    assert classify(name) is None


def test_base_name_strips_every_variant_suffix():
    assert base_name("cuMemcpyDtoHAsync_v2_ptsz") == "cuMemcpyDtoHAsync"
    assert base_name("cuMemcpy2DUnaligned_v2_ptds") == "cuMemcpy2DUnaligned"
    assert base_name("cu64Memcpy3DAsync") == "cuMemcpy3DAsync"


def test_only_blocking_callbacks_are_enabled():
    names = sw.driver_callback_names(fakelib.FakeCupti())
    assert sorted(names.values()) == sorted([
        "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemFree_v2",
        "cuMemcpyDtoH_v2", "cuModuleLoadData",
    ])


# -- stacks ------------------------------------------------------------------------------


def test_user_frame_skips_libraries_and_stdlib():
    import numpy
    import rich

    frames = FrameFilter()
    scheduler_file = os.path.join(os.path.dirname(scheduler.__file__), "_scheduler.py")
    assert frames.is_library(numpy.__file__)
    assert frames.is_library(threading.__file__)
    assert frames.is_library(os.path.abspath(scheduler_file))
    assert frames.is_library("<frozen runpy>")
    assert not frames.is_library(HERE)
    assert not frames.is_library(rich.__file__)  # third-party, in site-packages: could be the user's own library
    stack = ((threading.__file__, 10, "wait"), (os.path.abspath(scheduler_file), 300, "begin_frame"),
             (HERE, 42, "my_loop"), ("/home/u/app.py", 7, "<module>"))
    assert frames.user_frame(stack) == (HERE, 42, "my_loop")
    assert frames.user_frame(stack[:2]) is None


def test_extra_skip_makes_a_file_library_code():
    assert not FrameFilter().is_library(FAKELIB)
    assert FrameFilter(extra_skip=[FAKELIB]).is_library(FAKELIB)


S = "/site/optixasync/scheduler/_scheduler.py"
R = "/site/optixasync/scheduler/_ring.py"
Q = "/site/optixasync/cuda/_launch_queue.py"
F = "/site/optixasync/scheduler/_frame.py"


@pytest.mark.parametrize("stack, thread, kind", [
    ([(R, 120, "pop_through"), (S, 470, "_retire_through"), (S, 375, "begin_frame"), (S, 400, "frame"),
      ("/app.py", 3, "main")], "MainThread", "slot fence"),
    ([(S, 373, "begin_frame"), ("/app.py", 3, "main")], "MainThread", "slot fence"),
    ([(S, 500, "_complete_loop"), ("/usr/lib/python3/threading.py", 9, "run")], "optixasync-completion",
     "completion thread"),
    ([(R, 120, "pop_through"), (S, 470, "_retire_through"), (S, 520, "drain"), ("/app.py", 3, "main")],
     "MainThread", "drain"),
    ([(S, 470, "_retire_through"), (S, 520, "drain"), (S, 560, "close"), ("/app.py", 3, "main")], "MainThread",
     "scheduler close"),
    ([(S, 470, "_retire_through"), (S, 100, "result"), ("/app.py", 3, "main")], "MainThread", "frame result"),
    ([("/app.py", 3, "main")], "optixasync-completion", "completion thread"),
    ([("/app/my_scheduler.py", 5, "begin_frame"), ("/app.py", 3, "main")], "MainThread", None),
    # The launch queue's wait, from a frame's launch (inside submit's work) or a direct launch.
    ([("/site/optixasync/cuda/_events.py", 9, "synchronize"), (Q, 160, "make_room"), (F, 240, "launch"),
      (S, 300, "submit"), ("/app.py", 3, "main")], "MainThread", "optix queue"),
    ([(Q, 160, "make_room"), ("/site/optixasync/program/_pipeline.py", 320, "launch"), ("/app.py", 3, "main")],
     "MainThread", "optix queue"),
    ([(Q, 160, "make_room"), (F, 240, "launch"), (S, 375, "begin_frame")], "MainThread", "optix queue"),
    ([("/app/_launch_queue.py", 5, "make_room"), ("/app.py", 3, "main")], "MainThread", None),
    ([("/app.py", 3, "main")], "MainThread", None),
])
def test_designed_waits_are_recognised_by_the_calling_frame(stack, thread, kind):
    assert designed_wait(stack, thread) == kind


# -- report building from raw calls ------------------------------------------------------------


_clock = iter(range(10**9, 10**12, 10**8))  # each raw call starts 100 ms after the previous one


def raw(name, ms, stack, corr=0, kind="driver", parent=0, call_id=0, thread="MainThread"):
    call = RawCall(kind, name, next(_clock), tuple(stack), thread, corr, call_id=call_id, parent=parent)
    call.end_ns = call.start_ns + int(ms * 1e6)
    return call


USER = [("/home/u/render.py", 20, "loop")]
LIB = [("/site/cupy/_core.py", 5, "get")]


def test_build_report_joins_pageable_copies_and_separates_designed_waits():
    frames = FrameFilter(skip_dirs=["/site"], skip_stdlib=False)
    driver = [
        raw("cuMemcpyHtoDAsync_v2", 0.01, LIB + USER, corr=1),  # pinned: fine
        raw("cuMemcpyDtoHAsync_v2", 3.0, LIB + USER, corr=2),  # to pageable: a stall
        raw("cuMemcpyHtoDAsync_v2", 0.02, LIB + USER, corr=3),  # kind unknown, quick: counted only
        raw("cuMemcpyAsync", 4.0, LIB + USER, corr=4),  # kind unknown, slow: kept
        raw("cuEventSynchronize", 2.0, [(S, 375, "begin_frame")] + USER, corr=5),  # slot fence
        raw("cuMemAllocAsync", 9.0, USER, corr=6),  # stream-ordered: never reported
        raw("cuMemFree_v2", 0.5, [(S, 375, "begin_frame")] + USER, corr=7),  # a free is never a designed wait
    ]
    kinds = {1: (PINNED, DEVICE, 64), 2: (DEVICE, PAGEABLE, 4096)}
    report = build_report(driver, [], [], kinds, frames=frames, options=ReportOptions(slow_async_ms=1.0))
    assert [(r.api, r.category) for r in report.stalls] == [
        ("cuMemcpyDtoHAsync_v2", "pageable-memcpy"), ("cuMemcpyAsync", "async-memcpy"), ("cuMemFree_v2", "free")]
    pageable = report.stalls[0]
    assert pageable.memory == "device -> pageable" and pageable.nbytes == 4096
    assert pageable.user_frame == ("/home/u/render.py", 20, "loop")
    assert report.stalls[1].memory == "not reported"
    assert [(r.api, r.designed) for r in report.designed] == [("cuEventSynchronize", "slot fence")]
    assert report.counts["async_copies_ok"] == 1
    assert report.counts["async_copies_unresolved"] == 1
    assert report.stall_ms == pytest.approx(3.0 + 4.0 + 0.5)


def test_optix_call_blocks_when_a_stall_happened_inside_it_or_it_was_long():
    frames = FrameFilter(skip_dirs=["/site"], skip_stdlib=False)
    optix = [
        raw("optixLaunch", 0.05, LIB + USER, kind="optix", call_id=1),  # quick, nothing inside
        raw("optixLaunch", 0.3, LIB + USER, kind="optix", call_id=2),  # a sync inside
        raw("optixAccelBuild", 2.5, LIB + USER, kind="optix", call_id=3),  # long
    ]
    driver = [raw("cuStreamSynchronize", 0.25, LIB + USER, corr=9, parent=2)]
    report = build_report(driver, optix, frames=frames, options=ReportOptions(optix_block_ms=1.0))
    assert [c.blocked for c in report.optix_calls] == [False, True, True]
    apis = sorted((r.api, r.inside) for r in report.stalls)
    assert apis == [("cuStreamSynchronize", "optixLaunch"), ("optixAccelBuild", None), ("optixLaunch", None)]
    # the sync inside the launch is not counted twice
    assert report.stall_ms == pytest.approx(0.3 + 2.5)
    summary = report.optix_summary()
    assert summary["optixLaunch"]["calls"] == 2 and summary["optixLaunch"]["blocked"] == 1
    assert summary["optixAccelBuild"]["max_ms"] == pytest.approx(2.5)


def test_lone_synchronization_is_an_implicit_sync_inside_its_optix_call():
    frames = FrameFilter(skip_dirs=["/site"], skip_stdlib=False)
    optix = [raw("optixLaunch", 0.2, LIB + USER, kind="optix", call_id=4)]
    sync = raw("synchronize (context)", 0.0, LIB + USER, kind="sync", parent=4)
    report = build_report([], optix, [sync], frames=frames)
    assert [(r.category, r.inside) for r in report.stalls if r.category != "optix"] == [("implicit-sync", "optixLaunch")]
    assert report.optix_calls[0].blocked


def test_assert_no_sync_semantics():
    stall = SyncRecord("cuMemHostAlloc", "alloc", 1.5, user_frame=("/a.py", 3, "f"))
    short = SyncRecord("cuStreamSynchronize", "stream-sync", 0.01, user_frame=("/a.py", 4, "f"))
    fence = SyncRecord("cuEventSynchronize", "event-sync", 2.0, designed="slot fence", user_frame=("/a.py", 5, "f"))
    from optixasync.diagnostics import SyncReport

    SyncReport(designed=[fence]).assert_no_sync()  # designed waits pass by default
    with pytest.raises(SyncDetected) as info:
        SyncReport(designed=[fence]).assert_no_sync(include_designed=True)
    assert info.value.records == [fence]
    report = SyncReport(stalls=[stall, short])
    with pytest.raises(SyncDetected, match=r"2 host stall\(s\)") as info:
        report.assert_no_sync()
    assert "cuMemHostAlloc" in str(info.value) and "/a.py:3" in str(info.value)
    report.assert_no_sync(ignore=["alloc"], min_ms=0.1)
    report.assert_no_sync(ignore=["cuMemHostAlloc", "cuStreamSynchronize"])
    with pytest.raises(SyncDetected) as info:
        report.assert_no_sync(min_ms=0.1)
    assert info.value.records == [stall]
    assert isinstance(info.value, AssertionError)


def test_report_json_and_text():
    frames = FrameFilter(skip_dirs=["/site"], skip_stdlib=False)
    driver = [raw("cuStreamSynchronize", 2.0, LIB + [(HERE, 1, "test")], corr=1) for _ in range(3)]
    driver.append(raw("cuEventSynchronize", 1.0, [(S, 375, "begin_frame")] + USER, corr=2))
    report = build_report(driver, [], frames=frames, duration_ms=10.0)
    data = json.loads(report.to_json())
    assert data["summary"]["stalls"] == 3 and data["summary"]["designed_waits"] == 1
    assert data["summary"]["stall_ms"] == pytest.approx(6.0)
    first = data["stalls"][0]
    assert first["user"]["file"] == HERE and first["user"]["line"] == 1
    assert first["user"]["code"].startswith('"""syncwatch without a GPU')
    assert first["stack"][0] == ["/site/cupy/_core.py", 5, "get"]
    assert data["designed"][0]["designed"] == "slot fence"
    assert "stream-sync" in data["categories"]
    groups = report.groups()
    assert len(groups) == 1 and groups[0]["calls"] == 3 and groups[0]["total_ms"] == pytest.approx(6.0)
    text = report.render(width=200)
    assert "cuStreamSynchronize" in text and "test_syncwatch_logic.py:1" in text and "slot fence" in text
    assert "3 stall(s)" in text
    from optixasync.diagnostics._render import render_plain

    plain = render_plain(report)
    assert "cuStreamSynchronize" in plain and "x3" in plain and "slot fence" in plain
    with_stack = render_plain(report, stack=2)
    assert "(1 library frame(s) inside)" in with_stack and "test_syncwatch_logic.py:1 in test" in with_stack
    assert "_core.py" not in with_stack  # the library frame is counted, not shown


# -- the whole watch, with the CUPTI stand-in -------------------------------------------------


def test_syncwatch_attributes_each_call_to_the_callers_line(cupti):
    with syncwatch(skip=[FAKELIB]) as watch:
        sync_line = next_line()
        cupti.cuda_call("cuStreamSynchronize", 1, ms=2.0, synchronized="stream")
        pageable_line = next_line()
        cupti.cuda_call("cuMemcpyDtoHAsync_v2", 2, ms=1.0, memcpy=(DEVICE, PAGEABLE))
        cupti.cuda_call("cuMemcpyHtoDAsync_v2", 3, memcpy=(PINNED, DEVICE))  # pinned: not a stall
        cupti.cuda_call("cuMemAllocAsync", 4, ms=1.0)  # not enabled at all
        cupti.cuda_call("cuLaunchKernel", 5)
    assert cupti.enabled == set() and cupti.activity_kinds == set()  # everything switched off again
    report = watch.report
    assert [r.api for r in report.stalls] == ["cuStreamSynchronize", "cuMemcpyDtoHAsync_v2"]
    sync, pageable = report.stalls
    assert sync.user_frame == (HERE, sync_line, "test_syncwatch_attributes_each_call_to_the_callers_line")
    assert sync.host_ms >= 1.9 and sync.category == "stream-sync"
    assert sync.extra["synchronized"] == "stream 0xbeef"
    assert sync.stack[0][0] == FAKELIB  # the full stack is kept, library frames included
    assert pageable.user_frame[1] == pageable_line and pageable.category == "pageable-memcpy"
    assert report.counts["async_copies_ok"] == 1
    assert "cupti.cuda_call(\"cuStreamSynchronize\"" in sync.code
    assert report.errors == []


def test_nested_watches_share_one_subscription(cupti):
    with syncwatch(skip=[FAKELIB]) as outer:
        cupti.cuda_call("cuStreamSynchronize", 1)
        with syncwatch(skip=[FAKELIB]) as inner:
            cupti.cuda_call("cuEventSynchronize", 2)
        assert cupti.callback is not None  # still subscribed for the outer watch
        cupti.cuda_call("cuMemFree_v2", 3)
    assert cupti.subscriptions == 1
    assert [r.api for r in inner.report.stalls] == ["cuEventSynchronize"]
    assert [r.api for r in outer.report.stalls] == ["cuStreamSynchronize", "cuEventSynchronize", "cuMemFree_v2"]


def test_watch_in_another_thread_sees_that_threads_calls(cupti):
    with syncwatch(skip=[FAKELIB]) as watch:
        worker = threading.Thread(target=cupti.cuda_call, args=("cuStreamSynchronize", 7, 1.0), name="worker")
        worker.start()
        worker.join()
    (record,) = watch.report.stalls
    assert record.thread == "worker"
    assert record.user_frame is None  # the worker's stack is the fake library and threading.py: no user line


def test_optix_calls_are_timed_only_during_a_watch(cupti, monkeypatch):
    api = fakelib.FakeOptixApi(cupti, delay_ms=1.5, sync_inside=True)
    original = api.optixLaunch
    monkeypatch.setitem(_api._api_cache, 9991, api)
    cache = _api._api_cache
    with syncwatch(skip=[FAKELIB]) as watch:
        assert api.optixLaunch is not original
        line = next_line()
        fakelib.launch(api)
        late = fakelib.FakeOptixApi(cupti, delay_ms=0.1)
        _api._api_cache[9992] = late  # an OptixApi created during the watch is timed too
        late.optixAccelBuild(0)
    assert api.optixLaunch is original  # put back: no overhead after the watch
    assert _api._api_cache is cache and _api._api_cache[9992] is late
    del _api._api_cache[9992]
    assert type(late.optixAccelBuild).__name__ == "function"
    report = watch.report
    launch = [c for c in report.optix_calls if c.api == "optixLaunch"]
    assert len(launch) == 1 and launch[0].blocked and launch[0].host_ms >= 1.4
    assert launch[0].user_frame == (HERE, line, "test_optix_calls_are_timed_only_during_a_watch")
    inside = [r for r in report.stalls if r.inside == "optixLaunch"]
    assert [r.api for r in inside] == ["cuStreamSynchronize"] and inside[0].user_frame[1] == line
    build = [c for c in report.optix_calls if c.api == "optixAccelBuild"]
    assert len(build) == 1 and not build[0].blocked  # 0.1 ms, nothing inside
    assert api.calls == ["optixLaunch"] and late.calls == ["optixAccelBuild"]


def test_decorator_forms(cupti, capsys):
    @syncwatch(skip=[FAKELIB])
    def quiet():
        cupti.cuda_call("cuStreamSynchronize", 1)

    quiet()
    assert [r.api for r in quiet.syncwatch.report.stalls] == ["cuStreamSynchronize"]
    assert capsys.readouterr().err == ""

    @syncwatch
    def loud():
        cupti.cuda_call("cuMemcpyDtoH_v2", 2)

    loud()
    assert "cuMemcpyDtoH_v2" in capsys.readouterr().err  # the bare decorator prints the report


def test_assert_no_sync_context_manager(cupti, tmp_path):
    with assert_no_sync(skip=[FAKELIB]):
        cupti.cuda_call("cuMemcpyHtoDAsync_v2", 1, memcpy=(PINNED, DEVICE))
    with pytest.raises(SyncDetected, match="cuStreamSynchronize"):
        with assert_no_sync(skip=[FAKELIB], json_path=str(tmp_path / "r.json")):
            cupti.cuda_call("cuStreamSynchronize", 2)
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["stalls"] == 1
    with assert_no_sync(skip=[FAKELIB], ignore=["stream-sync"]):
        cupti.cuda_call("cuStreamSynchronize", 3)
    with pytest.raises(ZeroDivisionError):  # the body's own exception wins over the check
        with assert_no_sync(skip=[FAKELIB]):
            cupti.cuda_call("cuStreamSynchronize", 4)
            1 / 0  # noqa: B018


def test_callback_errors_are_kept_not_raised(cupti):
    with syncwatch(skip=[FAKELIB]) as watch:
        cupti.callback(None, 1, int(cupti.driver_api_trace_cbid["cuStreamSynchronize"]), object())  # no fields
    assert watch.report.stalls == [] and len(watch.report.errors) == 1
    assert "AttributeError" in watch.report.errors[0]


def test_second_cupti_client_gives_a_clear_error(cupti):
    cupti.callback = lambda *a: None  # someone else subscribed (a profiler)
    with pytest.raises(RuntimeError, match="only one CUPTI client"):
        with syncwatch():
            pass
    cupti.callback = None


def test_missing_cupti_python_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)  # makes "import cupti" fail
    with pytest.raises(MissingExtraError) as info:
        with syncwatch():
            pass
    message = str(info.value)
    assert "cupti-python" in message and "optixasync[diagnostics]" in message
    assert isinstance(info.value, ImportError)
    # nothing was left half-started: once CUPTI is there, a watch subscribes and unsubscribes as usual
    fake = fakelib.FakeCupti()
    monkeypatch.setattr(sw, "load_cupti", lambda: fake)
    monkeypatch.setattr(sw, "_activity_registered", False)
    assert_no_session_left_open(fake)


def test_collector_ignores_calls_it_did_not_enable_and_exits_without_entry():
    collector = Collector({7: "cuStreamSynchronize"})
    from types import SimpleNamespace as NS

    collector.on_callback(None, 1, 8, NS(callback_site=0, correlation_id=1))  # not watched
    collector.on_callback(None, 1, 7, NS(callback_site=1, correlation_id=2))  # exit without entry
    collector.on_callback(None, 3, 7, NS(callback_site=0, correlation_id=3))  # another domain
    assert collector.driver == [] and collector.errors == []


def test_synchronization_reported_after_the_call_belongs_to_it(cupti):
    with syncwatch(skip=[FAKELIB]) as watch:
        cupti.cuda_call("cuStreamSynchronize", 1, synchronized="after")
    (record,) = watch.report.stalls
    assert record.api == "cuStreamSynchronize" and record.extra["synchronized"] == "stream 0xbeef"


def test_lone_synchronization_is_recorded_and_designed_in_the_completion_thread(cupti):
    with syncwatch(skip=[FAKELIB]) as watch:
        line = next_line()
        cupti.lone_sync()
        worker = threading.Thread(target=cupti.lone_sync, name="optixasync-completion")
        worker.start()
        worker.join()
    (stall,) = watch.report.stalls
    assert stall.category == "implicit-sync" and stall.user_frame[1] == line
    assert stall.extra["synchronized"] == "stream 0xf00d"
    (designed,) = watch.report.designed
    assert designed.designed == "completion thread" and designed.thread == "optixasync-completion"


def test_a_call_without_python_frames_has_no_caller():
    from optixasync.diagnostics._collector import _caller

    assert _caller(10_000) is None


def test_synchronization_inside_an_optix_call_is_its_own_record(cupti, monkeypatch):
    api = fakelib.FakeOptixApi(cupti)

    def launch_that_synchronizes(*args):
        cupti.cuda_call("cuMemcpyHtoDAsync_v2", 50, memcpy=(2, 3))  # a quick pinned copy just before
        cupti.lone_sync()  # then OptiX synchronizes without a watched driver call
        return 0

    api.optixLaunch = launch_that_synchronizes
    monkeypatch.setitem(_api._api_cache, 9993, api)
    with syncwatch(skip=[FAKELIB]) as watch:
        fakelib.launch(api)
    implicit = [r for r in watch.report.stalls if r.category == "implicit-sync"]
    assert len(implicit) == 1 and implicit[0].inside == "optixLaunch"
    (launch,) = watch.report.optix_calls
    assert launch.blocked


def test_graph_launches_are_timed_like_optix_calls_during_a_watch(cupti):
    from optixasync.cuda import StreamGraph
    from optixasync.testing import StubCuda, StubStream

    with StubCuda() as cuda:
        api = cuda.graph_api
        original = api.launch
        stream = StubStream(non_blocking=True)
        graph = StreamGraph()
        graph.record(stream, lambda s: None)
        with syncwatch(skip=[FAKELIB]) as watch:
            assert api.launch is not original
            line = next_line()
            graph.launch(stream)
        assert api.launch == original  # put back after the watch
        graph.launch(stream)  # not timed
        graph.close()
    (launch,) = [c for c in watch.report.optix_calls if c.api == "cuGraphLaunch"]
    assert launch.user_frame == (HERE, line, "test_graph_launches_are_timed_like_optix_calls_during_a_watch")
    assert not launch.blocked and classify("cuGraphLaunch") == "optix"


# -- the launch queue's designed wait against a model of OptiX's ring -----------------------------------------


class RingOptix:
    """OptiX's launch ring as public evidence describes it (a model, not measured): ``depth`` slices per context,
    an event per launch on its stream, and a launch that wraps onto a slice whose event has not passed
    synchronizes on it (``cuEventSynchronize`` inside ``optixLaunch``)."""

    def __init__(self, cuda, cupti, depth: int) -> None:
        from collections import deque

        from optixasync.testing import StubEvent

        self.cuda, self.cupti, self.depth = cuda, cupti, depth
        self.slices: deque = deque()
        self.event = StubEvent
        self.inner_syncs = 0
        self.correlation = 70000

    def __call__(self, pipeline, stream, params, size, sbt, w, h, d) -> int:
        if len(self.slices) == self.depth:
            oldest = self.slices.popleft()
            if not oldest.done:
                self.inner_syncs += 1
                self.correlation += 1
                self.cupti.cuda_call("cuEventSynchronize", self.correlation)
                oldest.synchronize()
        self.cuda.enqueue("optixLaunch", int(stream), None)
        event = self.event(disable_timing=True)
        self.cuda.record(event, int(stream))
        self.slices.append(event)
        return 0


def run_frames_under_the_ring(cupti, monkeypatch, limit, depth: int = 2, frames: int = 12):
    """Frames at 4 in flight over a stub GPU held back, OptiX modelled by :class:`RingOptix`; the watch's report."""
    from optixasync.cuda import _launch_queue
    from optixasync.scheduler import FrameScheduler
    from optixasync.testing import BUSY_PARAMS, StubCuda

    monkeypatch.delenv("OPTIXASYNC_OPTIX_QUEUE_LIMIT", raising=False)
    real = _launch_queue.synchronize

    def synchronize_seen_by_cupti(event, what=""):
        cupti.cuda_call("cuEventSynchronize", 80000 + event.ptr % 1000)  # what the real wait shows CUPTI
        real(event, what)

    monkeypatch.setattr(_launch_queue, "synchronize", synchronize_seen_by_cupti)
    with StubCuda() as cuda:
        ctx = cuda.context()
        ring = RingOptix(cuda, cupti, depth)
        ctx.api.optixLaunch = ring
        monkeypatch.setitem(_api._api_cache, 9994, ctx.api)  # where syncwatch finds the OptiX tables it times
        pipeline, sbt = cuda.pipeline(ctx), cuda.sbt(ctx)
        sched = FrameScheduler(ctx, 4, params_dtype=BUSY_PARAMS,
                               options={"completion_thread": False, "optix_queue_limit": limit})
        cuda.pause()
        with syncwatch(skip=[FAKELIB]) as watch:
            for k in range(frames):
                with sched.frame() as f:
                    f.params["frame"] = k
                    f.launch(pipeline, sbt, 8)
                sched.poll()
        cuda.resume()
        stats = sched.stats
        sched.close()
    return watch.report, ring, stats


def test_without_the_bound_the_ring_stalls_inside_optix_launch(cupti, monkeypatch):
    report, ring, stats = run_frames_under_the_ring(cupti, monkeypatch, None)
    assert ring.inner_syncs > 0
    assert report.launch_stalls() == ring.inner_syncs
    inside = [r for r in report.stalls if r.inside == "optixLaunch"]
    assert len(inside) == ring.inner_syncs and {r.api for r in inside} == {"cuEventSynchronize"}
    assert "optix queue" not in report.designed_by_cause()
    assert stats.queue_waits == {}


@pytest.mark.parametrize("limit", [1, 2])
def test_with_the_bound_at_most_the_ring_depth_the_waits_are_designed_and_none_inside_optix_launch(
        cupti, monkeypatch, limit):
    report, ring, stats = run_frames_under_the_ring(cupti, monkeypatch, limit, depth=2)
    assert ring.inner_syncs == 0 and report.launch_stalls() == 0
    assert [r for r in report.stalls if r.inside == "optixLaunch"] == []
    assert report.stalls == []
    causes = report.designed_by_cause()
    waits = sum(stats.queue_waits.values())
    assert waits > 0 and causes["optix queue"]["calls"] == waits  # each counted wait is one designed record
    assert {r.designed for r in report.designed} == {"optix queue"}
    assert all(r.user_frame is not None and r.user_frame[0] == HERE for r in report.designed)
    assert "optix queue x" in report.headline()
    assert report.to_dict()["summary"]["launch_stalls"] == 0


def test_a_bound_deeper_than_the_ring_leaves_stalls_inside_optix_launch(cupti, monkeypatch):
    report, ring, _stats = run_frames_under_the_ring(cupti, monkeypatch, 3, depth=2)
    assert ring.inner_syncs > 0 and report.launch_stalls() == ring.inner_syncs
