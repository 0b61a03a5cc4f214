"""Scaling over GPUs: one GPU, every GPU of the machine in-process, and the same GPUs through Dask.

    python benchmarks/bench_multi.py [--repeats 3] [--frames 120] [--spp 1024] [--out bench_out/multi.json]

Two jobs, each timed on the host clock from the call to the last result (image summed, or last PNG on disk),
median of ``--repeats`` after a warm-up run that compiles and builds on every worker:

(a) Offline: the Cornell box at 1024x1024, ``--spp`` samples per pixel, depth 8. One GPU is
    ``RenderPipeline.render``; the farms split the samples, one range per worker, and add the sums on the host.
(b) Sequence: ``--frames`` frames of the cloth animation (708 cells: 1,002,528 triangles refitted per frame),
    512x512, 16 spp per frame, every frame written as a PNG. One GPU is the frame scheduler with two frames
    in flight and two PNG threads, as ``optixasync render --frames`` runs it; the farms deal the frames.

Then the Dask per-task overhead: the round trip of a no-op task, one at a time and in a batch of 400.
With one GPU the "GPUs" rows use two workers sharing it (a check of the machinery, not of scaling).
Dask runs on ``dask_cuda.LocalCUDACluster`` when installed, else on nannies with one ``CUDA_VISIBLE_DEVICES``
each (what LocalCUDACluster does). Prints markdown tables and writes the JSON report.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pathtracer import device_info, json_default, table  # noqa: E402

import optixasync  # noqa: E402
from optixasync.io import ImageWriter, numbered_path  # noqa: E402
from optixasync.multi import DaskGPUs, Farm, FunctionFactory, LocalGPUs, run_in_order  # noqa: E402
from optixasync.render import ClothMotion, RenderOptions, RenderPipeline  # noqa: E402
from optixasync.scene import ClothAnimation, cornell_box  # noqa: E402
from optixasync.testing import require_gpu, run_main  # noqa: E402


def timed(function: Any, repeats: int) -> dict[str, Any]:
    """Median, min and max seconds of ``repeats`` calls (the caller warmed up)."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - start)
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "max_s": max(seconds), "n": repeats}


def gpu_count() -> int:
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


def dask_cluster(n: int) -> Any:
    """``n`` Dask workers, one GPU each (sharing GPU 0 on a one-GPU machine)."""
    import distributed

    if gpu_count() >= n:
        try:
            from dask_cuda import LocalCUDACluster

            return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, range(n))), threads_per_worker=2,
                                    dashboard_address=None, silence_logs=40)
        except ImportError:
            pass
    devices = [k % gpu_count() for k in range(n)]
    workers = {k: {"cls": distributed.Nanny, "options": {"nthreads": 2, "env": {"CUDA_VISIBLE_DEVICES": str(d)}}}
               for k, d in enumerate(devices)}
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    return distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40)


# -- (a) offline ---------------------------------------------------------------------------------------------------


def offline_one_gpu(options: RenderOptions, repeats: int) -> dict[str, Any]:
    with optixasync.Context() as ctx, RenderPipeline(ctx, cornell_box(), options) as pipeline:
        pipeline.render(16)  # warm-up: the structure is compacted, the pool holds the buffers
        return timed(pipeline.render, repeats)


def offline_farm(options: RenderOptions, backend: Any, repeats: int) -> dict[str, Any]:
    with Farm(cornell_box(), options, backend=backend) as farm:
        farm.render(16 * backend.workers)  # warm-up: every worker compiles and builds
        row = timed(farm.render, repeats)
        row["parts"] = [tuple(p) for p in farm.last_parts]
        return row


# -- (b) sequence --------------------------------------------------------------------------------------------------


def sequence_one_gpu(cloth: ClothAnimation, options: RenderOptions, frames: int, out: Path, repeats: int,
                     writers: int) -> dict[str, Any]:
    from optixasync.cuda import create_stream
    from optixasync.scheduler import FrameScheduler

    motion = ClothMotion(cloth)
    with optixasync.Context() as ctx:
        stream = create_stream()
        with RenderPipeline(ctx, cloth.scene(), options, stream=stream) as pipeline, \
                FrameScheduler(ctx, 2, params_dtype=pipeline.params_dtype, stream=stream) as sched:
            def run(count: int = frames) -> None:
                with ImageWriter(workers=writers) as writer:
                    def consume(results: list[Any]) -> None:
                        for r in results:
                            writer.submit(numbered_path(out / "one.png", r.index % frames), r["image"][..., :3])

                    for k in range(count):
                        with sched.frame() as f:
                            motion.move(pipeline, k / 30, f)  # the vertex kernel, then the refit
                            pipeline.reset()
                            pipeline.record(f, options.spp, readback="image")
                        consume(sched.poll())
                    consume(sched.drain())

            run(8)  # warm-up
            row = timed(run, repeats)
            row["gpu_ms_per_frame"] = sched.stats.summary(skip=2)["gpu_ms"]["median"]
            return row


def sequence_farm(cloth: ClothAnimation, options: RenderOptions, frames: int, out: Path, backend: Any,
                  repeats: int, writers: int) -> dict[str, Any]:
    motion = ClothMotion(cloth, 1 / 30)
    with Farm(cloth.scene(), options, backend=backend, image_writers=writers) as farm:
        list(farm.frames(4 * backend.workers, update=motion, out=out / "warm.png"))  # every worker compiles, builds

        def run() -> None:
            outputs = list(farm.frames(frames, update=motion, out=out / "farm.png"))
            assert [o.index for o in outputs] == list(range(frames))

        row = timed(run, repeats)
    return row


