"""Denoising on the frame stream: OIDN's cost at 1920x1080, and progressive path tracing with and without it.

    python benchmarks/bench_denoise.py [--width 1920 --height 1080] [--frames 300] [--out F]

(a) One 1920x1080 HDR denoise with albedo and normal guides (inputs from a path-traced Cornell box frame),
    per quality mode: GPU ms (CUDA events around the execution on the denoiser's stream) and host ms of the
    ``denoise()`` call, median of ``--repeats`` after warm-up.
(b) Progressive 1 spp per frame at the same size through the scheduler (N = 2), the image tonemapped and
    read back every frame: without denoising, and denoised (a render pipeline with the ``Denoise`` and
    ``Tonemap`` stages: OIDN between the launch and the readback, all on the frame's stream): fps, GPU ms
    per frame, frames in flight, GPU busy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

import optixasync
from optixasync.cuda import GpuSpan, synchronize
from optixasync.denoise import GUIDED, Denoise, Denoiser
from optixasync.render import RenderOptions, RenderPipeline, Tonemap
from optixasync.scene import cornell_box
from optixasync.scheduler import FrameScheduler
from optixasync.testing import require_gpu


def denoise_cost(ctx: Any, scene: Any, options: RenderOptions, repeats: int) -> list[dict[str, Any]]:
    rows = []
    stream = optixasync.cuda.create_stream()
    with RenderPipeline(ctx, scene, options, outputs=("radiance", "albedo", "normal"), readback=None,
                        stream=stream) as inputs_of, \
            FrameScheduler(ctx, 1, params_dtype=inputs_of.params_dtype, stream=stream) as sched:
        with sched.frame() as f:
            inputs = inputs_of.record(f, 1)  # the frame slot's radiance, albedo and normal
        sched.drain()
        output = ctx.memory.empty((options.height, options.width, 4), np.float32, stream)
        for quality in ("high", "balanced", "fast"):
            denoise = dataclasses.replace(GUIDED, quality=quality)
            with Denoiser(options.width, options.height, denoise, device_id=ctx.device_id, stream=stream) as den:
                gpu, host = [], []
                for k in range(repeats + 3):
                    span = GpuSpan.begin(stream)
                    start = time.perf_counter()
                    den.denoise(inputs["radiance"], output, inputs["albedo"], inputs["normal"])
                    host_ms = (time.perf_counter() - start) * 1e3
                    synchronize(span.stop(stream))
                    if k >= 3:  # the first executions commit and warm up the filter
                        gpu.append(span.ms)
                        host.append(host_ms)
            rows.append({"quality": quality, "gpu_ms": statistics.median(gpu), "gpu_ms_min": min(gpu),
                         "host_ms": statistics.median(host)})
    return rows


def progressive(ctx: Any, scene: Any, options: RenderOptions, frames: int, warmup: int,
                denoise: bool) -> dict[str, Any]:
    stages = [Denoise(), Tonemap("denoised")] if denoise else []
    with RenderPipeline(ctx, scene, options, stages=stages, stream=optixasync.cuda.create_stream()) as pipeline, \
            FrameScheduler(ctx, 2, params_dtype=pipeline.params_dtype, stream=pipeline.stream) as sched:
        for _ in range(frames + warmup):
            with sched.frame() as f:
                pipeline.record(f, 1)  # the image read back: denoised and tonemapped by the stages, or the launch's
            for result in sched.poll():
                result.release()
        sched.drain()
        summary = sched.stats.summary(skip=warmup)
    return {"config": "denoised" if denoise else "noisy", "fps": summary["fps"],
            "gpu_ms": summary["gpu_ms"]["median"], "submit_ms": summary["submit_ms"]["median"],
            "in_flight": summary["in_flight"]["mean"], "gpu_busy": summary["gpu_busy"],
            "gap_us": summary["gap_us"]["median"]}


def table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(f"{row[k]:.3f}" if isinstance(row[k], float) else str(row[k])
                                       for k in keys) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", default=None, help="JSON of every number")
    args = parser.parse_args(argv)
    require_gpu("bench_denoise.py")
    with optixasync.Context() as ctx:
        scene, options = cornell_box(), RenderOptions(width=args.width, height=args.height)
        cost = denoise_cost(ctx, scene, options, args.repeats)
        print(f"\n(a) one {args.width}x{args.height} HDR denoise, albedo + normal guides (median of {args.repeats})\n")
        print(table(cost, ["quality", "gpu_ms", "gpu_ms_min", "host_ms"]))
        loops = [progressive(ctx, scene, options, args.frames, args.warmup, denoise) for denoise in (False, True)]
        print(f"\n(b) progressive 1 spp/frame, {args.width}x{args.height}, N=2, image read back every frame\n")
        print(table(loops, ["config", "fps", "gpu_ms", "submit_ms", "in_flight", "gpu_busy", "gap_us"]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"denoise": cost, "progressive": loops}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
