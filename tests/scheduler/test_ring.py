"""Slot and fence bookkeeping of the scheduler, with fake fences (no GPU)."""

from __future__ import annotations

import pytest

from optixasync.scheduler import FrameRing, FrameStats, SchedulerStats


class FakeFence:
    def __init__(self) -> None:
        self.done = False
        self.waited = 0

    def synchronize(self) -> None:
        self.waited += 1
        self.done = True


def submit(ring: FrameRing, payload=None) -> tuple[int, int, FakeFence]:
    index, slot, blocker = ring.begin()
    if blocker is not None:
        ring.pop_through(blocker.index)
    fence = FakeFence()
    ring.submit(fence, payload if payload is not None else index)
    return index, slot, fence


def test_slots_round_robin_and_block_only_when_n_ahead():
    ring = FrameRing(3)
    fences = [submit(ring)[2] for _ in range(3)]
    assert len(ring) == 3
    assert [ring.find(k).slot for k in range(3)] == [0, 1, 2]
    assert [ring.slot_holder(s).index for s in range(3)] == [0, 1, 2]
    assert ring.oldest().index == 0
    assert ring.pending() == 3
    index, slot, blocker = ring.begin()  # frame 3 needs slot 0, still held by frame 0
    assert (index, slot) == (3, 0) and blocker is not None and blocker.index == 0
    retired = ring.pop_through(blocker.index)
    assert [e.index for e in retired] == [0] and fences[0].waited == 1
    assert fences[1].waited == 0  # only the slot's own fence was waited on
    last = FakeFence()
    ring.submit(last, 3)
    # in flight, oldest first: frames 1, 2, 3 (frame 3 in slot 0)
    assert len(ring) == 3 and ring.oldest().index == 1 and ring.find(0) is None
    assert [ring.slot_holder(s).index for s in range(3)] == [3, 1, 2]
    fences[1].done = fences[2].done = last.done = True
    assert [e.index for e in ring.pop_completed()] == [1, 2, 3]
    assert len(ring) == 0


def test_no_wait_when_slot_already_retired():
    ring = FrameRing(2)
    f0 = submit(ring)[2]
    submit(ring)
    f0.done = True
    assert [e.index for e in ring.pop_completed()] == [0]
    index, slot, blocker = ring.begin()
    assert (index, slot, blocker) == (2, 0, None)


def test_completion_is_in_order_even_if_later_fence_passes_first():
    ring = FrameRing(3)
    f0 = submit(ring)[2]
    f1 = submit(ring)[2]
    f1.done = True  # cannot really happen on one stream, but retirement must still be ordered
    assert ring.pop_completed() == []
    f0.done = True
    assert [e.index for e in ring.pop_completed()] == [0, 1]


def test_pending_counts_unfinished_fences():
    ring = FrameRing(4)
    fences = [submit(ring)[2] for _ in range(4)]
    fences[0].done = fences[1].done = True
    assert ring.pending() == 2 and len(ring) == 4
    assert ring.find(2).fence is fences[2] and ring.find(7) is None
    ring.pop_completed()
    assert ring.find(0) is None and ring.find(3).index == 3


def test_misuse_raises():
    with pytest.raises(ValueError):
        FrameRing(0)
    ring = FrameRing(2)
    with pytest.raises(RuntimeError):
        ring.submit(FakeFence(), None)
    ring.begin()
    with pytest.raises(RuntimeError, match="still being recorded"):
        ring.begin()
    ring.cancel()
    assert ring.begin()[0] == 0  # a cancelled frame does not consume an index


def test_submit_refuses_a_still_held_slot():
    ring = FrameRing(1)
    submit(ring)
    ring.begin()
    with pytest.raises(RuntimeError, match="still held"):
        ring.submit(FakeFence(), None)


def test_stats_summary_and_json(tmp_path):
    stats = SchedulerStats()
    for i in range(10):
        stats.add(
            FrameStats(index=i, submit_ms=0.1 * (i + 1), gpu_ms=2.0, gap_us=float(i), in_flight=2, ahead=1,
                       waited=i % 2 == 0, host_begin=i * 0.004, host_submit=i * 0.004 + 0.001, host_done=i * 0.004 + 0.004)
        )
    s = stats.summary(skip=2)
    assert s["frames"] == 8
    assert s["submit_ms"]["median"] == pytest.approx(0.65)
    assert s["gap_us"]["median"] == pytest.approx(5.5)
    assert s["waits_per_frame"] == pytest.approx(0.5)
    assert s["fps"] == pytest.approx(250.0)
    assert [f.index for f in stats.frames] == list(range(10))
    path = tmp_path / "stats.json"
    stats.to_json(str(path))
    import json

    data = json.loads(path.read_text())
    assert len(data["frames"]) == 10 and data["summary"]["frames"] == 10


def test_pop_through_removes_nothing_when_a_wait_raises():
    class DeviceLost(FakeFence):
        def synchronize(self) -> None:
            raise RuntimeError("device lost")

    ring = FrameRing(4)
    submit(ring)
    ring.begin()
    ring.submit(DeviceLost(), 1)
    submit(ring)
    with pytest.raises(RuntimeError, match="device lost"):
        ring.pop_through(2)
    assert len(ring) == 3 and ring.oldest().index == 0  # frame 0 is not lost: a later retirement finds it
    assert not ring.find(0).retired