# -- Dask overhead -------------------------------------------------------------------------------------------------


def _noop(state: Any, item: Any) -> Any:
    return item


def dask_overhead(backend: DaskGPUs) -> dict[str, Any]:
    factory = FunctionFactory(_noop)
    list(run_in_order(backend, factory, range(20)))
    one = []
    for k in range(50):
        start = time.perf_counter()
        list(run_in_order(backend, factory, [k]))
        one.append(time.perf_counter() - start)
    start = time.perf_counter()
    list(run_in_order(backend, factory, range(400)))
    batch = time.perf_counter() - start
    backend.release(factory)
    return {"one_task_ms": 1e3 * statistics.median(one), "per_task_in_batch_ms": 1e3 * batch / 400}


# -- main ----------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--spp", type=int, default=1024)
    parser.add_argument("--size", type=int, default=1024, help="offline image side (default 1024)")
    parser.add_argument("--cells", type=int, default=708, help="cloth cells per side (default 708: 1M triangles)")
    parser.add_argument("--image-writers", type=int, default=6,
                        help="PNG threads per GPU in every run (default 6: encoding a 512x512 frame takes longer "
                             "than rendering it)")
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--out", default="bench_out/multi.json")
    args = parser.parse_args(argv)
    require_gpu("bench_multi")
    n = max(2, gpu_count())
    devices = list(range(gpu_count())) if gpu_count() > 1 else [0, 0]
    frames_dir = Path(args.out).parent / "multi_frames"
    shutil.rmtree(frames_dir, ignore_errors=True)
    frames_dir.mkdir(parents=True)
    report: dict[str, Any] = {"device": device_info(), "gpus": gpu_count(), "workers": n, "args": vars(args)}
    started = time.perf_counter()

    offline = RenderOptions(width=args.size, height=args.size, spp=args.spp, max_depth=8)
    cloth = ClothAnimation(args.cells)
    seq = RenderOptions(width=512, height=512, spp=16, max_depth=8)
    rows = {"offline": {}, "sequence": {}}
    rows["offline"]["1 GPU"] = offline_one_gpu(offline, args.repeats)
    rows["sequence"]["1 GPU"] = sequence_one_gpu(cloth, seq, args.frames, frames_dir, args.repeats, args.image_writers)
    with LocalGPUs([0]) as one:
        rows["offline"]["farm, 1 GPU"] = offline_farm(offline, one, args.repeats)
        rows["sequence"]["farm, 1 GPU"] = sequence_farm(cloth, seq, args.frames, frames_dir, one, args.repeats, args.image_writers)
    label = f"{len(devices)} GPUs in-process" if gpu_count() > 1 else "2 workers on 1 GPU, in-process"
    with LocalGPUs(devices) as local:
        rows["offline"][label] = offline_farm(offline, local, args.repeats)
        rows["sequence"][label] = sequence_farm(cloth, seq, args.frames, frames_dir, local, args.repeats,
                                                 args.image_writers)
    if not args.skip_dask:
        import distributed

        with dask_cluster(n) as cluster, distributed.Client(cluster) as client:
            client.wait_for_workers(n)
            backend = DaskGPUs(client)
            dask_label = f"{n} GPUs through Dask" if gpu_count() > 1 else "2 workers on 1 GPU, through Dask"
            rows["offline"][dask_label] = offline_farm(offline, backend, args.repeats)
            rows["sequence"][dask_label] = sequence_farm(cloth, seq, args.frames, frames_dir, backend,
                                                      args.repeats, args.image_writers)
            report["dask_overhead"] = dask_overhead(backend)
            report["dask_cluster"] = type(cluster).__name__

    for job, title in (("offline", f"Cornell box {args.size}x{args.size}, {args.spp} spp"),
                       ("sequence", f"cloth, {args.frames} frames, 512x512, 16 spp, PNGs")):
        base = rows[job]["1 GPU"]["median_s"]
        table_rows = [{"how": how, "s": r["median_s"], "min": r["min_s"], "max": r["max_s"],
                       "speedup": base / r["median_s"]} for how, r in rows[job].items()]
        if job == "sequence":
            for row in table_rows:
                row["fps"] = args.frames / row["s"]
        print(f"\n{title} (median of {args.repeats}, wall seconds)")
        columns = [("how", "run", ""), ("s", "median s", ".3f"), ("min", "min", ".3f"), ("max", "max", ".3f"),
                   ("speedup", "vs 1 GPU", ".2f")]
        if job == "sequence":
            columns.append(("fps", "frames/s", ".1f"))
        print(table(table_rows, columns))
        if job == "sequence":
            print(f"one GPU's own time per frame (scheduler timing events, median): "
                  f"{rows[job]['1 GPU']['gpu_ms_per_frame']:.2f} ms")
    if "dask_overhead" in report:
        o = report["dask_overhead"]
        print(f"\nDask per-task overhead: {o['one_task_ms']:.2f} ms for one task alone (submit to result), "
              f"{o['per_task_in_batch_ms']:.3f} ms per task in a batch of 400")
    report["rows"] = rows
    report["elapsed_s"] = time.perf_counter() - started
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=json_default))
    with contextlib.suppress(OSError):
        shutil.rmtree(frames_dir)
    print(f"\nwrote {out} ({report['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    run_main(main)
