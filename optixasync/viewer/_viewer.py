"""The :class:`Viewer`: a local web page showing a frame source live, with camera and settings input.

Blocking calls
--------------
:meth:`Viewer.publish` never blocks (a pointer swap under a lock). :meth:`Viewer.start` waits until the server
is bound; :meth:`Viewer.stop` joins the source's thread and the server's; :meth:`Viewer.wait` and
:meth:`Viewer.serve_forever` wait by design.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._access import AccessPolicy
from ._camera import CameraPose, OrbitCamera
from ._capture import Capture
from ._encode import JpegEncoder
from ._hosts import host_warning, is_loopback
from ._mailbox import FrameMailbox
from ._source import CallbackFrameSource, FrameMeta, FrameSource, check_image
from ._state import Settings, ViewerState, ViewState

__all__ = ["Viewer", "host_warning", "is_loopback"]

log = logging.getLogger("optixasync.viewer")


class Viewer:
    """Shows frames in the browser: an HTTP/WebSocket server on its own thread, a frame mailbox and encoders.

    Parameters
    ----------
    source : FrameSource, callable or None
        What to show: a :class:`FrameSource` (started by :meth:`start`, stopped by :meth:`stop`), a render
        callback ``render(view) -> image`` or ``(image, meta fields)`` (wrapped in a
        :class:`CallbackFrameSource`), or None when the application calls :meth:`publish` itself.
    host : str
        Address to bind; 127.0.0.1 by default. Bound beyond loopback (``0.0.0.0``, a LAN address) the
        viewer needs ``allowed_hosts`` or a token, and logs how it is reached when it starts.
    allowed_hosts : sequence of str, optional
        Beyond loopback: the host names or addresses by which other machines reach the viewer; a request's
        ``Host`` and a WebSocket's ``Origin`` must name one of them (or a loopback name).
    token : str, bool or None
        A token every request but the page's stylesheet and script must carry (``?token=...``, in
        :attr:`url`), as Jupyter's: a string of at least 16 URL-safe characters, True for a random one,
        False for none. None (the default): a random one exactly when the viewer is bound beyond
        loopback without ``allowed_hosts``.
    port : int
        Port to bind; 0 picks a free one (see :attr:`url` after :meth:`start`).
    camera : OrbitCamera, CameraPose or None
        The starting camera; None takes the source's ``initial_camera`` if it has one.
    settings : Settings or None
        The starting settings; None takes the source's ``initial_settings`` if it has one.
    quality : int
        JPEG quality.
    encoders : int
        Encoder threads.
    max_unacked : int
        Frames a client may have unacknowledged (1 or 2 suit a browser).
    max_fps : float or None
        Most frames encoded per second (None: as many as the clients acknowledge).
    encoder_backend : str
        ``"auto"``, ``"simplejpeg"`` or ``"pillow"`` (see :class:`~optixasync.viewer._encode.JpegEncoder`).
    directory : str or Path
        Where the page's save and record buttons write their files (see :attr:`capture`).

    Attributes
    ----------
    capture : Capture
        Saves the current image (PNG, linear EXR), records MP4 clips and camera paths, plays paths back.

    Notes
    -----
    ``publish`` may be called from any thread, before or after :meth:`start`; it checks the image's
    shape and dtype (O(1)) and stores the frame in place of any not yet encoded one. Frames are encoded
    only while some client can take one, so a viewer with no tab open costs its source nothing.
    """

    def __init__(self, source: FrameSource | Callable[[ViewState], Any] | None = None, *, host: str = "127.0.0.1",
                 port: int = 0, camera: OrbitCamera | CameraPose | None = None, settings: Settings | None = None,
                 quality: int = 80, encoders: int = 2, max_unacked: int = 2, max_fps: float | None = None,
                 encoder_backend: str = "auto", directory: str | Path = ".", allowed_hosts: Any = None,
                 token: str | bool | None = None) -> None:
        if source is not None and not isinstance(source, FrameSource):
            if not callable(source):
                raise TypeError(f"source must be a FrameSource, a render callback or None, got {type(source).__name__}")
            source = CallbackFrameSource(source)
        self.source: FrameSource | None = source
        camera = camera if camera is not None else getattr(source, "initial_camera", None)
        settings = settings if settings is not None else getattr(source, "initial_settings", None)
        self._state = ViewerState(camera, settings)
        self._mailbox = FrameMailbox()
        self._encoder = JpegEncoder(quality, encoder_backend)
        self.capture = Capture(self._state, self._mailbox, source, directory)
        self.host = host
        self.access = AccessPolicy.create(host, allowed_hosts, token)
        self._port = int(port)
        self._options = {"encoders": encoders, "max_unacked": max_unacked, "max_fps": max_fps}
        self._server: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._stopped.set()
        self._closing = False

    # -- the source side ----------------------------------------------------------------------------------

    @property
    def state(self) -> ViewerState:
        """Camera and settings (thread-safe); sources read ``state.snapshot()`` each frame."""
        return self._state

    def publish(self, image: np.ndarray, meta: FrameMeta | Mapping[str, Any]) -> None:
        """Hand over a finished frame; O(1), never blocks.

        Parameters
        ----------
        image : numpy.ndarray
            (H, W, 3 or 4) uint8 sRGB; may be a view of pinned memory: the viewer reads it only while it
            holds this reference and drops it once the frame is encoded or replaced by a newer one.
        meta : FrameMeta or mapping
            Frame id, camera id (``ViewState.version`` it was rendered from), samples, stats.

        Raises
        ------
        TypeError, ValueError
            When ``image`` is not a (H, W, 3 or 4) uint8 array, or ``meta`` lacks ``frame_id``,
            ``camera_id`` or ``samples`` (checked here, not on the encoder thread, so the caller hears of it).
        """
        check_image(image)
        meta = FrameMeta.coerce(meta)
        if not self._closing:
            self._mailbox.put(image, meta)

    # -- lifecycle ----------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        return self._port

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """``(host, port)`` of every socket the server bound (empty before :meth:`start`)."""
        return list(self._server.addresses) if self._server is not None else []

    @property
    def url(self) -> str:
        """The page's address (after :meth:`start`)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        # a wildcard bind is reached through the loopback address of its own family (an IPv6 socket is IPv6-only)
        host = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]"}.get(host, host)
        query = f"?token={self.access.token}" if self.access.token is not None else ""
        return f"http://{host}:{self._port}/{query}"

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return not self._stopped.is_set()

    def start(self) -> str:
        """Start the server (and the source); the page's URL.

        Raises
        ------
        ImportError
            Without aiohttp (``pip install 'optixasync[viewer]'``).
        OSError
            When the address cannot be bound.
        """
        if self.running:
            return self.url
        try:
            from ._server import FrameServer
        except ImportError as exc:
            raise ImportError(f"the viewer needs aiohttp: pip install 'optixasync[viewer]' ({exc})") from exc
        self._server = FrameServer(self._state, self._mailbox, self.access, self._encoder, **self._options,
                                   commands=self.capture.handle)
        ready = threading.Event()
        failure: list[BaseException] = []
        self._closing = False
        self._stopped.clear()
        self._thread = threading.Thread(target=self._serve, args=(ready, failure), name="optixasync-viewer",
                                        daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._stopped.set()
            raise failure[0]
        notice = self.access.describe(self.url)  # beyond loopback: how it is reached, once the port is known
        if notice:
            log.warning("%s", notice)
        if self.source is not None:
            try:
                self.source.start(self)
            except BaseException:
                self.stop()
                raise
        return self.url

    def _serve(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            try:
                self._port = loop.run_until_complete(self._server.start(self.host, self._port))
            except BaseException as exc:
                failure.append(exc)
                try:
                    loop.run_until_complete(self._server.close())
                except Exception:  # nothing more to release
                    pass
                return
            finally:
                ready.set()
            loop.run_forever()
            loop.run_until_complete(self._server.close())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._loop = None
            self._stopped.set()

    def stop(self) -> None:
        """Stop the source (joined), close every connection and the server; idempotent."""
        if self._thread is None:
            return
        self._closing = True
        self.capture.close()
        if self.source is not None:
            self.source.stop()  # joins the render thread: no publish after this
        loop = self._loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:
                pass
        self._thread.join()
        self._thread = None
        self._server.pump.join()  # the encoder threads: none is left once stop returns

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the viewer is stopped (or ``timeout`` seconds pass); whether it is stopped."""
        return self._stopped.wait(timeout)

    def serve_forever(self) -> None:
        """Start if needed and serve until Ctrl-C; then stop."""
        self.start()
        try:
            while not self.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def stats(self) -> dict[str, Any]:
        """Counters of the viewer: frames published, dropped (replaced before encoding), encoded, stale (encoded
        after a newer one), sent, skipped (replaced while a client was full), clients, encode ms (median, p95)."""
        if self._server is not None:
            return self._server.stats()
        return {"published": self._mailbox.published, "dropped": self._mailbox.dropped, "clients": 0}

    def _repr_html_(self) -> str:
        """In a notebook: the page's address as a link (for the viewer inside the notebook, see optixasync.notebook)."""
        import html

        if not self.running:
            return "<code>optixasync Viewer (not started)</code>"
        url = html.escape(self.url, quote=True)
        return f'optixasync viewer: <a href="{url}" target="_blank" rel="noopener">{url}</a>'

    def __enter__(self) -> Viewer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
