"""Long-running render loops: host and device memory over many frames, and the cost of retiring a frame.

    python benchmarks/bench_longrun.py [--busy-frames 1000000] [--pt-frames 20000] [--size 1024] [--out F]

(a) Retire cost: the host time the completion thread spends on each frame once its fence has passed, for a
    frame reading back a 1920x1080 RGBA float32 image (33 MB): median and p95 over ``--retire-frames``.
(b) Busy soak: ``--busy-frames`` frames of the calibrated busy kernel with an 8-float readback, consumed
    through done-callbacks only: host RSS and device memory (the stream-ordered pool's used bytes) after a
    warm-up and at the end.
(c) Path-tracer soak: ``--pt-frames`` progressive frames at ``--size`` squared, 1 spp per frame, image read
    back every frame, in each consumption mode (poll, handles, callbacks, asyncio, mixed): the same two
    memory numbers, and that every consumed frame arrived once, in order, with the right content.

The script also runs against the code before zero-copy results (a source tree given by ``PYTHONPATH``), where
it times that code's retirement by wrapping it: ``--before`` selects that path. Prints a table per part.
Without a usable GPU it prints one line saying why and exits with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

import optixasync
from optixasync.scheduler import FrameScheduler

try:  # the public home of the shared fixtures
    from optixasync.testing import BUSY_PARAMS, BusyWorkload, expected_busy_output
except ImportError:  # the earlier tree kept them in a private module; --before runs against it
    from optixasync._busy import BUSY_PARAMS, BusyWorkload, expected_busy_output  # type: ignore[no-redef]

try:  # one line and the CLI's exit status when the machine cannot run this
    from optixasync.testing import require_gpu, run_main
except ImportError:  # the earlier tree (--before) has no entry helpers: plain exits there
    def require_gpu(prog: str | None = None) -> None:
        pass

    def run_main(main: Any, prog: str | None = None) -> Any:
        sys.exit(main())


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def device_used(ctx: Any) -> int:
    import cupy

    cupy.cuda.Device().synchronize()  # a measurement point: every stream-ordered free has run
    return ctx.memory.used_bytes()


def settle() -> None:
    gc.collect()


# -- (a) retire cost ---------------------------------------------------------------------------------------------

def retire_cost(ctx: Any, busy: Any, frames: int, before: bool) -> dict[str, Any]:
    """Completion-thread host time per frame with a 1920x1080 RGBA float32 readback."""
    timings: list[float] = []
    if before:  # time the earlier tree's retirement by wrapping it
        original = FrameScheduler._retire

        def timed(self: Any, entry: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(self, entry)
            finally:
                timings.append((time.perf_counter() - start) * 1e3)

        FrameScheduler._retire = timed  # type: ignore[method-assign]
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS, options={"keep_results": False})
    for _ in range(frames + 20):
        with sched.frame() as f:
            image = f.buffer("image", (1080, 1920, 4), np.float32)
            busy.record(f, spin_ns=2_000_000, scale=1.0, n_out=8, readback=False)
            f.readback(image, "image")
        f.handle.add_done_callback(lambda h: h.result()["image"].shape)
    sched.drain()
    if before:
        FrameScheduler._retire = original  # type: ignore[method-assign]
    else:
        timings = [s.retire_ms for s in sched.stats.frames]
    sched.close()
    timings = timings[20:]
    return {"part": "retire", "frames": len(timings), "retire_ms_median": statistics.median(timings),
            "retire_ms_p95": float(np.percentile(timings, 95)), "readback_mb": 1920 * 1080 * 16 / 1e6}


# -- (b) busy soak -----------------------------------------------------------------------------------------------

def busy_soak(ctx: Any, busy: Any, frames: int, warmup: int) -> dict[str, Any]:
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS)
    wrong = []
    count = [0]

    def check(handle: Any) -> None:
        result = handle.result()
        count[0] += 1
        if result.index % 997 == 0 and not np.array_equal(result["out"], expected_busy_output(result.index, 0.5, 8)):
            wrong.append(result.index)

    mark: dict[str, float] = {}
    start = time.perf_counter()
    for k in range(frames):
        if k == warmup:
            sched.drain()
            settle()
            mark = {"rss": rss_mib(), "device": device_used(ctx), "t": time.perf_counter()}
        with sched.frame() as f:
            busy.record(f, spin_ns=0, scale=0.5, n_out=8)
        f.handle.add_done_callback(check)
        if k > warmup and k % 100_000 == 0:  # progress, so that a run cut short still shows the trend
            print(f"busy soak: frame {k}: RSS {rss_mib():.3f} MiB (warm {mark['rss']:.3f}), device pool "
                  f"{ctx.memory.used_bytes()} B (warm {mark['device']}), delivered {count[0]}", flush=True)
    sched.drain()
    wall = time.perf_counter() - start
    settle()
    row = {"part": "busy soak", "mode": "callbacks", "frames": frames, "fps": (frames - warmup) /
           (time.perf_counter() - mark["t"]), "rss_warm_mib": mark["rss"], "rss_end_mib": rss_mib(),
           "device_warm": mark["device"], "device_end": device_used(ctx), "delivered": count[0],
           "wrong": len(wrong), "stats_kept": len(sched.stats.frames), "wall_s": wall}
    sched.close()
    return row


# -- (c) path-tracer soak ----------------------------------------------------------------------------------------

def pt_soak(ctx: Any, mode: str, frames: int, warmup: int, size: int) -> dict[str, Any]:
    from optixasync.render import RenderOptions
    from optixasync.scene import cornell_box

    try:  # the render pipeline
        from optixasync.render import RenderPipeline as Renderer
    except ImportError:  # the earlier trees (--before, and before the render pipeline) had the path tracer alone
        from optixasync.render import PathTracer as Renderer  # type: ignore[attr-defined,no-redef]

    stream = optixasync.cuda.create_stream()
    renderer = Renderer(ctx, cornell_box(), RenderOptions(width=size, height=size), stream=stream)
    sched = FrameScheduler(ctx, 2, params_dtype=renderer.params_dtype, stream=stream)
    seen: list[int] = []
    bad: list[int] = []
    pending: list[Any] = []

    def take(result: Any) -> None:
        seen.append(result.index)
        image = result["image"]
        if result.index % 101 == 0 and not (image.shape == (size, size, 4) and image[..., 3].min() == 255):
            bad.append(result.index)

    async def consume_async(handles: list[Any]) -> None:
        for handle in handles:
            take(await handle)

    mark: dict[str, float] = {}
    for k in range(frames):
        if k == warmup:
            flush(sched, mode, pending, take, consume_async)
            settle()
            mark = {"rss": rss_mib(), "device": device_used(ctx), "t": time.perf_counter()}
        with sched.frame() as f:
            renderer.record(f, 1)  # one spp, the image read back
        use = mode if mode != "mixed" else ("poll", "handles", "callbacks", "asyncio")[k % 4]
        if use == "callbacks":
            f.handle.add_done_callback(lambda h: take(h.result()))
        elif use in ("handles", "asyncio"):
            pending.append((use, f.handle))
        if use == "poll" or mode == "mixed":
            for result in sched.poll():
                if mode != "mixed" or result.index % 4 == 0:  # mixed: the other frames go to their handles
                    take(result)
        if len(pending) > 2:
            drain_pending(pending[:1], take, consume_async)
            del pending[:1]
    flush(sched, mode, pending, take, consume_async)
    elapsed = time.perf_counter() - mark["t"]
    settle()
    row = {"part": "path tracer soak", "mode": mode, "frames": frames, "size": size,
           "fps": (frames - warmup) / elapsed, "rss_warm_mib": mark["rss"], "rss_end_mib": rss_mib(),
           "device_warm": mark["device"], "device_end": device_used(ctx), "delivered": len(seen),
           "in_order": seen == sorted(seen) if mode != "mixed" else sorted(seen) == list(range(len(seen))),
           "exactly_once": len(seen) == len(set(seen)), "bad": len(bad),
           "dropped": getattr(sched.stats, "dropped_results", 0)}
    sched.close()
    renderer.close()
    return row


def drain_pending(pending: list[Any], take: Any, consume_async: Any) -> None:
    for use, handle in pending:
        if use == "asyncio":
            asyncio.run(consume_async([handle]))
        else:
            take(handle.result())


def flush(sched: Any, mode: str, pending: list[Any], take: Any, consume_async: Any) -> None:
    results = sched.drain()
    if mode in ("poll", "mixed"):
        for result in results:
            if mode != "mixed" or result.index % 4 == 0:
                take(result)
    drain_pending(pending, take, consume_async)
    pending.clear()


def table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        cells = []
        for key in keys:
            value = row.get(key, "-")
            cells.append(f"{value:.3f}" if isinstance(value, float) else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", action="store_true", help="time the retirement of the earlier tree (see above)")
    parser.add_argument("--retire-frames", type=int, default=200)
    parser.add_argument("--busy-frames", type=int, default=1_000_000)
    parser.add_argument("--pt-frames", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--modes", default="poll,handles,callbacks,asyncio,mixed")
    parser.add_argument("--parts", default="retire,busy,pt")
    parser.add_argument("--out", default=None, help="JSON of every number")
    args = parser.parse_args(argv)
    require_gpu()
    parts = set(args.parts.split(","))
    rows: list[dict[str, Any]] = []
    with optixasync.Context() as ctx:
        busy = BusyWorkload(ctx)
        if "retire" in parts:
            rows.append(retire_cost(ctx, busy, args.retire_frames, args.before))
            print(table(rows[-1:], ["part", "frames", "readback_mb", "retire_ms_median", "retire_ms_p95"]), flush=True)
        if "busy" in parts:
            rows.append(busy_soak(ctx, busy, args.busy_frames, min(20_000, args.busy_frames // 10)))
            print(table(rows[-1:], ["part", "mode", "frames", "fps", "rss_warm_mib", "rss_end_mib", "device_warm",
                                    "device_end", "delivered", "wrong", "stats_kept"]), flush=True)
        if "pt" in parts:
            for mode in args.modes.split(","):
                rows.append(pt_soak(ctx, mode, args.pt_frames, min(1000, args.pt_frames // 10), args.size))
                print(table(rows[-1:], ["part", "mode", "frames", "size", "fps", "rss_warm_mib", "rss_end_mib",
                                        "device_warm", "device_end", "delivered", "in_order", "exactly_once", "bad",
                                        "dropped"]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    run_main(main)
