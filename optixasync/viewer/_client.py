"""A protocol-level client of the viewer (aiohttp): the messages a browser tab sends, for tests and benchmarks."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import aiohttp

from ._wire import split_payload

__all__ = ["ProtocolClient", "ReceivedFrame"]


@dataclass(frozen=True)
class ReceivedFrame:
    """A frame message as received.

    Attributes
    ----------
    header : dict
        The JSON header (``seq``, ``frame``, ``camera``, ``samples``, ``width``, ``height``, ``stats``, ...).
    data : bytes
        The encoded image.
    received_at : float
        ``time.perf_counter()`` on arrival.
    """

    header: dict[str, Any]
    data: bytes
    received_at: float

    @property
    def seq(self) -> int:
        """The viewer's sequence number (what ``ack`` refers to)."""
        return int(self.header["seq"])

    @property
    def frame_id(self) -> int:
        """The source's frame id."""
        return int(self.header["frame"])

    @property
    def camera_id(self) -> int:
        """The state version the frame was rendered from."""
        return int(self.header["camera"])

    @property
    def samples(self) -> int:
        """Samples per pixel in the image."""
        return int(self.header["samples"])

    def _repr_jpeg_(self) -> bytes | None:
        """In a notebook, the frame shows as its picture (the JPEG bytes as received)."""
        return self.data if self.header.get("mime") == "image/jpeg" else None

    def decode(self) -> Any:
        """The image as a (H, W, 3) uint8 array (Pillow)."""
        import io

        import numpy as np
        from PIL import Image

        with Image.open(io.BytesIO(self.data)) as picture:
            return np.asarray(picture.convert("RGB"))


