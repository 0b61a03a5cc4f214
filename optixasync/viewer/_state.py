"""The viewer's shared state: camera and render settings behind one lock, with a version on every change.

The browser (through the server's event loop) writes it; the frame source reads
it once per frame with :meth:`ViewerState.snapshot`, which takes no lock and
returns an immutable :class:`ViewState`. Its ``version`` grows by one on every
change, camera or settings; a source stamps each frame with the version it was
rendered from (``FrameMeta.camera_id``), which is how a client knows that a
frame reflects its input.
"""

from __future__ import annotations

import math
import numbers
import threading
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from ._camera import CameraPose, OrbitCamera

__all__ = ["LIMITS", "Settings", "ViewState", "ViewerState", "clamp_settings"]

#: Inclusive ranges every setting is clamped to; ``pixels`` caps width * height (3840x2160) and ``samples``
#: caps spp * width * height, the samples of one frame (four per pixel at the largest image), so that no
#: settings message can ask a source for more work per frame than four samples of the largest image.
LIMITS: dict[str, tuple[int, int]] = {
    "spp": (1, 256),
    "width": (16, 4096),
    "height": (16, 4096),
    "max_depth": (1, 64),
    "pixels": (256, 3840 * 2160),
    "samples": (256, 4 * 3840 * 2160),
}


