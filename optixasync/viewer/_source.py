"""The boundary between a renderer and the viewer: :class:`FrameSource`, :class:`FrameSink`, :class:`FrameMeta`.

Threading contract
------------------
* A source owns its render loop and runs it on a thread of its own, started by
  ``source.start(sink)`` and ended (joined) by ``source.stop()``; after
  ``stop`` returns it calls ``sink.publish`` no more.
* Each frame the source reads ``sink.state.snapshot()`` (no lock, never blocks):
  camera pose, settings and the ``version`` it stamps on the frame as
  ``FrameMeta.camera_id``. It restarts accumulation when the camera or the
  image-shaping settings differ from those of its accumulated samples.
* ``sink.publish(image, meta)`` is O(1) and never waits: the viewer keeps only
  the newest frame and encodes it on its own threads, when a client can take
  one. ``image`` may be a zero-copy view of a pinned buffer: the viewer reads it
  only while it holds the reference, and drops the reference once the frame
  is encoded and replaced by a newer one (it keeps the newest frame, the one
  a capture saves, until the next arrives). A source that recycles buffers can
  learn when that happened with ``weakref.finalize(image, ...)`` on the exact
  object it published.
* The viewer never calls into the source's thread; the renderer never waits
  for the network.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._camera import CameraPose
from ._state import Settings, ViewerState, ViewState

__all__ = ["CallbackFrameSource", "FrameMeta", "FrameSink", "FrameSource", "NullSink", "RenderLoop", "SourceThread",
           "IDLE_AFTER_S", "check_image"]


@dataclass(frozen=True)
class FrameMeta:
    """What the viewer shows beside a frame.

    Attributes
    ----------
    frame_id : int
        The source's frame counter (increasing).
    camera_id : int
        ``ViewState.version`` of the state the frame was rendered from.
    samples : int
        Samples per pixel accumulated in this image.
    fps : float or None
        The source's own loop rate, frames per second.
    frames_in_flight : int or None
        Frames submitted and not complete (a GPU pipeline's depth).
    gpu_busy : float or None
        Fraction of wall time the GPU was busy, in [0, 1].
    submit_ms : float or None
        Host time to submit one frame, milliseconds.
    denoise : bool
        Whether the image was denoised.
    extra : mapping
        More numbers or short strings to show (JSON types only).
    """

    frame_id: int
    camera_id: int
    samples: int
    fps: float | None = None
    frames_in_flight: int | None = None
    gpu_busy: float | None = None
    submit_ms: float | None = None
    denoise: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def coerce(cls, meta: FrameMeta | Mapping[str, Any]) -> FrameMeta:
        """``meta`` itself, or a FrameMeta from a mapping with the same keys (unknown keys go to ``extra``)."""
        if isinstance(meta, FrameMeta):
            return meta
        if not isinstance(meta, Mapping):
            raise TypeError(f"meta must be a FrameMeta or a mapping, got {type(meta).__name__}")
        missing = [k for k in ("frame_id", "camera_id", "samples") if k not in meta]
        if missing:
            raise ValueError(f"meta lacks {', '.join(missing)}")
        known = {k: meta[k] for k in cls.__dataclass_fields__ if k in meta and k != "extra"}
        extra = dict(meta.get("extra") or {})
        extra.update({k: v for k, v in meta.items() if k not in cls.__dataclass_fields__})
        return cls(**known, extra=extra)

    def stats(self) -> dict[str, Any]:
        """The statistics as JSON-ready values (NumPy scalars become Python numbers, non-finite ones None)."""
        out = {"fps": self.fps, "frames_in_flight": self.frames_in_flight, "gpu_busy": self.gpu_busy,
               "submit_ms": self.submit_ms, "denoise": bool(self.denoise)}
        for key, value in self.extra.items():
            if isinstance(value, (bool, int, float, str, np.generic)) or value is None:
                out[str(key)[:64]] = value[:256] if isinstance(value, str) else value
        return {k: _json_number(v) for k, v in out.items()}


def _json_number(value: Any) -> Any:
    """``value`` with NumPy scalars as Python ones and non-finite floats as None; other values unchanged."""
    if isinstance(value, np.generic):
        value = value.item()
        if not isinstance(value, (bool, int, float, str)):
            return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def check_image(image: Any) -> None:
    """Raise TypeError/ValueError unless ``image`` is a (H, W, 3 or 4) uint8 array (O(1), no data read)."""
    if not isinstance(image, np.ndarray):
        raise TypeError(f"image must be a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in (3, 4) or image.size == 0:
        raise ValueError(f"image must be (H, W, 3 or 4) uint8, got {image.shape} {image.dtype}")


class FrameSink(Protocol):
    """What a source sees of the viewer: the shared state and ``publish``."""

    @property
    def state(self) -> ViewerState:
        """Camera and settings; read ``state.snapshot()`` once per frame."""
        ...

    def publish(self, image: np.ndarray, meta: FrameMeta | Mapping[str, Any]) -> None:
        """Hand over a finished frame (O(1), never blocks; only the newest frame is kept)."""
        ...


@runtime_checkable
class FrameSource(Protocol):
    """A renderer the viewer shows: a render loop on a thread the source owns.

    A source may also have the attributes ``initial_camera`` (a :class:`CameraPose`) and
    ``initial_settings`` (a :class:`Settings`); the viewer starts from them when given none.
    """

    def start(self, sink: FrameSink) -> None:
        """Start the render loop on the source's own thread and return at once."""
        ...

    def stop(self) -> None:
        """Stop the render loop and wait for it; ``sink.publish`` is not called after this returns."""
        ...


class NullSink:
    """A sink that drops every frame: runs a source without a viewer (to measure the source alone)."""

    def __init__(self, camera: CameraPose | None = None, settings: Settings | None = None) -> None:
        self._state = ViewerState(camera, settings)
        self.published = 0

    @property
    def state(self) -> ViewerState:
        """The state the source reads."""
        return self._state

    def publish(self, image: np.ndarray, meta: FrameMeta | Mapping[str, Any]) -> None:
        """Count and drop the frame."""
        self.published += 1


class SourceThread:
    """The thread of a frame source: :meth:`start` runs ``self._run(sink)`` on a thread of its own.

    ``_run`` loops until ``self._stop`` is set; :meth:`stop` sets it and joins the thread, after which
    the source may be started again.

    Parameters
    ----------
    name : str
        The thread's name.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def _run(self, sink: FrameSink) -> None:
        raise NotImplementedError

    def start(self, sink: FrameSink) -> None:
        """Start the loop on a new thread."""
        if self._thread is not None:
            raise RuntimeError("source already started")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(sink,), name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the loop and join its thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def running(self) -> bool:
        """Whether the loop thread is alive."""
        return self._thread is not None and self._thread.is_alive()


#: Seconds without a view that has room for a frame after which a render loop pauses (two frames unacknowledged
#: for that long, or no view at all).
IDLE_AFTER_S = 1.0


class RenderLoop(SourceThread):
    """Base of sources whose loop renders one frame per iteration: owns the thread, frame ids and fps.

    Subclasses implement :meth:`render`; a ``render`` that returns None (a converged image) makes the
    loop wait for a change of state instead of rendering again. The loop also waits, rendering nothing,
    while no view has had room for a frame for ``idle_after`` seconds (a closed tab, a page that stopped
    acknowledging): ``ViewerState.unwatched_for``, which the viewer's pump keeps; a bare sink never pauses it.

    Parameters
    ----------
    fps_limit : float or None
        Most frames per second (None: as fast as it renders).
    name : str
        The thread's name.
    idle_after : float
        Seconds without a view that has room for a frame after which the loop pauses (default
        :data:`IDLE_AFTER_S`).
    """

    def __init__(self, fps_limit: float | None = None, name: str = "optixasync-render",
                 idle_after: float | None = None) -> None:
        super().__init__(name)
        self.idle_after = IDLE_AFTER_S if idle_after is None else float(idle_after)
        self._fps_limit = fps_limit
        self.loops = 0
        self.paused = False  # whether the loop waits because no view has room for a frame
        self.fps = 0.0
        self.error: BaseException | None = None
        self.last_state: ViewState | None = None
        self._sink: FrameSink | None = None

    def stale(self, view: ViewState) -> bool:
        """Whether the viewer's state has moved past ``view`` (or the loop is stopping): a long frame may end early."""
        sink = self._sink
        return self._stop.is_set() or (sink is not None and sink.state.version != view.version)

    def render(self, view: ViewState) -> tuple[np.ndarray, dict[str, Any]] | None:
        """Render a frame for ``view``: ``(image, meta fields)`` (``samples`` at least), or None for no frame."""
        raise NotImplementedError

    def _run(self, sink: FrameSink) -> None:
        frame_id = 0
        last = time.perf_counter()
        self._sink = sink
        try:
            while not self._stop.is_set():
                view = sink.state.snapshot()
                self.last_state = view
                if sink.state.unwatched_for() > self.idle_after:  # nobody is looking: render nothing
                    self.paused = True
                    sink.state.wait_for_change(view.version, timeout=0.05)
                    continue
                self.paused = False
                result = self.render(view)
                if result is None:  # nothing new to show: sleep until the state changes
                    sink.state.wait_for_change(view.version, timeout=0.05)
                    continue
                image, fields = result
                now = time.perf_counter()
                dt, last = now - last, now
                self.fps = 1.0 / dt if self.loops == 0 else 0.9 * self.fps + 0.1 / max(dt, 1e-9)
                self.loops += 1
                frame_id += 1
                fields.setdefault("fps", self.fps)
                sink.publish(image, FrameMeta.coerce({"frame_id": frame_id, "camera_id": view.version, **fields}))
                if self._fps_limit:
                    self._stop.wait(max(0.0, 1.0 / self._fps_limit - (time.perf_counter() - now)))
        except BaseException as exc:  # keep the error for the owner; the viewer keeps serving the last frame
            self.error = exc
            raise


class CallbackFrameSource(RenderLoop):
    """A source around a render callback: ``render(view) -> image`` or ``(image, meta fields)``.

    Parameters
    ----------
    render : callable
        Called on the source's thread with the :class:`ViewState` of each frame. It returns a
        (H, W, 3 or 4) uint8 image, optionally with a dict of :class:`FrameMeta` fields (``samples``,
        stats); without ``samples`` the count of frames since the last change of state is shown.
    fps_limit : float or None
        Most frames per second.
    initial_camera, initial_settings : optional
        Where the viewer starts.
    """

    def __init__(self, render: Callable[[ViewState], Any], fps_limit: float | None = None,
                 initial_camera: CameraPose | None = None, initial_settings: Settings | None = None) -> None:
        super().__init__(fps_limit, name="optixasync-callback-source")
        self._callback = render
        self.initial_camera = initial_camera
        self.initial_settings = initial_settings
        self._version = -1
        self._count = 0

    def render(self, view: ViewState) -> tuple[np.ndarray, dict[str, Any]]:
        """Call the callback and count frames since the last change."""
        result = self._callback(view)
        image, fields = (result if isinstance(result, tuple) else (result, {}))
        check_image(image)
        self._count = self._count + 1 if view.version == self._version else 1
        self._version = view.version
        fields = dict(fields)
        fields.setdefault("samples", self._count)
        return image, fields
