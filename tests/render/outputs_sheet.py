"""The picture sheet of the outputs, rendered on the CPU by the host build of the kernel: ``docs/outputs-host.png``.

    python tests/render/outputs_sheet.py [--out docs/outputs-host.png] [--spp 8]

A small tabletop (a floor, a back wall, two boxes and a ball, an area light, a sky) seen by one pinhole view
(OpenCV intrinsics) through the batch raygen of the host build (``host_views.HostBatch``): two launches, the
camera and the ball moving between them (the ball is the world's movable mesh), so that the motion vectors show
both. Tiles: radiance (sRGB), depth, distance, shading normal, geometric normal, mesh id, primitive id, material
id, UV, motion, coverage, albedo. Needs a C++ compiler, no GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # the harness beside this script, and this checkout's package

from host_views import HostBatch  # noqa: E402 (beside this script)

from optixasync.io import tonemap_srgb  # noqa: E402
from optixasync.render import NO_ID, RenderOptions, Views, Worlds  # noqa: E402
from optixasync.scene import Camera, Environment, Material, Scene, cube, rectangle, sphere  # noqa: E402

W, H = 160, 120


def scene() -> Scene:
    floor = rectangle(np.array([[3, 0, 0, 0], [0, 0, 3, 0], [0, -3, 0, 0]]), Material((0.55, 0.5, 0.45)), "floor")
    wall = rectangle(np.array([[3, 0, 0, 0], [0, 0.7, 0, 0.7], [0, 0, 1, -1.5]]), Material((0.35, 0.45, 0.6)), "wall")
    box = cube(np.array([[0.3, 0, 0, -0.7], [0, 0.3, 0, 0.3], [0, 0, 0.3, -0.3]]), Material((0.8, 0.25, 0.2)), "box")
    tall = cube(np.array([[0.2, 0, 0.1, 0.6], [0, 0.6, 0, 0.6], [-0.1, 0, 0.2, -0.6]]), Material((0.3, 0.7, 0.3)),
                "tall box")
    ball = sphere((0.0, 0.25, 0.3), 0.25, Material((0.9, 0.8, 0.2)), subdivisions=2, smooth=True, name="ball")
    lamp = rectangle(np.array([[0.5, 0, 0, 0], [0, 0, -0.5, 2.6], [0, 0.5, 0, 0.3]]), Material((0, 0, 0), (9, 9, 9)),
                     "lamp")
    s = Scene([floor, wall, box, tall, ball, lamp], Camera((0, 1.2, 3.0), (0, 0.3, 0)))
    s.environment = Environment(radiance=(0.25, 0.3, 0.4))
    return s


def look(eye, target) -> np.ndarray:
    """An OpenCV camera-to-world pose at ``eye`` looking at ``target`` (x right, y down, z forward)."""
    forward = np.subtract(target, eye) / np.linalg.norm(np.subtract(target, eye))
    right = np.cross(forward, [0, 1, 0])
    right /= np.linalg.norm(right)
    m = np.eye(4)
    m[:3, :3] = np.column_stack([right, np.cross(forward, right), forward])
    m[:3, 3] = eye
    return m


def colour_ids(ids: np.ndarray) -> np.ndarray:
    """A colour per id (black for a miss)."""
    rng = np.random.default_rng(7)
    palette = rng.uniform(0.2, 1.0, (int(ids[ids != NO_ID].max(initial=0)) + 1, 3))
    out = np.zeros((*ids.shape, 3))
    hit = ids != NO_ID
    out[hit] = palette[ids[hit]]
    return out


def colour_scalar(x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """A scalar mapped to a blue-to-yellow ramp over its valid range (black where not valid)."""
    lo, hi = (x[valid].min(), x[valid].max()) if valid.any() else (0.0, 1.0)
    t = np.clip((x - lo) / max(hi - lo, 1e-9), 0, 1)
    ramp = np.stack([t, 0.3 + 0.5 * t, 1.0 - t], -1)
    return np.where(valid[..., None], ramp, 0.0)


def colour_motion(m: np.ndarray) -> np.ndarray:
    """Flow colours: hue from the direction, brightness from the length (at most 8 pixels)."""
    angle = (np.arctan2(m[..., 1], m[..., 0]) + np.pi) / (2 * np.pi)
    value = np.clip(np.hypot(m[..., 0], m[..., 1]) / 8.0, 0, 1)
    h6 = angle * 6
    k = np.stack([(5 + h6) % 6, (3 + h6) % 6, (1 + h6) % 6], -1)
    rgb = 1 - np.clip(np.minimum(k, 4 - k), 0, 1)
    return value[..., None] * rgb + (1 - value[..., None]) * 0.1


def tiles(spp: int) -> list[tuple[str, np.ndarray]]:
    s = scene()
    k = [140.0, 140.0, W / 2, H / 2]
    first = look((0.0, 1.2, 3.0), (0, 0.3, 0))
    second = look((0.15, 1.25, 3.0), (0, 0.3, 0))
    batch = HostBatch(s, RenderOptions(width=W, height=H, max_depth=4, jitter=False),
                      Views.pinhole(k, first[None]), worlds=Worlds(1, movable=["ball"]))
    batch.move(np.eye(4, dtype=np.float32)[:3][None, None])
    batch.launch(0, 1)
    batch.set_views(Views.pinhole(k, second[None]))
    moved = np.eye(4, dtype=np.float32)[:3][None, None].copy()
    moved[..., 0, 3] = 0.12  # the ball rolls to the right
    batch.move(moved)
    batch.launch(0, spp)
    o = {name: a[0] for name, a in batch.out.items()}
    hit = o["mesh_id"][..., 0] != NO_ID
    return [
        ("radiance", tonemap_srgb(o["radiance"][..., :3]) / 255.0),
        ("depth", colour_scalar(o["depth"][..., 0], hit)),
        ("distance", colour_scalar(o["distance"][..., 0], hit)),
        ("normal (shading)", 0.5 + 0.5 * o["normal"][..., :3]),
        ("geometric normal", np.where(hit[..., None], 0.5 + 0.5 * o["geometric_normal"], 0.0)),
        ("mesh id", colour_ids(o["mesh_id"][..., 0])),
        ("primitive id", colour_ids(o["primitive_id"][..., 0])),
        ("material id", colour_ids(o["material_id"][..., 0])),
        ("uv", np.concatenate([o["uv"], np.zeros((H, W, 1))], -1)),
        ("motion", colour_motion(o["motion"])),
        ("coverage", np.repeat(o["coverage"], 3, -1)),
        ("albedo", o["albedo"][..., :3]),
    ]


def sheet(named: list[tuple[str, np.ndarray]], columns: int = 4) -> Image.Image:
    rows = -(-len(named) // columns)
    label = 16
    canvas = Image.new("RGB", (columns * (W + 4) + 4, rows * (H + label + 4) + 4), (24, 24, 24))
    draw = ImageDraw.Draw(canvas)
    for k, (name, image) in enumerate(named):
        x, y = 4 + (k % columns) * (W + 4), 4 + (k // columns) * (H + label + 4)
        canvas.paste(Image.fromarray((np.clip(image, 0, 1) * 255 + 0.5).astype(np.uint8)), (x, y + label))
        draw.text((x + 2, y + 2), name, fill=(230, 230, 230))
    return canvas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(HERE.parents[1] / "docs" / "outputs-host.png"))
    parser.add_argument("--spp", type=int, default=32)
    args = parser.parse_args()
    image = sheet(tiles(args.spp))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    image.save(args.out)
    print(f"wrote {args.out} ({image.width}x{image.height})")


if __name__ == "__main__":
    main()
