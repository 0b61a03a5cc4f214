"""Pipeline creation time on a cold cache versus a warm one, each in a fresh process.

    python benchmarks/bench_startup.py [--repeats 3]

Cold: empty cache directory (NVRTC compiles, OptiX compiles). Warm: a second
process with the same cache directory (PTX from optixasync's cache, the
module from OptiX's disk cache). Context creation is timed apart.

Without a usable GPU it prints one line saying why and exits with status 1;
a child process that fails prints its own one line, and this script exits
with the child's status.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

from optixasync.testing import child_output, require_gpu, run_main

PROG = "bench_startup.py"

# The measured process. Its failures (an optixasync error, a missing package) end in one line on stderr
# through run_main; the driver is not probed before the context, whose creation time includes the driver's start.
CHILD = r"""
import json, time
t0 = time.perf_counter()
import optixasync
from optixasync.testing import render_triangle, run_main
t1 = time.perf_counter()

def main():
    ctx = optixasync.Context()
    t2 = time.perf_counter()
    r = render_triangle(ctx, 64, 64)
    ctx.close()
    print(json.dumps({"import_s": t1 - t0, "context_s": t2 - t1, "setup_s": r.setup_seconds,
                      "ptx_cache_hit": r.module_cache_hit, **r.timings, "hits": int((r.image[..., 3] >= 0).sum())}))

""" + f"run_main(main, {PROG!r})\n"


def run_child(cache: str) -> dict:
    env = dict(os.environ, OPTIXASYNC_CACHE_DIR=cache)
    out = child_output([sys.executable, "-c", CHILD], PROG, env=env)  # a failed child: its line and status
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    require_gpu(PROG)
    cold, warm = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(run_child(cache))
            warm.append(run_child(cache))
    med = lambda rows, key: statistics.median(r[key] for r in rows)  # noqa: E731
    print("| cache | pipeline creation (median ms) | context creation (ms) | PTX cache hit |")
    print("|---|---|---|---|")
    print(f"| cold | {med(cold, 'setup_s') * 1e3:.1f} | {med(cold, 'context_s') * 1e3:.1f} | {cold[0]['ptx_cache_hit']} |")
    print(f"| warm | {med(warm, 'setup_s') * 1e3:.1f} | {med(warm, 'context_s') * 1e3:.1f} | {warm[0]['ptx_cache_hit']} |")
    for key in ("nvrtc_or_cache_s", "optix_module_s", "program_groups_s", "optix_pipeline_s"):
        print(f"  {key}: cold {med(cold, key) * 1e3:.1f} ms, warm {med(warm, key) * 1e3:.1f} ms")
    print(f"speed-up warm vs cold: {med(cold, 'setup_s') / med(warm, 'setup_s'):.1f}x "
          f"({args.repeats} process pairs)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cold": cold, "warm": warm}, f, indent=1)


if __name__ == "__main__":
    run_main(main, PROG)