class ProtocolClient:
    """Talks to a viewer's WebSocket like the page does: frames in, acknowledgements and input out.

    Parameters
    ----------
    url : str
        The viewer's page URL (``http://host:port/``, with its ``?token=`` if it has one) or its WebSocket
        URL (``ws://host:port/ws``).
    auto_ack : bool
        Acknowledge every frame on arrival (a tab that keeps up); False never acknowledges by itself.
    keep : int
        Received frames kept for :meth:`next_frame` (older ones are forgotten).
    origin : str or None
        An ``Origin`` header to send (browsers send one; None sends none).

    Examples
    --------
    >>> async with ProtocolClient(viewer.url) as client:          # doctest: +SKIP
    ...     frame = await client.next_frame()
    ...     reply = await client.request({"type": "orbit", "dx": 0.1, "dy": 0.0})
    ...     moved = await client.wait_for_camera(reply["camera_id"])
    """

    def __init__(self, url: str, *, auto_ack: bool = True, keep: int = 64, origin: str | None = None) -> None:
        if url.startswith("http"):  # the page's URL: its WebSocket, with the page's query (a token) kept
            base, _, query = url.partition("?")
            url = "ws" + base[4:].rstrip("/") + "/ws" + (f"?{query}" if query else "")
        self.url = url
        self.auto_ack = auto_ack
        self.origin = origin
        self.hello: dict[str, Any] | None = None
        self.frames_received = 0
        self.bytes_received = 0
        self.last_frame: ReceivedFrame | None = None
        self._frames: deque[ReceivedFrame] = deque(maxlen=keep)
        self._arrived = asyncio.Event()
        self._replies: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task | None = None
        self._hello = asyncio.Event()
        self.closed_by_server = False

    async def connect(self, timeout: float = 5.0) -> dict[str, Any]:
        """Open the connection; the server's hello message (camera, settings, limits)."""
        self._session = aiohttp.ClientSession()
        headers = {"Origin": self.origin} if self.origin else None
        try:
            self._ws = await self._session.ws_connect(self.url, headers=headers, autoping=True, max_msg_size=0)
            self._reader = asyncio.get_running_loop().create_task(self._read())
            await asyncio.wait_for(self._hello.wait(), timeout)
        except BaseException:
            await self.close()
            raise
        assert self.hello is not None
        return self.hello

    async def close(self) -> None:
        """Close the connection politely."""
        if self._ws is not None and not self._ws.closed:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (asyncio.CancelledError, Exception):
                pass
        if self._session is not None:
            await self._session.close()

    async def abort(self) -> None:
        """Drop the connection without a closing handshake (a tab that crashes or loses the network)."""
        if self._reader is not None:
            self._reader.cancel()
        if self._session is not None:
            connector = self._session.connector
            if connector is not None:
                await connector.close()  # closes the socket under the WebSocket at once
            await self._session.close()

    async def __aenter__(self) -> ProtocolClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- receiving -------------------------------------------------------------------------------------------

    async def _read(self) -> None:
        assert self._ws is not None
        async for msg in self._ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                header, data = split_payload(msg.data)
                frame = ReceivedFrame(header, data, time.perf_counter())
                self.frames_received += 1
                self.bytes_received += len(msg.data)
                self.last_frame = frame
                self._frames.append(frame)
                self._arrived.set()
                if self.auto_ack:
                    await self.ack(frame.seq)
            elif msg.type == aiohttp.WSMsgType.TEXT:
                message = json.loads(msg.data)
                if message.get("type") == "hello":
                    self.hello = message
                    self._hello.set()
                elif message.get("id") in self._replies:
                    future = self._replies.pop(message["id"])
                    if not future.done():
                        future.set_result(message)
        self.closed_by_server = True
        self._arrived.set()

    @property
    def closed(self) -> bool:
        """Whether the connection is closed."""
        return self._ws is None or self._ws.closed

    async def next_frame(self, timeout: float = 5.0) -> ReceivedFrame:
        """The oldest frame not yet returned (waits for one).

        Raises
        ------
        TimeoutError
            When no frame arrives in ``timeout`` seconds.
        ConnectionError
            When the server closed the connection.
        """
        deadline = time.perf_counter() + timeout
        while not self._frames:
            if self.closed_by_server:
                raise ConnectionError("the viewer closed the connection")
            self._arrived.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no frame within {timeout} s")
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return self._frames.popleft()

    def drain(self) -> list[ReceivedFrame]:
        """The frames received and not yet returned, without waiting."""
        frames = list(self._frames)
        self._frames.clear()
        return frames

    async def wait_for_camera(self, camera_id: int, timeout: float = 5.0) -> ReceivedFrame:
        """The first frame rendered from state version ``camera_id`` or later (older frames are discarded)."""
        deadline = time.perf_counter() + timeout
        while True:
            frame = await self.next_frame(max(deadline - time.perf_counter(), 0.0))
            if frame.camera_id >= camera_id:
                return frame

    # -- sending ---------------------------------------------------------------------------------------------

    async def send_text(self, text: str) -> None:
        """Send raw text (for tests of malformed input)."""
        assert self._ws is not None, "not connected"
        await self._ws.send_str(text)

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message (no reply asked)."""
        await self.send_text(json.dumps(message))

    async def request(self, message: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """Send ``message`` with a fresh ``id``; the server's reply (``applied`` with ``camera_id``, or ``ignored``)."""
        ident = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._replies[ident] = future
        await self.send({**message, "id": ident})
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._replies.pop(ident, None)

    async def ack(self, seq: int) -> None:
        """Acknowledge frames up to ``seq``."""
        await self.send({"type": "ack", "seq": int(seq)})

    async def orbit(self, dx: float, dy: float) -> dict[str, Any]:
        """Orbit by ``(dx, dy)`` view heights; the reply."""
        return await self.request({"type": "orbit", "dx": dx, "dy": dy})

    async def pan(self, dx: float, dy: float) -> dict[str, Any]:
        """Pan by ``(dx, dy)`` view heights; the reply."""
        return await self.request({"type": "pan", "dx": dx, "dy": dy})

    async def zoom(self, steps: float) -> dict[str, Any]:
        """Dolly by ``steps`` wheel steps; the reply."""
        return await self.request({"type": "zoom", "steps": steps})

    async def key(self, key: str) -> dict[str, Any]:
        """Press a key; the reply."""
        return await self.request({"type": "key", "key": key})

    async def set_camera(self, eye: Any, target: Any, up: Any = None, fov: float | None = None) -> dict[str, Any]:
        """Place the camera; the reply."""
        message: dict[str, Any] = {"type": "camera", "eye": list(eye), "target": list(target)}
        if up is not None:
            message["up"] = list(up)
        if fov is not None:
            message["fov"] = fov
        return await self.request(message)

    async def settings(self, **changes: Any) -> dict[str, Any]:
        """Change settings (``denoise``, ``spp``, ``width``, ``height``, ``max_depth``); the reply."""
        return await self.request({"type": "settings", **changes})

    async def input_latency(self, dx: float = 0.01, timeout: float = 5.0) -> float:
        """Seconds from sending an orbit message to the first frame rendered from the state it made."""
        start = time.perf_counter()
        reply = await self.orbit(dx, 0.0)
        frame = await self.wait_for_camera(int(reply["camera_id"]), timeout)
        return frame.received_at - start
