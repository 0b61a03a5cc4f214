"""Where the host stops running ahead, and which line of Python made it stop.

    python examples/validation_demo.py [--frames 60] [--watch-frames 20] [--gpu-ms 2] [--host-ms 0.5] [--busy-ms 50]
                                       [--cells 200] [--upload-cells 708] [--trace DIR] [--nvtx]

Part 1 renders the same loop twice, with OptiX validation mode off and on.
Each frame animates a grid on the GPU, refits its GAS (``optixAccelBuild``,
update), queues ``--gpu-ms`` of other GPU work, traces it (``optixLaunch``)
and reads the image back, inside a ``FrameScheduler`` with two frames in
flight. It prints how far the host ran ahead, the host time inside each
``optixLaunch`` and ``optixAccelBuild`` call, and the syncwatch report, which
names the synchronization validation mode adds and the line of this file
that triggered it.

Part 2 builds a 1M-triangle GAS behind ``--busy-ms`` of queued GPU work:
once from inputs copied from pageable numpy memory with ``cudaMemcpyAsync``
(the copy waits for the busy stream), once through optixasync's pinned
staging (it does not). It prints the host time, the syncwatch report and the
CUPTI-free ``blocks()`` verdict of each.

syncwatch needs ``pip install 'optixasync[diagnostics]'``; without it the
demo still measures, and says what to install for the reports.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import numpy as np

import optixasync
from optixasync.accel import AccelOptions, GeometryAccel, TriangleInput
from optixasync.cuda import create_stream, spin_gpu
from optixasync.diagnostics import MissingExtraError, blocks, enable_nvtx, export_chrome_trace, syncwatch
from optixasync.scheduler import FrameScheduler
from optixasync.testing import HELLO_PARAMS, HelloRenderer, RippleAnimator, grid_mesh, require_gpu, run_main

SIZE = 256


def host_work(ms: float) -> None:
    """Stands for the application's CPU work per frame (camera, animation, UI)."""
    end = time.perf_counter() + ms * 1e-3
    while time.perf_counter() < end:
        pass


def watching(enabled: bool) -> contextlib.AbstractContextManager:
    """A syncwatch (its ``.report`` filled when the body ends), or nothing."""
    return syncwatch() if enabled else contextlib.nullcontext()


def syncwatch_available() -> bool:
    try:
        with syncwatch():
            pass
    except (MissingExtraError, RuntimeError) as exc:
        print(f"note: {exc}\n      the demo measures without the syncwatch reports.\n")
        return False
    return True


def fmt_ms(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} / {max(values):.3f}" if values else "-"


def render_loop(validation: bool, args: argparse.Namespace, watch_enabled: bool) -> dict:
    """The render loop of part 1; returns its measurements (and the syncwatch report)."""
    warmup = 10
    with optixasync.Context(validation=validation) as ctx:
        sched = FrameScheduler(ctx, 2, params_dtype=HELLO_PARAMS)
        renderer = HelloRenderer(ctx)
        vertices, indices = grid_mesh(args.cells)
        animator = RippleAnimator(ctx, vertices)
        animated = ctx.memory.empty(vertices.shape, np.float32, sched.stream)
        animator(animated, 0.0, sched.stream)
        gas = GeometryAccel(ctx, TriangleInput(animated, ctx.upload(indices, sched.stream)),
                            AccelOptions(allow_update=True), stream=sched.stream)
        refit_ms: list[float] = []
        last: list = []  # the latest completed frame

        def frame(k: int) -> None:
            host_work(args.host_ms)
            with sched.frame() as f:
                animator(animated, k / 60.0, f)
                start = time.perf_counter()
                gas.refit(animated, stream=f)  # optixAccelBuild (update)
                refit_ms.append((time.perf_counter() - start) * 1e3)
                spin_gpu(int(args.gpu_ms * 1e6), f)  # the rest of the frame's GPU work
                renderer.record(f, gas.handle, SIZE, SIZE, view=(-0.9, -0.9, 0.9, 0.9))  # optixLaunch + readback
            last[:] = sched.poll()[-1:] or last

        for k in range(warmup):
            frame(k)
        sched.drain()
        refit_ms.clear()
        # Measured without the watch: CUPTI's callbacks cost host time of their own.
        start = time.perf_counter()
        for k in range(warmup, warmup + args.frames):
            frame(k)
        elapsed = time.perf_counter() - start
        measured_refits = list(refit_ms)
        sched.drain()
        # Then a few more frames under the watch, for the report.
        watch = watching(watch_enabled)
        with watch:
            for k in range(warmup + args.frames, warmup + args.frames + args.watch_frames):
                frame(k)
        last[:] = sched.drain()[-1:] or last
        summary = sched.stats.summary(skip=warmup, count=args.frames)
        frames = sched.stats.frames[warmup:warmup + args.frames]
        hits = float((last[0]["image"][..., 3] > 0).mean()) if last else float("nan")
        if args.trace:
            path = os.path.join(args.trace, f"validation_{'on' if validation else 'off'}.json")
            export_chrome_trace(sched, path, skip=warmup, report=getattr(watch, "report", None))
            print(f"wrote {path} (open it in https://ui.perfetto.dev)")
        sched.close()
        renderer.close()
    return {
        "validation": validation,
        "fps": args.frames / elapsed,
        "ahead": statistics.median(f.ahead for f in frames),
        "in_flight": statistics.median(f.in_flight for f in frames),
        "launch_ms": [f.launch_ms for f in frames],
        "refit_ms": measured_refits,
        "gpu_ms": summary["gpu_ms"]["median"],
        "utilization": summary.get("gpu_utilization", float("nan")),
        "hits": hits,
        "report": getattr(watch, "report", None),
    }


