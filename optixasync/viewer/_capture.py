"""Saving and recording what a viewer shows: the current image as PNG or linear EXR, MP4 clips, camera paths.

:class:`Capture` is shared by the web :class:`~optixasync.viewer.Viewer` and
the notebook widget (each has one as ``.capture``); the page's and the
widget's buttons reach it through the ``save``, ``record`` and ``play``
messages (:mod:`optixasync.viewer._messages`). Files are written on the side
that renders (the kernel's machine, for a notebook), into ``directory``, under
names made from the time: a remote page can name no path.

The current image is the newest frame the source published (8-bit sRGB). A
linear EXR comes from the source itself when it has a ``linear_image()``
method (:class:`LinearImageSource`: the CPU source has one); otherwise from
the 8-bit image through the inverse sRGB curve, which the reply says.
Images are written with :func:`optixasync.io.write_image` (EXR needs the
``exr`` extra); clips with imageio-ffmpeg (the ``video`` extra).

Blocking calls
--------------
None here touches CUDA. :meth:`Capture.save_image` encodes and writes the file
on the caller's thread; stopping a recorder or player joins its thread (and
waits for FFmpeg to finish a clip).
"""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._clip import ClipRecorder
from ._mailbox import FrameMailbox
from ._messages import Message
from ._path import CameraPath, PathPlayer, PathRecorder
from ._state import ViewerState

__all__ = ["Capture", "LinearImageSource"]


@runtime_checkable
class LinearImageSource(Protocol):
    """A frame source that can hand out the linear image behind its newest frame (for EXR files)."""

    def linear_image(self) -> np.ndarray | None:
        """A copy of the linear RGB image of the newest frame, (H, W, 3) float32, or None before any frame."""
        ...


