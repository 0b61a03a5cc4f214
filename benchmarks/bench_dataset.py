"""The dataset writer: samples per second written, on the GPU (whole runs) and on the CPU (the files alone).

    python benchmarks/bench_dataset.py [--count 10000] [--size 256] [--formats npy-only,npy,png-pillow] [--workers 8]
        [--folder /tmp/optixasync-dataset] [--json bench_out/dataset.json]
    python benchmarks/bench_dataset.py --cpu [--samples 200] [--size 256]

GPU (default; ``--parts gpu,resume,training``): :func:`~optixasync.render.write_dataset` of ``--count`` samples of the ``materials`` scene at
``--size`` squared with ``image``, ``depth``, ``normal`` and ``mesh_id`` (the issue's set), 1 spp (the samples'
renders are cheap: what is measured is whether the writer keeps up with the GPU), once per entry of
``--formats`` (``npy-only``: every output as NPY; ``npy``: the image as PNG by imagecodecs, the rest NPY;
``png-pillow``: the same with Pillow's encoder, to see the encoder's share). Reported: samples/s, the GPU busy fraction (the frames' GPU time
over the wall time), the time the renders waited for the writers. Then a run killed after half of its samples
(a child process, SIGKILL) and resumed, compared byte for byte with an uninterrupted run. Target: at least 1,000
samples/s with NPY; PNG within 10%.

Training (``training``): :class:`~optixasync.render.TrainingBatches` of ``--training-views`` views of the same
outputs into torch (CuPy without it), a reduction per batch: batches/s, samples/s, GPU busy.

CPU (``--cpu``): the files of one sample alone (the writer's encoders over samples shaped like the renders: a noisy
16-spp-like image, a smooth depth, normals, a few ids), samples/s per format with 1 and 2 worker threads; what the
GPU run's writer can deliver at most on this machine. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from optixasync.render import DatasetOptions
from optixasync.render._dataset_files import write_sample

OUTPUTS = ("image", "depth", "normal", "mesh_id")


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    head = "| " + " | ".join(title for _k, title, _f in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(format(row[k], f) if f else str(row[k]) for k, _t, f in columns) + " |" for row in rows]
    return "\n".join([head, rule, *body])


def synthetic_sample(size: int, seed: int) -> dict[str, np.ndarray]:
    """A sample shaped like a render's outputs: a smooth image with path-tracing noise, depth, normals, ids."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    ids = np.where((x - 0.5) ** 2 + (y - 0.6) ** 2 < 0.08, 1, np.where(y > 0.7, 0, 2)).astype(np.uint32)
    ids[:size // 8] = 0xFFFFFFFF
    base = np.stack([0.3 + 0.4 * x, 0.2 + 0.5 * y, 0.5 - 0.2 * x * y], axis=-1) * (1 + ids[..., None] % 3) / 3
    noisy = np.clip(base * (1 + 0.25 * rng.standard_normal(base.shape)), 0, 1)
    image = np.concatenate([(255 * noisy ** (1 / 2.2)).astype(np.uint8), np.full((size, size, 1), 255, np.uint8)],
                           axis=-1)
    depth = (2.0 + y + 0.1 * np.sin(8 * x)).astype(np.float32)[..., None]
    normal = np.concatenate([np.stack([x - 0.5, np.ones_like(x), y - 0.5], -1), np.zeros((size, size, 1))],
                            -1).astype(np.float32)
    return {"image": image, "depth": depth, "normal": normal, "mesh_id": ids[..., None]}


CPU_CASES = [  # (name, formats, png level, png encoder)
    ("png (imagecodecs, level 1) + npy", ("png", "npy"), 1, "imagecodecs"),
    ("png (Pillow, level 1) + npy", ("png", "npy"), 1, "pillow"),
    ("png (Pillow, level 6) + npy", ("png", "npy"), 6, "pillow"),
    ("png (imagecodecs) + npz", ("png", "npz"), 1, "imagecodecs"),
    ("npy only (image as npy)", ("npy",), 1, "pillow"),
    ("png (imagecodecs) + npy + rle", ("png", "npy", "rle"), 1, "imagecodecs"),
]


def cpu_files(args: argparse.Namespace) -> list[dict[str, Any]]:
    samples = [synthetic_sample(args.size, k) for k in range(8)]
    rows = []
    import importlib.util

    for name, formats, level, encoder in CPU_CASES:
        if ("rle" in formats and importlib.util.find_spec("pycocotools") is None) or \
                (encoder == "imagecodecs" and importlib.util.find_spec("imagecodecs") is None):
            continue
        options = DatasetOptions(count=args.samples, width=args.size, height=args.size, outputs=OUTPUTS,
                                 formats=formats, png_compression=level, png_encoder=encoder)
        for workers in (1, 2):
            folder = Path(tempfile.mkdtemp(prefix="optixasync-bench-"))
            try:
                start = time.perf_counter()
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(lambda k, f=folder, o=options: write_sample(f, o, k, samples[k % 8], {"index": k},
                                                                              ["a", "b", "c"]), range(args.samples)))
                seconds = time.perf_counter() - start
                size = sum(p.stat().st_size for p in folder.iterdir()) / args.samples
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            rows.append({"case": name, "workers": workers, "samples_per_s": args.samples / seconds,
                         "ms": 1e3 * seconds / args.samples * workers, "kib": size / 1024})
    print(f"\n### The files of one sample on the CPU ({args.size}x{args.size}, {', '.join(OUTPUTS)})\n")
    print(table(rows, [("case", "formats", ""), ("workers", "threads", ""), ("samples_per_s", "samples/s", ".0f"),
                       ("ms", "ms per sample per thread", ".2f"), ("kib", "KiB per sample", ".0f")]))
    return rows


