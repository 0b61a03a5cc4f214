"""What the viewer's server refuses: other paths, other hosts, other origins, other methods."""

from __future__ import annotations

import asyncio
import logging

import pytest

pytest.importorskip("aiohttp", reason="the viewer server needs aiohttp (pip install 'optixasync[viewer]')")

import aiohttp  # noqa: E402

from optixasync.viewer import ProtocolClient, Viewer, host_warning, is_loopback  # noqa: E402


async def raw_request(port: int, target: str, host: str | None = None, method: str = "GET") -> tuple[int, dict, bytes]:
    """Send one HTTP/1.1 request line exactly as given (no client-side path normalisation)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    host = host or f"127.0.0.1:{port}"
    writer.write(f"{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


@pytest.mark.parametrize("target", [
    "/../pyproject.toml", "/static/../../x", "/static/../../pyproject.toml", "/static/..%2f..%2fpyproject.toml",
    "/static/viewer.js/../../pyproject.toml", "/pyproject.toml", "/static/", "/static/index.html",
    "/static/%2e%2e/_server.py", "/_server.py", "/optixasync/viewer/_server.py", "//etc/passwd", "/static//etc/passwd",
    "/static/viewer.js%00.py", "/%2e%2e/%2e%2e/etc/passwd",
])
def test_only_fixed_routes_are_served(viewer, run_async, target):
    status, _, body = run_async(raw_request(viewer.port, target))
    assert status == 404, (target, status)
    assert b"[project]" not in body and b"import" not in body and b"root:" not in body


def test_the_page_and_its_assets_are_served_with_security_headers(viewer, run_async):
    for target, kind, marker in (("/", "text/html", b"viewer_ui.js"), ("/static/viewer.js", "text/javascript", b"WebSocket"),
                                 ("/static/viewer_ui.js", "text/javascript", b"function mountViewer"),
                                 ("/static/viewer.css", "text/css", b".oxa-overlay")):
        status, headers, body = run_async(raw_request(viewer.port, target))
        assert status == 200 and headers["content-type"].startswith(kind) and marker in body
        assert "script-src 'self'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
    status, _, _ = run_async(raw_request(viewer.port, "/", host=f"localhost:{viewer.port}"))
    assert status == 200


def test_other_methods_are_refused(viewer, run_async):
    for method in ("POST", "PUT", "DELETE"):
        status, _, _ = run_async(raw_request(viewer.port, "/", method=method))
        assert status == 405


def test_a_foreign_host_header_is_refused_on_loopback(viewer, run_async):
    # DNS rebinding: a page of evil.example resolving to 127.0.0.1 sends its own name as Host
    status, _, body = run_async(raw_request(viewer.port, "/", host=f"evil.example:{viewer.port}"))
    assert status == 403 and b"viewer_ui.js" not in body


def test_a_websocket_from_another_origin_is_refused(viewer, run_async):
    async def scenario():
        with pytest.raises(aiohttp.WSServerHandshakeError) as info:
            await ProtocolClient(viewer.url, origin="http://evil.example").connect()
        assert info.value.status == 403
        async with ProtocolClient(viewer.url, origin=f"http://127.0.0.1:{viewer.port}") as same_origin:
            await same_origin.next_frame()

    run_async(scenario())


def test_loopback_detection_and_the_warning():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.0.0.2")
    assert is_loopback("0:0:0:0:0:0:0:1") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")
    assert host_warning("127.0.0.1") is None
    assert "warning" in host_warning("0.0.0.0") and "0.0.0.0" in host_warning("0.0.0.0")


def test_the_default_bind_address_is_loopback_and_logs_no_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="optixasync.viewer"), Viewer(port=0) as viewer:
        assert [host for host, _ in viewer.addresses] == ["127.0.0.1"]
    assert not [r for r in caplog.records if "warning: serving" in r.getMessage()]


class FakeRequest:
    """What the guard middleware reads of a request: the Host header, the method, the path and the query."""

    method = "GET"
    path = "/"

    def __init__(self, host, query=None):
        self.headers = {} if host is None else {"Host": host}
        self.query = query or {}


async def guarded_status(access, host, query=None):
    from optixasync.viewer._http import guard_middleware

    async def handler(request):
        return aiohttp.web.Response(text="ok")

    return (await guard_middleware(access)(FakeRequest(host, query), handler)).status


def test_every_loopback_spelling_keeps_the_host_check():
    """The bind warning and the Host check use one test: an address that gets no warning gets the check."""
    for bind in ("127.0.0.1", "::1", "0:0:0:0:0:0:0:1", "localhost", "127.0.0.2"):
        assert host_warning(bind) is None
        assert asyncio.run(guarded_status(bind, "evil.example")) == 403, bind
        assert asyncio.run(guarded_status(bind, None)) == 400, bind  # no Host at all: malformed
        for own in ("127.0.0.1", "localhost", "[::1]", "127.0.0.1:8765"):
            assert asyncio.run(guarded_status(bind, own)) == 200, (bind, own)
    # a public bind is warned about and, with neither allowed hosts nor a token given, gets a token
    assert "warning" in host_warning("0.0.0.0")
    assert asyncio.run(guarded_status("0.0.0.0", "evil.example")) == 403


def test_the_url_of_a_wildcard_bind_uses_its_own_family():
    assert Viewer(host="0.0.0.0", port=0).url.startswith("http://127.0.0.1:")
    assert Viewer(host="::", port=0).url.startswith("http://[::1]:")
