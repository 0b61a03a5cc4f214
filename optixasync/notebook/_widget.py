"""The notebook widget: :class:`ViewerWidget`, an anywidget over a :class:`~optixasync.notebook._session.WidgetSession`.

The page side is the viewer's own user interface (``viewer/static/viewer_ui.js``
and ``viewer.css``), given to anywidget as its module with a small adapter that
carries the protocol over the widget's comm channel instead of a WebSocket.
Importing this module imports anywidget (the ``notebook`` extra).

Blocking calls
--------------
None here touches CUDA. Creating a widget starts its source and its loop
thread; :meth:`ViewerWidget.close` joins them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..viewer import CameraPose, FrameSource, OrbitCamera, Settings, ViewerState
from ..viewer._capture import Capture
from ._session import WidgetSession

__all__ = ["ViewerWidget"]

_STATIC = Path(__file__).resolve().parents[1] / "viewer" / "static"

#: The adapter from the comm channel to the viewer's user interface (see :mod:`optixasync.notebook._session`).
_ADAPTER = """
export default {
  render({ model, el }) {
    let handlers = null;
    const onMessage = (message, buffers) => {
      if (!handlers) return;
      if (message.kind === "frame" && buffers && buffers.length) {
        const b = buffers[0];
        handlers.frame(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
      } else if (message.kind === "text") {
        handlers.text(JSON.parse(message.text));
      }
    };
    const post = (content) => {
      try {
        model.send(content);
      } catch (error) { // the kernel is gone (restarted or shut down): this view shows its last frame
        if (handlers) handlers.close("disconnected: the kernel is gone");
        handlers = null;
      }
    };
    const transport = {
      send(message) { post({ kind: "input", text: JSON.stringify(message) }); },
      start(h) {
        handlers = h;
        model.on("msg:custom", onMessage);
        h.open();
        post({ kind: "connect" });
      },
      stop() {
        model.off("msg:custom", onMessage);
        handlers = null;
      },
    };
    el.classList.add("oxa-widget");
    el.setAttribute("data-lm-suppress-shortcuts", "true"); // keys on the image are the viewer's, not the notebook's
    const viewer = mountViewer(el, transport, { keysOnImage: true });
    return () => viewer.destroy();
  },
};
"""


class ViewerWidget(anywidget.AnyWidget):
    """The live viewer in a notebook cell: a frame source's progressive image with the viewer's controls.

    The widget shows itself when it is the last expression of a cell (or through ``display``). Drag to
    orbit, right- or shift-drag to pan, wheel to zoom, WASD/QE and the arrows while the image has the
    focus; the controls change denoising, samples per frame, resolution and max depth, and the buttons
    save the image (PNG, linear EXR), record an MP4 clip or the camera path and play the path back
    (files go to ``directory``, on the kernel's machine).

    Parameters
    ----------
    source : FrameSource, callable or None
        What to show: any :class:`~optixasync.viewer.FrameSource` (started now, stopped by
        :meth:`close`), a render callback ``render(view) -> image`` or ``(image, meta fields)``, or
        None when the application calls :meth:`publish` itself.
    camera, settings : optional
        Where the view starts (default: the source's ``initial_camera`` and ``initial_settings``).
    quality : int
        JPEG quality of the frames sent to the page.
    encoders : int
        Encoder threads.
    max_unacked : int
        Frames the page may have unacknowledged: the newest-frame-only backpressure of the viewer.
    max_fps : float or None
        Most frames sent per second (None: as many as the page draws).
    directory : str or Path
        Where the buttons write their files (the kernel's working directory by default).

    Examples
    --------
    >>> from optixasync.notebook import ViewerWidget
    >>> from optixasync.viewer import CpuFrameSource
    >>> widget = ViewerWidget(CpuFrameSource())          # doctest: +SKIP
    >>> widget                                             # doctest: +SKIP
    """

    _esm = traitlets.Unicode((_STATIC / "viewer_ui.js").read_text(encoding="utf-8") + _ADAPTER).tag(sync=True)
    _css = traitlets.Unicode((_STATIC / "viewer.css").read_text(encoding="utf-8")).tag(sync=True)
    _session: WidgetSession | None = None  # until __init__ made it (ipywidgets may close a half-made widget)

    def __init__(self, source: FrameSource | Callable[..., Any] | None = None, *,
                 camera: OrbitCamera | CameraPose | None = None, settings: Settings | None = None, quality: int = 80,
                 encoders: int = 2, max_unacked: int = 2, max_fps: float | None = None,
                 directory: str | Path = ".") -> None:
        super().__init__()
        self._session = WidgetSession(self.send, source, camera=camera, settings=settings, quality=quality,
                                      encoders=encoders, max_unacked=max_unacked, max_fps=max_fps,
                                      directory=directory)
        self.on_msg(self._on_custom_message)

    def _on_custom_message(self, widget: Any, content: Any, buffers: Any) -> None:
        self._session.on_message(content)

    @property
    def source(self) -> FrameSource | None:
        """The frame source shown."""
        return self._session.source

    @property
    def state(self) -> ViewerState:
        """Camera and settings (thread-safe), as the page changes them."""
        return self._session.state

    @property
    def capture(self) -> Capture:
        """Saves the current image (PNG, linear EXR), records MP4 clips and camera paths, plays paths back."""
        return self._session.capture

    def publish(self, image: Any, meta: Any) -> None:
        """Hand over a finished frame; O(1), never blocks (see :meth:`optixasync.viewer.Viewer.publish`)."""
        self._session.publish(image, meta)

    def stats(self) -> dict[str, Any]:
        """Frames published, dropped, encoded and sent, views connected, encode times."""
        return self._session.stats()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._session.closed

    def close(self) -> None:
        """Stop the source (joined), the capture and the widget's thread, and close the widget; idempotent."""
        if self._session is not None:
            self._session.close()
        super().close()
