"""Path tracer benchmark: offline speed, the progressive frame pipeline, an animated 1M-triangle cloth, Mitsuba.

    python benchmarks/bench_pathtracer.py [--quick] [--out bench_out/pathtracer.json] [--image cornell_box.png]

(a) Offline: the Cornell box at 1024x1024, 64 spp, max depth 8, rendered by
    ``RenderPipeline.render`` (one launch); Msamples/s = width * height * spp /
    GPU time of the launch (``last_launch_ms``, from CUDA events around it).
    2 warm-up runs, then the median (and min/max) of ``--runs`` runs.
(b) Progressive: 512x512, 1 spp per frame, through the FrameScheduler (N = 2
    and 3), ``--frames`` frames after ``--warmup``, with and without reading
    the image back every frame: fps, frames in flight, run-ahead, fence waits,
    submit time, GPU time per frame and the GPU busy fraction (frame GPU time
    over host wall time; over GPU time plus the idle gaps; and over the GPU
    span of the frames on the GPU's clock).
(c) Animated cloth: ~1M triangles moved by a CUDA kernel and refitted every
    frame, 512x512 at 1 spp per frame, N = 2.
(d) Mitsuba 3 (if installed): the same Cornell box (same transforms, colours,
    light and camera) with the ``cuda_ad_rgb`` variant in this process, at the
    settings of (a); both speeds, their ratio, and both images' mean radiance.

Writes every number to ``--out`` (JSON) and, with ``--image``, the 512x512
256-spp Cornell box. About a minute on an H200 (Mitsuba's first kernel
compilation included); ``--quick`` cuts the frame counts. Without a usable
GPU it prints one line saying why and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import optixasync
from optixasync.cuda import create_stream
from optixasync.io import tonemap_srgb, write_image
from optixasync.render import ClothMotion, RenderOptions, RenderPipeline
from optixasync.scene import ClothAnimation, cornell_box
from optixasync.scene.demo import CORNELL_COLORS, CORNELL_LIGHT_RADIANCE, CORNELL_TRANSFORMS
from optixasync.scheduler import FrameScheduler
from optixasync.testing import require_gpu, run_main


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    """A markdown table: ``columns`` are (key, header, format)."""
    lines = ["| " + " | ".join(h for _, h, _ in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for key, _, fmt in columns:
            value = row.get(key, "-")
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)  # a flag prints as a word
            cells.append(format(value, fmt) if numeric and fmt else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


# -- (a) offline ------------------------------------------------------------------------------------------------------


def offline(ctx: Any, args: argparse.Namespace) -> dict[str, Any]:
    options = RenderOptions(width=args.size, height=args.size, spp=args.spp, max_depth=8)
    stream = create_stream()
    gpu_ms, wall_ms = [], []
    with RenderPipeline(ctx, cornell_box(), options, stream=stream) as pipeline:
        image = None
        for run in range(2 + args.runs):
            start = time.perf_counter()
            image = pipeline.render()  # one launch of all spp (no progress callback); waits for the image
            wall = (time.perf_counter() - start) * 1e3
            if run >= 2:
                gpu_ms.append(float(pipeline.last_launch_ms))
                wall_ms.append(wall)
    samples = args.size * args.size * args.spp
    gpu, wall = spread(gpu_ms), spread(wall_ms)
    return {
        "width": args.size, "height": args.size, "spp": args.spp, "max_depth": 8, "runs": args.runs,
        "gpu_ms": gpu, "wall_ms": wall,
        "msamples_per_s": samples / (gpu["median"] * 1e3),
        "msamples_per_s_best": samples / (gpu["min"] * 1e3),
        "msamples_per_s_wall": samples / (wall["median"] * 1e3),
        "mean_radiance": float(np.mean(image)) if image is not None else float("nan"),
    }


# -- (b) and (c) frames ---------------------------------------------------------------------------------------------


def frame_row(label: str, n: int, summary: dict[str, Any], **extra: Any) -> dict[str, Any]:
    gpu_mean = summary["gpu_ms"]["mean"]
    gap_mean = summary["gap_us"]["mean"]
    busy_gap = gpu_mean / (gpu_mean + gap_mean / 1e3) if gap_mean == gap_mean else float("nan")
    return {
        "config": label, "frames_in_flight_slots": n, "frames": summary["frames"], "fps": summary.get("fps"),
        "in_flight": summary["in_flight"]["mean"], "ahead": summary["ahead"]["mean"],
        "waits_per_frame": summary["waits_per_frame"], "submit_ms": summary["submit_ms"]["median"],
        "submit_ms_p95": summary["submit_ms"]["p95"], "gpu_ms": summary["gpu_ms"]["median"],
        "gap_us": summary["gap_us"]["median"], "gpu_busy": summary["gpu_busy"], "gpu_busy_from_gaps": busy_gap,
        "gpu_utilization": summary.get("gpu_utilization", float("nan")),
        **extra,
    }


def run_frames(ctx: Any, pipeline: Any, stream: Any, n: int, frames: int, warmup: int, readback: bool,
               before_record: Any = None) -> dict[str, Any]:
    """Record ``warmup + frames`` frames of 1 spp; returns the scheduler summary of the last ``frames``."""
    sched = FrameScheduler(ctx, n, params_dtype=pipeline.params_dtype, stream=stream)
    delivered = 0
    try:
        for k in range(warmup + frames):
            with sched.frame() as f:
                if before_record is not None:
                    before_record(k, f)
                pipeline.record(f, 1, readback="image" if readback else None)
            delivered += len(sched.poll())  # results are dropped: the benchmark measures the pipeline
        delivered += len(sched.drain())
    finally:
        sched.close()
    assert delivered == warmup + frames, (delivered, warmup + frames)
    return sched.stats.summary(skip=warmup)


def progressive(ctx: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    stream = create_stream()
    rows = []
    options = RenderOptions(width=512, height=512, spp=1, max_depth=8)
    with RenderPipeline(ctx, cornell_box(), options, stream=stream) as pipeline:
        for readback in (True, False):
            for n in (2, 3):
                pipeline.reset()
                summary = run_frames(ctx, pipeline, stream, n, args.frames, args.warmup, readback)
                label = f"N={n}, {'readback every frame' if readback else 'no readback'}"
                rows.append(frame_row(label, n, summary, readback=readback))
    return rows


def cloth(ctx: Any, args: argparse.Namespace) -> dict[str, Any]:
    animation = ClothAnimation(args.cells)
    scene = animation.scene()
    stream = create_stream()
    options = RenderOptions(width=512, height=512, spp=1, max_depth=8)
    motion = ClothMotion(animation)
    with RenderPipeline(ctx, scene, options, stream=stream) as pipeline:
        def move(k: int, frame: Any) -> None:
            motion.move(pipeline, k / 60.0, frame)  # the vertex kernel and the refit, on the frame's stream
            pipeline.reset()  # every frame is a new image of the moved cloth

        frames = max(args.frames // 2, 50)
        summary = run_frames(ctx, pipeline, stream, 2, frames, max(args.warmup // 2, 10), True, move)
    return frame_row(f"cloth {animation.num_triangles:,} triangles, N=2", 2, summary,
                     triangles=animation.num_triangles)


# -- (d) Mitsuba ----------------------------------------------------------------------------------------------------


def mitsuba_cornell_dict(mi: Any, width: int, height: int, spp: int, max_depth: int = 8) -> dict[str, Any]:
    """The Cornell box of :func:`optixasync.scene.cornell_box` as a Mitsuba 3 scene dictionary."""
    scene = cornell_box()
    camera = scene.camera
    transform = mi.ScalarTransform4f

    def rgb(value: Any) -> dict[str, Any]:
        return {"type": "rgb", "value": [float(c) for c in value]}

    def placed(shape: str, name: str, bsdf: str) -> dict[str, Any]:
        return {"type": shape, "to_world": transform(CORNELL_TRANSFORMS[name].tolist()),
                "bsdf": {"type": "ref", "id": bsdf}}

    light = placed("rectangle", "light", "white")
    light["emitter"] = {"type": "area", "radiance": rgb(CORNELL_LIGHT_RADIANCE)}
    return {
        "type": "scene",
        "integrator": {"type": "path", "max_depth": max_depth, "rr_depth": 5},
        "sensor": {
            "type": "perspective", "fov_axis": "smaller", "fov": float(camera.fov),
            "to_world": transform().look_at(origin=list(camera.eye), target=list(camera.target), up=list(camera.up)),
            "sampler": {"type": "independent", "sample_count": spp},
            "film": {"type": "hdrfilm", "width": width, "height": height, "rfilter": {"type": "box"},
                     "pixel_format": "rgb"},
        },
        "white": {"type": "diffuse", "reflectance": rgb(CORNELL_COLORS["white"])},
        "red": {"type": "diffuse", "reflectance": rgb(CORNELL_COLORS["red"])},
        "green": {"type": "diffuse", "reflectance": rgb(CORNELL_COLORS["green"])},
        "floor": placed("rectangle", "floor", "white"),
        "ceiling": placed("rectangle", "ceiling", "white"),
        "back": placed("rectangle", "back", "white"),
        "green_wall": placed("rectangle", "green_wall", "green"),
        "red_wall": placed("rectangle", "red_wall", "red"),
        "small_box": placed("cube", "small_box", "white"),
        "large_box": placed("cube", "large_box", "white"),
        "light": light,
    }


def mitsuba(args: argparse.Namespace, ours: dict[str, Any], variant: str = "cuda_ad_rgb") -> dict[str, Any]:
    try:
        import drjit as dr
        import mitsuba as mi
    except ImportError:
        return {"available": False, "reason": "mitsuba is not installed (pip install mitsuba)"}
    try:
        mi.set_variant(variant)
    except Exception as exc:  # the variant needs CUDA and a matching driver
        return {"available": False, "reason": f"mitsuba variant {variant} unavailable: {exc}"}
    try:
        scene = mi.load_dict(mitsuba_cornell_dict(mi, args.size, args.size, args.spp))
        times = []
        image = None
        for run in range(2 + args.runs):  # the first run compiles Mitsuba's kernel; later runs reuse it
            dr.sync_thread()
            start = time.perf_counter()
            image = mi.render(scene, spp=args.spp, seed=0)
            dr.eval(image)
            dr.sync_thread()
            if run >= 2:
                times.append((time.perf_counter() - start) * 1e3)
    except Exception as exc:  # an incomplete installation (a missing plugin) must not cost the other tables
        return {"available": False, "reason": f"mitsuba failed: {type(exc).__name__}: {exc}"}
    wall = spread(times)
    samples = args.size * args.size * args.spp
    theirs = samples / (wall["median"] * 1e3)
    mean = float(np.mean(np.asarray(image)[..., :3]))
    return {
        "available": True, "variant": variant, "version": mi.__version__, "wall_ms": wall,
        "msamples_per_s": theirs, "mean_radiance": mean,
        "ours_over_mitsuba_gpu": ours["msamples_per_s"] / theirs,
        "ours_over_mitsuba_wall": ours["msamples_per_s_wall"] / theirs,
        "mean_radiance_ratio": ours["mean_radiance"] / mean if mean > 0 else float("nan"),
    }


# -- main ------------------------------------------------------------------------------------------------------------


def device_info() -> dict[str, Any]:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    return {"gpu": props["name"].decode(), "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
            "optixasync": optixasync.__version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer frames and runs (a smoke run)")
    parser.add_argument("--out", default="bench_out/pathtracer.json", help="JSON of every number")
    parser.add_argument("--image", default=None, metavar="PNG", help="also write the 512x512 256-spp Cornell box")
    parser.add_argument("--runs", type=int, default=None, help="timed offline runs (default 7, quick 5)")
    parser.add_argument("--frames", type=int, default=None, help="measured progressive frames (default 500)")
    parser.add_argument("--warmup", type=int, default=None, help="warm-up frames (default 50)")
    parser.add_argument("--cells", type=int, default=708, help="cloth cells per side (default 708: 1,002,528 triangles)")
    parser.add_argument("--no-mitsuba", action="store_true", help="skip the Mitsuba comparison")
    args = parser.parse_args(argv)
    args.runs = args.runs or (5 if args.quick else 7)
    args.frames = args.frames or (150 if args.quick else 500)
    args.warmup = args.warmup or (20 if args.quick else 50)
    args.size, args.spp = 1024, 64
    if args.runs < 5 or args.frames < 2:
        parser.error("--runs must be >= 5 and --frames >= 2")
    require_gpu()

    start = time.perf_counter()
    report: dict[str, Any] = {"settings": {k: v for k, v in vars(args).items()}}
    with optixasync.Context() as ctx:
        report["device"] = device_info()
        a = report["offline"] = offline(ctx, args)
        print(f"## Path tracer on {report['device']['gpu']}\n")
        print(f"(a) Cornell box {a['width']}x{a['height']}, {a['spp']} spp, max depth 8 "
              f"(median of {a['runs']} runs after 2 warm-ups)\n")
        print(table([{"what": "optixasync RenderPipeline.render",
                      **{k: a["gpu_ms"][k] for k in ("median", "min", "max")},
                      "wall": a["wall_ms"]["median"], "ms": a["msamples_per_s"], "best": a["msamples_per_s_best"],
                      "msw": a["msamples_per_s_wall"]}],
                    [("what", "renderer", ""), ("median", "GPU ms (median)", ".2f"), ("min", "min", ".2f"),
                     ("max", "max", ".2f"), ("wall", "wall ms (median)", ".2f"), ("ms", "Msamples/s (GPU)", ".0f"),
                     ("best", "best Msamples/s", ".0f"), ("msw", "Msamples/s (wall)", ".0f")]))

        rows = report["progressive"] = progressive(ctx, args)
        print(f"\n(b) Progressive 512x512, 1 spp/frame, {args.frames} frames after {args.warmup} warm-up\n")
        frame_columns = [("config", "config", ""), ("fps", "fps", ".0f"), ("in_flight", "frames in flight", ".2f"),
                         ("ahead", "ahead", ".2f"), ("waits_per_frame", "waits/frame", ".2f"),
                         ("submit_ms", "submit ms (p50)", ".3f"), ("submit_ms_p95", "p95", ".3f"),
                         ("gpu_ms", "GPU ms/frame", ".3f"), ("gap_us", "GPU gap us (p50)", ".1f"),
                         ("gpu_busy", "GPU busy (wall)", ".1%"), ("gpu_busy_from_gaps", "busy (gaps)", ".1%"),
                         ("gpu_utilization", "busy (GPU clock)", ".1%")]
        print(table(rows, frame_columns))

        c = report["cloth"] = cloth(ctx, args)
        print(f"\n(c) Animated cloth, {c['triangles']:,} triangles, vertex kernel + refit + 512x512 1 spp + readback "
              "every frame\n")
        print(table([c], frame_columns))

        if args.image:
            still = RenderOptions(width=512, height=512, spp=256, max_depth=8)
            with RenderPipeline(ctx, cornell_box(), still) as pipeline:
                path = write_image(args.image, tonemap_srgb(pipeline.render()))
            report["image"] = str(path)
    # Mitsuba last, after our context is closed: the two renderers never share the GPU at the same time.
    if args.no_mitsuba:
        d = {"available": False, "reason": "skipped (--no-mitsuba)"}
    else:
        d = mitsuba(args, a)
    report["mitsuba"] = d
    print("\n(d) Mitsuba 3 comparison, same scene and settings as (a)\n")
    if d["available"]:
        print(table([{"r": "optixasync (GPU time)", "ms": a["gpu_ms"]["median"], "s": a["msamples_per_s"],
                      "m": a["mean_radiance"]},
                     {"r": "optixasync (wall time)", "ms": a["wall_ms"]["median"], "s": a["msamples_per_s_wall"],
                      "m": a["mean_radiance"]},
                     {"r": f"Mitsuba {d['version']} {d['variant']} (wall time)", "ms": d["wall_ms"]["median"],
                      "s": d["msamples_per_s"], "m": d["mean_radiance"]}],
                    [("r", "renderer", ""), ("ms", "ms (median)", ".2f"), ("s", "Msamples/s", ".0f"),
                     ("m", "mean radiance", ".4f")]))
        print(f"\noptixasync / Mitsuba: {d['ours_over_mitsuba_gpu']:.2f}x (our GPU time), "
              f"{d['ours_over_mitsuba_wall']:.2f}x (both wall time); mean radiance ratio {d['mean_radiance_ratio']:.4f}")
    else:
        print(d["reason"])
    report["elapsed_s"] = time.perf_counter() - start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=json_default))
    print(f"\nwrote {out} ({report['elapsed_s']:.0f} s)")
    return 0


def json_default(value: Any) -> Any:
    """``json.dumps``'s ``default`` for a report: numpy scalars as numbers, arrays (images) left out, else text."""
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return None
    return str(value)


if __name__ == "__main__":
    run_main(main)
