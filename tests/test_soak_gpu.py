"""A soak of the progressive path tracer in the frame scheduler: random host delays, aborted frames, camera changes.

Every frame records 1 or 2 samples per pixel of the Cornell box at 128x128
through :class:`~optixasync.render.RenderPipeline` in a
:class:`~optixasync.FrameScheduler` with three frames in flight. A seeded
``random.Random`` decides, per frame: a host delay (before the frame, inside
it before or after the launch), a camera change (one of four cameras), an
exception raised inside the frame (after its launch: the frame is aborted and
its handle raises ``FrameAbortedError``; or before any GPU work), and how the
result is consumed (``poll()``, ``handle.result()`` a few frames later, or a
done-callback). The test keeps its own model of the camera and the sample
count of every frame, and checks:

* every delivered frame: an sRGB ``uint8`` image of the right shape, alpha 255,
  consumed exactly once, through the channel chosen for it, ``poll()`` in
  order and retirement in frame order;
* ``pipeline.samples_done`` after every launch equals the model's count: a
  camera change restarts the accumulation;
* a frame with at most ``REFERENCE_SAMPLES`` samples (every frame right
  after a camera change among them) equals, within one 8-bit code (the
  kernel's fast power), an offline render of the same camera with as many
  samples: it shows nothing of the previous camera's accumulation; frames
  with at most ``HASHED_SAMPLES`` samples are bitwise equal to the first
  frame of the same camera and count (the sums do not depend on how the
  samples were split into frames);
* every aborted frame's handle raises ``FrameAbortedError`` and delivers nothing;
* host RSS and the device pool's used bytes after the warm-up and at the
  end differ by less than ``RSS_SLACK`` and ``DEVICE_SLACK``; no result was
  dropped and no thread is left running.

``OPTIXASYNC_SOAK_FRAMES`` sets the frame count (default 4000, a few seconds
on an H200; 100000 is the long form) and ``OPTIXASYNC_SOAK_SEED`` the seed.
Run with ``-s`` to see the memory numbers.
"""

from __future__ import annotations

import collections
import gc
import hashlib
import os
import random
import threading
import time
from typing import Any

import numpy as np
import pytest

from optixasync import FrameAbortedError
from optixasync.io import tonemap_srgb
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import Camera, cornell_box
from optixasync.scheduler import FrameScheduler, SchedulerOptions

pytestmark = pytest.mark.gpu

