"""The kernel side of the notebook widget: the viewer's state, mailbox, pump and capture over the comm channel.

A :class:`WidgetSession` is what a :class:`~optixasync.viewer.Viewer` is,
less the web server: the frame source publishes into the same newest-frame
mailbox, the same :class:`~optixasync.viewer._pump.FramePump` encodes a frame
only when the view has room (``max_unacked`` frames unacknowledged) and
handles the same input messages, and the same
:class:`~optixasync.viewer.Capture` saves and records. Instead of a
WebSocket, frames and replies travel over the widget's comm channel, the
Jupyter kernel's own connection to the page, so the widget needs no port and
works wherever the notebook does (JupyterHub, VS Code, a remote kernel).

Messages on the comm are JSON objects with a ``kind``: from the page,
``connect`` (a view was rendered: it gets the ``hello`` message and the last
frame) and ``input`` (``text``: one input message of the viewer's protocol);
to the page, ``frame`` (the viewer's binary frame message as the one buffer)
and ``text`` (``text``: a JSON reply of the protocol).

The pump runs on an asyncio loop on a thread of the session's own
(``optixasync-notebook``); the kernel's thread only schedules work on it.

Blocking calls
--------------
None here touches CUDA. :meth:`WidgetSession.close` stops the source (joins
its thread), the capture and the loop's thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..viewer import CallbackFrameSource, CameraPose, FrameMeta, FrameSource, OrbitCamera, Settings, ViewerState
from ..viewer._capture import Capture
from ..viewer._encode import JpegEncoder
from ..viewer._mailbox import FrameMailbox
from ..viewer._pump import FramePump, reply
from ..viewer._source import check_image
from ..viewer._wire import ClientPacer

__all__ = ["CommClient", "WidgetSession", "close_all"]

log = logging.getLogger("optixasync.notebook")

#: Send a message on the comm: ``send(content, buffers)`` (the widget's ``send``; thread-safe in ipykernel).
Send = Callable[[dict[str, Any], list[bytes] | None], None]

_open_sessions: weakref.WeakSet[WidgetSession] = weakref.WeakSet()


def close_all() -> None:
    """Close every open session (run at interpreter exit, so a kernel shutting down leaves no thread behind)."""
    for session in list(_open_sessions):
        session.close()


class CommClient:
    """The page's views of one widget, as one client of the pump: what a WebSocket is to the web server."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.closed = False

    async def send_bytes(self, data: bytes) -> None:
        """A frame message, as the comm message's one buffer."""
        self._send({"kind": "frame"}, [data])

    async def send_str(self, text: str) -> None:
        """A JSON reply of the viewer's protocol."""
        self._send({"kind": "text", "text": text}, None)

    async def close(self, **_: Any) -> None:
        """Stop sending."""
        self.closed = True


