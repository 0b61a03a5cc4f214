"""The documentation's pictures of spheres, curves and motion blur, rendered by the host build of the kernel.

Usage (from a checkout's root; no GPU needed, a C++ compiler is)::

    python tests/render/pictures.py [OUTDIR] [--spp N] [--width W] [--only NAME]

writes ``point_cloud.png``, ``hair.png``, ``motion_blur.png`` and ``usd_scene.png`` (a USD stage read by
``load_usd``; needs the usd extra) into ``OUTDIR`` (default ``docs/``). The scenes
are built with the public scene API; the images come from the path tracer's own device code compiled for the CPU
(``host_build.py``), so they show what the kernel computes, not a second renderer.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from host_build import HostTracer, build_pathtracer_library  # noqa: E402

from optixasync.io import write_image  # noqa: E402
from optixasync.render import RenderOptions  # noqa: E402
from optixasync.scene import (  # noqa: E402
    Camera,
    Curves,
    DirectionalLight,
    Environment,
    Material,
    Mesh,
    MeshMotion,
    Scene,
    Spheres,
    cube,
    rectangle,
)

FLOOR = np.array([[4.0, 0, 0, 0], [0, 0, 4.0, 0], [0, -4.0, 0, 0]])  # y = 0, facing up


def ramp(t: np.ndarray) -> np.ndarray:
    """A blue-to-orange colour ramp over t in [0, 1] (linear RGB)."""
    stops = np.array([[0.05, 0.10, 0.45], [0.10, 0.55, 0.60], [0.95, 0.75, 0.20], [0.90, 0.25, 0.08]])
    x = np.clip(t, 0, 1) * (len(stops) - 1)
    k = np.minimum(x.astype(int), len(stops) - 2)
    f = (x - k)[:, None]
    return stops[k] * (1 - f) + stops[k + 1] * f


def point_cloud_scene() -> Scene:
    """A sunflower spiral of 2,000 spheres of two materials, growing outwards, on a floor under a sun and a sky."""
    n = 2000
    k = np.arange(n)
    radius = 1.6 * np.sqrt((k + 0.5) / n)
    angle = k * math.pi * (3 - math.sqrt(5))
    sizes = 0.018 + 0.03 * (k / n)
    heights = 0.25 * np.exp(-3 * radius**2) + sizes
    centers = np.stack([radius * np.cos(angle), heights, radius * np.sin(angle)], axis=1)
    ids = (k % 7 == 0).astype(np.uint32)
    materials = [Material((0.9, 0.9, 0.9)), Material((0.95, 0.9, 0.8), bsdf="conductor", alpha=0.15)]
    cloud = Spheres(centers, sizes.astype(np.float32), ramp(radius / 1.6), materials, ids, "sunflower")
    glass = Spheres(np.array([[0.0, 0.55, 0.0]]), 0.3, material=Material(bsdf="dielectric", int_ior=1.5))
    floor = rectangle(FLOOR, Material((0.35, 0.35, 0.38)), "floor")
    sun = DirectionalLight((-0.4, -1.0, -0.3), (2.5, 2.4, 2.2))
    return Scene([floor], Camera((0.0, 2.2, 3.2), (0.0, 0.1, 0.0), fov=38.0), Environment(radiance=(0.25, 0.3, 0.4)),
                 [sun], shapes=[cloud, glass])


def _fur(rng: np.random.Generator, count: int, points: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Strands rooted on the unit sphere, leaving it along the normal and drooping under gravity."""
    roots = rng.normal(size=(count, 3))
    roots /= np.linalg.norm(roots, axis=1, keepdims=True)
    s = np.linspace(0.0, 1.0, points)[None, :, None]
    length = rng.uniform(0.35, 0.5, (count, 1, 1))
    droop = np.array([0.0, -1.0, 0.0]) * (s * length) ** 2 * 1.6
    strands = roots[:, None, :] * (1.0 + s * length) + droop
    radii = [np.linspace(0.012, 0.002, points)] * count
    return list(strands), radii


def hair_scene() -> Scene:
    """A fur ball of 1,500 cubic B-spline strands, and streamlines of a vortex as linear curves coloured by speed."""
    rng = np.random.default_rng(4)
    strands, radii = _fur(rng, 1500, 7)
    tips = [ramp(np.linspace(0.15, 0.85, 7)) for _ in strands]
    fur = Curves.from_strands([s * 0.55 + [-0.75, 0.95, 0.0] for s in strands], [r * 0.55 for r in radii],
                              "cubic_bspline", colors=tips, material=Material((0.9, 0.9, 0.9)), name="fur")
    ball = Spheres(np.array([[-0.75, 0.95, 0.0]]), 0.54, material=Material((0.6, 0.2, 0.1)))
    lines, speeds = [], []
    for start in np.linspace(0.15, 0.75, 12):
        for phase in np.linspace(0, 2 * math.pi, 6, endpoint=False):
            t = np.linspace(0, 5.0, 120)
            r = start + 0.04 * t
            line = np.stack([0.8 + r * np.cos(phase + t * (1.2 - start)), 0.05 + 0.12 * t,
                             r * np.sin(phase + t * (1.2 - start))], axis=1)
            lines.append(line)
            speeds.append(np.full(len(line), 1.2 - start))
    colors = [ramp(np.clip((s - 0.45) / 0.8, 0, 1)) for s in speeds]
    flow = Curves.from_strands(lines, 0.008, "linear", colors=colors, material=Material((1.0, 1.0, 1.0)), name="flow")
    floor = rectangle(FLOOR, Material((0.4, 0.4, 0.42)), "floor")
    sun = DirectionalLight((-0.3, -1.0, -0.5), (2.8, 2.7, 2.5))
    return Scene([floor], Camera((0.0, 1.3, 3.4), (0.0, 0.6, 0.0), fov=36.0), Environment(radiance=(0.3, 0.32, 0.4)),
                 [sun], shapes=[fur, ball, flow])


