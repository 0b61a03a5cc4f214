"""Many views and ML outputs per launch: renders per second, the outputs' cost, small stills, rays per second.

    python benchmarks/bench_views.py [--parts rl,outputs,stills,rays] [--worlds 4096] [--size 64] [--objects 20]
        [--steps 200] [--warmup 20] [--json bench_out/views.json]
    python benchmarks/bench_views.py --parts rl --worlds 1024,4096,16384 --sizes 64,128 --completion-thread both
        --profile 30

Parts (each prints a Markdown table; the targets are those of the issue "Many views and ML outputs per launch"):

* **rl**: an RL-style loop. A tabletop scene of ``--objects`` meshes (a table, small balls and boxes, one area
  light) copied into ``--worlds`` worlds (:class:`~optixasync.render.Worlds`), every object but the table and the
  lamp movable; each step moves them by a torch tensor (CuPy without PyTorch) updated on the GPU, renders one
  ``--size`` x ``--size`` view per world at 1 spp with direct lighting (``max_depth=2``), ``image`` and
  ``depth``, and hands both to torch through DLPack (a reduction over them, enqueued on torch's stream, then
  the lease released). Reported: renders per second (worlds x steps over the wall time, after ``--warmup``
  steps), the wall time of ``step`` (p50) and the host's own work in it (p50, p95: less the wait for a free
  slot, which is the GPU being behind), and the GPU time per frame. Target: at least 100,000
  renders/s at 64x64 for 4,096 worlds of about 20 objects, host time per step at most 100 us. ``--worlds`` and
  ``--sizes`` take lists (a row per case); ``--completion-thread both`` adds a row without the scheduler's
  completion thread (its share of the host time: the GIL it takes while the loop runs); ``--profile N`` prints
  the N functions of largest own time under cProfile over the first case's steps (the CPU stubs' profile is
  ``benchmarks/bench_step.py``).
* **outputs**: the same worlds (``--outputs-worlds``, 1024 by default), GPU time per frame of the colour image
  alone, of colour and depth, and of every output at once (the G-buffer, ids, UV, motion, coverage, spp, ray
  counter); the ratio to the colour alone. Target: all outputs at most 1.15 times the colour.
* **stills**: a 256 x 256 diffuse sphere under an environment and an area light, ``--still-spp`` spp (64), median
  wall time per seed of ``RenderPipeline.render``: one thread per pixel (``sample_lanes=1``) against the
  automatic lanes (bitwise the same image). The issue's reference: 30.3 ms per seed ours, 17.0 Mitsuba 3.
  Target: faster than Mitsuba.
* **rays**: the path tracer's rays per second (its ray counter over the GPU time of a still: camera, bounce and
  shadow rays) on the Cornell box and the material scene at ``--rays-size`` (512), beside the ray caster's
  incoherent ceiling on the same structure (``RayCaster``'s program over uniformly random rays in the scene's
  box, GPU time of the launch alone): the fraction of the ceiling the path tracer reaches.

A benchmark, not a test. Without a usable GPU it prints one line and exits 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from typing import Any

import numpy as np

import optixasync
from optixasync.render import RenderOptions, RenderPipeline, Views, Worlds
from optixasync.scene import (
    Camera,
    Environment,
    Material,
    Scene,
    cornell_box,
    cube,
    material_scene,
    rectangle,
    sphere,
)
from optixasync.testing import require_gpu, run_main

#: Every output the path tracer writes.
ALL_OUTPUTS = ("image", "radiance", "albedo", "normal", "depth", "distance", "position", "geometric_normal",
               "mesh_id", "primitive_id", "material_id", "uv", "motion", "coverage", "spp", "rays")


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    """A Markdown table: ``columns`` are (key, header, format)."""
    lines = ["| " + " | ".join(h for _, h, _ in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for key, _, fmt in columns:
            value = row.get(key, "-")
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            cells.append(format(value, fmt) if numeric and fmt else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))] if ordered else float("nan")


# -- scenes ----------------------------------------------------------------------------------------------------------


def tabletop(objects: int) -> tuple[Scene, list[str]]:
    """A table, ``objects - 2`` small balls and boxes on it, an area light above: the scene and the movable names."""
    table_top = cube(np.diag([1.2, 0.05, 0.8, 1.0]), Material((0.55, 0.45, 0.35)), "table")
    things, names = [], []
    rng = np.random.default_rng(1)
    for k in range(max(objects - 2, 1)):
        x, z = rng.uniform(-1.0, 1.0), rng.uniform(-0.6, 0.6)
        colour = tuple(rng.uniform(0.2, 0.9, 3))
        if k % 2:
            mesh = sphere((x, 0.15, z), 0.1, Material(colour), subdivisions=2, smooth=True, name=f"ball{k}")
        else:
            mesh = cube(np.array([[0.08, 0, 0, x], [0, 0.08, 0, 0.13], [0, 0, 0.08, z]]), Material(colour), f"box{k}")
        things.append(mesh)
        names.append(mesh.name)
    lamp = rectangle(np.array([[0.4, 0, 0, 0], [0, 0, -0.4, 2.0], [0, 0.4, 0, 0]]), Material((0, 0, 0), (12, 12, 12)),
                     "lamp")
    scene = Scene([table_top, *things, lamp], Camera((0.0, 1.2, 2.2), (0.0, 0.1, 0.0), fov=50))
    scene.environment = Environment(radiance=(0.2, 0.22, 0.25))
    return scene, names


def diffuse_sphere() -> Scene:
    """A diffuse sphere on a ground plane under a constant sky and a small area light (the Mitsuba comparison's)."""
    ground = rectangle(np.array([[6, 0, 0, 0], [0, 0, 6, 0], [0, -6, 0, 0]]), Material((0.5, 0.5, 0.5)), "ground")
    ball = sphere((0, 0.6, 0), 0.6, Material((0.7, 0.5, 0.3)), subdivisions=5, smooth=True, name="sphere")
    light = rectangle(np.array([[0.25, 0, 0, -1.3], [0, 0, -0.15, 2.2], [0, 0.15, 0, 1.2]]),
                      Material((0, 0, 0), (30, 26, 22)), "area light")
    scene = Scene([ground, ball, light], Camera((0.0, 1.3, 3.2), (0.0, 0.55, 0.0), fov=32.0))
    scene.environment = Environment(radiance=(0.6, 0.7, 0.9))
    return scene


# -- the moving transforms --------------------------------------------------------------------------------------------


class Transforms:
    """The movable meshes' transforms of every world on the GPU (torch, or CuPy), wiggled a little every step."""

    def __init__(self, worlds: int, movable: int) -> None:
        try:
            import torch

            self.torch = torch
            self.base = torch.eye(4, device="cuda")[:3].repeat(worlds, movable, 1, 1).contiguous()
        except ImportError:
            import cupy

            self.torch = None
            self.base = cupy.tile(cupy.eye(4, dtype=cupy.float32)[:3], (worlds, movable, 1, 1))
        self.library = "torch" if self.torch is not None else "cupy"
        self.current = self.base.clone() if self.torch is not None else self.base.copy()

    def step(self, k: int) -> Any:
        """This step's transforms (rewritten in place on the GPU, on the library's current stream)."""
        shift = 0.05 * math.sin(0.1 * k)
        self.current[..., 0, 3] = self.base[..., 0, 3] + shift
        self.current[..., 2, 3] = self.base[..., 2, 3] - shift
        return self.current

    def consume(self, out: Any) -> Any:
        """Use the frame's image and depth (a reduction, enqueued on the library's stream), then release them."""
        if self.torch is not None:
            image = self.torch.from_dlpack(out["image"])
            depth = self.torch.from_dlpack(out["depth"])
            value = image[..., 0].sum() + depth.sum()
        else:
            value = out.cupy("image")[..., 0].sum() + out.cupy("depth").sum()
        out.release()
        return value

    def synchronize(self) -> None:
        if self.torch is not None:
            self.torch.cuda.synchronize()
        else:
            import cupy

            cupy.cuda.runtime.deviceSynchronize()


# -- parts --------------------------------------------------------------------------------------------------------------


def rl_loop(ctx: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The RL-style loop for each of ``--worlds`` and ``--sizes``, with and without the completion thread."""
    rows = []
    for worlds in _ints(args.worlds):
        for size in _ints(args.sizes or str(args.size)):
            for thread in (True, False) if args.completion_thread == "both" else (args.completion_thread == "on",):
                rows.append(rl_case(ctx, args, worlds, size, thread, profile=args.profile if not rows else 0))
    return rows


def _ints(text: Any) -> list[int]:
    return [int(v) for v in str(text).split(",") if v.strip()]


def rl_case(ctx: Any, args: argparse.Namespace, worlds: int, size: int, thread: bool,
            profile: int = 0) -> dict[str, Any]:
    """The RL-style loop: renders per second into torch and the host time per step (``profile``: the top functions
    of a cProfile of the steady steps, printed)."""
    scene, movable = tabletop(args.objects)
    options = RenderOptions(width=size, height=size, spp=1, max_depth=2)
    with RenderPipeline(ctx, scene, options, worlds=Worlds(worlds, movable=movable), outputs=("image", "depth"),
                        frames_in_flight=3, scheduler_options={"keep_results": False,
                                                               "completion_thread": thread}) as p:
        transforms = Transforms(worlds, len(movable))
        profiler = None
        host_us: dict[int, float] = {}
        for k in range(args.warmup + args.steps):
            moved = transforms.step(k)
            if k == args.warmup:
                transforms.synchronize()
                start = time.perf_counter()
                if profile:
                    import cProfile

                    profiler = cProfile.Profile()
                    profiler.enable()
            t0 = time.perf_counter()
            out = p.step(transforms=moved)
            host_us[out.index] = (time.perf_counter() - t0) * 1e6
            transforms.consume(out)
        if profiler is not None:
            profiler.disable()
        p.scheduler.drain()
        transforms.synchronize()
        wall = time.perf_counter() - start
        if profiler is not None:
            import pstats

            print(f"\n### cProfile of {args.steps} steps, {worlds} worlds at {size}x{size} (own time)\n")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(profile)
        frames = {f.index: f for f in p.scheduler.stats.frames}
    steady = [host_us[k] for k in sorted(host_us)[args.warmup:]]
    # the host's own work: the step's time less its wait for a free slot (the GPU being behind)
    working = [host_us[k] - 1e3 * (frames[k].fence_wait_ms if k in frames else 0.0)
               for k in sorted(host_us)[args.warmup:]]
    gpu = [frames[k].gpu_ms for k in sorted(host_us)[args.warmup:] if k in frames and frames[k].gpu_ms is not None]
    return {"worlds": worlds, "objects": len(scene.meshes), "size": f"{size}x{size}",
            "thread": "on" if thread else "off",
            "library": transforms.library, "renders_per_s": worlds * args.steps / wall,
            "step_p50_us": statistics.median(steady), "host_p50_us": statistics.median(working),
            "host_p95_us": _p(working, 0.95), "gpu_ms": statistics.median(gpu) if gpu else float("nan")}


def outputs_cost(ctx: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """GPU time per frame of the colour alone, colour and depth, and every output."""
    scene, movable = tabletop(args.objects)
    options = RenderOptions(width=args.size, height=args.size, spp=1, max_depth=2)
    rows = []
    cases = [("image", ("image",)), ("image + depth", ("image", "depth")), ("every output", ALL_OUTPUTS)]
    if args.outputs_detail:  # which outputs cost: each group beside the colour
        cases += [("image + ids", ("image", "mesh_id", "primitive_id", "material_id")),
                  ("image + geometry", ("image", "depth", "distance", "position", "geometric_normal", "uv")),
                  ("image + first-hit sums", ("image", "albedo", "normal", "coverage")),
                  ("image + motion", ("image", "motion")), ("image + radiance, spp, rays",
                                                            ("image", "radiance", "spp", "rays"))]
    for label, outputs in cases:
        with RenderPipeline(ctx, scene, options, worlds=Worlds(args.outputs_worlds, movable=movable), outputs=outputs,
                            frames_in_flight=3, scheduler_options={"keep_results": False}) as p:
            for _ in range(args.warmup + args.steps):
                p.step().release()
            p.scheduler.drain()
            gpu = [f.gpu_ms for f in p.scheduler.stats.frames[-args.steps:] if f.gpu_ms is not None]
        rows.append({"outputs": label, "count": len(outputs), "gpu_ms": statistics.median(gpu)})
    for row in rows:
        row["ratio"] = row["gpu_ms"] / rows[0]["gpu_ms"]
    return rows


def stills(ctx: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Wall time per seed of a 256 x 256 still, one thread per pixel against the automatic lanes."""
    rows = []
    for lanes in (1, 0):
        options = RenderOptions(width=256, height=256, spp=args.still_spp, max_depth=8, sample_lanes=lanes)
        with RenderPipeline(ctx, diffuse_sphere(), options, outputs=("radiance",)) as p:
            p.render()  # warm: compiled, compacted, allocated
            times = []
            for seed in range(args.seeds):
                p.options = RenderOptions(width=256, height=256, spp=args.still_spp, max_depth=8, sample_lanes=lanes,
                                          seed=seed)
                start = time.perf_counter()
                p.render()
                times.append((time.perf_counter() - start) * 1e3)
            used = p.still_lanes(args.still_spp)
        rows.append({"threads": "one per pixel" if lanes == 1 else "lanes (automatic)", "lanes": used,
                     "ms_per_seed": statistics.median(times), "gpu_ms": p.last_render_ms,
                     "msamples_per_s": 256 * 256 * args.still_spp / statistics.median(times) / 1e3,
                     "reference": "ours 30.3, Mitsuba 3 17.0 ms (issue)"})
    return rows


def incoherent_ceiling(ctx: Any, accel: Any, box: tuple[np.ndarray, np.ndarray], rays: int) -> float:
    """Rays per second of the ray caster's program over uniformly random rays in ``box`` (GPU time, median of 5)."""
    from optixasync.accel import RayCaster
    from optixasync.accel._raycast import RAYCAST_PARAMS  # the caster's own launch, without its host copies
    from optixasync.cuda import GpuSpan, create_stream, elapsed_ms, synchronize

    rng = np.random.default_rng(0)
    origins = rng.uniform(box[0], box[1], (rays, 3)).astype(np.float32)
    directions = rng.normal(size=(rays, 3))
    directions = (directions / np.linalg.norm(directions, axis=1, keepdims=True)).astype(np.float32)
    caster = RayCaster(ctx)
    stream = create_stream()
    accel.ready.order(stream)
    o, d = ctx.upload(origins, stream), ctx.upload(directions, stream)
    outputs = [ctx.memory.empty((rays,), dtype, stream) for dtype in (np.float32, np.int32, np.int32)]
    params = np.zeros((), RAYCAST_PARAMS)
    params["origins"], params["directions"] = o.data.ptr, d.data.ptr
    params["t"], params["prim"], params["inst"] = (int(a.data.ptr) for a in outputs)
    params["handle"], params["count"], params["tmin"], params["tmax"] = accel.handle, rays, 0.0, 1e30
    device = ctx.upload(params, stream)
    spans = []
    for _ in range(6):
        span = GpuSpan.begin(stream)
        caster.pipeline.launch(caster.sbt, device, rays, stream=stream)
        span.stop(stream)
        spans.append(span)
    synchronize(spans[-1].end, "waiting for the ray casts")
    ms = statistics.median(elapsed_ms(s.start, s.end) for s in spans[1:])
    return rays / (ms * 1e-3)


def _box(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    points = []
    for mesh in scene.meshes:
        v = np.asarray(mesh.vertices, np.float64)
        points.append(v @ mesh.transform[:, :3].T + mesh.transform[:, 3] if mesh.transform is not None else v)
    points = np.concatenate(points)
    return points.min(axis=0), points.max(axis=0)


def rays_per_second(ctx: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The path tracer's rays per second (its counter over a still's GPU time) beside the incoherent ceiling."""
    rows = []
    for name, scene in (("Cornell box", cornell_box()), ("material scene", material_scene())):
        options = RenderOptions(width=args.rays_size, height=args.rays_size, spp=args.rays_spp, max_depth=8)
        with RenderPipeline(ctx, scene, options, views=Views.cameras([scene.camera]), outputs=("radiance", "rays"),
                            readback=("rays",)) as p:
            p.still(2).release()  # warm
            with p.still() as result:
                counts = np.asarray(result["rays"], np.float64).sum(axis=0)
            gpu_ms = p.last_render_ms
            ceiling = incoherent_ceiling(ctx, p.device_scene.accel, _box(scene), args.ceiling_rays)
        total = float(counts.sum())
        rays = total / (gpu_ms * 1e-3)
        rows.append({"scene": name, "camera": counts[0], "bounce": counts[1], "shadow": counts[2],
                     "gpu_ms": gpu_ms, "grays_per_s": rays / 1e9, "ceiling_grays_per_s": ceiling / 1e9,
                     "fraction": rays / ceiling})
    return rows


PARTS = {"rl": rl_loop, "outputs": outputs_cost, "stills": stills, "rays": rays_per_second}

COLUMNS = {
    "rl": [("worlds", "worlds", "d"), ("objects", "meshes", "d"), ("size", "size", ""),
           ("thread", "completion thread", ""), ("library", "into", ""),
           ("renders_per_s", "renders/s", ",.0f"), ("step_p50_us", "step p50 us", ".1f"),
           ("host_p50_us", "host p50 us", ".1f"),
           ("host_p95_us", "host p95 us", ".1f"), ("gpu_ms", "GPU ms/frame", ".3f")],
    "outputs": [("outputs", "outputs", ""), ("count", "n", "d"), ("gpu_ms", "GPU ms/frame", ".3f"),
                ("ratio", "x colour", ".3f")],
    "stills": [("threads", "threads", ""), ("lanes", "lanes", "d"), ("ms_per_seed", "ms/seed", ".2f"),
               ("gpu_ms", "GPU ms", ".2f"), ("msamples_per_s", "Msamples/s", ".0f"), ("reference", "reference", "")],
    "rays": [("scene", "scene", ""), ("camera", "camera", ",.0f"), ("bounce", "bounce", ",.0f"),
             ("shadow", "shadow", ",.0f"), ("gpu_ms", "GPU ms", ".2f"), ("grays_per_s", "Grays/s", ".3f"),
             ("ceiling_grays_per_s", "ceiling Grays/s", ".3f"), ("fraction", "of ceiling", ".2f")],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="rl,outputs,stills,rays", help="comma-separated: " + ",".join(PARTS))
    parser.add_argument("--worlds", default="4096", help="rl: worlds, comma-separated (1024,4096,16384)")
    parser.add_argument("--sizes", default=None, help="rl: image sizes, comma-separated (default: --size)")
    parser.add_argument("--completion-thread", choices=("on", "off", "both"), default="on",
                        help="rl: the scheduler's completion thread (both: a row each, to see its share of the "
                             "host time)")
    parser.add_argument("--outputs-detail", action="store_true",
                        help="outputs: also each group of outputs beside the colour (which ones cost)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="rl: print the N functions of largest own time under cProfile (first case)")
    parser.add_argument("--outputs-worlds", type=int, default=1024)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--objects", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--still-spp", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--rays-size", type=int, default=512)
    parser.add_argument("--rays-spp", type=int, default=16)
    parser.add_argument("--ceiling-rays", type=int, default=1 << 24)
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown parts {unknown}: the parts are {', '.join(PARTS)}")
    require_gpu()
    report: dict[str, Any] = {}
    with optixasync.Context() as ctx:
        for part in parts:
            rows = PARTS[part](ctx, args)
            rows = rows if isinstance(rows, list) else [rows]
            report[part] = rows
            print(f"\n## {part}\n")
            print(table(rows, COLUMNS[part]))
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, default=str)


if __name__ == "__main__":
    run_main(main)
