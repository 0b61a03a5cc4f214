"""Where the GPU's motion blur differs from the analytic one: a square sliding along x, seen through shutters.

    python benchmarks/probe_motion_shutter.py [--spp 1024] [--size 64]

With the shutter (0.25, 0.75) the GPU covered +0.83% more than the analytic time average
(``tests/render/test_motion_gpu.py``), while the host build of the same kernel matches it. This prints, per
shutter (instants (t, t) too), the covered sum, the centroid and the extent in x of what the GPU saw against the
analytic ones: instants that match with a partial shutter that does not say the geometry is right and the
time mapping (ray times against the keys' times) is not; instants that miss say the geometry at a time is off.

Prints a Markdown table; a probe, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np

from optixasync.testing import require_gpu, run_main

HERE = Path(__file__).resolve().parents[1] / "tests" / "render"
SHUTTERS = [(0.0, 0.0), (0.25, 0.25), (0.5, 0.5), (0.75, 0.75), (1.0, 1.0), (0.0, 1.0), (0.25, 0.75), (0.0, 0.5),
            (0.5, 1.0)]


def _reference():
    spec = importlib.util.spec_from_file_location("motion_reference_probe", HERE / "motion_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _columns(covered: np.ndarray) -> tuple[float, float, float]:
    """(sum, centroid column, width in columns with more than 1% covered) of a coverage map."""
    per_column = covered.sum(axis=0)
    total = float(per_column.sum())
    centroid = float((per_column * np.arange(per_column.size)).sum() / total) if total else float("nan")
    return total, centroid, float((covered.max(axis=0) > 0.01).sum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spp", type=int, default=1024)
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args()
    require_gpu()
    from optixasync import Context
    from optixasync.render import RenderOptions, RenderPipeline
    from optixasync.scene import Camera, Environment, Material, Mesh, MeshMotion, Scene, rectangle

    reference = _reference()
    camera = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=40.0)
    black = Material((0.0, 0.0, 0.0))
    base = rectangle(np.diag([0.3, 0.3, 1.0, 1.0]), black)
    motion = MeshMotion(transforms=[np.array([[1.0, 0, 0, -0.5], [0, 1, 0, 0], [0, 0, 1, 0]]),
                                    np.array([[1.0, 0, 0, 0.5], [0, 1, 0, 0], [0, 0, 1, 0]])])
    print("| shutter | GPU sum | analytic sum | ratio - 1 | GPU centroid x | analytic | GPU width | analytic |")
    print("|---|---|---|---|---|---|---|---|")
    with Context() as ctx:
        for shutter in SHUTTERS:
            scene = Scene([Mesh(base.vertices, base.indices, black, motion=motion)], camera,
                          environment=Environment(radiance=(1.0, 1.0, 1.0)), shutter=shutter)
            options = RenderOptions(width=args.size, height=args.size, spp=args.spp, max_depth=1)
            with RenderPipeline(ctx, scene, options) as pipeline:
                seen = 1.0 - pipeline.render()[..., 0]
            covered = reference.sliding_square_coverage(camera, args.size, args.size, 0.3, -0.5, 0.5, shutter)
            (gs, gc, gw), (rs, rc, rw) = _columns(seen), _columns(covered)
            print(f"| {shutter} | {gs:.2f} | {rs:.2f} | {gs / rs - 1:+.4%} | {gc:.3f} | {rc:.3f} | {gw:.0f} | "
                  f"{rw:.0f} |")
    return 0


if __name__ == "__main__":
    run_main(main)
