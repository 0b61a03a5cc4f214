"""The viewer's access policy on its own: Host parsing, the token, the allow-list of hosts and origins."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("aiohttp", reason="the viewer server needs aiohttp (pip install 'optixasync[viewer]')")

from test_viewer_security import guarded_status  # noqa: E402

from optixasync.viewer._access import AccessPolicy, parse_host  # noqa: E402


def test_host_header_parsing():
    assert parse_host("Example.COM:8080") == "example.com"
    assert parse_host("[::1]:8765") == "::1" and parse_host("127.0.0.1") == "127.0.0.1"
    for bad in (None, "", "a:b", "[::1]x", "x:0", "x:65536", "a/b", "a b"):
        assert parse_host(bad) is None, bad


def test_beyond_loopback_a_token_is_made_and_required():
    policy = AccessPolicy.create("0.0.0.0")
    assert policy.token is not None and len(policy.token) >= 24
    assert AccessPolicy.create("0.0.0.0").token != policy.token  # random each time
    for host in ("evil.example", "192.168.1.5", "127.0.0.1"):
        assert asyncio.run(guarded_status(policy, host)) == 403, host  # no token: refused whatever the Host
        assert asyncio.run(guarded_status(policy, host, {"token": policy.token})) == 200, host
        assert asyncio.run(guarded_status(policy, host, {"token": policy.token[:-1] + "x"})) == 403, host
    with pytest.raises(ValueError, match="needs allowed hosts or a token"):
        AccessPolicy.create("0.0.0.0", token=False)


def test_beyond_loopback_an_allow_list_names_the_hosts_and_origins():
    policy = AccessPolicy.create("0.0.0.0", ["render.lan", "10.0.0.7"])
    assert policy.token is None
    assert asyncio.run(guarded_status(policy, "render.lan:8765")) == 200
    assert asyncio.run(guarded_status(policy, "10.0.0.7")) == 200
    assert asyncio.run(guarded_status(policy, "evil.example:8765")) == 403  # a rebinding page's own name
    assert policy.origin_allowed("http://render.lan:8765", "render.lan:8765")
    assert policy.origin_allowed("http://10.0.0.7:8765", "render.lan:8765")  # an allowed host, the viewer's port
    assert not policy.origin_allowed("https://10.0.0.7", "render.lan:8765")  # its page on another port: refused
    assert not policy.origin_allowed("http://render.lan:8080", "render.lan:8765")
    assert policy.origin_allowed("http://render.lan", "10.0.0.7")  # both on the default port
    assert not policy.origin_allowed("http://evil.example:8765", "evil.example:8765")  # not its own Host: refused
    assert not policy.origin_allowed("null", "render.lan:8765")
    with pytest.raises(ValueError, match="not a host name"):
        AccessPolicy.create("0.0.0.0", ["bad host"])


