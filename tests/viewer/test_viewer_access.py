"""Who may use the viewer: a malformed Host is a 400, a viewer beyond loopback needs a token or allowed hosts,
and one settings message cannot ask for more work than the limits allow.

Regression tests of the defects found by fuzzing the viewer: the Host check was off beyond loopback (and the
Origin compared with the attacker's own Host), a Host with a non-numeric port was a 500 with a traceback in
the log, and one settings message could cost the CPU source about 2 GB and hold the next change until its
frame ended. No test binds beyond loopback: the token is tested on a loopback viewer that is given one.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

pytest.importorskip("aiohttp", reason="the viewer server needs aiohttp (pip install 'optixasync[viewer]')")

import aiohttp  # noqa: E402
from test_viewer_security import guarded_status, raw_request  # noqa: E402

from optixasync.testing import peak_memory  # noqa: E402
from optixasync.viewer import LIMITS, CpuFrameSource, CpuRenderer, ProtocolClient, Settings, Viewer  # noqa: E402


@pytest.mark.parametrize("host", ["127.0.0.1:abc", "127.0.0.1:99999", "127.0.0.1:", "[::1", "[nope]:80",
                                  "exa mple.com", "a" * 300, "127.0.0.1:-1", "host:8080:90"])
def test_a_malformed_host_header_is_a_400_not_a_500(viewer, run_async, caplog, host):
    with caplog.at_level(logging.ERROR):
        status, _, body = run_async(raw_request(viewer.port, "/", host=host))
    assert status == 400 and b"<canvas" not in body
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no traceback in the log


def test_beyond_loopback_the_viewer_needs_its_token():
    viewer = Viewer(host="0.0.0.0", port=0)  # not started: nothing is bound
    assert "?token=" in viewer.url
    token = viewer.url.rpartition("?token=")[2]
    for host in ("evil.example", "192.168.1.5:8765", "127.0.0.1"):
        assert asyncio.run(guarded_status(viewer.access, host)) == 403, host  # no token: refused whatever the Host
        assert asyncio.run(guarded_status(viewer.access, host, {"token": token})) == 200, host
        assert asyncio.run(guarded_status(viewer.access, host, {"token": token[:-1] + "x"})) == 403, host


def test_a_viewer_with_a_token_refuses_page_stats_and_websocket_without_it(run_async, caplog):
    with caplog.at_level(logging.WARNING, logger="optixasync.viewer"), \
            Viewer(CpuFrameSource(32, 24), port=0, token=True) as viewer:
        token = viewer.access.token
        assert any(f"?token={token}" in r.getMessage() for r in caplog.records)  # said when it starts
        for target, allowed in (("/", False), ("/stats", False), (f"/?token={token}", True),
                                (f"/stats?token={token}", True), ("/static/viewer.js", True)):
            status, _, _ = run_async(raw_request(viewer.port, target))
            assert (status == 200) is allowed, (target, status)

        async def scenario():
            base = f"http://127.0.0.1:{viewer.port}/"
            with pytest.raises(aiohttp.WSServerHandshakeError) as info:
                await ProtocolClient(base).connect()
            assert info.value.status == 403
            async with ProtocolClient(viewer.url) as client:  # the URL carries the token to the WebSocket
                await client.next_frame()

        run_async(scenario())


def test_one_settings_message_is_bounded_by_the_sample_limit():
    from optixasync.viewer import ViewerState

    state = ViewerState()
    s = state.update_settings(width=3840, height=2160, spp=256).settings
    assert (s.width, s.height, s.spp) == (3840, 2160, 4)  # four samples of the largest image, not 256
    assert s.spp * s.width * s.height <= LIMITS["samples"][1]
    assert state.update_settings(width=512, height=512, spp=256).settings.spp == 126


def test_the_cpu_renderer_traces_in_tiles_and_stops_when_the_state_changes():
    renderer = CpuRenderer()
    settings = Settings(width=1920, height=1080, spp=1, max_depth=3)
    camera = CpuRenderer.default_camera()
    with peak_memory() as peak:
        done = renderer.add_samples(camera, settings, 1)
    assert renderer.samples == 1
    assert peak.bytes < 160 << 20  # generous: tiles of 2**18 pixels, not 2 million rays at once
    assert done is True
    asked = []

    def stop():
        asked.append(1)
        return True

    assert renderer.add_samples(camera, settings, 5, stop=stop) is False
    assert renderer.samples == 1 and len(asked) == 1  # the partial sample is dropped; asked after one tile
