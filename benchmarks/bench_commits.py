"""Speed by commit: the same scenes rendered by several trees of the project, each in its own process, in one run.

    python benchmarks/bench_commits.py [--commit af8dcb6 --commit 195a6c2 ...] [--tree NAME=PATH ...]
                                       [--scene cornell64 ...] [--runs 5] [--mitsuba] [--out bench_out/commits.json]

Each ``--commit`` is extracted with ``git archive`` (its ``optixasync/`` and ``kernels/``) under ``.trees/<commit>``
(``--trees-dir``), unless that folder already holds it; ``--tree NAME=PATH`` names a tree already on disk (a
machine without the repository's history gets the trees that way). The working tree always runs, last, as
``work`` (and, with ``--specialize``, once more as ``work+spec`` with ``OPTIXASYNC_SPECIALIZE=1``: the path
tracer compiled for each scene's features). Every tree renders in a child process of its own, with that tree first on ``sys.path``, its own PTX
cache and the tree's own API (``PathTracer`` before round 3, ``RenderPipeline`` after); the children run one
after the other, so they never share the GPU.

Scenes (``--scene``, repeatable; default all):

============== ==========================================================================================
``cornell64``  the Cornell box at 1024x1024, 64 spp, max depth 8: one launch, GPU time from CUDA events
``cornell256`` the same at 256 spp
``material64`` the material scene (every BSDF family, textures, the environment) at 1024x1024, 64 spp
``material256`` the same at 256 spp
``gltf64``     a textured glTF asset (base colour, normal and metallic-roughness maps) at 1024x1024, 64 spp
``shapes64``   spheres and cubic B-spline curves over a floor at 1024x1024, 64 spp
``prog512``    progressive 512x512, 1 spp per frame, 2 frames in flight, the image read back every frame: fps
``prog1024``   the same at 1024x1024
============== ==========================================================================================

Offline scenes: 2 warm-up renders, then the median of ``--runs`` renders' launch times; Msamples/s = pixels *
spp / that median. Progressive: ``--frames`` frames after 20 warm-up frames; fps from the scheduler's wall clock.
A scene a tree cannot render (no such loader or primitive yet) prints ``-`` with the reason in the JSON.

With ``--mitsuba`` (Mitsuba 3 importable), one more child renders the same scenes with ``cuda_ad_rgb``, converted
by the working tree's :func:`~optixasync.testing.mitsuba_scene_dict` (the converter the parity tests use):
wall time of ``mi.render`` after ``dr.sync_thread``, median of ``--runs`` after 2 warm-ups; its progressive loop
renders 1 spp and copies the image to the host each frame.

The table prints Msamples/s (fps for progressive) per tree and scene, the ratio to the first tree and, with
Mitsuba, the ratio to it. Without a usable GPU it prints one line saying why and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENES = ("cornell64", "cornell256", "material64", "material256", "gltf64", "shapes64", "prog512", "prog1024")
OFFLINE = {"cornell64": ("cornell", 64), "cornell256": ("cornell", 256), "material64": ("material", 64),
           "material256": ("material", 256), "gltf64": ("gltf", 64), "shapes64": ("shapes", 64)}
PROGRESSIVE = {"prog512": 512, "prog1024": 1024}
SIZE = 1024


# -- the parent: trees, children, the table ----------------------------------------------------------------------------


def extract(commit: str, trees_dir: Path) -> Path:
    """``commit``'s ``optixasync/`` and ``kernels/`` under ``trees_dir/commit`` (kept from an earlier run)."""
    dest = trees_dir / commit
    if (dest / "optixasync").is_dir():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "optixasync", "kernels"],
                             check=True, capture_output=True).stdout
    import io

    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def run_child(name: str, path: Path, args: argparse.Namespace, asset: Path, mitsuba: bool = False) -> dict[str, Any]:
    """One tree's (or Mitsuba's) child process; its last line of output is the JSON of its results.

    A name ending in ``+spec`` runs its tree with programs specialized per scene (``OPTIXASYNC_SPECIALIZE=1``).
    """
    # the tree first; what the caller's path held (extra packages) after it
    extra = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path), *([extra] if extra else [])]), PYTHONUNBUFFERED="1",
               OPTIXASYNC_CACHE_DIR=str(Path(args.cache_root) / name),
               OPTIXASYNC_SPECIALIZE="1" if name.endswith("+spec") else "0")
    cmd = [sys.executable, __file__, "--child", str(path), "--runs", str(args.runs), "--frames", str(args.frames),
           "--asset", str(asset), *(["--child-mitsuba"] if mitsuba else []),
           *[a for s in args.scene for a in ("--scene", s)]]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.child_timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: {' | '.join(tail)}"}
    result = json.loads(lines[-1])
    result["child_s"] = round(time.perf_counter() - start, 1)
    return result


def cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def ratio(value: float | None, base: float | None) -> str:
    return "-" if value is None or not base else f"{value / base:.2f}x"


def print_table(results: dict[str, dict[str, Any]], scenes: list[str]) -> None:
    """Msamples/s (fps for progressive) per tree, with the ratio to the first tree and to Mitsuba."""
    names = [n for n in results if n != "mitsuba"]
    first = names[0] if names else None
    mitsuba = results.get("mitsuba", {}).get("scenes", {})
    header = ["tree", *[f"{s} ({'fps' if s in PROGRESSIVE else 'Ms/s'})" for s in scenes]]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))

    def value(name: str, scene: str) -> float | None:
        return results.get(name, {}).get("scenes", {}).get(scene, {}).get("value")

    for name in [*names, *(["mitsuba"] if mitsuba else [])]:
        print("| " + " | ".join([name, *[cell(value(name, s)) for s in scenes]]) + " |")
    for label, base_of in ((f"ratio to {first}", lambda s: value(first, s)),
                           *((("ratio to Mitsuba", lambda s: value("mitsuba", s)),) if mitsuba else ())):
        print(f"\n{label}:")
        print("| tree | " + " | ".join(scenes) + " |")
        print("|" + "---|" * (len(scenes) + 1))
        for name in names:
            print("| " + " | ".join([name, *[ratio(value(name, s), base_of(s)) for s in scenes]]) + " |")
    for name, result in results.items():
        if "error" in result:
            print(f"{name}: {result['error']}")
        for scene, entry in result.get("scenes", {}).items():
            if entry.get("value") is None and scene in scenes:
                print(f"{name} {scene}: {entry.get('why', '?')}")


def parent(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT))
    from optixasync.testing import require_gpu

    status = require_gpu("bench_commits.py")
    if status is not None:
        return status
    trees: dict[str, Path] = {}
    for spec in args.tree:
        name, _, path = spec.partition("=")
        trees[name] = Path(path).resolve()
    for commit in args.commit:
        trees[commit] = extract(commit, Path(args.trees_dir))
    trees["work"] = ROOT
    if args.specialize:
        trees["work+spec"] = ROOT
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    asset = out.parent / "commits_textured.glb"
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_textures import write_textured_asset

    write_textured_asset(asset, 1024)
    results: dict[str, dict[str, Any]] = {}
    for repeat in range(args.repeat):
        for name, path in trees.items():
            key = name if repeat == 0 else f"{name} (again)"
            if repeat and name not in args.again:
                continue
            results[key] = run_child(name, path, args, asset)
            print(f"{key}: {json.dumps(results[key].get('scenes', results[key]))}", flush=True)
    if args.mitsuba:
        results["mitsuba"] = run_child("mitsuba", ROOT, args, asset, mitsuba=True)
        print(f"mitsuba: {json.dumps(results['mitsuba'].get('scenes', results['mitsuba']))}", flush=True)
    out.write_text(json.dumps(results, indent=1))
    print()
    print_table(results, list(args.scene))
    return 0


# -- the children ------------------------------------------------------------------------------------------------------


