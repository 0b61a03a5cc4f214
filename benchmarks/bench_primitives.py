"""Spheres and curves in the path tracer: a 10M-sphere point cloud and a 1M-strand hair asset, built and rendered.

    python benchmarks/bench_primitives.py [--quick] [--points 10000000] [--strands 1000000] [--out bench_out/primitives.json]

For each scene (the point cloud: spheres of random radius and colour in a ball over a floor; the hair: a fur ball
of cubic B-spline strands of 8 control points, tapering, over a floor), it reports:

* the time to make the render pipeline (scene tables, one GAS per primitive kind, the IAS, the program) on the
  host, and the GPU time of each GAS build (``GeometryAccel.build_ms``);
* primary rays per second: ``max_depth = 1`` traces exactly one ray per sample (the camera ray), so
  ``width * height * spp / GPU time`` (``RenderPipeline.last_render_ms``);
* path samples per second at ``max_depth = 4`` (a camera path with next-event estimation: up to 7 rays).

``--quick`` uses 1M spheres and 100k strands. Without a usable GPU it prints one line saying why and exits with
status 1.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from optixasync.testing import require_gpu, run_main

FLOOR = np.array([[6.0, 0, 0, 0], [0, 0, 6.0, -1.0], [0, -6.0, 0, 0]])


def point_cloud(count: int, seed: int = 1):
    """``count`` spheres in the unit ball, radius 0.5 to 1.5 times the mean spacing, coloured by position."""
    from optixasync.scene import Material, Spheres

    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(count, 3)).astype(np.float32)
    centers *= (rng.random((count, 1), np.float32) ** (1 / 3)) / np.linalg.norm(centers, axis=1, keepdims=True)
    spacing = float(count) ** (-1 / 3)
    radii = rng.uniform(0.25 * spacing, 0.75 * spacing, count).astype(np.float32)
    colors = np.clip(0.5 + 0.5 * centers, 0.02, 1.0)
    return Spheres(centers, radii, colors, Material((0.9, 0.9, 0.9)), name="cloud")


def fur(count: int, points: int = 8, seed: int = 2):
    """``count`` cubic B-spline strands rooted on the unit sphere, drooping, radius 0.004 to 0.0005."""
    from optixasync.scene import Curves, Material, strand_segments

    rng = np.random.default_rng(seed)
    roots = rng.normal(size=(count, 3)).astype(np.float32)
    roots /= np.linalg.norm(roots, axis=1, keepdims=True)
    s = np.linspace(0.0, 1.0, points, dtype=np.float32)[None, :, None]
    length = rng.uniform(0.25, 0.4, (count, 1, 1)).astype(np.float32)
    strands = roots[:, None, :] * (1.0 + s * length) + np.array([0, -1, 0], np.float32) * (s * length) ** 2
    radii = np.tile(np.linspace(0.004, 0.0005, points, dtype=np.float32), count)
    segments = strand_segments([points] * count, "cubic_bspline")
    return Curves(strands.reshape(-1, 3), radii, segments, "cubic_bspline",
                  material=Material((0.55, 0.35, 0.2)), name="fur")


def measure(ctx, name: str, shape, args) -> dict:
    from optixasync.render import RenderOptions, RenderPipeline
    from optixasync.scene import Camera, DirectionalLight, Environment, Material, Scene, rectangle

    scene = Scene([rectangle(FLOOR, Material((0.5, 0.5, 0.5)))], Camera((0.0, 0.6, 3.2), (0.0, 0.0, 0.0), fov=40.0),
                  Environment(radiance=(0.3, 0.35, 0.45)), [DirectionalLight((-0.3, -1.0, -0.4), (2.0, 2.0, 2.0))],
                  shapes=[shape])
    options = RenderOptions(width=args.width, height=args.height, spp=args.spp, max_depth=1)
    start = time.perf_counter()
    with RenderPipeline(ctx, scene, options) as pipeline:
        setup_s = time.perf_counter() - start
        pipeline.render(1)  # warm-up: the structures are built by now, their GPU times known
        builds = {gas.kind: gas.build_ms for gas in pipeline.device_scene.geometries}
        pipeline.render(args.spp)
        primary_ms = pipeline.last_render_ms
        pipeline.options = RenderOptions(width=args.width, height=args.height, spp=args.spp, max_depth=4)
        pipeline.render(args.spp)
        path_ms = pipeline.last_render_ms
    samples = args.width * args.height * args.spp
    row = {"scene": name, "primitives": shape.num_primitives, "setup_s": setup_s, "build_ms": builds,
           "primary_ms": primary_ms, "primary_mrays_per_s": samples / primary_ms / 1e3,
           "path_ms": path_ms, "path_msamples_per_s": samples / path_ms / 1e3}
    print(f"{name:>12}: {shape.num_primitives:>12,} primitives | set-up {setup_s:6.2f} s | GAS build "
          + ", ".join(f"{k} {v:.1f} ms" for k, v in builds.items() if v is not None)
          + f" | primary {row['primary_mrays_per_s']:8.1f} Mrays/s | paths (depth 4) "
          f"{row['path_msamples_per_s']:8.1f} Msamples/s", flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--strands", type=int, default=1_000_000)
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--spp", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="1M spheres and 100k strands")
    parser.add_argument("--out", default="bench_out/primitives.json")
    args = parser.parse_args()
    require_gpu()
    import optixasync

    if args.quick:
        args.points, args.strands = min(args.points, 1_000_000), min(args.strands, 100_000)
    report = {"args": vars(args), "rows": []}
    with optixasync.Context() as ctx:
        report["rows"].append(measure(ctx, "point cloud", point_cloud(args.points), args))
        report["rows"].append(measure(ctx, "hair", fur(args.strands), args))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    run_main(main)
