"""Acceleration structures without host stalls: build, compaction and refit of a 1M-triangle mesh.

    python benchmarks/bench_accel.py [--cells 708] [--busy-ms 50] [--frames 200]

Part 1 - host time inside the build submission while the GPU is busy with
``--busy-ms`` of earlier work on the same stream:

* baseline: inputs uploaded from pageable numpy memory (``cupy.asarray``),
  compaction size read back with a blocking copy, then ``optixAccelCompact``;
* optixasync from host arrays (pinned staging, deferred compaction);
* optixasync from device arrays (inputs already on the GPU);
* refit from device vertices, and from host vertices through pinned staging.

Part 2 - an animated mesh refitted every frame inside the frame scheduler
(vertices computed by a GPU kernel, a 256x256 trace per frame).

Part 3 - the first operations of a fresh process behind a busy GPU, with and
without the context's warm-up (each in its own process, since OptiX loads
the code of an operation once per process).

Without a usable GPU it prints one line saying why and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import optixasync
from optixasync.accel import AccelOptions, GeometryAccel, TriangleInput
from optixasync.cuda import spin_gpu
from optixasync.scheduler import FrameScheduler
from optixasync.testing import (
    HELLO_PARAMS,
    HelloRenderer,
    RippleAnimator,
    child_output,
    grid_mesh,
    require_gpu,
    run_main,
)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - start) * 1e3


def baseline_build(ctx, stream, vertices, indices):
    """The common pattern: pageable uploads and a blocking compacted-size readback."""
    import cupy

    from optixasync.accel._base import aligned

    with stream:
        v = cupy.asarray(vertices)  # pageable host memory: the copy waits behind the busy stream
        i = cupy.asarray(indices)
    gas = GeometryAccel(ctx, TriangleInput(v, i), AccelOptions(allow_compaction=True), stream=stream)
    size = int(cupy.asnumpy(gas._size_device, stream=stream)[0])  # blocks
    assert size == gas.compacted_size or gas.compacted_size is None
    gas.compact(wait=True, stream=stream)
    return gas, aligned(size)


def part1(ctx, args, vertices, indices, rows):
    import cupy

    stream = optixasync.cuda.create_stream()
    busy_ns = int(args.busy_ms * 1e6)
    dv, di = ctx.upload(vertices, stream), ctx.upload(indices, stream)
    moved = vertices + np.float32(0.01)
    dmoved = ctx.upload(moved, stream)
    stream.synchronize()

    def measure(label, fn, repeats=args.repeats):
        host = []
        for _ in range(repeats):
            spin_gpu(busy_ns, stream)
            out, ms = timed(fn)
            host.append(ms)
            stream.synchronize()
        rows.append({"operation": label, "host_ms": statistics.median(host), "host_ms_max": max(host)})
        return out

    measure("baseline: pageable upload + build + blocking compaction", lambda: baseline_build(ctx, stream, vertices, indices))
    opts = AccelOptions(allow_compaction=True, allow_update=True)
    measure("optixasync build from host arrays (pinned staging)", lambda: GeometryAccel(ctx, TriangleInput(vertices, indices), opts, stream=stream))
    gas = measure("optixasync build from device arrays", lambda: GeometryAccel(ctx, TriangleInput(dv, di), opts, stream=stream))
    stream.synchronize()
    build_ms, size = gas.build_ms, gas.compacted_size
    compacted, compact_ms = timed(lambda: gas.compact(stream=stream))
    stream.synchronize()
    measure("optixasync refit from device vertices", lambda: gas.refit(dmoved, stream=stream))
    measure("optixasync refit from host vertices (pinned staging)", lambda: gas.refit(moved, stream=stream))
    stream.synchronize()
    # GPU times without a busy stream in front
    gpu_build = []
    for _ in range(args.repeats):
        g = GeometryAccel(ctx, TriangleInput(dv, di), opts, stream=stream)
        stream.synchronize()
        gpu_build.append(g.build_ms)
    gpu_refit = []
    for _ in range(args.repeats):
        g.refit(dmoved, stream=stream)
        stream.synchronize()
        gpu_refit.append(g.refit_ms)
    report = {
        "triangles": int(len(indices)),
        "build_gpu_ms": statistics.median(gpu_build),
        "refit_gpu_ms": statistics.median(gpu_refit),
        "uncompacted_bytes": gas.uncompacted_nbytes,
        "compacted_bytes": size,
        "compaction_ratio": size / gas.uncompacted_nbytes,
        "compact_submit_ms": compact_ms,
        "compacted_now": compacted,
        "first_build_gpu_ms": build_ms,
    }
    del cupy
    return report


def part2(ctx, args, vertices, indices):
    sched = FrameScheduler(ctx, args.frames_in_flight, params_dtype=HELLO_PARAMS)
    stream = sched.stream
    renderer = HelloRenderer(ctx)
    animator = RippleAnimator(ctx, vertices)
    animated = ctx.memory.empty(vertices.shape, np.float32, stream)
    animator(animated, 0.0, stream)
    gas = GeometryAccel(ctx, TriangleInput(animated, ctx.upload(indices, stream)), AccelOptions(allow_update=True), stream=stream)
    refit_host = []
    for k in range(args.frames):
        with sched.frame() as f:
            animator(animated, k / 60.0, f)  # the frame as the stream: its GPU time starts here
            _, ms = timed(lambda: gas.refit(animated, stream=f))
            refit_host.append(ms)
            renderer.record(f, gas.handle, 256, 256, view=(-0.9, -0.9, 0.9, 0.9), eye_z=-1.0)
        sched.poll()
    results = sched.drain()
    s = sched.stats.summary(skip=20)
    hits = float((results[-1]["image"][..., 3] > 0).mean()) if results else float("nan")
    sched.close()
    return {
        "frames": args.frames,
        "frames_in_flight": args.frames_in_flight,
        "fps": s["fps"],
        "in_flight_median": s["in_flight"]["median"],
        "waits_per_frame": s["waits_per_frame"],
        "fence_wait_ms": s["fence_wait_ms"]["median"],
        "submit_ms": s["submit_ms"]["median"],
        "refit_submit_ms": statistics.median(refit_host[20:]),
        "gpu_ms": s["gpu_ms"]["median"],
        "gap_us": s["gap_us"]["median"],
        "last_frame_hit_fraction": hits,
    }


FIRST_USE_OPERATIONS = ("GAS build", "GAS compact", "GAS refit", "second GAS refit", "IAS build", "IAS refit")


def first_use_child(warm_up: bool, cells: int, busy_ms: float) -> None:
    """In a fresh process: host ms of each first operation behind ``busy_ms`` of GPU work, as JSON."""
    from optixasync.accel import Instance, InstanceAccel

    vertices, indices = grid_mesh(cells)
    start = time.perf_counter()
    ctx = optixasync.Context(warm_up=warm_up)
    context_ms = (time.perf_counter() - start) * 1e3
    stream = optixasync.cuda.create_stream()
    dv, di = ctx.upload(vertices, stream), ctx.upload(indices, stream)
    stream.synchronize()
    out = {"context_ms": context_ms}
    objects = {}
    opts = AccelOptions(allow_update=True, allow_compaction=True)
    steps = {
        "GAS build": lambda: objects.setdefault("gas", GeometryAccel(ctx, TriangleInput(dv, di), opts, stream=stream)),
        "GAS compact": lambda: objects["gas"].compact(stream=stream),
        "GAS refit": lambda: objects["gas"].refit(dv, stream=stream),
        "second GAS refit": lambda: objects["gas"].refit(dv, stream=stream),
        "IAS build": lambda: objects.setdefault("ias", InstanceAccel(ctx, [Instance(objects["gas"])], opts, stream=stream)),
        "IAS refit": lambda: objects["ias"].refit(stream=stream),
    }
    for name in FIRST_USE_OPERATIONS:
        spin_gpu(int(busy_ms * 1e6), stream)
        _, out[name] = timed(steps[name])
        stream.synchronize()
    print(json.dumps(out))


def part3(args) -> dict[str, dict[str, float]]:
    result = {}
    for warm_up in (False, True):
        out = child_output(  # a failed child: its one line, and its exit status
            [sys.executable, __file__, "--first-use-child", str(int(warm_up)), "--cells", str(args.cells),
             "--busy-ms", str(args.busy_ms)],
        )
        result["with warm-up" if warm_up else "without warm-up"] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=708, help="grid cells per side (2*cells^2 triangles)")
    parser.add_argument("--busy-ms", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--frames-in-flight", type=int, default=2)
    parser.add_argument("--out", default="bench_out")
    parser.add_argument("--first-use-child", type=int, choices=(0, 1), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_use_child is not None:
        # No driver probe here: the parent made it, and the child's context time includes the driver's start.
        first_use_child(bool(args.first_use_child), args.cells, args.busy_ms)
        return
    require_gpu()
    os.makedirs(args.out, exist_ok=True)
    vertices, indices = grid_mesh(args.cells)
    rows: list[dict] = []
    with optixasync.Context() as ctx:
        report = part1(ctx, args, vertices, indices, rows)
        animated = part2(ctx, args, vertices, indices)
    first_use = part3(args)
    print(f"\n{report['triangles']:,} triangles; GPU busy with {args.busy_ms} ms of earlier work on the build stream\n")
    print("| operation | host ms in the call (median) | max |")
    print("|---|---|---|")
    for r in rows:
        print(f"| {r['operation']} | {r['host_ms']:.3f} | {r['host_ms_max']:.3f} |")
    print(f"\nGPU build {report['build_gpu_ms']:.2f} ms, GPU refit {report['refit_gpu_ms']:.2f} ms, "
          f"size {report['uncompacted_bytes'] / 2**20:.1f} MiB -> {report['compacted_bytes'] / 2**20:.1f} MiB compacted "
          f"(ratio {report['compaction_ratio']:.3f}); deferred compact() call {report['compact_submit_ms']:.3f} ms")
    a = animated
    print(f"\nanimated mesh, refit every frame, N={a['frames_in_flight']}: {a['fps']:.0f} fps, frames in flight "
          f"{a['in_flight_median']:.0f}, waits/frame {a['waits_per_frame']:.2f} (slot fences only), "
          f"refit submit {a['refit_submit_ms']:.3f} ms, frame submit {a['submit_ms']:.3f} ms, GPU {a['gpu_ms']:.2f} ms/frame, "
          f"gap {a['gap_us']:.1f} us, hit fraction {a['last_frame_hit_fraction']:.2f}")
    print(f"\nfirst operations of a fresh process, each behind {args.busy_ms} ms of GPU work: host ms in the call\n")
    print("| context | create ms | " + " | ".join(FIRST_USE_OPERATIONS) + " |")
    print("|---" * (len(FIRST_USE_OPERATIONS) + 2) + "|")
    for label, r in first_use.items():
        print(f"| {label} | {r['context_ms']:.1f} | " + " | ".join(f"{r[name]:.3f}" for name in FIRST_USE_OPERATIONS) + " |")
    with open(os.path.join(args.out, "accel.json"), "w") as f:
        json.dump({"args": vars(args), "submission": rows, "report": report, "animated": animated,
                   "first_use": first_use}, f, indent=1)


if __name__ == "__main__":
    run_main(main)
