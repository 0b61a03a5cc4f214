"""The RL step's host time on the CPU stubs: ``RenderPipeline.step`` with every CUDA and OptiX call stubbed out.

    python benchmarks/bench_step.py [--worlds 1024,4096] [--steps 400] [--warmup 100] [--gpu-us 0] [--profile 25]

The tabletop of ``bench_views.py`` (20 meshes, 18 movable) in ``--worlds`` worlds at 64x64, ``image`` and
``depth``, 3 frames in flight; each step moves the worlds by a device array of transforms and releases its
outputs (``bench_views.py``'s loop without torch). :class:`optixasync.testing.StubCuda` and
:class:`~optixasync.testing.StubRender` replace CuPy's and OptiX's calls (the worlds' placement kernel and the
pointer query of the transforms are stubbed here too), so what is left is the library's Python: the step's p50
and p95, with and without the scheduler's completion thread (``--gpu-us`` models a GPU that needs that long per
frame). ``--profile N`` prints the N functions of largest own time under cProfile. On a GPU the real calls add
their own time (``bench_views.py --parts rl --profile N`` prints the same profile there).

A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_views import table, tabletop  # noqa: E402

from optixasync.render import RenderOptions, RenderPipeline, Worlds  # noqa: E402
from optixasync.testing import StubCuda, StubRender  # noqa: E402


def _stub_the_rest() -> None:
    """The two calls of the step that the stubs do not cover: the pointer query and the placement kernel."""
    import optixasync.cuda._interop as interop
    import optixasync.render._device_worlds as device_worlds

    interop._pointer_location = lambda ptr: (interop._MEMORY_DEVICE, 0)
    device_worlds._place_kernel = lambda: (lambda *args, **kwargs: None)


def case(worlds: int, thread: bool, args: argparse.Namespace, profile: int = 0) -> dict[str, Any]:
    with StubCuda(gpu_us=args.gpu_us) as stub, StubRender(stub):
        ctx = stub.context()
        scene, movable = tabletop(20)
        pipeline = RenderPipeline(ctx, scene, RenderOptions(width=64, height=64, spp=1, max_depth=2),
                                  worlds=Worlds(worlds, movable=movable), outputs=("image", "depth"),
                                  frames_in_flight=3,
                                  scheduler_options={"keep_results": False, "completion_thread": thread})
        transforms = ctx.memory.empty((worlds, len(movable), 3, 4), np.float32, pipeline.stream)
        times = []
        for _ in range(args.warmup + args.steps):
            start = time.perf_counter_ns()
            out = pipeline.step(transforms=transforms)
            times.append((time.perf_counter_ns() - start) / 1e3)
            out.release()
        if profile:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.steps):
                pipeline.step(transforms=transforms).release()
            profiler.disable()
            print(f"\n### cProfile of {args.steps} steps, {worlds} worlds (own time)\n")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(profile)
        pipeline.close()
        ctx.close()
    steady = sorted(times[args.warmup:])
    return {"worlds": worlds, "thread": "on" if thread else "off", "p50": statistics.median(steady),
            "p95": steady[int(0.95 * (len(steady) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", default="1024,4096")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--gpu-us", type=float, default=0.0)
    parser.add_argument("--profile", type=int, default=0)
    args = parser.parse_args()
    _stub_the_rest()
    rows = []
    for worlds in (int(v) for v in args.worlds.split(",")):
        for thread in (False, True):
            rows.append(case(worlds, thread, args, profile=args.profile if not rows else 0))
    print(f"\n### RenderPipeline.step on the CPU stubs (64x64, image + depth, 20 meshes, gpu_us={args.gpu_us})\n")
    print(table(rows, [("worlds", "worlds", "d"), ("thread", "completion thread", ""), ("p50", "step p50 us", ".1f"),
                       ("p95", "step p95 us", ".1f")]))


if __name__ == "__main__":
    main()
