"""The viewer's HTTP surface: fixed routes only, security headers, and the checks of :mod:`~optixasync.viewer._access`.

The page and its three assets are read once from the package's ``static``
folder by fixed names; no route takes a path parameter, so no request can
name a file. A request with a malformed ``Host`` is answered 400; on a
loopback bind one whose ``Host`` names another host is refused (DNS
rebinding); beyond loopback the allow-list or the token decides; a WebSocket
whose ``Origin`` is another site's is refused (a page elsewhere in the
user's browser).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from ._access import PUBLIC_ROUTES, AccessPolicy, parse_host

__all__ = ["SECURITY_HEADERS", "STATIC_FILES", "add_security_headers", "add_static_routes", "guard_middleware",
           "origin_allowed"]

#: The only files served: route -> (file in the package's ``static`` folder, content type).
STATIC_FILES = {
    "/": ("index.html", "text/html"),
    "/static/viewer_ui.js": ("viewer_ui.js", "text/javascript"),
    "/static/viewer.js": ("viewer.js", "text/javascript"),
    "/static/viewer.css": ("viewer.css", "text/css"),
}
_STATIC_DIR = Path(__file__).resolve().parent / "static"
#: Headers of every response: the page may load its own script and style, images from blobs, and connect
#: only to its own origin; it may not be framed.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
                               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def add_static_routes(app: web.Application) -> None:
    """Serve :data:`STATIC_FILES` (read now, into memory) on their fixed routes."""
    for route, (name, content_type) in STATIC_FILES.items():
        body = (_STATIC_DIR / name).read_bytes()

        async def handler(request: web.Request, body: bytes = body, content_type: str = content_type) -> web.Response:
            return web.Response(body=body, content_type=content_type, charset="utf-8")

        app.router.add_get(route, handler)


def guard_middleware(access: AccessPolicy | str) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """A middleware answering 400 to a malformed Host, refusing other methods than GET/HEAD, hosts the policy
    does not allow and, with a token, requests without it (the public stylesheet and script excepted).

    ``access`` may be a bind address (its default policy).
    """
    policy = access if isinstance(access, AccessPolicy) else AccessPolicy.create(access)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = parse_host(request.headers.get("Host"))
        if host is None:
            return web.Response(status=400, text="bad Host header\n")
        if not policy.host_allowed(host):  # a DNS-rebinding page names its own host
            return web.Response(status=403, text="forbidden host\n")
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="method not allowed\n")
        if request.path not in PUBLIC_ROUTES and not policy.token_ok(request.query.get("token")):
            return web.Response(status=403, text="this viewer needs its token: open the URL it printed\n")
        return await handler(request)

    return guard


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare`` hook adding :data:`SECURITY_HEADERS`."""
    for key, value in SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)


def origin_allowed(request: web.Request, access: AccessPolicy | None = None) -> bool:
    """Whether a WebSocket request comes from the viewer's own page, an allowed host, or a client sending no Origin."""
    policy = access if access is not None else AccessPolicy.create("127.0.0.1")
    return policy.origin_allowed(request.headers.get("Origin"), request.headers.get("Host", ""))
