"""``optixasync dataset``: a randomized dataset of a scene, written to a folder, resumable.

Renders ``--count`` samples of ``--scene`` with randomized cameras, material
colours and light strength (:func:`optixasync.render.write_dataset`: one
pipeline, frames in flight, ``--workers`` threads writing the files), each
as PNG, NPZ, NPY, EXR and COCO RLE files and a JSON file of the camera's
intrinsics and poses, in the layout that ``dataset.json`` describes. Run it again on the
same folder with the same options and it renders only the samples it lacks.
Every argument is checked and the scene built on the CPU before the GPU is
touched; exit statuses as every command (0, 1 the machine cannot, 2 bad
input, 130 interrupted: run it again to resume).

Blocking calls
--------------
Where :func:`optixasync.render.write_dataset` does: the scheduler's slot fence, the writers' queue when the disk
is slower than the GPU, the last frames (:mod:`optixasync.render._dataset`).
"""

from __future__ import annotations

import argparse

from .._exit import run_command
from ._scene import add_scene_arguments, build_scene, choose_scene

__all__ = ["add_parser", "run"]

_PROG = "optixasync dataset"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``dataset`` subcommand."""
    parser = subparsers.add_parser(
        "dataset", help="render a randomized dataset (images, depth, ids, camera intrinsics and poses)",
        description="Render --count samples of a scene with randomized cameras, materials and lights into a "
                    "folder (PNG, NPZ, EXR and JSON per sample; dataset.json describes the layout); running it "
                    "again on the same folder resumes.")
    add_scene_arguments(parser, cloth=False)
    group = parser.add_argument_group("dataset")
    group.add_argument("--out", required=True, metavar="FOLDER", help="the dataset's folder")
    group.add_argument("--count", type=int, default=100, metavar="N", help="samples (default 100)")
    group.add_argument("--width", type=int, default=128, metavar="PX", help="image width (default 128)")
    group.add_argument("--height", type=int, default=128, metavar="PX", help="image height (default 128)")
    group.add_argument("--spp", type=int, default=16, metavar="N", help="samples per pixel (default 16)")
    group.add_argument("--max-depth", type=int, default=4, metavar="N", help="longest path (default 4)")
    group.add_argument("--outputs", default="image,depth,mesh_id", metavar="A,B",
                       help="outputs to write (default image,depth,mesh_id; see the docs' outputs table)")
    group.add_argument("--formats", default="png,npz", metavar="A,B",
                       help="png, npz, npy (uncompressed), exr, rle (COCO instance masks) (default png,npz)")
    group.add_argument("--png-compression", type=int, default=1, metavar="0-9", help="PNG zlib level (default 1)")
    group.add_argument("--workers", type=int, default=4, metavar="N", help="threads writing files (default 4)")
    group.add_argument("--frames-in-flight", type=int, default=2, metavar="N",
                       help="frames on the GPU while files are written (default 2)")
    group.add_argument("--views-per-variation", type=int, default=8, metavar="N",
                       help="samples rendered together from one randomized copy of the scene (default 8)")
    group.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default 0)")
    group.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run ``optixasync dataset``; returns the exit status."""
    return run_command(_PROG, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from optixasync.render import DatasetOptions, write_dataset

    options = DatasetOptions(count=args.count, width=args.width, height=args.height, spp=args.spp,
                             max_depth=args.max_depth, outputs=tuple(_names(args.outputs)),
                             formats=tuple(_names(args.formats)), views_per_variation=args.views_per_variation,
                             seed=args.seed, png_compression=args.png_compression)
    for name in ("workers", "frames_in_flight"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    from pathlib import Path

    if Path(args.out).exists() and not Path(args.out).is_dir():  # before the scene and the GPU set-up
        raise ValueError(f"--out {args.out} is a file; the dataset's folder must be a folder or not exist yet")
    scene, _cloth = build_scene(choose_scene(args, default="materials"), _PROG)
    import optixasync

    with optixasync.Context() as ctx:
        report = write_dataset(ctx, scene, args.out, options, progress=not args.quiet, workers=args.workers,
                               frames_in_flight=args.frames_in_flight)
    print(f"{args.out}: {len(report.rendered)} samples rendered in {report.variations} variations, "
          f"{report.skipped} found complete; {report.samples_per_s:.1f} samples/s, GPU busy "
          f"{100 * report.gpu_busy:.0f}%, {report.disk_wait_s:.1f} s waiting for the disk")
    return 0


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