class Capture:
    """Saves the current image and records clips and camera paths of one viewer.

    Parameters
    ----------
    state : ViewerState
        The viewer's camera (recorded and played back).
    mailbox : FrameMailbox
        The viewer's frames (the newest one is the current image).
    source : object or None
        The viewer's frame source (asked for a linear image when it is a :class:`LinearImageSource`).
    directory : str or Path
        Where files named by the capture go (the working directory by default).

    Attributes
    ----------
    clip : ClipRecorder or None
        The clip being recorded.
    path_recorder : PathRecorder or None
        The camera path being recorded.
    player : PathPlayer or None
        The camera path being played.
    path : CameraPath or None
        The camera path recorded last (or given to :meth:`play_path`).
    saves_per_minute : int
        The most ``save`` messages carried out in any minute, from all peers together :
        beyond it a save is refused, so that a peer cannot fill the disk (at 1080p, 13 MB of PNGs in 10 s).
    """

    saves_per_minute: int = 30

    def __init__(self, state: ViewerState, mailbox: FrameMailbox, source: Any = None,
                 directory: str | Path = ".") -> None:
        self._state, self._mailbox, self._source = state, mailbox, source
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._names = itertools.count(1)
        self.clip: ClipRecorder | None = None
        self.path_recorder: PathRecorder | None = None
        self.player: PathPlayer | None = None
        self.path: CameraPath | None = None
        self._saves: list[float] = []  # the monotonic times of the saves of the last minute
        self._clock = time.monotonic

    def new_path(self, suffix: str) -> Path:
        """A file name in :attr:`directory` that nothing has used: ``optixasync-<date>-<time>-<n><suffix>``."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        while True:
            path = self.directory / f"optixasync-{stamp}-{next(self._names)}{suffix}"
            if not path.exists():
                return path

    # -- images -------------------------------------------------------------------------------------------

    def image(self) -> np.ndarray:
        """A copy of the current image: the newest published frame, (H, W, 3 or 4) uint8 sRGB.

        Raises
        ------
        LookupError
            Before the source published its first frame.
        """
        frame = self._mailbox.latest()
        if frame is None:
            raise LookupError("no frame yet: the source has not published one")
        return np.array(frame.image, copy=True)

    def linear_image(self) -> tuple[np.ndarray, bool]:
        """The current image in linear RGB, (H, W, 3) float32, and whether it came from the source.

        From the source's :meth:`LinearImageSource.linear_image` when it has one (the renderer's own
        values, above 1 included); else the 8-bit image through the inverse sRGB curve (False).
        """
        if isinstance(self._source, LinearImageSource):
            linear = self._source.linear_image()
            if linear is not None:
                return np.asarray(linear, np.float32)[..., :3], True
        from ..io import srgb_to_linear

        return srgb_to_linear(self.image()[..., :3]), False

    def save_image(self, path: str | Path | None = None) -> Path:
        """Write the current image; the format follows the suffix: ``.png`` (sRGB) or ``.exr`` (linear float).

        Parameters
        ----------
        path : str, Path or None
            The file; None names a new PNG in :attr:`directory`.

        Raises
        ------
        LookupError
            Before the first frame.
        ValueError
            On a suffix other than ``.png`` or ``.exr``.
        MissingExtraError
            For ``.exr`` without OpenEXR (the ``exr`` extra).
        """
        from ..io import check_image_path, write_image

        path = check_image_path(self.new_path(".png") if path is None else path)
        if path.suffix.lower() == ".exr":
            return write_image(path, self.linear_image()[0])
        return write_image(path, self.image())

    # -- clips ----------------------------------------------------------------------------------------------

    def _newest(self) -> np.ndarray | None:
        frame = self._mailbox.latest()
        return None if frame is None else frame.image

    def record_clip(self, path: str | Path | None = None, fps: float = 30.0, max_seconds: float = 600.0) -> ClipRecorder:
        """Start recording an MP4 clip of the frames shown (see :class:`ClipRecorder`); stop it with :meth:`stop_clip`.

        Raises
        ------
        RuntimeError
            When a clip is already being recorded.
        MissingExtraError
            Without imageio-ffmpeg (the ``video`` extra).
        """
        with self._lock:
            if self.clip is not None and self.clip.recording:
                raise RuntimeError(f"already recording {self.clip.path}")
            self.clip = ClipRecorder(self.new_path(".mp4") if path is None else path, self._newest, fps, max_seconds)
            return self.clip

    def stop_clip(self) -> Path:
        """Stop the clip and finish its file; its path.

        Raises
        ------
        RuntimeError
            When no clip was started, or it recorded nothing or failed.
        """
        with self._lock:
            clip, self.clip = self.clip, None
        if clip is None:
            raise RuntimeError("no clip is being recorded")
        return clip.stop()

    # -- camera paths -----------------------------------------------------------------------------------------

    def record_path(self) -> PathRecorder:
        """Start recording the camera (a key at every change); stop it with :meth:`stop_path`."""
        with self._lock:
            if self.path_recorder is not None:
                raise RuntimeError("already recording a camera path")
            self.path_recorder = PathRecorder(self._state)
            return self.path_recorder

    def stop_path(self) -> CameraPath:
        """Stop recording the camera; the path (also kept as :attr:`path` for :meth:`play_path`)."""
        with self._lock:
            recorder, self.path_recorder = self.path_recorder, None
        if recorder is None:
            raise RuntimeError("no camera path is being recorded")
        self.path = recorder.stop()
        return self.path

    def play_path(self, path: CameraPath | str | Path | None = None, speed: float = 1.0,
                  loop: bool = False) -> PathPlayer:
        """Move the camera along ``path`` (a :class:`CameraPath`, a file of one, or None: the last recorded).

        Raises
        ------
        LookupError
            With no path given and none recorded.
        ValueError
            On a file that is not a camera path, or a speed that is not positive.
        """
        if path is None:
            if self.path is None:
                raise LookupError("no camera path recorded yet: record one first")
            path = self.path
        elif not isinstance(path, CameraPath):
            path = CameraPath.load(path)
        self.stop_playing()
        with self._lock:
            self.path = path
            self.player = PathPlayer(self._state, path, speed=speed, loop=loop)
            return self.player

    def stop_playing(self) -> None:
        """Stop moving the camera along a path (nothing happens when none is playing)."""
        with self._lock:
            player, self.player = self.player, None
        if player is not None:
            player.stop()

    # -- the page's and the widget's buttons --------------------------------------------------------------------

    def handle(self, message: Message) -> dict[str, Any]:
        """Carry out a ``save``, ``record`` or ``play`` message; the reply's fields (``file`` when one was written).

        Raises
        ------
        LookupError, RuntimeError, ValueError, ImportError, OSError
            When it cannot be done (no frame yet, nothing to stop, an extra missing, the disk); the viewer
            answers ``ignored`` with the message.
        """
        f = message.fields
        if message.type == "save":
            self._count_save()
            path = self.new_path("." + f["format"])
            if f["format"] == "png":
                return {"file": self.save_image(path).name, "note": ""}
            from ..io import write_image

            linear, own = self.linear_image()
            return {"file": write_image(path, linear).name, "note": "" if own else "from the 8-bit image"}
        if message.type == "play":
            if f["on"]:
                self.play_path()
            else:
                self.stop_playing()
            return {}
        if f["what"] == "clip":
            if f["on"]:
                self.record_clip()
                return {}
            return {"file": self.stop_clip().name}
        if f["on"]:
            self.record_path()
            return {}
        return {"file": self.stop_path().save(self.new_path(".json")).name}

    def _count_save(self) -> None:
        """Count a save, or refuse it (RuntimeError) when :attr:`saves_per_minute` were made in the last minute."""
        now = self._clock()
        with self._lock:
            self._saves = [t for t in self._saves if now - t < 60.0]
            if len(self._saves) >= self.saves_per_minute:
                raise RuntimeError(f"too many saves: at most {self.saves_per_minute} a minute")
            self._saves.append(now)

    def close(self) -> None:
        """Stop whatever records or plays (a clip's file is finished)."""
        self.stop_playing()
        if self.path_recorder is not None:
            self.stop_path()
        if self.clip is not None:
            try:
                self.stop_clip()
            except RuntimeError:  # an empty or failed clip: nothing to keep
                pass
