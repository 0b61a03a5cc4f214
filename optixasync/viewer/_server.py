"""The viewer's web server (aiohttp): fixed routes, one WebSocket per tab, frames paced by acknowledgements.

Runs on one asyncio event loop (the viewer's thread). An encoder *pump* takes
the newest frame from the :class:`~optixasync.viewer._mailbox.FrameMailbox`
only when some client can take a frame (fewer than ``max_unacked`` frames
unacknowledged), encodes it on the encoder pool and offers it to every client.
A client that is full keeps just the newest offered frame as pending; each
client has its own sender task, so a stalled tab blocks only itself.

The frame message format and the per-client pacing are in
:mod:`optixasync.viewer._wire`, the routes and security checks in
:mod:`optixasync.viewer._http`, input messages in
:mod:`optixasync.viewer._messages`.

Blocking calls
--------------
None on the event loop: encoding runs on the encoder threads, each
connection's sends run in its own task, and taking a frame from the mailbox
holds its lock for a pointer swap. ``close`` waits up to a second per
connection for its closing handshake.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import WSMsgType, web

from ._access import AccessPolicy
from ._encode import JpegEncoder
from ._http import add_security_headers, add_static_routes, guard_middleware, origin_allowed
from ._mailbox import FrameMailbox, PublishedFrame
from ._messages import BadMessage, apply_message, parse_message
from ._source import FrameMeta
from ._state import LIMITS, ViewerState
from ._wire import ClientPacer, EncodedFrame, frame_payload

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
    """

    def __init__(self, state: ViewerState, mailbox: FrameMailbox, access: AccessPolicy, encoder: JpegEncoder,
                 encoders: int = 2, max_unacked: int = 2, max_fps: float | None = None) -> None:
        self.state = state
        self.mailbox = mailbox
        self.encoder = encoder
        self.encoders = max(1, int(encoders))
        self.max_unacked = max(1, int(max_unacked))
        self._min_interval = 1.0 / max_fps if max_fps else 0.0
        self._access = access
        self._clients: set[ClientPacer] = set()
        self._executor = ThreadPoolExecutor(self.encoders, thread_name_prefix="optixasync-viewer-encode")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._pump_task: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._in_flight = 0
        self._next_start = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._last: EncodedFrame | None = None
        self._connections = 0
        self._refused = 0
        self.encoded = 0
        self.stale = 0
        self.encode_errors = 0
        self._encode_ms: deque[float] = deque(maxlen=120)
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
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        try:  # aiohttp >= 3.9 takes the graceful-shutdown time on the runner
            self._runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=0.5)
        except TypeError:
            self._runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self._pump_task = self._loop.create_task(self._pump())
        self.addresses = [tuple(a[:2]) for a in self._runner.addresses]
        return int(self.addresses[0][1])

    async def close(self) -> None:
        """Close every connection and stop serving (encoder threads are shut down without waiting)."""
        if self._pump_task is not None:
            self._pump_task.cancel()
            self._pump_task = None  # its traceback would keep the last frame alive
        for client in list(self._clients):
            try:
                await asyncio.wait_for(client.ws.close(code=1001, message=b"viewer closed"), 1.0)
            except (asyncio.TimeoutError, ConnectionError, RuntimeError):
                pass
        if self._runner is not None:
            await self._runner.cleanup()
        for task in list(self._tasks):
            task.cancel()
        self.mailbox.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- statistics -------------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters and timings of the server (safe to call from any thread)."""
        clients = list(self._clients)
        times = sorted(list(self._encode_ms))
        return {
            "published": self.mailbox.published, "dropped": self.mailbox.dropped, "encoded": self.encoded,
            "stale": self.stale, "encode_errors": self.encode_errors, "clients": len(clients),
            "sent": sum(c.sent for c in clients), "skipped": sum(c.skipped for c in clients),
            "encode_ms": statistics.median(times) if times else None,
            "encode_ms_p95": times[min(len(times) - 1, int(0.95 * len(times)))] if times else None,
            "encoder": self.encoder.backend, "quality": self.encoder.quality, "encoders": self.encoders,
            "max_unacked": self.max_unacked,
        }

    # -- the encoder pump ---------------------------------------------------------------------------------

    def _demand(self) -> int:
        return max((c.room() for c in self._clients), default=0)

    def _wake_threadsafe(self) -> None:
        loop = self._loop
        if loop is not None and self._wake is not None:
            try:
                loop.call_soon_threadsafe(self._wake.set)
            except RuntimeError:  # the loop is closed: the viewer is stopping
                pass

    def _timer_fired(self) -> None:
        self._timer = None
        if self._wake is not None:
            self._wake.set()

    async def _pump(self) -> None:
        assert self._loop is not None and self._wake is not None
        loop, wake = self._loop, self._wake
        while True:
            wake.clear()
            if self._in_flight < min(self._demand(), self.encoders):
                delay = self._next_start - loop.time()
                if delay > 0:
                    if self._timer is None:
                        self._timer = loop.call_later(delay, self._timer_fired)
                else:
                    frame = self.mailbox.take(self._wake_threadsafe)
                    if frame is not None:
                        self._in_flight += 1
                        # paced on the schedule, not on when the pump woke: the mean rate is max_fps
                        self._next_start = max(self._next_start + self._min_interval, loop.time())
                        task = loop.create_task(self._encode(frame))
                        frame = None  # the task holds it now; the pump must not, while it waits
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)
                        continue
            await wake.wait()

    async def _encode(self, frame: PublishedFrame) -> None:
        assert self._loop is not None and self._wake is not None
        try:
            encoded = await self._loop.run_in_executor(self._executor, self._encode_sync, frame)
        except Exception as exc:  # a bad frame from the source: log it, keep serving
            self.encode_errors += 1
            if self.encode_errors <= _LOG_FIRST or self.encode_errors % _LOG_EVERY == 0:
                log.error("viewer: cannot encode frame %d: %s: %s", frame.seq, type(exc).__name__, exc)
            return
        finally:
            del frame  # the image may be a view of the source's pinned memory: let it go now
            self._in_flight -= 1
            self._wake.set()
        self._deliver(encoded)

    def _encode_sync(self, frame: PublishedFrame) -> EncodedFrame:
        """On an encoder thread: compress the image and build the message."""
        meta = FrameMeta.coerce(frame.meta)
        start = time.perf_counter()
        data = self.encoder.encode(frame.image)
        done = time.perf_counter()
        encode_ms = (done - start) * 1e3
        self._encode_ms.append(encode_ms)
        height, width = frame.image.shape[:2]
        stats = self.stats()
        header = {
            "seq": frame.seq, "frame": int(meta.frame_id), "camera": int(meta.camera_id), "samples": int(meta.samples),
            "width": width, "height": height, "mime": self.encoder.mime, "encode_ms": round(encode_ms, 3),
            "age_ms": round((done - frame.published_at) * 1e3, 3), "stats": meta.stats(),
            "viewer": {"published": stats["published"], "dropped": stats["dropped"], "clients": stats["clients"],
                       "encode_ms": round(stats["encode_ms"] or 0.0, 3), "encoder": stats["encoder"]},
            "settings": self.state.snapshot().settings.as_dict(),
        }
        return EncodedFrame(frame.seq, int(meta.camera_id), frame_payload(header, data))

    def _deliver(self, frame: EncodedFrame) -> None:
        self.encoded += 1
        if self._last is not None and frame.seq <= self._last.seq:  # a later frame finished first
            self.stale += 1
            return
        self._last = frame
        for client in self._clients:
            client.offer(frame)

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
        client = ClientPacer(ws, f"client {self._connections} ({request.remote})", self.max_unacked)
        view = self.state.snapshot()
        if not await _reply(client, {"type": "hello", "camera_id": view.version, "camera": view.camera.as_dict(),
                                     "settings": view.settings.as_dict(), "limits": LIMITS,
                                     "max_unacked": self.max_unacked}):
            return ws
        self._clients.add(client)
        sender = asyncio.get_running_loop().create_task(client.send_loop())
        if self._last is not None:
            client.offer(self._last)
        assert self._wake is not None
        self._wake.set()
        try:
            await self._read(client)
        finally:
            self._clients.discard(client)
            self._wake.set()
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
                await self._on_text(client, msg.data)
            elif msg.type == WSMsgType.BINARY:
                self._bad(client, "binary messages are not accepted")
            elif msg.type == WSMsgType.ERROR:
                log.warning("viewer: %s: connection closed: %s", client.name, client.ws.exception())
                break

    def _bad(self, client: ClientPacer, reason: str) -> None:
        client.bad += 1
        if client.bad <= _LOG_FIRST or client.bad % _LOG_EVERY == 0:
            log.warning("viewer: ignored a message from %s: %s (%d so far)", client.name, reason, client.bad)

    async def _on_text(self, client: ClientPacer, text: str) -> None:
        try:
            message = parse_message(text)
            if message.type == "ack":
                if not client.ack(message.fields["seq"]):
                    raise BadMessage(f"ack of a frame never sent ({message.fields['seq']})")
                assert self._wake is not None
                self._wake.set()
                return
            view = apply_message(self.state, message)
        except BadMessage as exc:
            self._bad(client, str(exc))
            ident = _message_id(text)
            if ident is not None:
                await _reply(client, {"type": "ignored", "id": ident, "reason": str(exc)[:200]})
            return
        if message.id is not None:
            await _reply(client, {"type": "applied", "id": message.id, "camera_id": view.version,
                                  "settings": view.settings.as_dict()})


async def _reply(client: ClientPacer, message: dict[str, Any]) -> bool:
    """Send a JSON text message; False when the connection is already gone."""
    try:
        await client.ws.send_str(json.dumps(message))
    except (ConnectionError, RuntimeError):
        return False
    return True


def _message_id(text: str) -> int | None:
    """The ``id`` of a message that failed its checks, when it has a usable one."""
    if len(text) > 4096:
        return None
    try:
        raw = json.loads(text, parse_constant=lambda name: None)
    except (ValueError, RecursionError):
        return None
    ident = raw.get("id") if isinstance(raw, dict) else None
    return ident if isinstance(ident, int) and not isinstance(ident, bool) and 0 <= ident < 2**53 else None