#: Frames of the soak (``OPTIXASYNC_SOAK_FRAMES=100000`` for the long form).
FRAMES = int(os.environ.get("OPTIXASYNC_SOAK_FRAMES", "4000"))
SEED = int(os.environ.get("OPTIXASYNC_SOAK_SEED", "20250611"))
WARMUP = min(500, max(50, FRAMES // 10), FRAMES // 2)  # memory is measured from here on
SIZE = 128
FRAMES_IN_FLIGHT = 3
SPP_CHOICES = (1, 1, 2)
MODES = ("poll", "handle", "callback")
P_CAMERA_CHANGE = 0.03
P_ABORT_AFTER_LAUNCH = 0.02
P_ABORT_BEFORE_GPU_WORK = 0.01
P_DELAY = 0.08  # at each of three points of a frame
MAX_DELAY_S = 0.002
BACKLOG = 4  # handles of "handle" frames (and of aborted frames) kept before they are asked
REFERENCE_SAMPLES = 4  # frames with at most this many samples are compared with an offline render
HASHED_SAMPLES = 8  # frames with at most this many samples are compared bit for bit with the first like them
RSS_SLACK = 8 * 2**20
DEVICE_SLACK = 1 * 2**20
SETTLE_TIMEOUT_S = 60.0

BASE_CAMERA = cornell_box().camera
CAMERAS = [
    BASE_CAMERA,
    Camera((0.6, 0.3, 3.9), (0.0, 0.0, 0.0), fov=BASE_CAMERA.fov),
    Camera((-0.7, -0.2, 3.6), (0.1, 0.1, 0.0), fov=BASE_CAMERA.fov),
    Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=50.0),
]


class Injected(Exception):
    """Raised by the soak inside a frame."""


def _claim(_handle: Any) -> None:
    """A done-callback that does nothing: registering it claims the frame's result for its handle."""


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def device_bytes(ctx: Any) -> int:
    import cupy

    gc.collect()
    cupy.cuda.Device().synchronize()  # a measurement point: every stream-ordered free has run
    ctx.deferred.collect()
    return ctx.memory.used_bytes()


class Soak:
    """The frame loop and the test's model of it: which camera and how many samples each frame shows."""

    def __init__(self, pipeline: RenderPipeline, sched: FrameScheduler, references: dict[tuple[int, int], np.ndarray]):
        self.pipeline, self.sched, self.references = pipeline, sched, references
        self.camera, self.samples = 0, 0  # what the pipeline accumulates now, by the model
        self.pending: dict[int, tuple[int, int, str]] = {}  # index -> (camera, samples, channel): submitted, unconsumed
        self.handles: collections.deque[Any] = collections.deque()  # "handle" frames, asked a few frames later
        self.called: collections.deque[Any] = collections.deque()  # handles whose done-callback ran
        self.aborted: collections.deque[Any] = collections.deque()  # handles of frames aborted after their launch
        self.aborted_callbacks: set[int] = set()  # of those, the "callback" ones: their callback reports the abort
        self.first_seen: dict[tuple[int, int], bytes] = {}  # (camera, samples) -> digest of the first such image
        self.retired_at: dict[int, float] = {}  # index -> when it retired (recent frames only)
        self.last_polled = -1
        self.counts = collections.Counter()

    # -- recording ---------------------------------------------------------------------------------------------------
    def delay(self, rng: random.Random) -> None:
        if rng.random() < P_DELAY:
            time.sleep(rng.uniform(0.0, MAX_DELAY_S))

    def frame(self, rng: random.Random) -> None:
        spp = rng.choice(SPP_CHOICES)
        camera = self.camera
        if rng.random() < P_CAMERA_CHANGE:
            camera = rng.choice([c for c in range(len(CAMERAS)) if c != self.camera])
        channel = rng.choice(MODES)
        roll = rng.random()
        abort = "after" if roll < P_ABORT_AFTER_LAUNCH else (
            "before" if roll < P_ABORT_AFTER_LAUNCH + P_ABORT_BEFORE_GPU_WORK else None)
        self.delay(rng)
        try:
            with self.sched.frame() as f:
                self.delay(rng)
                if abort == "before":
                    raise Injected("before any GPU work")
                if channel == "callback":
                    f.handle.add_done_callback(self.called.append)
                elif channel == "handle":
                    f.handle.add_done_callback(_claim)  # claimed now, so poll() never sees it
                self.pipeline.record(f, spp, camera=CAMERAS[camera] if camera != self.camera else None)
                self.samples = spp if camera != self.camera else self.samples + spp
                self.counts["camera changes"] += camera != self.camera
                self.camera = camera
                assert self.pipeline.samples_done == self.samples, (f.index, self.pipeline.samples_done, self.samples)
                self.delay(rng)
                if abort == "after":
                    raise Injected("after the launch")
        except Injected:
            self.counts[f"aborted {abort}"] += 1
            if abort == "after":  # fenced and discarded; its samples stay in the accumulation, as the model says
                self.aborted.append(f.handle)
                if channel == "callback":
                    self.aborted_callbacks.add(f.index)
            return
        self.pending[f.index] = (self.camera, self.samples, channel)
        if channel == "handle":
            self.handles.append(f.handle)

    # -- consuming ---------------------------------------------------------------------------------------------------
    def consume(self, backlog: int = BACKLOG) -> None:
        for result in self.sched.poll():
            self.take(result, "poll")
        while self.called:
            handle = self.called.popleft()
            try:
                result = handle.result(timeout=SETTLE_TIMEOUT_S)  # done: its callback ran
            except FrameAbortedError:
                self.aborted_callbacks.remove(handle.index)  # KeyError: an abort nobody raised
                continue
            self.take(result, "callback")
        while len(self.handles) > backlog:
            self.take(self.handles.popleft().result(timeout=SETTLE_TIMEOUT_S), "handle")
        while len(self.aborted) > backlog:
            self.check_aborted(self.aborted.popleft())

    def take(self, result: Any, channel: str) -> None:
        with result:  # the pinned readback goes back to the pool after the checks
            index = result.index
            assert index in self.pending, f"frame {index} delivered twice, or never submitted ({channel})"
            camera, samples, expected = self.pending.pop(index)
            assert channel == expected, f"frame {index} came through {channel}, claimed for {expected}"
            if channel == "poll":
                assert index > self.last_polled, f"poll() gave frame {index} after frame {self.last_polled}"
                self.last_polled = index
            self.check_retirement_order(index, result.stats.host_done)
            image = result["image"]
            assert image.shape == (SIZE, SIZE, 4) and image.dtype == np.uint8, (index, image.shape, image.dtype)
            assert (image[..., 3] == 255).all(), f"frame {index}: alpha is not 255 everywhere"
            if samples <= REFERENCE_SAMPLES:
                error = np.abs(image[..., :3].astype(np.int16) - self.references[camera, samples]).max()
                assert error <= 1, (f"frame {index} (camera {camera}, {samples} spp) differs by {error} codes from "
                                    "an offline render of that camera: it carries another accumulation")
                self.counts["compared with an offline render"] += 1
            if samples <= HASHED_SAMPLES:
                digest = hashlib.blake2b(image.tobytes(), digest_size=16).digest()
                first = self.first_seen.setdefault((camera, samples), digest)
                assert digest == first, f"frame {index} (camera {camera}, {samples} spp) differs from the first such frame"
            self.counts["delivered"] += 1

    def check_retirement_order(self, index: int, done_at: float) -> None:
        """Frames retire in frame order: a neighbour's retirement time is on the right side of this one's."""
        self.retired_at[index] = done_at
        before, after = self.retired_at.get(index - 1), self.retired_at.get(index + 1)
        assert before is None or before <= done_at, f"frame {index} retired before frame {index - 1}"
        assert after is None or done_at <= after, f"frame {index} retired after frame {index + 1}"
        if len(self.retired_at) > 4096:
            self.retired_at = {k: v for k, v in self.retired_at.items() if k > index - 1024}

    def check_aborted(self, handle: Any) -> None:
        with pytest.raises(FrameAbortedError, match="aborted"):
            handle.result(timeout=SETTLE_TIMEOUT_S)
        assert handle.index not in self.pending

    def settle(self) -> None:
        """Wait for every submitted frame and consume it (callbacks may run just after ``drain`` returns)."""
        for result in self.sched.drain():
            self.take(result, "poll")
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            self.consume(backlog=0)
            waiting = [i for i, (_c, _s, channel) in self.pending.items() if channel == "callback"]
            if not waiting and not self.aborted_callbacks:
                break
            assert time.monotonic() < deadline, f"callbacks never ran for frames {waiting[:8]} {sorted(self.aborted_callbacks)[:8]}"
            time.sleep(0.001)
        assert self.pending == {}, f"frames never delivered: {sorted(self.pending)[:16]}"


def offline_references(pipeline: RenderPipeline) -> dict[tuple[int, int], np.ndarray]:
    """The tonemapped offline render of every camera at 1 .. REFERENCE_SAMPLES spp (int16, to subtract)."""
    references = {}
    for k, camera in enumerate(CAMERAS):
        pipeline.camera = camera
        for spp in range(1, REFERENCE_SAMPLES + 1):
            references[k, spp] = tonemap_srgb(pipeline.render(spp)).astype(np.int16)
    pipeline.camera = CAMERAS[0]
    pipeline.reset()
    return references


def test_soak_progressive_frames_with_delays_aborts_and_camera_changes(ctx):
    rng = random.Random(SEED)
    threads_before = set(threading.enumerate())
    options = RenderOptions(width=SIZE, height=SIZE, spp=1, seed=7)
    with RenderPipeline(ctx, cornell_box(), options) as pipeline:
        # also compacts the structure and fills the still's slot buffers, before any memory is measured
        references = offline_references(pipeline)
        sched = FrameScheduler(ctx, FRAMES_IN_FLIGHT, params_dtype=pipeline.params_dtype,
                               options=SchedulerOptions(stats_window=256))
        try:
            soak = Soak(pipeline, sched, references)
            start = time.perf_counter()
            for k in range(FRAMES):
                if k == WARMUP:
                    soak.settle()
                    warm_device = device_bytes(ctx)  # collects garbage first: both numbers after it
                    warm = rss_bytes(), warm_device, time.perf_counter()
                soak.frame(rng)
                soak.consume()
            soak.settle()
            while soak.aborted:
                soak.check_aborted(soak.aborted.popleft())
            elapsed = time.perf_counter() - start
            end_device = device_bytes(ctx)
            end = rss_bytes(), end_device
            dropped = sched.stats.dropped_results
        finally:
            sched.close()
    rate = (FRAMES - WARMUP) / (time.perf_counter() - warm[2])
    print(f"\nsoak: {FRAMES} frames in {elapsed:.1f} s ({rate:.0f} fps after the warm-up of {WARMUP}), seed {SEED}, "
          f"{dict(soak.counts)}")
    print(f"soak: host RSS {warm[0] / 2**20:.1f} MiB after the warm-up, {end[0] / 2**20:.1f} MiB at the end "
          f"({(end[0] - warm[0]) / 2**20:+.2f} MiB); device pool {warm[1] / 2**20:.2f} MiB -> {end[1] / 2**20:.2f} MiB "
          f"({end[1] - warm[1]:+d} bytes)")
    assert dropped == 0
    assert soak.counts["delivered"] > FRAMES // 2
    if FRAMES >= 1000:  # the random events did happen (a shorter run may miss some)
        assert soak.counts["camera changes"] > 0 and soak.counts["aborted after"] > 0
        assert soak.counts["aborted before"] > 0 and soak.counts["compared with an offline render"] > 0
    assert end[0] - warm[0] < RSS_SLACK, f"host RSS grew by {(end[0] - warm[0]) / 2**20:.1f} MiB after the warm-up"
    assert abs(end[1] - warm[1]) < DEVICE_SLACK, f"device pool changed by {end[1] - warm[1]:+d} bytes after the warm-up"
    leftover = [t.name for t in set(threading.enumerate()) - threads_before if t.is_alive()]
    assert leftover == [], f"threads left running: {leftover}"
