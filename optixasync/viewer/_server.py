"""The viewer's web server (aiohttp): fixed routes, one WebSocket per tab, frames paced by acknowledgements.

Runs on one asyncio event loop (the viewer's thread). The encoder pump and the
input handling are the :class:`~optixasync.viewer._pump.FramePump`, shared with
the notebook widget: it takes the newest frame from the mailbox only when some
client can take one, encodes it on the encoder pool and offers it to every
client; each connection has its own sender task, so a stalled tab blocks only
itself.

The frame message format and the per-client pacing are in
:mod:`optixasync.viewer._wire`, the routes and security checks in
:mod:`optixasync.viewer._http`, input messages in
:mod:`optixasync.viewer._messages`.

Blocking calls
--------------
None on the event loop (see :mod:`optixasync.viewer._pump`). ``close`` waits
up to a second per connection for its closing handshake.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import WSMsgType, web

from ._access import AccessPolicy
from ._encode import JpegEncoder
from ._http import add_security_headers, add_static_routes, guard_middleware, origin_allowed
from ._mailbox import FrameMailbox
from ._pump import CommandHandler, FramePump, reply
from ._state import ViewerState
from ._wire import ClientPacer

__all__ = ["FrameServer", "MAX_MESSAGE_BYTES"]

log = logging.getLogger("optixasync.viewer")

#: Largest input message accepted by the WebSocket (bytes); a larger one closes that connection.
MAX_MESSAGE_BYTES = 64 * 1024
_LOG_FIRST, _LOG_EVERY = 10, 100


class FrameServer:
    """Serves the page and the frame stream of one :class:`~optixasync.viewer.Viewer` (lives on its loop).

    Parameters
    ----------
    state : ViewerState
        Camera and settings that input messages change.
    mailbox : FrameMailbox
        Where published frames wait.
    access : AccessPolicy
        Who may connect: the Host and Origin checks and the token (see :mod:`~optixasync.viewer._access`).
    encoder : JpegEncoder
        How frames are compressed.
    encoders : int
        Encoder threads (frames encoded at once).
    max_unacked : int
        Frames a client may have unacknowledged.
    max_fps : float or None
        Most frames encoded per second (None: no limit besides the clients' acknowledgements).
    commands : callable or None
        Handles the capture messages (``save``, ``record``, ``play``).
    """

    def __init__(self, state: ViewerState, mailbox: FrameMailbox, access: AccessPolicy, encoder: JpegEncoder,
                 encoders: int = 2, max_unacked: int = 2, max_fps: float | None = None,
                 commands: CommandHandler | None = None) -> None:
        self.pump = FramePump(state, mailbox, encoder, encoders, max_unacked, max_fps, commands)
        self.state = state
        self._access = access
        self._connections = 0
        self._refused = 0
        self._runner: web.AppRunner | None = None
        #: (host, port) of every socket bound, after :meth:`start`.
        self.addresses: list[tuple[str, int]] = []

    # -- lifecycle --------------------------------------------------------------------------------------

    def make_app(self) -> web.Application:
        """The aiohttp application: the fixed routes and the security checks."""
        app = web.Application(middlewares=[guard_middleware(self._access)])
        add_static_routes(app)
        app.router.add_get("/ws", self._websocket)
        app.router.add_get("/stats", self._stats)
        app.on_response_prepare.append(add_security_headers)
        return app

    async def start(self, host: str, port: int) -> int:
        """Bind and start serving; the port bound."""
        try:  # aiohttp >= 3.9 takes the graceful-shutdown time on the runner
            self._runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=0.5)
        except TypeError:
            self._runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.pump.start()
        self.addresses = [tuple(a[:2]) for a in self._runner.addresses]
        return int(self.addresses[0][1])

    async def close(self) -> None:
        """Close every connection and stop serving (encoder threads are shut down without waiting)."""
        for client in list(self.pump.clients):
            try:
                await asyncio.wait_for(client.ws.close(code=1001, message=b"viewer closed"), 1.0)
            except (asyncio.TimeoutError, ConnectionError, RuntimeError):
                pass
        if self._runner is not None:
            await self._runner.cleanup()
        self.pump.stop()

    def stats(self) -> dict[str, Any]:
        """Counters and timings of the server (safe to call from any thread)."""
        return self.pump.stats()

    # -- HTTP -----------------------------------------------------------------------------------------------

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if not origin_allowed(request, self._access):  # another site's page in the user's browser
            self._refused += 1
            if self._refused <= _LOG_FIRST or self._refused % _LOG_EVERY == 0:
                log.warning("viewer: refused a WebSocket from origin %.100s", request.headers.get("Origin"))
            return web.Response(status=403, text="forbidden origin\n")
        ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=MAX_MESSAGE_BYTES, compress=False, timeout=1.0)
        await ws.prepare(request)
        self._connections += 1
        client = ClientPacer(ws, f"client {self._connections} ({request.remote})", self.pump.max_unacked)
        if not await reply(client, self.pump.hello()):
            return ws
        sender = asyncio.get_running_loop().create_task(client.send_loop())
        self.pump.add(client)
        try:
            await self._read(client)
        finally:
            self.pump.discard(client)
            sender.cancel()
            try:
                await sender
            except (asyncio.CancelledError, Exception):  # a send that failed because the peer went away
                pass
        return ws

    async def _read(self, client: ClientPacer) -> None:
        """Handle one connection's messages until it closes."""
        async for msg in client.ws:
            if msg.type == WSMsgType.TEXT:
                await self.pump.handle_text(client, msg.data)
            elif msg.type == WSMsgType.BINARY:
                self.pump.ignore(client, "binary messages are not accepted")
            elif msg.type == WSMsgType.ERROR:
                log.warning("viewer: %s: connection closed: %s", client.name, client.ws.exception())
                break
