"""Camera paths: record the camera of a :class:`ViewerState` as timed key poses, save them, play them back.

A :class:`CameraPath` is a list of ``(time, pose)`` keys with increasing
times; between keys the pose is interpolated linearly (eye, target, up and
field of view). :class:`PathRecorder` adds a key each time the viewer's camera
changes; :class:`PathPlayer` drives the viewer's camera along a path on a
thread of its own, at a fixed rate, so that the source renders each pose as it
would a drag in the page.

Blocking calls
--------------
None here touches CUDA. :meth:`PathRecorder.stop` and :meth:`PathPlayer.stop`
join their thread; :meth:`PathPlayer.wait` waits for the end of the path.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._camera import CameraPose
from ._state import ViewerState

__all__ = ["MAX_KEYS", "CameraPath", "PathPlayer", "PathRecorder"]

#: Most keys a path may have (a recording at 60 changes per second for more than an hour).
MAX_KEYS = 250_000
_FORMAT = "optixasync-camera-path"


def _vector(value: Any, name: str) -> tuple[float, float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise ValueError(f"{name} must be 3 numbers, got {value!r:.60}")
    out = tuple(_finite(v, name) for v in value)
    return out  # type: ignore[return-value]


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r:.60}")
    return float(value)


def _lerp(a: Sequence[float], b: Sequence[float], w: float) -> tuple[float, ...]:
    return tuple(x + (y - x) * w for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class CameraPath:
    """Timed camera poses: ``keys[i] = (seconds from the start, CameraPose)``, times increasing.

    Parameters
    ----------
    keys : sequence of (float, CameraPose)
        At least one key; times finite, the first one 0 or more, each later one larger.

    Raises
    ------
    ValueError
        On no keys, more than :data:`MAX_KEYS`, times that do not increase, or a pose that is not finite.
    """

    keys: tuple[tuple[float, CameraPose], ...]

    def __init__(self, keys: Iterable[tuple[float, CameraPose]]) -> None:
        checked = []
        for n, (t, pose) in enumerate(keys):
            if n >= MAX_KEYS:
                raise ValueError(f"a camera path has at most {MAX_KEYS} keys")
            t = _finite(t, "time")
            if t < 0 or (checked and t <= checked[-1][0]):
                raise ValueError(f"key {n}: times must start at 0 or later and increase, got {t} after "
                                 f"{checked[-1][0] if checked else 'the start'}")
            if not isinstance(pose, CameraPose):
                raise TypeError(f"key {n}: expected a CameraPose, got {type(pose).__name__}")
            checked.append((t, CameraPose(_vector(pose.eye, "eye"), _vector(pose.target, "target"),
                                          _vector(pose.up, "up"), _finite(pose.fov, "fov"))))
        if not checked:
            raise ValueError("a camera path needs at least one key")
        object.__setattr__(self, "keys", tuple(checked))

    @property
    def duration(self) -> float:
        """Time of the last key, seconds."""
        return self.keys[-1][0]

    def __len__(self) -> int:
        return len(self.keys)

    def pose_at(self, t: float) -> CameraPose:
        """The pose at ``t`` seconds: the first or last key outside the path, linear in between."""
        keys = self.keys
        if t <= keys[0][0]:
            return keys[0][1]
        if t >= keys[-1][0]:
            return keys[-1][1]
        lo, hi = 0, len(keys) - 1
        while hi - lo > 1:  # bisect on the times
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if keys[mid][0] <= t else (lo, mid)
        (t0, a), (t1, b) = keys[lo], keys[hi]
        w = (t - t0) / (t1 - t0)
        return CameraPose(_lerp(a.eye, b.eye, w), _lerp(a.target, b.target, w), _lerp(a.up, b.up, w),
                          a.fov + (b.fov - a.fov) * w)  # type: ignore[arg-type]

    # -- files --------------------------------------------------------------------------------------------

    def as_dict(self) -> dict[str, Any]:
        """The path as JSON-ready data (what :meth:`save` writes)."""
        return {"format": _FORMAT, "version": 1,
                "keys": [{"t": t, **pose.as_dict()} for t, pose in self.keys]}

    @classmethod
    def from_dict(cls, data: Any) -> CameraPath:
        """The path of :meth:`as_dict`'s data.

        Raises
        ------
        ValueError
            When ``data`` is not such a path (the message says what is wrong).
        """
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"not a camera path: expected an object with format {_FORMAT!r}")
        keys = data.get("keys")
        if not isinstance(keys, list):
            raise ValueError("a camera path's keys must be a list")
        if len(keys) > MAX_KEYS:
            raise ValueError(f"a camera path has at most {MAX_KEYS} keys, got {len(keys)}")

        def key(n: int, item: Any) -> tuple[float, CameraPose]:
            if not isinstance(item, dict) or set(item) - {"t", "eye", "target", "up", "fov"}:
                raise ValueError(f"key {n}: expected an object with t, eye, target, up and fov")
            return item.get("t"), CameraPose(item.get("eye"), item.get("target"), item.get("up", (0.0, 1.0, 0.0)),
                                             item.get("fov"))

        return cls(key(n, item) for n, item in enumerate(keys))

    def save(self, path: str | Path) -> Path:
        """Write the path as JSON; the file written."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> CameraPath:
        """Read a path written by :meth:`save`.

        Raises
        ------
        ValueError
            When the file is not JSON or not a camera path; OSError when it cannot be read.
        """
        text = Path(path).read_text(encoding="utf-8")
        try:
            data = json.loads(text, parse_constant=lambda name: float("nan"))
        except ValueError as exc:
            raise ValueError(f"{path}: not JSON: {exc}") from None
        return cls.from_dict(data)


