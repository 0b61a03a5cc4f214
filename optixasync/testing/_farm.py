"""Work for exercising :mod:`optixasync.multi` without a GPU, and faults to inject into it.

* :func:`cpu_frame` and :func:`cpu_sample_sums` are per-task functions for
  :class:`~optixasync.multi.FunctionFactory`: a deterministic small "frame" per index, and float32
  sums of a range of per-sample values added one by one in sample order, as the path tracer's kernel
  adds its samples (so a split's summation differs from one range's only in rounding).
* :class:`FaultAt` kills the worker's process, raises, or runs the GPU out of memory the first time
  a given frame runs (once across processes, through a marker file), to test that a job survives a
  dead worker and fails cleanly, naming the device, on an error.
* :class:`CountedPayload` counts its unpicklings in a folder: how often a job's data travelled.
* A :class:`CpuFrame` with ``record`` leaves a file per render in that folder (:func:`render_records`
  reads them back): whether a frame was rendered again, and when.

Blocking calls
--------------
None (``cpu_frame`` sleeps for its ``delay``).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CountedPayload", "CpuFrame", "FaultAt", "FaultyUpdate", "cpu_frame", "cpu_sample_sums", "cpu_setup",
           "frame_image", "render_records", "sample_values"]

FAULT_KINDS = ("kill", "raise", "out_of_memory")


@dataclasses.dataclass(frozen=True)
class FaultAt:
    """A fault the first time frame ``index`` runs anywhere (every time when ``marker`` is None).

    ``kind``: ``"kill"`` sends SIGKILL to the worker's own process, ``"raise"`` raises a ``RuntimeError``,
    ``"out_of_memory"`` asks the tracer's context for 2**50 bytes (a real CUDA out-of-memory error).
    ``marker`` is a folder both the test and the workers see; the fault creates a file there, atomically,
    so that only its first run fires.
    """

    index: int
    kind: str = "raise"
    marker: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"kind must be one of {FAULT_KINDS}, got {self.kind!r}")

    def _first(self) -> bool:
        if self.marker is None:
            return True
        try:
            fd = os.open(Path(self.marker) / f"fault-{self.index}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return True

    def fire(self, index: int, tracer: Any = None) -> None:
        """Inject the fault if ``index`` is the frame and this is its first run."""
        if index != self.index or not self._first():
            return
        if self.kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(60)  # the signal arrives asynchronously; nothing after this line runs
        if self.kind == "out_of_memory":
            tracer.ctx.memory.empty(2**50, np.uint8, tracer.stream)
        raise RuntimeError(f"fault injected at frame {index}")


@dataclasses.dataclass(frozen=True)
class FaultyUpdate:
    """A frame update (``update(tracer, index, frame)``) that fires ``fault`` and then runs ``inner`` (if any)."""

    fault: FaultAt
    inner: Any = None

    def __call__(self, tracer: Any, index: int, frame: Any) -> Any:
        self.fault.fire(index, tracer)
        return self.inner(tracer, index, frame) if self.inner is not None else None


@dataclasses.dataclass(frozen=True)
class CpuFrame:
    """Payload of :func:`cpu_frame`: frame ``index``, taking ``delay`` seconds, with an optional fault.

    ``record``: a folder both the caller and the workers see, where each finished render of the frame
    leaves a file (:func:`render_records`).
    """

    index: int
    delay: float = 0.0
    fault: FaultAt | None = None
    record: str | None = None


@dataclasses.dataclass(frozen=True)
class WorkerState:
    """What :func:`cpu_setup` makes once per worker: its device, process and a token unique to it."""

    device: int | None
    pid: int
    token: str
    payload: Any = None


def cpu_setup(device: int | None, payload: Any = None) -> WorkerState:
    """A worker's state (made once per worker): device, process id, a fresh token, and ``payload``."""
    return WorkerState(device, os.getpid(), uuid.uuid4().hex, payload)


def frame_image(index: int, shape: tuple[int, int] = (8, 8)) -> np.ndarray:
    """The deterministic image :func:`cpu_frame` returns for frame ``index``."""
    return np.random.default_rng(index).random(shape, dtype=np.float32)


def cpu_frame(state: WorkerState, frame: CpuFrame) -> dict[str, Any]:
    """A frame on the CPU: ``{"index", "image", "pid", "token", "device"}``, after the frame's fault and delay."""
    if frame.fault is not None:
        frame.fault.fire(frame.index)
    if frame.delay:
        time.sleep(frame.delay)
    if frame.record is not None:
        Path(frame.record, f"render-{frame.index}-{os.getpid()}-{uuid.uuid4().hex[:8]}").write_text(repr(time.time()))
    return {"index": frame.index, "image": frame_image(frame.index), "pid": state.pid, "token": state.token,
            "device": state.device}


def sample_values(first: int, count: int, pixels: int = 64) -> np.ndarray:
    """Per-sample values (count, pixels) float32 in [0, 4): a function of (absolute sample, pixel) only."""
    k = np.arange(first, first + count, dtype=np.uint64)[:, None]
    p = np.arange(pixels, dtype=np.uint64)[None, :]
    h = (k * np.uint64(0x9E3779B97F4A7C15) + p * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(0xFFFFFFFF)
    h = (h ^ (h >> np.uint64(15))) * np.uint64(0x2C1B3C6D) & np.uint64(0xFFFFFFFF)
    return (h.astype(np.float64) / 2**32 * 4.0).astype(np.float32)


def cpu_sample_sums(state: WorkerState, samples: Any) -> np.ndarray:
    """float32 sums over the samples of ``samples`` (a SampleRange), added one by one in sample order."""
    values = sample_values(samples.first, samples.count)
    total = np.zeros(values.shape[1], np.float32)
    for row in values:
        total += row
    return total


def render_records(folder: str | Path) -> list[tuple[int, int, float]]:
    """(frame index, process id, time.time() when it finished) of every render :func:`cpu_frame` recorded in ``folder``."""
    out = []
    for path in Path(folder).glob("render-*"):
        _, index, pid, _ = path.name.split("-")
        out.append((int(index), int(pid), float(path.read_text())))
    return sorted(out, key=lambda record: record[2])


class CountedPayload:
    """``nbytes`` of data that writes a file into ``folder`` each time it is unpickled."""

    def __init__(self, folder: str, nbytes: int = 1 << 20) -> None:
        self.folder = str(folder)
        self.data = np.zeros(nbytes, np.uint8)

    def __getstate__(self) -> dict[str, Any]:
        return {"folder": self.folder, "data": self.data}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        Path(self.folder, f"unpickled-{os.getpid()}-{uuid.uuid4().hex[:8]}").touch()

    @staticmethod
    def count(folder: str) -> int:
        """Unpicklings recorded in ``folder``."""
        return len(list(Path(folder).glob("unpickled-*")))