@dataclass(frozen=True)
class Settings:
    """Render settings a client may change.

    Attributes
    ----------
    denoise : bool
        Whether the source denoises the image it shows.
    spp : int
        Samples per pixel per frame.
    width, height : int
        Image size in pixels.
    max_depth : int
        Longest path, in bounces.
    """

    denoise: bool = False
    spp: int = 1
    width: int = 512
    height: int = 512
    max_depth: int = 8

    def as_dict(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict."""
        return asdict(self)


def _clamp_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    low, high = LIMITS[name]
    return int(min(max(round(value), low), high))


def clamp_settings(settings: Settings, changes: dict[str, Any]) -> Settings:
    """``settings`` with ``changes`` applied, each value checked and clamped to :data:`LIMITS`.

    The size shrinks (aspect kept) to the ``pixels`` limit, then ``spp`` to the ``samples`` limit.

    Raises
    ------
    KeyError
        On a name that is not a setting.
    TypeError, ValueError
        On a value of the wrong type or a non-finite number (nothing is applied then).
    """
    values: dict[str, Any] = {}
    for name, value in changes.items():
        if name == "denoise":
            if not isinstance(value, bool):
                raise TypeError(f"denoise must be true or false, got {type(value).__name__}")
            values[name] = value
        elif name in ("spp", "width", "height", "max_depth"):
            values[name] = _clamp_int(name, value)
        else:
            raise KeyError(name)
    new = replace(settings, **values)
    pixels = new.width * new.height
    if pixels > LIMITS["pixels"][1]:  # keep the aspect ratio, shrink to the pixel budget
        scale = math.sqrt(LIMITS["pixels"][1] / pixels)
        new = replace(new, width=max(LIMITS["width"][0], int(new.width * scale)),
                      height=max(LIMITS["height"][0], int(new.height * scale)))
    most = max(1, LIMITS["samples"][1] // (new.width * new.height))  # samples of one frame
    if new.spp > most:
        new = replace(new, spp=most)
    return new


@dataclass(frozen=True)
class ViewState:
    """What a frame is rendered from: an immutable snapshot of :class:`ViewerState`.

    Attributes
    ----------
    version : int
        Grows by one on every change of camera or settings; frames carry it as their camera id.
    camera : CameraPose
        Eye, target, up (tuples) and field of view.
    settings : Settings
        Denoise, samples per frame, resolution, max depth.
    """

    version: int
    camera: CameraPose
    settings: Settings

    @property
    def camera_id(self) -> int:
        """Same as :attr:`version`: the id frames rendered from this state carry."""
        return self.version


class ViewerState:
    """Camera and settings shared by the server (writer) and the frame source (reader); thread-safe.

    Parameters
    ----------
    camera : OrbitCamera, CameraPose or None
        The starting camera (a default orbit camera when None).
    settings : Settings or None
        The starting settings (clamped; defaults when None).
    """

    def __init__(self, camera: OrbitCamera | CameraPose | None = None, settings: Settings | None = None) -> None:
        if isinstance(camera, CameraPose):
            camera = OrbitCamera.from_pose(camera)
        self._camera = camera if camera is not None else OrbitCamera()
        self._changed = threading.Condition(threading.Lock())
        settings = settings or Settings()
        settings = clamp_settings(settings, settings.as_dict())  # every field checked and clamped
        self._snapshot = ViewState(1, self._camera.pose(), settings)
        self._unwatched_since: float | None = None  # None: a view has room for a frame, or no pump tracks views
        self._play = (0, False)  # (number of camera paths started, whether the last one still plays)

    # -- camera paths (the page's play button follows them) -----------------------------------------------------
    def path_playing(self, playing: bool) -> None:
        """A camera path starts moving the camera (True: it gets the next number) or has ended (False)."""
        number = self._play[0]
        self._play = (number + 1, True) if playing else (number, False)

    @property
    def play(self) -> tuple[int, bool]:
        """(paths started so far, whether the last one still plays): frames carry it, so the page knows it ended."""
        return self._play

    # -- whether anyone is looking (the pump says; render loops pause when nobody has been for a while) ------------
    def set_watched(self, watched: bool) -> None:
        """Record whether a view (a browser tab, a notebook output) has room for a frame now (the pump calls it)."""
        if watched:
            self._unwatched_since = None
        elif self._unwatched_since is None:
            self._unwatched_since = time.monotonic()

    def unwatched_for(self) -> float:
        """Seconds since the last view had room for a frame (0 while one has, or without a pump: a bare sink)."""
        since = self._unwatched_since
        return 0.0 if since is None else time.monotonic() - since

    def snapshot(self) -> ViewState:
        """The current state; never blocks (one attribute read)."""
        return self._snapshot

    @property
    def version(self) -> int:
        """The current version (see :class:`ViewState`)."""
        return self._snapshot.version

    def wait_for_change(self, version: int, timeout: float | None = None) -> ViewState:
        """Block until the version differs from ``version`` or ``timeout`` seconds pass; the current state.

        For a source with nothing left to do (a converged image): it can sleep here instead of spinning.
        """
        with self._changed:
            self._changed.wait_for(lambda: self._snapshot.version != version, timeout)
            return self._snapshot

    def _commit(self, settings: Settings | None = None) -> ViewState:
        # called with the lock held
        old = self._snapshot
        self._snapshot = ViewState(old.version + 1, self._camera.pose(), settings or old.settings)
        self._changed.notify_all()
        return self._snapshot

    def update_settings(self, **changes: Any) -> ViewState:
        """Change settings (clamped, see :func:`clamp_settings`); the new state.

        Raises
        ------
        KeyError, TypeError, ValueError
            As :func:`clamp_settings`; nothing changes then.
        """
        with self._changed:
            return self._commit(clamp_settings(self._snapshot.settings, changes))

    def move_camera(self, action: str, *args: Any) -> ViewState:
        """Apply a camera move: ``orbit(dx, dy)``, ``pan(dx, dy)``, ``zoom(steps)``, ``key(name)``, ``reset()``,
        ``look_at(eye, target, up, fov)`` or ``set_fov(fov)`` (see :class:`OrbitCamera`); the new state.

        Raises
        ------
        ValueError
            On an unknown action or an invalid pose; nothing changes then.
        """
        if action not in ("orbit", "pan", "zoom", "key", "reset", "look_at", "set_fov"):
            raise ValueError(f"unknown camera action {action!r}")
        with self._changed:
            result = getattr(self._camera, action)(*args)
            if result is False:  # a key the camera does not know
                raise ValueError(f"unknown key {args[0]!r}")
            return self._commit()