def shapes_scene() -> Any:
    """Spheres and cubic B-spline curves standing on a floor, lit by the Cornell box's ceiling light."""
    import numpy as np

    from optixasync.scene import Curves, Material, Spheres, cornell_box

    scene = cornell_box()
    rng = np.random.default_rng(7)
    centers = rng.uniform(-0.8, 0.8, (2000, 3)).astype(np.float32)
    centers[:, 1] = rng.uniform(-0.9, 0.2, 2000)
    radii = rng.uniform(0.01, 0.04, 2000).astype(np.float32)
    scene.add(Spheres(centers, radii, material=Material((0.8, 0.6, 0.3)), name="balls"))
    from optixasync.scene import strand_segments

    strands, points_per = 300, 7
    base = rng.uniform(-0.7, 0.7, (strands, 1, 3)).astype(np.float32)
    base[..., 1] = -1.0
    rise = np.linspace(0.0, 0.8, points_per, dtype=np.float32)[None, :, None] * np.array([0.1, 1.0, 0.05], np.float32)
    points = (base + rise).reshape(-1, 3)
    segments = strand_segments([points_per] * strands, "cubic_bspline")
    scene.add(Curves(points, np.full(len(points), 0.006, np.float32), segments, "cubic_bspline",
                     material=Material((0.2, 0.5, 0.9)), name="strands"))
    return scene


def child_scene(kind: str, asset: str) -> Any:
    import optixasync.scene as s

    if kind == "cornell":
        return s.cornell_box()
    if kind == "material":
        if not hasattr(s, "material_scene"):
            raise LookupError("no material scene in this tree")
        return s.material_scene()
    if kind == "gltf":
        if not hasattr(s, "load_gltf"):
            raise LookupError("no glTF loader in this tree")
        scene = s.load_gltf(asset)
        unlit = not getattr(scene, "emitters", None) and not getattr(scene, "lights", None)
        if unlit and getattr(scene, "environment", None) is None and hasattr(s, "Environment"):
            # the asset has no lights: a constant white sky, as `optixasync render` gives such a file
            scene.environment = s.Environment(radiance=(1.0, 1.0, 1.0), name="default")
        return scene
    if not hasattr(s, "Curves"):
        raise LookupError("no spheres or curves in this tree")
    return shapes_scene()


def child(args: argparse.Namespace) -> int:
    import optixasync
    import optixasync.render as r
    from optixasync.cuda import create_stream

    tracer_class = getattr(r, "RenderPipeline", None) or r.PathTracer
    results: dict[str, Any] = {"tree": args.child, "api": tracer_class.__name__, "scenes": {}}
    with optixasync.Context() as ctx:
        stream = create_stream()
        for scene_name in args.scene:
            try:
                if scene_name in OFFLINE:
                    kind, spp = OFFLINE[scene_name]
                    spp = int(os.environ.get("BENCH_COMMITS_SPP", spp))  # the profiler's shorter launches
                    scene = child_scene(kind, args.asset)
                    options = r.RenderOptions(width=SIZE, height=SIZE, spp=spp, max_depth=8)
                    ms = []
                    with tracer_class(ctx, scene, options, stream=stream) as tracer:
                        for run in range(2 + args.runs):
                            tracer.render()
                            if run >= 2:
                                ms.append(float(tracer.last_launch_ms))
                    median = statistics.median(ms)
                    entry = {"value": SIZE * SIZE * spp / (median * 1e3), "launch_ms": ms, "median_ms": median}
                else:
                    entry = child_progressive(ctx, tracer_class, r, stream, PROGRESSIVE[scene_name], args.frames)
            except Exception as exc:  # a tree without the feature, or one that fails: reported, the rest goes on
                entry = {"value": None, "why": f"{type(exc).__name__}: {exc}"[:300]}
            results["scenes"][scene_name] = entry
            print(scene_name, entry.get("value"), file=sys.stderr, flush=True)
    print(json.dumps(results))
    return 0


