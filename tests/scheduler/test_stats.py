"""Scheduler statistics in bounded memory: a window of recent frames plus whole-run totals."""

from __future__ import annotations

import json

import pytest

from optixasync.scheduler import FrameStats, SchedulerOptions, SchedulerStats


def frame(k: int, gpu_ms: float = 2.0, waited: bool = False) -> FrameStats:
    return FrameStats(index=k, submit_ms=0.1 + 0.001 * k, gpu_ms=gpu_ms, waited=waited, gap_us=float(k),
                      host_begin=k * 0.01, host_done=k * 0.01 + 0.005)


def test_the_window_keeps_the_newest_frames_and_the_totals_cover_all():
    stats = SchedulerStats(window=100)
    for k in range(10_000):
        stats.add(frame(k, gpu_ms=float(k % 7), waited=k % 2 == 0))
    kept = stats.frames
    assert len(kept) == 100 and kept[0].index == 9_900 and kept[-1].index == 9_999
    assert stats.frames_total == 10_000 and stats.waits_total == 5_000
    gpu = stats.totals["gpu_ms"]
    assert gpu.count == 10_000 and gpu.low == 0.0 and gpu.high == 6.0
    assert gpu.total == pytest.approx(sum(k % 7 for k in range(10_000)))
    assert stats.covers() == {"first": 9_900, "last": 9_999, "kept": 100, "frames_total": 10_000}


def test_memory_does_not_grow_with_frames():
    """The frames held never exceed twice the window, however many frames go by."""
    stats = SchedulerStats(window=64)
    held = 0
    for k in range(50_000):
        stats.add(frame(k))
        held = max(held, len(stats._frames))  # the private list is what memory holds
    assert held <= 2 * 64
    assert [f.index for f in stats.frames] == list(range(50_000 - 64, 50_000))
    assert stats.totals["submit_ms"].count == 50_000


def test_summary_says_what_it_covers():
    stats = SchedulerStats(window=50)
    for k in range(120):
        stats.add(frame(k))
    s = stats.summary(skip=10)
    assert s["frames"] == 40 and s["covers"] == {"first": 80, "last": 119, "kept": 40, "frames_total": 120}
    assert s["gpu_ms"]["median"] == pytest.approx(2.0)
    assert s["whole_run"]["gpu_ms"]["n"] == 120 and s["whole_run"]["gpu_ms"]["mean"] == pytest.approx(2.0)
    assert s["dropped_results"] == 0
    assert s["fps"] == pytest.approx(100.0)


def test_nan_measurements_are_skipped_by_the_totals():
    stats = SchedulerStats(window=4)
    stats.add(frame(0, gpu_ms=float("nan")))
    stats.add(frame(1, gpu_ms=3.0))
    assert stats.totals["gpu_ms"].count == 1 and stats.totals["gpu_ms"].as_dict()["mean"] == 3.0
    assert stats.totals["fence_wait_ms"].count == 2  # zeros are measurements, NaN is none


def test_to_json_holds_the_window_and_its_coverage(tmp_path):
    stats = SchedulerStats(window=3)
    for k in range(5):
        stats.add(frame(k))
    data = json.loads(stats.to_json(str(tmp_path / "s.json")))
    assert [f["index"] for f in data["frames"]] == [2, 3, 4]
    assert data["covers"]["frames_total"] == 5 and data["summary"]["covers"]["first"] == 2
    assert json.loads((tmp_path / "s.json").read_text()) == data


@pytest.mark.parametrize("kwargs, match", [
    ({"stats_window": 0}, "stats_window"),
    ({"max_queued_results": 0}, "max_queued_results"),
    ({"max_queued_results": True}, "max_queued_results"),
    ({"on_full": "block"}, "on_full"),
])
def test_scheduler_options_reject(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SchedulerOptions(**kwargs)


def test_reading_while_frames_are_added_is_safe_and_consistent():
    """summary(), totals, waits_total and to_json() while another thread adds (and folds) frames."""
    import sys
    import threading

    stats = SchedulerStats(window=16)
    stop = threading.Event()

    def add():
        k = 0
        while not stop.is_set():
            stats.add(frame(k, waited=True))
            k += 1

    errors: list[BaseException] = []
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # switch threads as often as possible
    adder = threading.Thread(target=add, daemon=True)
    adder.start()
    try:
        for _ in range(100):
            try:
                s = stats.summary()
                # one copy of the statistics: the totals count exactly the frames retired so far
                assert s["whole_run"]["submit_ms"]["n"] == s["covers"]["frames_total"] == s["whole_run"]["waits"]
                assert stats.totals["gap_us"].count <= stats.frames_total
                assert stats.waits_total <= stats.frames_total
                assert json.loads(stats.to_json())["covers"]["kept"] <= 16
            except (ValueError, AssertionError, RuntimeError) as exc:
                errors.append(exc)
    finally:
        stop.set()
        adder.join()
        sys.setswitchinterval(previous)
    assert errors == [], f"{len(errors)} failures, e.g. {sorted({repr(e) for e in errors})[:3]}"


def test_add_without_fold_leaves_the_fold_to_fold():
    stats = SchedulerStats(window=4)
    for k in range(10):
        stats.add(frame(k), fold=False)
    assert len(stats._frames) == 10 and stats.totals["submit_ms"].count == 10
    stats.fold()
    assert [f.index for f in stats._frames] == [6, 7, 8, 9] and stats.frames_total == 10
    assert stats.totals["submit_ms"].count == 10 and stats.covers()["first"] == 6


def test_to_json_covers_the_frames_it_writes():
    stats = SchedulerStats(window=3)
    for k in range(5):
        stats.add(frame(k))
    data = json.loads(stats.to_json(skip=1))
    assert data["covers"] == {"first": 2, "last": 4, "kept": 3, "frames_total": 5}
    assert data["summary"]["covers"] == {"first": 3, "last": 4, "kept": 2, "frames_total": 5}
