"""The CPU device against the GPU: the same kernel, the same scenes, Msamples/s.

    python benchmarks/bench_devices.py [--devices cpu,gpu] [--threads N] [--size 256] [--spp 8] [--json FILE]

For each device (``cpu``: ``RenderPipeline(CpuContext(threads))``, the kernel's host build; ``gpu``:
``RenderPipeline(Context())``, OptiX) and each scene (the Cornell box, 36 triangles; the material scene, 286,726
triangles, textures and an environment map) it renders ``--size`` squared pixels at ``--spp`` samples, max
depth 8, seed 0: one warm-up render, then the median of ``--runs`` renders. Msamples/s = pixels * spp / the
render's time (``last_render_ms``: wall-clock time of the CPU launches; GPU time of the launches from CUDA
events). The kernel build and the scene's tables are set-up, outside the timing. A device this machine lacks
(no compiler, no GPU) gets one line saying why and no row; the table says which device and CPU ran it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from pathlib import Path
from typing import Any

from optixasync.testing import run_main

SCENES = ("cornell_box", "materials")


def _scene(name: str) -> Any:
    from optixasync.scene import cornell_box, material_scene

    return cornell_box() if name == "cornell_box" else material_scene()


def _context(device: str, threads: int | None) -> Any:
    if device == "cpu":
        from optixasync import CpuContext

        return CpuContext(threads=threads)
    from optixasync import Context

    return Context()


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def measure(device: str, scene_name: str, args: argparse.Namespace) -> dict[str, Any]:
    from optixasync.render import RenderOptions, RenderPipeline

    ctx = _context(device, args.threads)
    options = RenderOptions(width=args.size, height=args.size, spp=args.spp, max_depth=8, seed=0)
    scene = _scene(scene_name)
    with RenderPipeline(ctx, scene, options) as pipeline:
        pipeline.render(args.spp)  # warm-up: caches, the BVH of the host build, first-launch costs
        times = []
        for _ in range(args.runs):
            pipeline.render(args.spp)
            times.append(float(pipeline.last_render_ms))
    ms = statistics.median(times)
    where = f"CPU, {ctx.threads} threads ({_cpu_name()})" if device == "cpu" else _gpu_name()
    return {"device": device, "where": where, "scene": scene_name, "triangles": scene.num_triangles,
            "size": args.size, "spp": args.spp, "ms": ms, "ms_min": min(times), "ms_max": max(times),
            "msamples_per_s": args.size * args.size * args.spp / (ms * 1e3)}


def _gpu_name() -> str:
    from optixasync._driver import devices

    found = devices()
    return f"GPU 0 ({found[0].name})" if found else "GPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="cpu,gpu", help="comma-separated: cpu, gpu (default both)")
    parser.add_argument("--threads", type=int, default=None, help="threads of the CPU device (default: all)")
    parser.add_argument("--size", type=int, default=256, help="image side in pixels (default 256)")
    parser.add_argument("--spp", type=int, default=8, help="samples per pixel (default 8)")
    parser.add_argument("--runs", type=int, default=3, help="timed renders per row (default 3)")
    parser.add_argument("--scenes", default=",".join(SCENES), help="comma-separated: cornell_box, materials")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    rows = []
    for device in args.devices.split(","):
        if device == "gpu":
            from optixasync._driver import unavailable_reason

            reason = unavailable_reason()
            if reason is not None:
                print(f"gpu: skipped: {reason}")
                continue
        elif device == "cpu":
            from optixasync.cpu import find_compiler
            from optixasync.errors import CompilerNotFoundError

            try:
                find_compiler()
            except CompilerNotFoundError as exc:
                print(f"cpu: skipped: {exc}")
                continue
        else:
            raise ValueError(f"--devices: unknown device {device!r} (cpu, gpu)")
        for scene in args.scenes.split(","):
            rows.append(measure(device, scene, args))
    print(f"| device | scene | triangles | image | spp | median ms (min-max) | Msamples/s |   (commit "
          f"{os.environ.get('OPTIXASYNC_COMMIT', 'working tree')})")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['where']} | {r['scene']} | {r['triangles']:,} | {r['size']}x{r['size']} | {r['spp']} | "
              f"{r['ms']:.1f} ({r['ms_min']:.1f}-{r['ms_max']:.1f}) | {r['msamples_per_s']:.3f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    run_main(main, "bench_devices.py")