def gpu_run(args: argparse.Namespace, formats: tuple[str, ...], encoder: str, folder: Path,
            count: int | None = None) -> Any:
    import optixasync
    from optixasync.render import write_dataset
    from optixasync.scene import material_scene

    options = DatasetOptions(count=count or args.count, width=args.size, height=args.size, spp=args.spp,
                             max_depth=2, outputs=OUTPUTS, formats=formats, png_encoder=encoder,
                             views_per_variation=args.views)
    with optixasync.Context() as ctx:
        return write_dataset(ctx, material_scene(), folder, options, workers=args.workers,
                             frames_in_flight=args.frames_in_flight)


def gpu_runs(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    base = Path(args.folder)
    for name in args.formats.split(","):
        formats, encoder = {"npy-only": (("npy",), "pillow"), "npy": (("png", "npy"), "imagecodecs"),
                            "png-pillow": (("png", "npy"), "pillow"), "npz": (("png", "npz"), "imagecodecs")}[name]
        folder = base / name
        shutil.rmtree(folder, ignore_errors=True)
        report = gpu_run(args, formats, encoder, folder)
        rows.append({"case": f"{name} ({'+'.join(formats)}, PNG by {encoder})", "samples": len(report.rendered),
                     "samples_per_s": report.samples_per_s, "gpu_busy": 100 * report.gpu_busy,
                     "disk_wait_s": report.disk_wait_s, "seconds": report.seconds})
    print(f"\n### write_dataset on the GPU ({args.size}x{args.size}, {', '.join(OUTPUTS)}, {args.spp} spp, "
          f"{args.views} views per variation, {args.workers} writers, {args.frames_in_flight} frames in flight)\n")
    print(table(rows, [("case", "formats", ""), ("samples", "samples", ""), ("samples_per_s", "samples/s", ".0f"),
                       ("gpu_busy", "GPU busy %", ".0f"), ("disk_wait_s", "waited for the disk (s)", ".1f"),
                       ("seconds", "wall (s)", ".1f")]))
    return rows


def killed_and_resumed(args: argparse.Namespace) -> dict[str, Any]:
    """A run killed (SIGKILL) after about half of its samples, resumed; its bytes against an uninterrupted run."""
    base = Path(args.folder)
    part, whole = base / "killed", base / "whole"
    for folder in (part, whole):
        shutil.rmtree(folder, ignore_errors=True)
    count = args.resume_count
    child = subprocess.Popen([sys.executable, __file__, "--child", str(part), "--count", str(count), "--size",
                              str(args.size), "--views", str(args.views), "--spp", str(args.spp)])
    while child.poll() is None and len(list(part.glob("0*[0-9].json"))) < count // 2:
        time.sleep(0.01)
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait()
    before = len(list(part.glob("0*[0-9].json")))
    resumed = gpu_run(args, ("png", "npy"), "imagecodecs", part, count)
    gpu_run(args, ("png", "npy"), "imagecodecs", whole, count)
    names = sorted(p.name for p in whole.iterdir() if p.is_file())
    differ = [n for n in names if not (part / n).is_file() or (part / n).read_bytes() != (whole / n).read_bytes()]
    strays = sorted(p.name for p in part.iterdir() if p.name not in names)
    row = {"count": count, "complete_at_kill": before, "resumed": len(resumed.rendered), "files": len(names),
           "differ": len(differ), "strays": len(strays)}
    print("\n### Killed and resumed, against an uninterrupted run\n")
    print(table([row], [("count", "samples", ""), ("complete_at_kill", "complete when killed", ""),
                        ("resumed", "rendered by the resumed run", ""), ("files", "files", ""),
                        ("differ", "files that differ", ""), ("strays", "partial files left", "")]))
    if differ:
        print("differing:", differ[:10])
    return row


def training(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Batches per second of :class:`~optixasync.render.TrainingBatches` into torch (CuPy without it)."""
    import optixasync
    from optixasync.render import OrbitCameras, RenderOptions, RenderPipeline, TrainingBatches, Views
    from optixasync.scene import material_scene

    try:
        import torch

        framework = "torch"
    except ImportError:
        torch, framework = None, "cupy"
    rows = []
    k = [[args.size, 0, args.size / 2], [0, args.size, args.size / 2], [0, 0, 1]]
    with optixasync.Context() as ctx:
        for views in (int(v) for v in args.training_views.split(",")):
            batch_views = Views.pinhole([k] * views, np.tile(np.eye(4), (views, 1, 1)), seeds=range(views))
            with RenderPipeline(ctx, material_scene(), RenderOptions(width=args.size, height=args.size, spp=args.spp,
                                                                     max_depth=2),
                                views=batch_views, outputs=OUTPUTS, frames_in_flight=3,
                                scheduler_options={"keep_results": False}) as p:
                source = TrainingBatches(p, args.batches + 10, cameras=OrbitCameras(distance=(2.5, 3.5)),
                                         color_jitter=0.2, light_scale=(0.6, 1.4), framework=framework)
                start = None
                for batch in source:
                    if batch.index == 10:
                        p.scheduler.drain()
                        start = time.perf_counter()
                    value = batch["image"][..., 0].sum() if torch is None else batch["image"][..., 0].float().sum()
                p.scheduler.drain()
                float(value)  # the last reduction done: every batch consumed
                seconds = time.perf_counter() - start
                gpu = [f.gpu_ms for f in p.scheduler.stats.frames[-args.batches:] if f.gpu_ms is not None]
            rows.append({"views": views, "into": framework, "batches_per_s": args.batches / seconds,
                         "samples_per_s": views * args.batches / seconds,
                         "gpu_busy": 100 * sum(gpu) / 1e3 / seconds if gpu else float("nan")})
    print(f"\n### TrainingBatches ({args.size}x{args.size}, {', '.join(OUTPUTS)}, {args.spp} spp, poses drawn on "
          "the device, colours and lights per batch)\n")
    print(table(rows, [("views", "views per batch", ""), ("into", "into", ""), ("batches_per_s", "batches/s", ".1f"),
                       ("samples_per_s", "samples/s", ".0f"), ("gpu_busy", "GPU busy %", ".0f")]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true", help="the files alone, on the CPU")
    parser.add_argument("--samples", type=int, default=200, help="--cpu: samples written per case")
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--resume-count", type=int, default=2000)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--spp", type=int, default=1)
    parser.add_argument("--views", type=int, default=64, help="views per variation (one frame)")
    parser.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument("--frames-in-flight", type=int, default=2)
    parser.add_argument("--formats", default="npy-only,npy,png-pillow",
                        help="cases: npy-only (every output as NPY), npy (the image as PNG by imagecodecs, the rest "
                             "NPY), png-pillow (the same, PNG by Pillow), npz")
    parser.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "optixasync-dataset"))
    parser.add_argument("--parts", default="gpu,resume,training", help="GPU parts: gpu, resume, training")
    parser.add_argument("--batches", type=int, default=200, help="training: batches timed")
    parser.add_argument("--training-views", default="64,256", help="training: views per batch, comma-separated")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.child:
        gpu_run(args, ("png", "npy"), "imagecodecs", Path(args.child))
        return
    if args.cpu:
        out: Any = {"cpu": cpu_files(args)}
    else:
        from optixasync.testing import require_gpu

        require_gpu()
        parts = {"gpu": gpu_runs, "resume": killed_and_resumed, "training": training}
        out = {name: parts[name](args) for name in args.parts.split(",")}
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    from optixasync.testing import run_main

    run_main(main)
