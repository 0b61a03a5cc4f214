"""The Python side of the submit path, with every CUDA and OptiX call stubbed out: where a frame's host time goes.

    python benchmarks/bench_submit.py [--frames 20000] [--warmup 2000] [--profile 25] [--json out.json]

Runs on any machine (no GPU needed): :class:`optixasync.testing.StubCuda`
replaces CuPy's events, streams, asynchronous copies, stream-ordered
allocations, pinned pool and the OptiX launch with stand-ins that return at
once, so what is left is the library's own Python code around them. The
frame is the benchmark's empty frame (``bench_pipeline.py``'s "N=3, empty
frame": the busy workload's parameters, one launch, a 256-float readback),
recorded phase by phase:

* ``begin_frame`` (slot, fence check, the frame's objects),
* ``buffer`` + parameter writes (the body of the ``with`` block),
* ``launch`` (the parameter upload and ``optixLaunch``),
* ``readback`` (the pinned destination and the copy),
* ``submit`` (the fence, the ring, waking the completion thread; with a work
  function, also the work: run eagerly, or the slot's graph launched),

each as the median and 95th percentile of ``perf_counter_ns`` over the
frames, beside the scheduler's own ``submit_ms`` (launch + readback +
submit: the number ``bench_pipeline.py`` reports on the GPU). With
``--profile N`` it also prints the N functions with the largest own time
under ``cProfile``. The frame-graph rows replay the work as the slot's CUDA
graph (graph calls stubbed as well): what a replayed frame costs the host.
The stubs cost little but not nothing (about 0.2 us per
stubbed call on a 2020s laptop core); the real calls add their own time on a
GPU machine.

A second table does the same for the render pipeline's frames
(:class:`optixasync.testing.StubRender`: the real pipeline, device scene
and scheduler, the path integrator's parameter packing and launch, nothing
compiled): the progressive 512x512 1-spp frame with its image read back, and
the cloth frame (a million triangles: its vertex kernel and refit), eager and
as frame graphs replayed. Phases: ``begin_frame``, ``record`` (the
recorder's host part: checks, parameters, the slot's buffers; eager, also the
launch and readback), ``submit``, ``poll``, the frame.

Prints Markdown tables; a benchmark, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import time
from typing import Any

import numpy as np

from optixasync.render import ClothMotion, RenderOptions, RenderPipeline
from optixasync.scene import ClothAnimation, cornell_box
from optixasync.scheduler import FrameScheduler
from optixasync.testing import BUSY_PARAMS, StubCuda, StubRender

N_OUT = 256
PHASES = ("begin_frame", "body", "launch", "readback", "submit", "poll", "frame")


def _quantiles(values: list[int]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered) / 1e3, ordered[int(0.95 * (len(ordered) - 1))] / 1e3


class _Phased:
    """What both cases share: ``frame(k, keep)`` records ``phases`` into ``times``; run them, or profile them."""

    phases: tuple[str, ...] = PHASES
    label: str
    sched: Any
    times: dict[str, list[int]]

    def frame(self, k: int, keep: bool) -> None:
        raise NotImplementedError

    def row(self) -> dict[str, Any]:
        """The table row's first cells."""
        return {"case": self.label}

    def run(self, frames: int, warmup: int) -> dict[str, Any]:
        for k in range(warmup + frames):
            self.frame(k, keep=k >= warmup)
        for result in self.sched.drain():
            result.release()
        summary = self.sched.stats.summary(skip=warmup)
        row = self.row()
        for name in self.phases:
            row[name] = _quantiles(self.times[name])
        row["submit_ms"] = (summary["submit_ms"]["median"] * 1e3, summary["submit_ms"]["p95"] * 1e3)
        return row

    def profile(self, frames: int, top: int) -> str:
        profiler = cProfile.Profile()
        profiler.enable()
        for k in range(frames):
            self.frame(k, keep=False)
        profiler.disable()
        for result in self.sched.drain():
            result.release()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
        return out.getvalue()