def child_progressive(ctx: Any, tracer_class: Any, r: Any, stream: Any, size: int, frames: int) -> dict[str, Any]:
    from optixasync.scene import cornell_box
    from optixasync.scheduler import FrameScheduler

    options = r.RenderOptions(width=size, height=size, spp=1, max_depth=8)
    warmup = 20
    with tracer_class(ctx, cornell_box(), options, stream=stream) as tracer:
        sched = FrameScheduler(ctx, 2, params_dtype=tracer.params_dtype, stream=stream)
        delivered = 0
        try:
            for _ in range(warmup + frames):
                with sched.frame() as f:
                    tracer.record(f, 1, readback="image")
                delivered += len(sched.poll())
            delivered += len(sched.drain())
        finally:
            sched.close()
        summary = sched.stats.summary(skip=warmup)
    if delivered != warmup + frames:
        raise RuntimeError(f"{delivered} of {warmup + frames} frames delivered")
    return {"value": summary["fps"], "gpu_ms": summary["gpu_ms"]["median"]}


def mitsuba_child(args: argparse.Namespace) -> int:
    import drjit as dr
    import numpy as np

    from optixasync.testing import import_mitsuba, mitsuba_scene_dict

    mi = import_mitsuba("cuda_ad_rgb")
    results: dict[str, Any] = {"tree": "mitsuba", "version": mi.__version__, "scenes": {}}
    for scene_name in args.scene:
        try:
            if scene_name in OFFLINE:
                kind, spp = OFFLINE[scene_name]
                size, runs = SIZE, args.runs
            else:
                kind, spp, size, runs = "cornell", 1, PROGRESSIVE[scene_name], args.frames
            scene = mi.load_dict(mitsuba_scene_dict(child_scene(kind, args.asset), width=size, height=size, spp=spp))
            wall = []
            for run in range(2 + runs):
                dr.sync_thread()
                start = time.perf_counter()
                image = mi.render(scene, spp=spp, seed=run)
                if scene_name in PROGRESSIVE:
                    np.asarray(image)  # the frame read back, as our progressive loop does
                else:
                    dr.eval(image)
                dr.sync_thread()
                if run >= 2:
                    wall.append((time.perf_counter() - start) * 1e3)
            median = statistics.median(wall)
            value = 1e3 / median if scene_name in PROGRESSIVE else size * size * spp / (median * 1e3)
            entry = {"value": value, "median_ms": median}
        except Exception as exc:
            entry = {"value": None, "why": f"{type(exc).__name__}: {exc}"[:300]}
        results["scenes"][scene_name] = entry
        print(scene_name, entry.get("value"), file=sys.stderr, flush=True)
    print(json.dumps(results))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commit", action="append", default=[], help="a commit to extract and run (repeatable)")
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a tree on disk (repeatable)")
    parser.add_argument("--scene", action="append", choices=SCENES, help="a scene (repeatable; default all)")
    parser.add_argument("--runs", type=int, default=5, help="timed offline renders per scene (default 5)")
    parser.add_argument("--frames", type=int, default=200, help="timed progressive frames (default 200)")
    parser.add_argument("--repeat", type=int, default=1, help="run the --again trees this many times in all")
    parser.add_argument("--again", action="append", default=[], help="a tree name to repeat (with --repeat 2)")
    parser.add_argument("--mitsuba", action="store_true", help="add Mitsuba 3 (cuda_ad_rgb) on the same scenes")
    parser.add_argument("--specialize", action="store_true",
                        help="also run the working tree with programs specialized per scene, as work+spec")
    parser.add_argument("--trees-dir", default=str(ROOT / ".trees"))
    parser.add_argument("--cache-root", default=str(ROOT / "bench_out" / "commit_caches"))
    parser.add_argument("--child-timeout", type=float, default=900.0)
    parser.add_argument("--out", default="bench_out/commits.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-mitsuba", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--asset", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.scene = args.scene or list(SCENES)
    if args.child is not None:
        return mitsuba_child(args) if args.child_mitsuba else child(args)
    return parent(args)


if __name__ == "__main__":
    raise SystemExit(main())