class PathRecorder:
    """Records the camera of ``state`` on a thread: a key at the start and at every change of camera.

    Parameters
    ----------
    state : ViewerState
        Whose camera to record.
    """

    def __init__(self, state: ViewerState) -> None:
        self._state = state
        self._stop = threading.Event()
        self._start = time.perf_counter()
        view = state.snapshot()
        self._keys: list[tuple[float, CameraPose]] = [(0.0, view.camera)]
        self._thread = threading.Thread(target=self._run, args=(view.version,), name="optixasync-path-recorder",
                                        daemon=True)
        self._thread.start()

    def _run(self, version: int) -> None:
        while not self._stop.is_set() and len(self._keys) < MAX_KEYS:
            view = self._state.wait_for_change(version, timeout=0.1)
            if view.version == version:
                continue
            version = view.version
            t = time.perf_counter() - self._start
            if view.camera != self._keys[-1][1] and t > self._keys[-1][0]:
                self._keys.append((t, view.camera))

    @property
    def recording(self) -> bool:
        """Whether the recorder is still running."""
        return self._thread.is_alive()

    def stop(self) -> CameraPath:
        """Stop recording (the thread is joined); the path recorded, ending at the time of the stop."""
        self._stop.set()
        self._thread.join()
        keys = list(self._keys)
        end = time.perf_counter() - self._start
        if end > keys[-1][0] and len(keys) < MAX_KEYS:  # hold the last pose until the stop
            keys.append((end, keys[-1][1]))
        return CameraPath(keys)


class PathPlayer:
    """Drives the camera of ``state`` along ``path`` on a thread, ``rate`` poses per second.

    Parameters
    ----------
    state : ViewerState
        Whose camera to move.
    path : CameraPath
        Where to move it.
    speed : float
        Playback speed (2.0: twice as fast as recorded).
    loop : bool
        Start again at the end instead of stopping.
    rate : float
        Poses set per second.

    Raises
    ------
    ValueError
        On a speed or rate that is not positive and finite.
    """

    def __init__(self, state: ViewerState, path: CameraPath, speed: float = 1.0, loop: bool = False,
                 rate: float = 30.0) -> None:
        if not (math.isfinite(speed) and speed > 0 and math.isfinite(rate) and rate > 0):
            raise ValueError(f"speed and rate must be positive, got speed={speed}, rate={rate}")
        self._state, self.path, self._speed, self._loop, self._period = state, path, speed, loop, 1.0 / rate
        self._stop = threading.Event()
        self.poses_set = 0
        self._thread = threading.Thread(target=self._play, name="optixasync-path-player", daemon=True)
        state.path_playing(True)
        self._thread.start()

    def _play(self) -> None:
        try:
            self._run()
        finally:
            self._state.path_playing(False)  # the frames after this say so: the page's button reads "play path"

    def _set(self, pose: CameraPose) -> None:
        self._state.move_camera("look_at", pose.eye, pose.target, pose.up, pose.fov)
        self.poses_set += 1

    def _run(self) -> None:
        start = time.perf_counter()
        duration = self.path.duration
        while not self._stop.is_set():
            t = (time.perf_counter() - start) * self._speed
            if t >= duration and not self._loop:
                self._set(self.path.pose_at(duration))  # the path always ends on its last key
                return
            self._set(self.path.pose_at(t % duration if duration > 0 else 0.0))
            self._stop.wait(self._period)

    @property
    def playing(self) -> bool:
        """Whether the player is still moving the camera."""
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the end of the path (never, for a looping player, unless stopped); whether it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop moving the camera (the thread is joined); the camera stays where it is."""
        self._stop.set()
        self._thread.join()
