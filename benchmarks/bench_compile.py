"""The path tracer's cold OptiX compile, serial (``optixModuleCreate``) against parallel tasks
(``optixModuleCreateWithTasks`` + ``optixTaskExecute`` on N threads), each in a fresh process.

    python benchmarks/bench_compile.py [--repeats 3] [--threads 1,2,4,8,16] [--abi 87] [--json out.json]

Cold: OptiX's disk cache is off in every measured process and each is a new interpreter, so OptiX compiles the
module from PTX every time. The PTX itself comes from optixasync's cache, filled once by a first process (the
NVRTC time is the same for both paths and is reported apart). The module is the path tracer's generated program (``kernels/pathtracer.cu``
for the image output) with the path tracer's own pipeline, module and NVRTC options. Each process checks that the module it compiled has the
path tracer's entry points, so a faster compile that dropped code would show.

Without a usable GPU it prints one line saying why and exits with status 1; a child process that fails prints
its own one line, and this script exits with the child's status.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

from optixasync.testing import child_output, require_gpu, run_main

PROG = "bench_compile.py"

CHILD = r"""
import dataclasses, json, sys, time
import optixasync
from optixasync import Module
from optixasync.render import _path  # the path tracer's compile options (the benchmark compiles its module)
from optixasync.render._source import pathtracer_source
from optixasync.testing import run_main

def main():
    threads, abi = int(sys.argv[1]), int(sys.argv[2])
    ctx = optixasync.Context(abi=abi, disk_cache=False, warm_up=False)
    source = pathtracer_source([1])  # the progressive frame's program: the image output
    options = dataclasses.replace(_path.COMPILE_OPTIONS, include_dirs=source.include_dirs)
    start = time.perf_counter()
    module = Module(ctx, source.text, pipeline_options=_path.PIPELINE_OPTIONS, module_options=_path.MODULE_OPTIONS,
                    compile_options=options, compile_threads=threads)
    total = time.perf_counter() - start
    assert {"__raygen__outputs_1", "__closesthit__radiance"} <= module.entries, sorted(module.entries)
    print(json.dumps({"threads": threads, "abi": ctx.abi, "optix_s": module.optix_seconds,
                      "nvrtc_s": module.nvrtc_seconds, "ptx_cache_hit": module.ptx_cache_hit, "total_s": total,
                      "tasks": module.tasks_executed}))
    ctx.close()

""" + f"run_main(main, {PROG!r})\n"


def run_child(cache: str, threads: int, abi: int) -> dict:
    env = dict(os.environ, OPTIXASYNC_CACHE_DIR=cache)
    out = child_output([sys.executable, "-c", CHILD, str(threads), str(abi)], PROG, env=env)
    return json.loads(out.strip().splitlines()[-1])


def table(rows: dict[int, list[dict]]) -> list[str]:
    """The printed table: one line per thread count (0 = the serial optixModuleCreate)."""
    med = {n: statistics.median(r["optix_s"] for r in runs) for n, runs in rows.items()}
    serial = med[0]
    lines = ["| path | threads | OptiX compile, median (ms) | min .. max (ms) | tasks run | speed-up vs serial |",
             "|---|---|---|---|---|---|"]
    for n, runs in rows.items():
        times = [r["optix_s"] * 1e3 for r in runs]
        path = "optixModuleCreate" if n == 0 else "WithTasks + TaskExecute"
        lines.append(f"| {path} | {n or 1} | {med[n] * 1e3:.0f} | {min(times):.0f} .. {max(times):.0f} | "
                     f"{runs[0]['tasks'] or '-'} | {serial / med[n]:.2f}x |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1,2,4,8,16", help="comma-separated thread counts of the task path")
    parser.add_argument("--abi", type=int, default=87, help="the OptiX ABI to compile through (87, 93, 105, 118)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    require_gpu(PROG)
    counts = [0] + [int(n) for n in args.threads.split(",") if n.strip()]
    with tempfile.TemporaryDirectory() as cache:
        first = run_child(cache, 0, args.abi)  # fills the PTX cache; its OptiX compile is not counted
        rows: dict[int, list[dict]] = {n: [] for n in counts}
        for _ in range(args.repeats):
            for n in counts:  # interleaved, so that a drift of the machine spreads over every column
                rows[n].append(run_child(cache, n, args.abi))
    print(f"path tracer module, ABI {first['abi']}, NVRTC {first['nvrtc_s'] * 1e3:.0f} ms once (cached after), "
          f"{args.repeats} fresh processes per row, {os.cpu_count()} CPUs")
    for line in table(rows):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"first": first, "rows": {str(n): r for n, r in rows.items()}}, f, indent=1)


if __name__ == "__main__":
    run_main(main, PROG)