class Case(_Phased):
    """One configuration of the empty frame, recorded phase by phase.

    ``mode``: ``"eager"`` (launch and readback in the body, as ``BusyWorkload.record``), ``"work"`` (the same
    in a work function, run eagerly at submit) or ``"graph"`` (the work function replayed as the slot's graph).
    """

    def __init__(self, cuda: StubCuda, label: str, *, completion_thread: bool, mode: str = "eager",
                 slots: int = 3) -> None:
        self.label = label
        self.mode = mode
        self.ctx = cuda.context()
        self.pipeline = cuda.pipeline(self.ctx)
        self.sbt = cuda.sbt(self.ctx)
        self.sched = FrameScheduler(self.ctx, slots, params_dtype=BUSY_PARAMS,
                                    options={"completion_thread": completion_thread}, graphs=mode == "graph")
        self.times: dict[str, list[int]] = {name: [] for name in PHASES}

    def work(self, f: Any) -> None:
        """The frame's GPU work (what a graph captures): the launch and the readback."""
        f.launch(self.pipeline, self.sbt, N_OUT)
        f.readback(f.buffer("out", (N_OUT,), np.float32), "out")

    def frame(self, k: int, keep: bool) -> None:
        clock = time.perf_counter_ns
        sched = self.sched
        t0 = clock()
        f = sched.begin_frame(self.work if self.mode != "eager" else None)
        t1 = clock()
        out = f.buffer("out", (N_OUT,), np.float32)
        params = f.params
        params["out"] = out.data.ptr
        params["spin_ns"] = 0
        params["frame"] = f.index
        params["scale"] = 1.5
        t2 = clock()
        if self.mode == "eager":
            f.launch(self.pipeline, self.sbt, N_OUT)
            t3 = clock()
            f.readback(out, "out")
            t4 = clock()
        else:
            t3 = t4 = t2  # inside submit
        sched.submit(f)
        t5 = clock()
        for result in sched.poll():
            result.release()
        t6 = clock()
        if keep:
            for name, value in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t6 - t0),
                                   strict=True):
                self.times[name].append(value)

    def close(self) -> None:
        self.sched.close()


PIPELINE_PHASES = ("begin_frame", "record", "submit", "poll", "frame")


class PipelineCase(_Phased):
    """A render pipeline's frame over the stubs, eager or as the slot's graph replayed, phase by phase."""

    phases = PIPELINE_PHASES

    def __init__(self, cuda: StubCuda, label: str, *, graph: bool, cloth: bool, size: int = 512) -> None:
        self.label = label
        self._render = StubRender(cuda)
        self._render.__enter__()
        animation = ClothAnimation(cells=708) if cloth else None  # about a million triangles
        scene = animation.scene() if animation is not None else cornell_box()
        self.pipeline = RenderPipeline(cuda.context(), scene, RenderOptions(width=size, height=size, spp=1),
                                       graphs=graph, frames_in_flight=3, scheduler_options={"completion_thread": False})
        self.recorder = self.pipeline.recorder(1, update=ClothMotion(animation) if animation else None,
                                               readback="image")
        self.sched = self.pipeline.scheduler
        self.times: dict[str, list[int]] = {name: [] for name in PIPELINE_PHASES}

    def row(self) -> dict[str, Any]:
        return {"case": self.label, "graphs": self.sched.stats.graphs.as_dict()}

    def frame(self, k: int, keep: bool) -> None:
        clock = time.perf_counter_ns
        sched = self.sched
        t0 = clock()
        f = sched.begin_frame()
        t1 = clock()
        self.recorder.record(f, k)
        t2 = clock()
        sched.submit(f)
        t3 = clock()
        for result in sched.poll():
            result.release()
        t4 = clock()
        if keep:
            for name, value in zip(PIPELINE_PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True):
                self.times[name].append(value)

    def close(self) -> None:
        self.pipeline.close()
        self._render.__exit__(None, None, None)


