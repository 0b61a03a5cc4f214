"""The frame stream's wire format and per-connection pacing (no aiohttp here: shared by server and client).

A frame message is binary: a little-endian uint32 ``n``, ``n`` bytes of UTF-8
JSON header (``seq``, ``frame``, ``camera``, ``samples``, ``width``,
``height``, ``mime``, ``encode_ms``, ``age_ms``, ``stats``, ``viewer``,
``settings``), then the image bytes. Clients answer
``{"type": "ack", "seq": seq}`` (cumulative: every frame up to ``seq``).

Blocking calls
--------------
None. :meth:`ClientPacer.send_loop` awaits the connection's send, which
waits while that peer's socket buffer is full: only that connection's task
waits, never the event loop or another connection.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["ClientPacer", "EncodedFrame", "frame_payload", "split_payload"]


@dataclass(frozen=True)
class EncodedFrame:
    """A frame ready to send: its sequence number, camera id and the whole binary message."""

    seq: int
    camera_id: int
    payload: bytes


def frame_payload(header: dict[str, Any], image: bytes) -> bytes:
    """The binary frame message: uint32 LE header length, JSON header, image bytes."""
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return b"".join((struct.pack("<I", len(head)), head, image))


def split_payload(payload: bytes) -> tuple[dict[str, Any], bytes]:
    """Inverse of :func:`frame_payload`.

    Raises
    ------
    ValueError
        On a truncated or malformed message.
    """
    if len(payload) < 4:
        raise ValueError("frame message shorter than its length field")
    (n,) = struct.unpack_from("<I", payload)
    if 4 + n > len(payload):
        raise ValueError("frame header runs past the message")
    header = json.loads(payload[4:4 + n])
    if not isinstance(header, dict):
        raise ValueError("frame header is not a JSON object")
    return header, payload[4 + n:]


class ClientPacer:
    """One connection's flow control: frames sent and not acknowledged, and the newest frame waiting to go.

    At most ``max_unacked`` frames are unacknowledged; a frame offered while the client is full replaces the
    pending one (counted in ``skipped``). :meth:`send_loop` runs as the connection's own task, so a client
    that stalls (never acknowledges, or stops reading its socket) blocks nobody else.

    Parameters
    ----------
    ws : object
        The connection: ``closed`` and ``async send_bytes(data)``.
    name : str
        For log lines.
    max_unacked : int
        Frames the client may have unacknowledged.
    """

    def __init__(self, ws: Any, name: str, max_unacked: int) -> None:
        self.ws = ws
        self.name = name
        self.max_unacked = max_unacked
        self.unacked: deque[int] = deque()
        self.pending: EncodedFrame | None = None
        self.wake = asyncio.Event()
        self.sent = 0
        self.skipped = 0
        self.bad = 0
        self.last_sent = -1

    def room(self) -> int:
        """Frames this client can take now (beyond one already pending)."""
        return self.max_unacked - len(self.unacked) - (self.pending is not None)

    def offer(self, frame: EncodedFrame) -> None:
        """Make ``frame`` the next to send (replacing a pending one) and wake the sender."""
        if self.pending is not None:
            self.skipped += 1
        self.pending = frame
        self.wake.set()

    def ack(self, seq: int) -> bool:
        """Acknowledge frames up to ``seq``; False for a seq never sent."""
        if seq > self.last_sent:
            return False
        while self.unacked and self.unacked[0] <= seq:
            self.unacked.popleft()
        self.wake.set()
        return True

    async def send_loop(self) -> None:
        """Send pending frames while the client has room; runs until the connection closes."""
        while not self.ws.closed:
            await self.wake.wait()
            self.wake.clear()
            while self.pending is not None and len(self.unacked) < self.max_unacked and not self.ws.closed:
                frame, self.pending = self.pending, None
                self.unacked.append(frame.seq)
                self.last_sent = frame.seq
                await self.ws.send_bytes(frame.payload)
                self.sent += 1
