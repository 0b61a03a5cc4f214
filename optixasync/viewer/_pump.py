"""The frame pump and the input handling that the web viewer and the notebook widget share (no aiohttp here).

A :class:`FramePump` lives on one asyncio event loop. It takes the newest frame
from the :class:`~optixasync.viewer._mailbox.FrameMailbox` only when some
client can take a frame (fewer than ``max_unacked`` frames unacknowledged),
encodes it on the encoder pool and offers it to every client
(:class:`~optixasync.viewer._wire.ClientPacer`): a client that is full keeps
just the newest offered frame as pending. A *client* is anything with
``closed``, ``async send_bytes(data)`` and ``async send_str(text)``: a
WebSocket of the web viewer (:mod:`optixasync.viewer._server`) or the kernel's
comm channel of the notebook widget (:mod:`optixasync.notebook`).

:meth:`FramePump.handle_text` is the one place where an input message is
checked and applied: acknowledgements, camera and settings messages, and the
capture commands (``save``, ``record``, ``play``), which go to the
``commands`` callable given to the pump and run on the default executor.

Blocking calls
--------------
None on the event loop: encoding runs on the encoder threads, capture
commands on the loop's default executor, each client's sends in its own
task, and taking a frame from the mailbox holds its lock for a pointer swap.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._encode import JpegEncoder
from ._mailbox import FrameMailbox, PublishedFrame
from ._messages import COMMANDS, BadMessage, Message, apply_message, parse_message
from ._source import FrameMeta
from ._state import LIMITS, ViewerState
from ._wire import ClientPacer, EncodedFrame, frame_payload

__all__ = ["FramePump", "reply"]

log = logging.getLogger("optixasync.viewer")
_LOG_FIRST, _LOG_EVERY = 10, 100

#: A capture command handler: the checked message in, the reply's fields out (on an executor thread).
CommandHandler = Callable[[Message], dict[str, Any]]


class FramePump:
    """Encodes the newest frame for the clients that have room, and handles their input messages.

    Parameters
    ----------
    state : ViewerState
        Camera and settings that input messages change.
    mailbox : FrameMailbox
        Where published frames wait.
    encoder : JpegEncoder
        How frames are compressed.
    encoders : int
        Encoder threads (frames encoded at once).
    max_unacked : int
        Frames a client may have unacknowledged.
    max_fps : float or None
        Most frames encoded per second (None: no limit besides the clients' acknowledgements).
    commands : callable or None
        Handles ``save``, ``record`` and ``play`` messages (see :class:`~optixasync.viewer.Capture`);
        None refuses them.
    """

    def __init__(self, state: ViewerState, mailbox: FrameMailbox, encoder: JpegEncoder, encoders: int = 2,
                 max_unacked: int = 2, max_fps: float | None = None, commands: CommandHandler | None = None) -> None:
        self.state = state
        state.set_watched(False)  # until a view connects and has room (a source renders its first frames anyway)
        self.mailbox = mailbox
        self.encoder = encoder
        self.encoders = max(1, int(encoders))
        self.max_unacked = max(1, int(max_unacked))
        self.commands = commands
        self._min_interval = 1.0 / max_fps if max_fps else 0.0
        self.clients: set[ClientPacer] = set()
        self._executor = ThreadPoolExecutor(self.encoders, thread_name_prefix="optixasync-viewer-encode")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._pump_task: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._in_flight = 0
        self._next_start = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self.last: EncodedFrame | None = None
        self.encoded = 0
        self.stale = 0
        self.encode_errors = 0
        self._encode_ms: deque[float] = deque(maxlen=120)

    # -- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start pumping on the running event loop."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._pump_task = self._loop.create_task(self._pump())

    def stop(self) -> None:
        """Stop pumping and drop the stored frame (encoder threads are shut down without waiting)."""
        if self._pump_task is not None:
            self._pump_task.cancel()
            self._pump_task = None  # its traceback would keep the last frame alive
        for task in list(self._tasks):
            task.cancel()
        self.mailbox.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def join(self) -> None:
        """Wait for the encoder threads to end (after :meth:`stop`; from a thread other than the loop's)."""
        self._executor.shutdown(wait=True)

    # -- clients ----------------------------------------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        """The first message a new client gets: camera, settings, limits, max_unacked."""
        view = self.state.snapshot()
        return {"type": "hello", "camera_id": view.version, "camera": view.camera.as_dict(),
                "settings": view.settings.as_dict(), "limits": LIMITS, "max_unacked": self.max_unacked}

    def add(self, client: ClientPacer) -> None:
        """Serve ``client`` from now on (it gets the last encoded frame at once); on the loop."""
        self.clients.add(client)
        if self.last is not None:
            client.offer(self.last)
        self.wake()

    def discard(self, client: ClientPacer) -> None:
        """Stop serving ``client``; on the loop."""
        self.clients.discard(client)
        self.wake()

    def wake(self) -> None:
        """Let the pump look again for demand (on the loop)."""
        if self._wake is not None:
            self._wake.set()

    # -- statistics -------------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters and timings (safe to call from any thread)."""
        clients = list(self.clients)
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
        return max((c.room() for c in self.clients), default=0)

    def _wake_threadsafe(self) -> None:
        loop = self._loop
        if loop is not None and self._wake is not None:
            try:
                loop.call_soon_threadsafe(self._wake.set)
            except RuntimeError:  # the loop is closed: the viewer is stopping
                pass

    def _timer_fired(self) -> None:
        self._timer = None
        self.wake()

    async def _pump(self) -> None:
        assert self._loop is not None and self._wake is not None
        loop, wake = self._loop, self._wake
        while True:
            wake.clear()
            self.state.set_watched(self._demand() > 0)  # a closed tab takes no frame: the render loops pause
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
        assert self._loop is not None
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
            self.wake()
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
            "play": dict(zip(("id", "playing"), self.state.play, strict=True)),
        }
        return EncodedFrame(frame.seq, int(meta.camera_id), frame_payload(header, data))

    def _deliver(self, frame: EncodedFrame) -> None:
        self.encoded += 1
        if self.last is not None and frame.seq <= self.last.seq:  # a later frame finished first
            self.stale += 1
            return
        self.last = frame
        for client in self.clients:
            client.offer(frame)

    # -- input ------------------------------------------------------------------------------------------

    def ignore(self, client: ClientPacer, reason: str) -> None:
        """Count and log (rate-limited) a message of ``client`` that is ignored."""
        client.bad += 1
        if client.bad <= _LOG_FIRST or client.bad % _LOG_EVERY == 0:
            log.warning("viewer: ignored a message from %s: %s (%d so far)", client.name, reason, client.bad)

    async def handle_text(self, client: ClientPacer, text: str) -> None:
        """Check and apply one input message of ``client``, and answer it when it asks (``id``)."""
        try:
            message = parse_message(text)
            if message.type == "ack":
                if not client.ack(message.fields["seq"]):
                    raise BadMessage(f"ack of a frame never sent ({message.fields['seq']})")
                self.wake()
                return
            if message.type in COMMANDS:
                answer = await self._command(message)
                if message.id is not None:
                    await reply(client, {**answer, "id": message.id})
                return
            view = apply_message(self.state, message)
        except BadMessage as exc:
            self.ignore(client, str(exc))
            ident = _message_id(text)
            if ident is not None:
                await reply(client, {"type": "ignored", "id": ident, "reason": str(exc)[:200]})
            return
        if message.id is not None:
            await reply(client, {"type": "applied", "id": message.id, "camera_id": view.version,
                                 "settings": view.settings.as_dict()})

    async def _command(self, message: Message) -> dict[str, Any]:
        """Run a capture command off the loop; its reply (``done``), or BadMessage when it cannot be done."""
        if self.commands is None:
            raise BadMessage(f"{message.type}: this viewer does not save or record")
        assert self._loop is not None
        try:
            fields = await self._loop.run_in_executor(None, self.commands, message)
        except (OSError, ValueError, LookupError, ImportError, RuntimeError) as exc:  # no frame yet, no extra, disk
            raise BadMessage(f"{message.type}: {exc}") from None
        return {"type": "done", "command": message.type, **fields}


async def reply(client: ClientPacer, message: dict[str, Any]) -> bool:
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