class WidgetSession:
    """A frame source shown through a comm channel: state, mailbox, pump, capture and their threads.

    Parameters
    ----------
    send : callable
        Sends a message on the comm (``send(content, buffers)``).
    source : FrameSource, callable or None
        As for :class:`~optixasync.viewer.Viewer`: a frame source, a render callback, or None when the
        application calls :meth:`publish` itself.
    camera, settings : optional
        Where the view starts (default: the source's ``initial_camera`` and ``initial_settings``).
    quality, encoders, max_unacked, max_fps :
        As for :class:`~optixasync.viewer.Viewer`.
    directory : str or Path
        Where the save and record buttons write their files (the kernel's working directory by default).
    """

    def __init__(self, send: Send, source: FrameSource | Callable[..., Any] | None = None, *,
                 camera: OrbitCamera | CameraPose | None = None, settings: Settings | None = None, quality: int = 80,
                 encoders: int = 2, max_unacked: int = 2, max_fps: float | None = None,
                 directory: str | Path = ".") -> None:
        if source is not None and not isinstance(source, FrameSource):
            if not callable(source):
                raise TypeError(f"source must be a FrameSource, a render callback or None, got {type(source).__name__}")
            source = CallbackFrameSource(source)
        self.source: FrameSource | None = source
        camera = camera if camera is not None else getattr(source, "initial_camera", None)
        settings = settings if settings is not None else getattr(source, "initial_settings", None)
        self._state = ViewerState(camera, settings)
        self._mailbox = FrameMailbox()
        self.capture = Capture(self._state, self._mailbox, source, directory)
        self.pump = FramePump(self._state, self._mailbox, JpegEncoder(quality), encoders, max_unacked, max_fps,
                              commands=self.capture.handle)
        self._comm = CommClient(send)
        self._client: ClientPacer | None = None
        self._sender: asyncio.Task | None = None
        self._views = 0
        self._closed = False
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="optixasync-notebook", daemon=True)
        self._thread.start()
        ready.wait()
        _open_sessions.add(self)
        if self.source is not None:
            try:
                self.source.start(self)
            except BaseException:
                self.close()
                raise

    # -- what the source sees (FrameSink) ---------------------------------------------------------------

    @property
    def state(self) -> ViewerState:
        """Camera and settings (thread-safe); sources read ``state.snapshot()`` each frame."""
        return self._state

    def publish(self, image: np.ndarray, meta: FrameMeta | Mapping[str, Any]) -> None:
        """Hand over a finished frame; O(1), never blocks (see :meth:`optixasync.viewer.Viewer.publish`)."""
        check_image(image)
        meta = FrameMeta.coerce(meta)
        if not self._closed:
            self._mailbox.put(image, meta)

    # -- the loop thread --------------------------------------------------------------------------------

    def _serve(self, ready: threading.Event) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        loop.call_soon(self.pump.start)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            self.pump.stop()
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def _connect(self) -> None:
        """On the loop: a view was rendered: a fresh pacer (an old view's unacknowledged frames are forgotten)."""
        if self._client is not None:
            self.pump.discard(self._client)
        if self._sender is not None:
            self._sender.cancel()
        self._views += 1
        client = ClientPacer(self._comm, f"notebook view {self._views}", self.pump.max_unacked)
        self._client = client

        async def greet() -> None:
            await reply(client, self.pump.hello())
            self.pump.add(client)
            await client.send_loop()

        self._sender = self._loop.create_task(greet())

    def on_message(self, content: Any) -> None:
        """A comm message from the page (on the kernel's thread): schedule it on the loop; never blocks."""
        if self._closed or not isinstance(content, dict):
            return
        kind = content.get("kind")
        if kind == "connect":
            self._loop.call_soon_threadsafe(self._connect)
        elif kind == "input" and isinstance(content.get("text"), str):
            text = content["text"]
            self._loop.call_soon_threadsafe(self._input, text)
        else:
            log.warning("notebook widget: ignored a comm message of kind %.40r", kind)

    def _input(self, text: str) -> None:
        client = self._client
        if client is None:  # input before any view connected: nothing to reply to
            client = ClientPacer(self._comm, "notebook (no view)", self.pump.max_unacked)
        task = self._loop.create_task(self.pump.handle_text(client, text))
        task.add_done_callback(_log_failure)

    # -- lifecycle ----------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def stats(self) -> dict[str, Any]:
        """The pump's counters (frames published, dropped, encoded, sent, ...) and the views connected so far."""
        return {**self.pump.stats(), "views": self._views}

    def close(self) -> None:
        """Stop the capture, the source (joined) and the loop's thread; idempotent."""
        if self._closed:
            return
        self._closed = True
        _open_sessions.discard(self)
        self.capture.close()
        if self.source is not None:
            self.source.stop()
        self._comm.closed = True
        try:
            self._loop.call_soon_threadsafe(self._loop.stop)
        except RuntimeError:  # the loop already closed
            pass
        if threading.current_thread() is not self._thread:
            self._thread.join()
            self.pump.join()


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("notebook widget: an input message failed: %s", task.exception())

