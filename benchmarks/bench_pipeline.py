"""Lock-step loop versus the frame scheduler, with validation mode off and on.

    python benchmarks/bench_pipeline.py [--gpu-ms 2] [--host-ms 2] [--frames 300] [--out bench_out]

Every configuration renders the same frames: a calibrated busy raygen that
keeps the GPU busy for ``--gpu-ms`` and writes a 256-float readback, and
``--host-ms`` of simulated CPU work per frame (a busy loop standing for
camera, animation and scene updates).

* lock-step: host work, write parameters, copy them up, launch, synchronize,
  read back with a blocking copy - the loop most Python renderers run.
* scheduler N: ``FrameScheduler(frames_in_flight=N)``; host work for frame
  k+1 overlaps the GPU's frame k.

Prints a Markdown table; writes ``pipeline.json`` and ``timeline.png`` under ``--out``
(the plots need matplotlib: without it, one line and status 1 after the table).
Without a usable GPU it prints one line saying why and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import optixasync
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, BusyWorkload, expected_busy_output, require_gpu, run_main

N_OUT = 256


def host_work(ms: float) -> None:
    end = time.perf_counter() + ms * 1e-3
    while time.perf_counter() < end:
        pass


def run_lockstep(ctx, busy, frames: int, warmup: int, gpu_ms: float, host_ms: float) -> dict:
    import cupy

    stream = ctx.stream
    out = ctx.memory.empty((N_OUT,), np.float32, stream)
    staging, params = ctx.pinned.array((), BUSY_PARAMS)
    params_device = ctx.memory.alloc(BUSY_PARAMS.itemsize, stream)
    starts, ends = [], []
    ok = True
    for k in range(frames + warmup):
        t0 = time.perf_counter()
        host_work(host_ms)
        params["out"], params["spin_ns"], params["frame"], params["scale"] = out.data.ptr, int(gpu_ms * 1e6), k, 1.5
        staging.copy_to_device_async(params_device, stream)
        busy.pipeline.launch(busy.sbt, params_device, N_OUT, stream=stream, params_size=BUSY_PARAMS.itemsize)
        stream.synchronize()
        result = cupy.asnumpy(out, stream=stream, blocking=True)
        ok &= bool(np.array_equal(result, expected_busy_output(k, 1.5, N_OUT)))
        if k >= warmup:
            starts.append(t0)
            ends.append(time.perf_counter())
    wall = ends[-1] - starts[0]
    return {"config": "lock-step", "fps": frames / wall, "correct": ok, "waits_per_frame": 1.0}


def run_scheduler(ctx, busy, n: int, frames: int, warmup: int, gpu_ms: float, host_ms: float, label: str) -> dict:
    sched = FrameScheduler(ctx, n, params_dtype=BUSY_PARAMS)
    ok = True
    t_first = None
    for k in range(frames + warmup):
        if k == warmup:
            sched.drain()
            t_first = time.perf_counter()
        host_work(host_ms)
        with sched.frame() as f:
            busy.record(f, spin_ns=int(gpu_ms * 1e6), scale=1.5, n_out=N_OUT)
        for r in sched.poll():
            ok &= bool(np.array_equal(r["out"], expected_busy_output(r.index, 1.5, N_OUT)))
    for r in sched.drain():
        ok &= bool(np.array_equal(r["out"], expected_busy_output(r.index, 1.5, N_OUT)))
    wall = time.perf_counter() - t_first
    s = sched.stats.summary(skip=warmup)
    row = {
        "config": label,
        "fps": frames / wall,
        "correct": ok and len(sched.stats.frames) == frames + warmup,
        "in_flight": s["in_flight"]["median"],
        "ahead": s["ahead"]["median"],
        "waits_per_frame": s["waits_per_frame"],
        "fence_wait_ms": s["fence_wait_ms"]["median"],
        "submit_ms": s["submit_ms"]["median"],
        "submit_ms_p95": s["submit_ms"]["p95"],
        "launch_ms": s["launch_ms"]["median"],
        "gpu_ms": s["gpu_ms"]["median"],
        "gap_us": s["gap_us"]["median"],
        "gap_us_p95": s["gap_us"]["p95"],
        "gpu_busy": s.get("gpu_busy", float("nan")),
    }
    frames_detail = sched.stats.frames[warmup:]
    sched.close()
    return row, frames_detail


def timeline_png(path: str, detail, host_ms: float, title: str, count: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frames = detail[len(detail) // 2 : len(detail) // 2 + count]
    t0 = frames[0].host_begin - host_ms * 1e-3
    fig, ax = plt.subplots(figsize=(11, 2.6))
    colors = plt.cm.tab10.colors
    for f in frames:
        c = colors[f.index % 10]
        hatch = "//" if f.graph == "replay" else ("xx" if f.graph == "capture" else None)  # frame graphs
        host_start = (f.host_begin - host_ms * 1e-3 - t0) * 1e3
        ax.broken_barh([(host_start, (f.host_submit - f.host_begin) * 1e3 + host_ms)], (10, 8), color=c, alpha=0.8,
                       hatch=hatch)
        ax.text(host_start + 0.05, 14, str(f.index), fontsize=7, va="center")
        gpu_end = (f.host_done - t0) * 1e3
        ax.broken_barh([(gpu_end - f.gpu_ms, f.gpu_ms)], (0, 8), color=c, alpha=0.8, hatch=hatch)
    ax.set_yticks([4, 14], ["GPU", "host"])
    ax.set_xlabel("ms (GPU bars end when the completion thread saw the fence pass; hatched: a frame graph's "
                  "replay //, capture xx)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu-ms", type=float, default=2.0)
    parser.add_argument("--host-ms", type=float, default=2.0)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--out", default="bench_out")
    args = parser.parse_args()
    require_gpu()
    os.makedirs(args.out, exist_ok=True)

    rows, details = [], {}
    with optixasync.Context() as ctx:
        busy = BusyWorkload(ctx)
        rows.append(run_lockstep(ctx, busy, args.frames, args.warmup, args.gpu_ms, args.host_ms))
        for n in (1, 2, 3):
            row, details[n] = run_scheduler(ctx, busy, n, args.frames, args.warmup, args.gpu_ms, args.host_ms, f"scheduler N={n}")
            rows.append(row)
        # GPU-bound steady state: host work far below GPU time.
        row, _ = run_scheduler(ctx, busy, 2, args.frames, args.warmup, args.gpu_ms, 0.2, "scheduler N=2, GPU-bound (host 0.2 ms)")
        rows.append(row)
        # Empty frame: no GPU spin, no host work - the scheduler's own submit cost.
        row, _ = run_scheduler(ctx, busy, 3, args.frames * 3, args.warmup, 0.0, 0.0, "scheduler N=3, empty frame")
        rows.append(row)
    with optixasync.Context(validation=True) as vctx:
        vbusy = BusyWorkload(vctx)
        row, _ = run_scheduler(vctx, vbusy, 2, args.frames // 3, 10, args.gpu_ms, args.host_ms, "scheduler N=2, validation ON")
        rows.append(row)

    base = rows[0]["fps"]
    print(f"\nGPU work {args.gpu_ms} ms/frame, host work {args.host_ms} ms/frame, {args.frames} frames after {args.warmup} warm-up\n")
    print("| config | fps | vs lock-step | frames in flight | ahead | waits/frame | fence wait ms | submit ms (p50/p95) | optixLaunch ms | GPU ms | GPU gap us (p50/p95) | correct |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["config"] == "lock-step":
            print(f"| lock-step | {r['fps']:.0f} | 1.00x | - | 0 | 1 (sync) | - | - | - | - | - | {r['correct']} |")
            continue
        print(
            f"| {r['config']} | {r['fps']:.0f} | {r['fps'] / base:.2f}x | {r['in_flight']:.0f} | {r['ahead']:.0f} | "
            f"{r['waits_per_frame']:.2f} | {r['fence_wait_ms']:.3f} | {r['submit_ms']:.3f}/{r['submit_ms_p95']:.3f} | "
            f"{r['launch_ms']:.3f} | {r['gpu_ms']:.3f} | {r['gap_us']:.1f}/{r['gap_us_p95']:.1f} | {r['correct']} |"
        )
    with open(os.path.join(args.out, "pipeline.json"), "w") as f:
        json.dump({"args": vars(args), "rows": rows}, f, indent=1)
    timeline_png(os.path.join(args.out, "timeline.png"), details[2], args.host_ms,
                 f"scheduler N=2: {args.host_ms} ms host work overlaps {args.gpu_ms} ms GPU work")
    timeline_png(os.path.join(args.out, "timeline_n1.png"), details[1], args.host_ms, "scheduler N=1")
    print(f"\nwrote {args.out}/pipeline.json, {args.out}/timeline.png")


if __name__ == "__main__":
    run_main(main)