def print_table(rows: list[dict[str, Any]], phases: tuple[str, ...] = PHASES) -> None:
    print("| case | " + " | ".join(f"{p} us (p50/p95)" for p in phases) + " | scheduler submit_ms as us (p50/p95) |")
    print("|---|" + "---|" * (len(phases) + 1))
    for row in rows:
        cells = [f"{row[p][0]:.1f}/{row[p][1]:.1f}" for p in phases]
        print(f"| {row['case']} | " + " | ".join(cells) + f" | {row['submit_ms'][0]:.1f}/{row['submit_ms'][1]:.1f} |")


def pipeline_rows(frames: int, warmup: int, profile: int) -> tuple[list[dict[str, Any]], str]:
    """The render pipeline's rows (and the eager progressive frame's profile, with ``profile``)."""
    rows, listing = [], ""
    for label, graph, cloth in (("progressive 512x512 1 spp, eager", False, False),
                                ("progressive 512x512 1 spp, frame graph replayed", True, False),
                                ("cloth 1M triangles (vertex kernel + refit), eager", False, True),
                                ("cloth 1M triangles (vertex kernel + refit), frame graph replayed", True, True)):
        with StubCuda() as cuda:
            case = PipelineCase(cuda, label, graph=graph, cloth=cloth)
            rows.append(case.run(frames, warmup))
            if profile and not graph and not cloth:
                listing = case.profile(min(frames, 5000), profile)
            case.close()
    return rows, listing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=20000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest functions")
    parser.add_argument("--gpu-us", type=float, default=60.0,
                        help="GPU time of a frame in the modelled-GPU row (the H200's empty frame: about 60 us)")
    parser.add_argument("--no-graphs", dest="graphs", action="store_false",
                        help="only the eager rows (the frame graph rows stub the graph calls too)")
    parser.add_argument("--no-pipeline", dest="pipeline", action="store_false",
                        help="leave out the render pipeline's rows")
    parser.add_argument("--json", default=None, help="write the rows to this file")
    args = parser.parse_args()
    rows = []
    profile = ""
    gpu = {"gpu_us": args.gpu_us}
    configs = (("eager, inline retirement", False, {}, "eager"),
               (f"eager, completion thread, GPU {args.gpu_us:g} us", True, gpu, "eager"),
               ("work function run eagerly, inline retirement", False, {}, "work"),
               ("frame graph replayed, inline retirement", False, {}, "graph"),
               (f"frame graph replayed, completion thread, GPU {args.gpu_us:g} us", True, gpu, "graph"))
    for label, thread, model, mode in configs[: None if args.graphs else 2]:
        with StubCuda(**model) as cuda:
            case = Case(cuda, label, completion_thread=thread, mode=mode)
            rows.append(case.run(args.frames, args.warmup))
            if args.profile and not thread and mode == "eager":
                profile = case.profile(min(args.frames, 5000), args.profile)
            case.close()
    print(f"\nEmpty frame, CUDA and OptiX stubbed, {args.frames} frames after {args.warmup} of warm-up\n")
    print_table(rows)
    if args.profile:
        print("\ncProfile of 5000 frames, inline retirement, by own time:\n")
        print(profile)
    pipeline, listing = pipeline_rows(args.frames // 4, args.warmup // 4, args.profile) if args.pipeline else ([], "")
    if pipeline:
        print(f"\nRender pipeline frames, CUDA and OptiX stubbed, {args.frames // 4} frames after "
              f"{args.warmup // 4} of warm-up, inline retirement\n")
        print_table(pipeline, PIPELINE_PHASES)
        print("\n" + "\n".join(f"- {r['case']}: replays {r['graphs']['replays']}, captures {r['graphs']['captures']}, "
                               f"eager {r['graphs']['eager']}" for r in pipeline))
    if listing:
        print("\ncProfile of the eager progressive frame, by own time:\n")
        print(listing)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "pipeline": pipeline}, f, indent=1)


if __name__ == "__main__":
    main()