def _turn(angle: float, x: float, z: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[0.25 * c, 0, 0.25 * s, x], [0, 0.25, 0, 0.25], [-0.25 * s, 0, 0.25 * c, z]])


def motion_scene() -> Scene:
    """A sliding cube, a spinning cube, a waving sheet (vertex keys) and a still cube, over one shutter interval."""
    red, blue = Material((0.8, 0.15, 0.1)), Material((0.1, 0.3, 0.8))
    gold = Material((0.9, 0.7, 0.3), bsdf="conductor", alpha=0.2)
    box = cube()
    slide = Mesh(box.vertices, box.indices, red, "slide",
                 motion=MeshMotion(transforms=[_turn(0.0, -1.4, 0.3), _turn(0.0, -0.6, 0.3)]))
    spin = Mesh(box.vertices, box.indices, gold, "spin",
                motion=MeshMotion(transforms=[_turn(a, 0.6, -0.2) for a in np.linspace(0, math.pi / 2, 9)]))
    still = cube(_turn(0.3, -0.2, -0.6), blue, "still")
    cols, rows = 14, 8
    u, v = np.meshgrid(np.linspace(-0.5, 0.5, cols), np.linspace(0.0, 0.8, rows))
    quads = [(r * cols + c, r * cols + c + 1, (r + 1) * cols + c + 1, (r + 1) * cols + c)
             for r in range(rows - 1) for c in range(cols - 1)]
    faces = np.array([q[:3] for q in quads] + [(q[0], q[2], q[3]) for q in quads], np.int32)
    keys = []
    for phase in np.linspace(0, math.pi, 5):
        wave = 0.12 * np.sin(4 * u + phase) * v
        keys.append(np.stack([u.ravel() + 1.5, v.ravel() + 0.05, (wave - 0.4).ravel()], axis=1).astype(np.float32))
    sheet = Mesh(keys[0].copy(), faces, Material((0.85, 0.85, 0.8), two_sided=True), "sheet",
                 motion=MeshMotion(vertices=keys))
    floor = rectangle(FLOOR, Material((0.45, 0.45, 0.45)), "floor")
    sun = DirectionalLight((-0.5, -1.0, -0.4), (2.6, 2.5, 2.3))
    return Scene([floor, slide, spin, still, sheet], Camera((0.0, 1.4, 3.6), (0.1, 0.35, 0.0), fov=40.0),
                 Environment(radiance=(0.3, 0.33, 0.4)), [sun], shutter=(0.0, 1.0))


def usd_scene() -> Scene:
    """The sample stage of ``usd_scenes.py``, written to a temporary folder and read by ``load_usd``."""
    from usd_scenes import write_sample_stage

    from optixasync.scene import load_usd

    path = Path(tempfile.mkdtemp()) / "sample.usda"
    write_sample_stage(path)
    return load_usd(path)


#: Each picture's scene, max depth and samples per pixel (the hair's cost most: 7.4 s a sample at 400x225 on 2 cores).
PICTURES = {"point_cloud": (point_cloud_scene, 6, 128), "hair": (hair_scene, 6, 48),
            "motion_blur": (motion_scene, 6, 64), "usd_scene": (usd_scene, 6, 256)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("outdir", nargs="?", default=str(HERE.parents[1] / "docs"))
    parser.add_argument("--spp", type=int, help="samples per pixel of every picture (default: each its own)")
    parser.add_argument("--width", type=int, default=400)
    parser.add_argument("--only", choices=sorted(PICTURES), action="append")
    args = parser.parse_args(argv)
    lib = build_pathtracer_library(Path(tempfile.mkdtemp()), (1,), shapes=True, motion=True)
    for name in args.only or PICTURES:
        make, depth, spp = PICTURES[name]
        spp = args.spp or spp
        height = args.width * 9 // 16
        start = time.perf_counter()
        tracer = HostTracer(lib, make(), RenderOptions(width=args.width, height=height, spp=spp, max_depth=depth))
        tracer.render(spp, per_launch=8)
        path = Path(args.outdir) / f"{name}.png"
        write_image(path, tracer.image[..., :3])
        print(f"{path}: {args.width}x{height}, {spp} spp, {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