def part1(args: argparse.Namespace, watch_enabled: bool) -> None:
    print(f"== part 1: the same render loop, validation mode off and on ({args.frames} frames, 2 in flight, "
          f"{args.gpu_ms} ms GPU + {args.host_ms} ms host work per frame)\n")
    rows = [render_loop(False, args, watch_enabled), render_loop(True, args, watch_enabled)]
    print("| validation | fps | frames ahead | in flight | optixLaunch host ms (median / max) | "
          "optixAccelBuild (refit) host ms | GPU ms/frame | GPU utilization | pixels hit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        # Measured without the watch (its CUPTI callbacks add host time of their own); the watch's
        # own timings of each OptiX call are in its report below.
        launch, refit = r["launch_ms"], r["refit_ms"]
        print(f"| {'ON' if r['validation'] else 'off'} | {r['fps']:.0f} | {r['ahead']:.0f} | {r['in_flight']:.0f} | "
              f"{fmt_ms(launch)} | {fmt_ms(refit)} | {r['gpu_ms']:.3f} | {100 * r['utilization']:.0f}% | "
              f"{100 * r['hits']:.0f}% |")
    for r in rows:
        if r["report"] is not None:
            print(f"\n-- syncwatch, validation {'ON' if r['validation'] else 'off'}:")
            print(r["report"].render(stack=args.stack))


def part2(args: argparse.Namespace, watch_enabled: bool) -> None:
    import cupy

    vertices, indices = grid_mesh(args.upload_cells)
    print(f"\n== part 2: a {len(indices):,}-triangle GAS built behind {args.busy_ms} ms of queued GPU work\n")
    with optixasync.Context() as ctx:
        stream = create_stream()
        runtime = cupy.cuda.runtime

        def pageable_build() -> GeometryAccel:
            dv = ctx.memory.empty(vertices.shape, np.float32, stream)
            di = ctx.memory.empty(indices.shape, np.int32, stream)
            # cudaMemcpyAsync from pageable numpy memory: the driver stages the data and waits for the stream.
            runtime.memcpyAsync(dv.data.ptr, vertices.ctypes.data, vertices.nbytes, runtime.memcpyHostToDevice, stream.ptr)
            runtime.memcpyAsync(di.data.ptr, indices.ctypes.data, indices.nbytes, runtime.memcpyHostToDevice, stream.ptr)
            return GeometryAccel(ctx, TriangleInput(dv, di), stream=stream)

        def pinned_build() -> GeometryAccel:
            ctx.deferred.collect()  # hand finished staging back to the pinned pool before asking it for more
            return GeometryAccel(ctx, TriangleInput(vertices, indices), stream=stream)  # pinned staging inside

        def cupy_asarray_build() -> GeometryAccel:
            with stream:  # CuPy copies on its current stream
                dv, di = cupy.asarray(vertices), cupy.asarray(indices)
            return GeometryAccel(ctx, TriangleInput(dv, di), stream=stream)

        for fn in (pageable_build, pinned_build, cupy_asarray_build):  # first-use costs out of the way
            fn()
        stream.synchronize()
        ctx.deferred.collect()
        print("| inputs | host ms in the build (behind the busy GPU) | blocks() |")
        print("|---|---|---|")
        reports = []
        for label, fn in (("pageable numpy + cudaMemcpyAsync", pageable_build),
                          ("optixasync pinned staging", pinned_build),
                          ("cupy.asarray (CuPy's own pinned staging)", cupy_asarray_build)):
            spin_gpu(int(args.busy_ms * 1e6), stream)
            watch = watching(watch_enabled)
            with watch:
                start = time.perf_counter()
                fn()
                host_ms = (time.perf_counter() - start) * 1e3
            stream.synchronize()
            verdict = blocks(fn, stream, busy_ms=args.busy_ms)
            print(f"| {label} | {host_ms:.3f} | {verdict.verdict} ({verdict.host_ms:.2f} ms behind the busy GPU, "
                  f"{verdict.idle_ms:.2f} ms idle) |")
            reports.append((label, getattr(watch, "report", None)))
        for label, report in reports:
            if report is not None:
                print(f"\n-- syncwatch, {label}:")
                print(report.render(designed=False, optix=True, stack=args.stack))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--watch-frames", type=int, default=20, help="frames rendered again under syncwatch for its report")
    parser.add_argument("--gpu-ms", type=float, default=2.0, help="GPU work per frame besides refit and trace")
    parser.add_argument("--host-ms", type=float, default=0.5, help="CPU work per frame")
    parser.add_argument("--cells", type=int, default=200, help="animated grid: 2*cells^2 triangles")
    parser.add_argument("--busy-ms", type=float, default=50.0, help="GPU work queued ahead of the part-2 builds")
    parser.add_argument("--upload-cells", type=int, default=708, help="part-2 grid: 2*cells^2 triangles")
    parser.add_argument("--stack", type=int, default=0, help="frames of each stall's stack to print")
    parser.add_argument("--trace", metavar="DIR", help="write Chrome traces of part 1 there")
    parser.add_argument("--nvtx", action="store_true", help="emit NVTX ranges (for nsys)")
    parser.add_argument("--no-syncwatch", action="store_true", help="measure without CUPTI")
    args = parser.parse_args()
    require_gpu()
    if args.nvtx:
        enable_nvtx()
    if args.trace:
        os.makedirs(args.trace, exist_ok=True)
    watch_enabled = not args.no_syncwatch and syncwatch_available()
    part1(args, watch_enabled)
    part2(args, watch_enabled)


if __name__ == "__main__":
    run_main(main)
