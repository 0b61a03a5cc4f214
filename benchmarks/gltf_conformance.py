"""glTF conformance: load and render every model of a folder of glTF files, a contact sheet and a table.

    python benchmarks/gltf_conformance.py MODELS [--cpu] [--size 128] [--spp 16] [--out FOLDER]
    python benchmarks/gltf_conformance.py --generate FOLDER [--cpu] ...   # the project's own sample models

``MODELS`` is a folder the user has, such as a checkout of the Khronos glTF sample models (the repository is not
part of the project): every ``.gltf`` and ``.glb`` under it is one model, and where a model comes in several
variants (``glTF``, ``glTF-Embedded``, ``glTF-Binary``, ...) the first of ``--variants`` that exists is taken. Each
model is read with :func:`optixasync.scene.read_gltf` (its load time measured, its warnings recorded), made a
scene (lit by a constant white sky when it has no light, as the command line does) and rendered at ``--size``
pixels on the GPU, or with ``--cpu`` on the CPU device (``RenderPipeline(CpuContext(), scene)``, the kernel's
host build: needs a C++ compiler). ``--generate FOLDER`` writes the project's own small models there first
(:func:`optixasync.testing.write_gltf_samples`) and runs on them.

Writes ``contact_sheet.png`` (the renders, labelled, in a grid) and ``conformance.md`` (the table: load time,
meshes, triangles, materials, textures, cameras, lights, animations, warnings, render time; then every warning,
one line each) into ``--out``, and prints the table. A model that fails to load or render is a row with its
error; the script goes on.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
VARIANTS = ("glTF", "glTF-Embedded", "glTF-Binary", "glTF-Quantized", "glTF-Meshopt", "glTF-Draco")


@dataclass
class Row:
    """One model's numbers (the table's row) and its render."""

    name: str
    path: Path
    load_ms: float = float("nan")
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    render_ms: float = float("nan")
    image: np.ndarray | None = None
    error: str = ""


def find_models(folder: Path, variants: tuple[str, ...]) -> list[Path]:
    """One glTF file per model under ``folder``: of a ``Model/<variant>/`` layout the first variant in ``variants``."""
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".gltf", ".glb") and p.is_file())
    by_model: dict[Path, list[Path]] = {}
    for path in files:
        key = path.parent.parent if path.parent.name in VARIANTS else path.with_suffix("")
        by_model.setdefault(key, []).append(path)
    chosen = []
    for paths in by_model.values():
        rank = {v: k for k, v in enumerate(variants)}
        chosen.append(min(paths, key=lambda p: (rank.get(p.parent.name, len(rank)), p.name)))
    return sorted(chosen)


def load(row: Row, light_scale: float) -> Any:
    """Read ``row.path`` (timed, warnings recorded); its scene, lit by a white sky when it has no light."""
    from optixasync.scene import Environment, read_gltf

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        asset = read_gltf(row.path)
        scene = asset.to_scene(light_scale=light_scale)
        row.load_ms = (time.perf_counter() - start) * 1e3
    row.warnings = [str(w.message).replace(f"{row.path}: ", "") for w in caught]
    row.counts = {"meshes": len(scene.meshes), "triangles": scene.num_triangles, "materials": len(asset.materials),
                  "textures": len({id(t) for m in asset.materials.values() for t in m.textures.values()}),
                  "cameras": len(asset.cameras), "lights": len(asset.lights), "animations": len(asset.animations)}
    if not scene.emitters and not scene.lights:
        scene.environment = Environment(radiance=(1.0, 1.0, 1.0), name="white sky")
    return scene


class Renderer:
    """Renders scenes at one size through a render pipeline: on the GPU, or on the CPU device (the kernel's host
    build), one context for all."""

    def __init__(self, cpu: bool, size: int, spp: int) -> None:
        import optixasync
        from optixasync.render import RenderOptions

        self.cpu, self.spp = cpu, spp
        self.size = size
        self.options = RenderOptions(width=size, height=size, spp=spp, max_depth=6)
        self.ctx = optixasync.CpuContext() if cpu else optixasync.Context()

    def render(self, scene: Any) -> np.ndarray:
        from optixasync.render import RenderPipeline

        with RenderPipeline(self.ctx, scene, self.options) as pipeline:
            return pipeline.render(self.spp)

    def close(self) -> None:
        self.ctx.close()


def run(row: Row, renderer: Renderer, light_scale: float) -> None:
    try:
        scene = load(row, light_scale)
    except (OSError, ValueError, TypeError) as exc:
        row.error = f"load: {str(exc).splitlines()[0][:160]}"
        return
    try:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the load's warnings are recorded; the render's are not the model's
            row.image = renderer.render(scene)
        row.render_ms = (time.perf_counter() - start) * 1e3
    except (ValueError, TypeError, RuntimeError) as exc:
        row.error = f"render: {str(exc).splitlines()[0][:160]}"


def contact_sheet(rows: list[Row], size: int, columns: int) -> np.ndarray:
    """The renders in a grid, ``columns`` wide, each labelled with its model's name (grey where none)."""
    from PIL import Image, ImageDraw

    from optixasync.io import tonemap_srgb

    label = 14
    columns = max(1, min(columns, len(rows)))
    grid = (len(rows) + columns - 1) // columns
    sheet = Image.new("RGB", (columns * size, grid * (size + label)), (32, 32, 32))
    draw = ImageDraw.Draw(sheet)
    for k, row in enumerate(rows):
        x, y = (k % columns) * size, (k // columns) * (size + label)
        if row.image is not None:
            sheet.paste(Image.fromarray(np.ascontiguousarray(tonemap_srgb(row.image)[..., :3])), (x, y))
        draw.text((x + 2, y + size + 1), row.name[: size // 7], fill=(230, 230, 230) if not row.error else (255, 90, 90))
    return np.asarray(sheet)


def table(rows: list[Row], cpu: bool) -> str:
    kinds = ("meshes", "triangles", "materials", "textures", "cameras", "lights", "animations")
    lines = [f"| model | load | {' | '.join(kinds)} | warnings | render ({'CPU' if cpu else 'GPU'}) |",
             "|---|---:|" + "---:|" * len(kinds) + "---:|---:|"]
    for row in rows:
        counts = " | ".join(f"{row.counts.get(k, '-'):,}" if k in row.counts else "-" for k in kinds)
        render = f"{row.render_ms:.0f} ms" if row.image is not None else row.error or "-"
        lines.append(f"| {row.name} | {row.load_ms:.1f} ms | {counts} | {len(row.warnings)} | {render} |")
    notes = [f"* {row.name}: {w}" for row in rows for w in row.warnings]
    return "\n".join(lines + ([""] + ["Warnings:"] + notes if notes else []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="?", default=None, help="a folder of glTF models (searched recursively)")
    parser.add_argument("--generate", default=None, metavar="FOLDER",
                        help="write the project's own sample models into FOLDER and run on them")
    parser.add_argument("--cpu", action="store_true", help="render on the CPU device (the kernel's host build)")
    parser.add_argument("--size", type=int, default=128, metavar="PX", help="render size, square (default 128)")
    parser.add_argument("--spp", type=int, default=16, metavar="N", help="samples per pixel (default 16)")
    parser.add_argument("--columns", type=int, default=6, metavar="N", help="contact sheet columns (default 6)")
    parser.add_argument("--light-scale", type=float, default=1.0 / 683.0, metavar="X",
                        help="KHR_lights_punctual candela/lux to the renderer's units (default 1/683 W/lm)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="variant folders, preferred first")
    parser.add_argument("--out", default=".", metavar="FOLDER", help="where the sheet and the table go (default .)")
    args = parser.parse_args(argv)
    if (args.models is None) == (args.generate is None):
        parser.error("give a folder of models or --generate FOLDER (one of them)")
    if args.size < 8 or args.spp < 1 or args.columns < 1:
        parser.error("--size must be >= 8, --spp and --columns >= 1")
    folder = Path(args.models if args.models is not None else args.generate)
    if args.generate is not None:
        from optixasync.testing import write_gltf_samples

        write_gltf_samples(folder)
    models = find_models(folder, tuple(v.strip() for v in args.variants.split(",") if v.strip()))
    if not models:
        parser.error(f"no .gltf or .glb file under {folder}")
    if not args.cpu:
        from optixasync.testing import require_gpu

        require_gpu()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    renderer = Renderer(args.cpu, args.size, args.spp)
    rows = []
    try:
        for path in models:
            rows.append(Row(path.stem, path))
            run(rows[-1], renderer, args.light_scale)
            print(f"{path.stem}: {rows[-1].error or 'ok'}", file=sys.stderr)
    finally:
        renderer.close()
    from optixasync.io import write_image

    write_image(out / "contact_sheet.png", contact_sheet(rows, args.size, args.columns))
    text = table(rows, args.cpu)
    (out / "conformance.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    from optixasync.testing import run_main

    run_main(main)
