"""The viewer's WebSocket protocol with the CPU source, through :class:`~optixasync.viewer.ProtocolClient`."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

pytest.importorskip("aiohttp", reason="the viewer server needs aiohttp (pip install 'optixasync[viewer]')")

from optixasync.viewer import CpuFrameSource, ProtocolClient, Viewer  # noqa: E402


async def collect(client: ProtocolClient, count: int, timeout: float = 10.0) -> list:
    return [await client.next_frame(timeout) for _ in range(count)]


def test_frames_arrive_continuously_with_increasing_ids(viewer, run_async):
    async def scenario():
        async with ProtocolClient(viewer.url) as client:
            assert client.hello["type"] == "hello" and client.hello["max_unacked"] == 2
            frames = await collect(client, 20)
        seqs = [f.seq for f in frames]
        ids = [f.frame_id for f in frames]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        assert frames[-1].samples > frames[0].samples  # still accumulating
        image = frames[-1].decode()
        assert image.shape == (48, 64, 3) and 10 < image.mean() < 250
        header = frames[-1].header
        assert header["mime"] == "image/jpeg" and header["settings"]["width"] == 64
        assert set(header["stats"]) >= {"fps", "frames_in_flight", "gpu_busy", "submit_ms", "denoise"}

    run_async(scenario())


def test_a_camera_message_yields_frames_with_the_new_camera_id(viewer, run_async):
    async def scenario():
        async with ProtocolClient(viewer.url) as client:
            first = await client.next_frame()
            reply = await client.orbit(0.1, 0.05)
            assert reply["type"] == "applied" and reply["camera_id"] > first.camera_id
            moved = await client.wait_for_camera(reply["camera_id"])
            assert moved.camera_id == reply["camera_id"] == viewer.state.version
            later = await collect(client, 5)
            assert all(f.camera_id == reply["camera_id"] for f in later)
            assert moved.samples <= later[-1].samples  # accumulation restarted, then grows again
            for message in (client.pan(0.1, 0.0), client.zoom(-2), client.key("w"),
                            client.set_camera((0, 1, 6), (0, 0.5, 0), fov=50.0)):
                reply = await message
                assert reply["type"] == "applied"
                assert (await client.wait_for_camera(reply["camera_id"])).camera_id == reply["camera_id"]
            assert viewer.state.snapshot().camera.fov == 50.0

    run_async(scenario())


BAD_MESSAGES = [
    "garbage{", "[]", "null", '{"type": "orbit", "dx": NaN, "dy": 0}', '{"type": "zoom", "steps": 1e999}',
    '{"type": "orbit", "dx": "1", "dy": 0}', '{"type": "settings", "spp": [1]}', '{"type": "warp"}',
    '{"type": "ack", "seq": 99999999}', '{"type": "ack"}', '{"type": "camera", "eye": [1, 1, 1], "target": [1, 1, 1]}',
    '{"type": "key", "key": "' + "k" * 3000 + '"}', "[" * 2000 + "]" * 2000,
]


def test_malformed_messages_are_ignored_and_the_server_keeps_serving(viewer, caplog, run_async):
    async def scenario():
        async with ProtocolClient(viewer.url) as client:
            await client.next_frame()
            version = viewer.state.version
            for text in BAD_MESSAGES:
                await client.send_text(text)
            await client._ws.send_bytes(b"\x00\x01binary")
            reply = await client.request({"type": "settings", "spp": "many"})
            assert reply["type"] == "ignored" and "spp" in reply["reason"]
            assert viewer.state.version == version  # nothing was applied
            client.drain()
            frames = await collect(client, 5)
            assert all(f.camera_id == version for f in frames)
            reply = await client.orbit(0.05, 0.0)  # and valid input still works
            assert reply["type"] == "applied" and reply["camera_id"] == version + 1

    with caplog.at_level("WARNING", logger="optixasync.viewer"):
        run_async(scenario())
    ignored = [r for r in caplog.records if "ignored a message" in r.getMessage()]
    assert len(ignored) >= 10


def test_an_oversized_message_closes_only_that_connection(viewer, run_async):
    async def scenario():
        async with ProtocolClient(viewer.url) as other, ProtocolClient(viewer.url) as rude:
            await rude.next_frame()
            await rude.send_text(json.dumps({"type": "orbit", "dx": 0, "dy": 0, "pad": "x" * 200_000}))
            with pytest.raises(ConnectionError):
                for _ in range(1000):
                    await rude.next_frame()
            other.drain()
            assert len(await collect(other, 5)) == 5

    run_async(scenario())


def test_a_client_that_never_acks_gets_a_bounded_number_of_frames_and_costs_the_source_nothing(run_async):
    source = CpuFrameSource(64, 48, max_samples=10**9, fps_limit=200)
    source.idle_after = float("inf")  # the pump's cost alone: the pause without a view is tested with the widget

    def loops_per_second(seconds: float = 1.0) -> float:
        start, count = time.perf_counter(), source.loops
        time.sleep(seconds)
        return (source.loops - count) / (time.perf_counter() - start)

    with Viewer(source, port=0) as viewer:
        time.sleep(0.2)
        alone = loops_per_second()

        async def scenario():
            async with ProtocolClient(viewer.url, auto_ack=False) as stalled:
                await asyncio.sleep(0.3)
                encoded_before = viewer.stats()["encoded"]
                with_stalled = await asyncio.to_thread(loops_per_second)
                assert viewer.stats()["encoded"] - encoded_before <= 1  # nobody can take a frame: no encoding
                return stalled.frames_received, with_stalled

        received, with_stalled = run_async(scenario())
    assert 1 <= received <= 2  # max_unacked
    assert with_stalled >= 0.85 * alone, (alone, with_stalled)


def test_a_disconnecting_client_leaves_the_others_working(viewer, run_async):
    async def scenario():
        steady = ProtocolClient(viewer.url)
        leaving = ProtocolClient(viewer.url)
        await steady.connect()
        await leaving.connect()
        await collect(leaving, 3)
        await leaving.abort()  # no closing handshake
        steady.drain()
        assert len(await collect(steady, 10)) == 10
        for _ in range(100):
            if viewer.stats()["clients"] == 1:
                break
            await asyncio.sleep(0.02)
        assert viewer.stats()["clients"] == 1
        async with ProtocolClient(viewer.url) as newcomer:
            assert len(await collect(newcomer, 3)) == 3
        await steady.close()

    run_async(scenario())


def test_two_clients_both_receive_frames(viewer, run_async):
    async def scenario():
        async with ProtocolClient(viewer.url) as a, ProtocolClient(viewer.url) as b:
            frames_a, frames_b = await asyncio.gather(collect(a, 10), collect(b, 10))
            assert viewer.stats()["clients"] == 2
            reply = await a.orbit(0.1, 0.0)
            seen_by_b = await b.wait_for_camera(reply["camera_id"])  # input from one tab shows in all
            assert seen_by_b.camera_id == reply["camera_id"]
        for frames in (frames_a, frames_b):
            seqs = [f.seq for f in frames]
            assert seqs == sorted(seqs) and len(set(seqs)) == 10

    run_async(scenario())


def test_settings_messages_are_clamped_and_reach_the_source(viewer, cpu_source, run_async):
    async def scenario():
        async with ProtocolClient(viewer.url) as client:
            reply = await client.settings(spp=10**6, max_depth=10**9, width=1, height=-40, denoise=True)
            assert reply["type"] == "applied"
            assert reply["settings"] == {"spp": 256, "max_depth": 64, "width": 16, "height": 16, "denoise": True}
            frame = await client.wait_for_camera(reply["camera_id"], timeout=20)
            assert (frame.header["width"], frame.header["height"]) == (16, 16)
            assert frame.header["stats"]["denoise"] is True and frame.header["stats"]["spp"] == 256
            reply = await client.settings(spp=2, width=32.4, height=24)
            frame = await client.wait_for_camera(reply["camera_id"], timeout=20)
            assert (frame.header["width"], frame.header["height"]) == (32, 24)
            assert cpu_source.last_state.settings.spp == 2

    run_async(scenario(), timeout=60)


def test_the_viewer_binds_loopback_by_default(viewer):
    assert viewer.host == "127.0.0.1"
    assert viewer.addresses and all(host == "127.0.0.1" for host, _ in viewer.addresses)
    assert viewer.url == f"http://127.0.0.1:{viewer.port}/"
    assert viewer.port != 0


def test_stop_closes_clients_and_the_source(run_async):
    source = CpuFrameSource(32, 32, max_samples=10**9)
    viewer = Viewer(source, port=0)
    viewer.start()

    async def scenario():
        client = ProtocolClient(viewer.url)
        await client.connect()
        await client.next_frame()
        await asyncio.to_thread(viewer.stop)
        with pytest.raises(ConnectionError):
            for _ in range(100):
                await client.next_frame(timeout=5)
        await client.close()

    run_async(scenario())
    assert not viewer.running and not source.running
    viewer.stop()  # idempotent
