"""The frame message format and one connection's pacing, with a fake connection (no network)."""

from __future__ import annotations

import asyncio

import pytest

from optixasync.viewer._wire import ClientPacer, EncodedFrame, frame_payload, split_payload


class FakeSocket:
    """Records what is sent; ``stall`` makes every send wait forever (a peer that stopped reading)."""

    def __init__(self, stall: bool = False) -> None:
        self.closed = False
        self.stall = stall
        self.sent: list[bytes] = []

    async def send_bytes(self, data: bytes) -> None:
        if self.stall:
            await asyncio.Event().wait()
        self.sent.append(data)


def frame(seq: int) -> EncodedFrame:
    return EncodedFrame(seq, 1, frame_payload({"seq": seq}, b"jpeg"))


def test_payload_round_trip_and_malformed_messages():
    header, data = split_payload(frame_payload({"seq": 3, "camera": 7}, b"\xff\xd8image"))
    assert header == {"seq": 3, "camera": 7} and data == b"\xff\xd8image"
    for bad in (b"", b"\x01\x00", b"\xff\x00\x00\x00{}", b"\x02\x00\x00\x00[]"):
        with pytest.raises(ValueError):
            split_payload(bad)
    with pytest.raises(ValueError):
        frame_payload({"fps": float("nan")}, b"")  # the header is strict JSON


def test_a_full_client_keeps_only_the_newest_frame_and_resumes_on_ack():
    async def scenario():
        socket = FakeSocket()
        pacer = ClientPacer(socket, "test", max_unacked=2)
        task = asyncio.get_running_loop().create_task(pacer.send_loop())
        for seq in range(1, 6):
            pacer.offer(frame(seq))
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        assert [split_payload(d)[0]["seq"] for d in socket.sent] == [1, 2]
        assert pacer.pending.seq == 5 and pacer.skipped == 2 and pacer.room() == -1
        assert not pacer.ack(99)  # never sent
        assert pacer.ack(1)
        await asyncio.sleep(0.01)
        assert [split_payload(d)[0]["seq"] for d in socket.sent] == [1, 2, 5]
        assert pacer.ack(5) and pacer.room() == 2
        task.cancel()

    asyncio.run(scenario())


def test_a_stalled_connection_blocks_only_its_own_sender():
    async def scenario():
        stalled, healthy = FakeSocket(stall=True), FakeSocket()
        pacers = [ClientPacer(stalled, "stalled", 2), ClientPacer(healthy, "healthy", 2)]
        tasks = [asyncio.get_running_loop().create_task(p.send_loop()) for p in pacers]
        for seq in range(1, 50):
            for pacer in pacers:
                pacer.offer(frame(seq))
            await asyncio.sleep(0)
            pacers[1].ack(seq)
        await asyncio.sleep(0.01)
        assert len(healthy.sent) >= 40 and stalled.sent == []
        assert pacers[0].pending is not None and pacers[0].pending.seq == 49
        for task in tasks:
            task.cancel()

    asyncio.run(asyncio.wait_for(scenario(), 10))
