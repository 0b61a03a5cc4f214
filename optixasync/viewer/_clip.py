"""MP4 clips of what a viewer shows: the newest frame sampled at a fixed rate, encoded by FFmpeg.

:class:`ClipRecorder` runs on a thread of its own. Each tick (``1 / fps``
seconds) it takes the newest frame the viewer has (a reference, no copy) and
writes it to an FFmpeg process through ``imageio-ffmpeg`` (the ``video``
extra, which ships an FFmpeg binary). A source slower than ``fps`` repeats its
frame; a faster one has frames skipped, as the page does: newest frame only.
A frame of another size than the first is scaled to the clip's size. The
render loop never waits for the encoder: only this thread writes to FFmpeg.

Blocking calls
--------------
None here touches CUDA. Writing a frame to FFmpeg's pipe waits while FFmpeg
is behind (on the recorder's thread only); :meth:`ClipRecorder.stop` joins the
thread and waits for FFmpeg to finish the file.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingExtraError

__all__ = ["ClipRecorder", "import_imageio_ffmpeg"]


def import_imageio_ffmpeg() -> Any:
    """The ``imageio_ffmpeg`` module.

    Raises
    ------
    MissingExtraError
        When it is not installed (the ``video`` extra).
    """
    try:
        import imageio_ffmpeg
    except ImportError:
        raise MissingExtraError("recording an MP4 clip", "imageio-ffmpeg", "video") from None
    return imageio_ffmpeg


def _rgb(image: np.ndarray, size: tuple[int, int]) -> bytes:
    """``image`` as packed RGB bytes of ``size`` (width, height), scaled when its size differs."""
    rgb = image[..., :3]
    if (rgb.shape[1], rgb.shape[0]) != size:
        from PIL import Image

        rgb = np.asarray(Image.fromarray(np.ascontiguousarray(rgb), "RGB").resize(size))
    return np.ascontiguousarray(rgb).tobytes()


class ClipRecorder:
    """Records the frames of ``frames()`` into an MP4 file (H.264) until :meth:`stop` or ``max_seconds``.

    Parameters
    ----------
    path : str or Path
        The ``.mp4`` file to write (its folder is created).
    frames : callable
        Returns the newest (H, W, 3 or 4) uint8 image, or None before the first frame.
    fps : float
        Frames per second of the clip (and ticks per second of the recorder).
    max_seconds : float
        The recorder stops by itself after this long (a clip left running does not fill the disk).
    quality : int
        FFmpeg's quality, 1 to 10 (imageio-ffmpeg's scale).

    Raises
    ------
    ValueError
        On a path that is not ``.mp4``, or fps, max_seconds or quality out of range.
    MissingExtraError
        Without imageio-ffmpeg (the ``video`` extra).
    """

    def __init__(self, path: str | Path, frames: Callable[[], np.ndarray | None], fps: float = 30.0,
                 max_seconds: float = 600.0, quality: int = 7) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() != ".mp4":
            raise ValueError(f"a clip is written as .mp4, got {str(self.path)!r}")
        if not (math.isfinite(fps) and 1 <= fps <= 240):
            raise ValueError(f"fps must be in [1, 240], got {fps}")
        if not (math.isfinite(max_seconds) and max_seconds > 0):
            raise ValueError(f"max_seconds must be positive, got {max_seconds}")
        if not 1 <= int(quality) <= 10:
            raise ValueError(f"quality must be in 1..10, got {quality}")
        self._ffmpeg = import_imageio_ffmpeg()
        self._frames, self.fps, self.max_seconds, self.quality = frames, float(fps), float(max_seconds), int(quality)
        self.frames_written = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="optixasync-clip-recorder", daemon=True)
        self._thread.start()

    @property
    def recording(self) -> bool:
        """Whether the recorder is still running."""
        return self._thread.is_alive()

    def _open(self, image: np.ndarray) -> tuple[Any, tuple[int, int]]:
        """Start FFmpeg for frames of ``image``'s size (rounded down to even numbers: H.264's 4:2:0 needs them)."""
        size = (max(2, image.shape[1] // 2 * 2), max(2, image.shape[0] // 2 * 2))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        writer = self._ffmpeg.write_frames(str(self.path), size, fps=self.fps, codec="libx264", quality=self.quality,
                                           pix_fmt_in="rgb24", pix_fmt_out="yuv420p", macro_block_size=1,
                                           ffmpeg_log_level="error")
        writer.send(None)  # starts the process
        return writer, size

    def _run(self) -> None:
        writer: Any = None
        size = (0, 0)
        period = 1.0 / self.fps
        start = next_tick = time.perf_counter()
        try:
            while not self._stop.is_set() and time.perf_counter() - start < self.max_seconds:
                image = self._frames()
                if image is not None:
                    if writer is None:
                        writer, size = self._open(image)
                    writer.send(_rgb(image, size))
                    self.frames_written += 1
                next_tick = max(next_tick + period, time.perf_counter() - period)  # no burst after a stall
                self._stop.wait(max(0.0, next_tick - time.perf_counter()))
        except BaseException as exc:  # reported by stop()
            self.error = exc
        finally:
            if writer is not None:
                try:
                    writer.close()  # FFmpeg finishes the file
                except Exception as exc:
                    self.error = self.error or exc

    def stop(self) -> Path:
        """Stop recording and finish the file; its path.

        Raises
        ------
        RuntimeError
            When no frame was recorded or FFmpeg failed (the message says why).
        """
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise RuntimeError(f"recording {self.path} failed: {type(self.error).__name__}: {self.error}") from self.error
        if self.frames_written == 0:
            raise RuntimeError(f"no frame was recorded into {self.path}: the viewer had no frame yet")
        return self.path
