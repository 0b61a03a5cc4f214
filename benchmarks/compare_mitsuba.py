"""Our path tracer against Mitsuba 3: the same scenes, per-pixel statistical parity, then speed.

    python benchmarks/compare_mitsuba.py [--scenes diffuse,conductor] [--size 256] [--spp 64] [--seeds 16]
        [--variant cuda_ad_rgb] [--out docs/parity] [--json bench_out/compare_mitsuba.json] [--no-perf]
        [--only ours|mitsuba]

Parity. Each scene (:data:`SCENES`) is built once in our API (a sphere of
one material over a ground plane, lit by the procedural sky of
:func:`material_environment` and a small area light, unless its line says
otherwise) and converted by :func:`optixasync.testing.mitsuba_scene_dict`.
Each renderer renders it ``--seeds`` times with different seeds, ``--spp``
samples per pixel each, same size, same ``max_depth`` and ``rr_depth``.
Per pixel and channel, the Welch test of :mod:`optixasync.testing`
(Mitsuba's render-test rule: Šidák-corrected alpha = 0.01 over the pixels;
Student's t with the Welch-Satterthwaite degrees of freedom, since the
variances come from the seeds) gives a pass fraction; the criterion is
Mitsuba's, at least 99.75 % of the pixel channels pass. The RMSE ratio
splits each side's seeds in halves A and B and compares the cross
differences (ours vs Mitsuba, the 4 pairs) with the within ones:
``sqrt(mean_ij rmse(ours_i, mitsuba_j)^2) / sqrt((rmse(ours_A, ours_B)^2 + rmse(mitsuba_A, mitsuba_B)^2) / 2)``,
on images mapped through ``x / (1 + x)`` so that fireflies cannot dominate:
about 1 for equal images whatever either renderer's noise, above 1 with a
bias (see :func:`~optixasync.testing.rmse_ratio`). The per-pixel
test sees a bias only where it exceeds several standard errors of that
pixel; the ratio pools all pixels and sees a small bias spread over the
image (5 % everywhere at 1 standard error per pixel gives about 1.27). Defaults: 16
seeds of 64 spp (1024 spp a side) rather than 4 of 256: the same samples,
but variance estimates with 15 degrees of freedom instead of 3, which
lowers the per-pixel threshold from about 27 to 7 standard errors.
``docs/parity/<scene>.png`` shows ours | Mitsuba | the absolute difference
(mean of RGB, colour bar from 0 to ``--diff-scale`` in linear radiance),
images tonemapped to sRGB with a clamp at 1.

Speed (``--no-perf`` skips it), each renderer warm (one untimed run first):
(a) the material scene (:func:`material_scene`) at ``--perf-size``,
``--perf-spp`` spp, max depth 8, median of 3 wall times (ours: the call to
``RenderPipeline.render``, which waits for the image; Mitsuba: ``mi.render`` then
``dr.sync_thread()``); Mitsuba has no twin for its 4 glTF spheres and the
alpha-masked leaf, so it renders stand-ins there (``principled`` and a
``mask`` of the leaf's thresholded alpha) of similar cost: a speed
comparison only. (b) Progressive, 1 spp per frame at ``--perf-size``: ours
through the FrameScheduler (2 frames in flight, bench_pathtracer's
``run_frames``), Mitsuba as a loop of ``mi.render(spp=1, seed=k)`` adding
to a running sum on the GPU; with a readback each frame (ours: the
tonemapped 8-bit image; Mitsuba: the float32 mean, ``np.array``) and
without (ours: none; Mitsuba: ``dr.eval`` each frame, one sync at the end).
fps over ``--frames`` frames after 10 warm-up ones; ours also gives the GPU
busy fraction (frame GPU time over wall time). (c) Cost per BSDF: a sphere
of each filling a ``--bsdf-size`` image (512), ``--bsdf-spp`` (64) spp, max depth 8, in Msamples/s (ours:
GPU time of the launch; Mitsuba: wall time with a sync).

Our renderer runs first, in its own context, then Mitsuba in the same
process (they never share the GPU at once). A scene whose build or render
raises is reported in the table with the error, and the run continues.
About 2 to 4 minutes on an H200 at the defaults, most of it Mitsuba's
kernel compilation.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from bench_pathtracer import json_default, run_frames, table  # our path tracer benchmark's report and frame loop

from optixasync.scene import (
    COPPER_ETA,
    COPPER_K,
    GOLD_ETA,
    GOLD_K,
    Camera,
    Environment,
    Material,
    Scene,
    cornell_box,
    material_scene,
    rectangle,
    sphere,
)
from optixasync.scene.demo import bumps_normal_map, checker_texture, material_environment
from optixasync.testing import (
    PASS_FRACTION,
    MissingMitsubaError,
    batch_statistics,
    import_mitsuba,
    mitsuba_scene_dict,
    rmse_ratio,
    run_main,
    z_test,
)

# -- scenes ----------------------------------------------------------------------------------------------------------


def placement(scale: Any, yaw: float, pitch: float, at: Any) -> np.ndarray:
    """3x4 affine: scale, rotate by ``pitch`` about x, then ``yaw`` about y, then move to ``at``."""
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    rotation = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]]) @ np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])
    return np.concatenate([rotation @ np.diag(np.asarray(scale, float)), np.asarray(at, float)[:, None]], axis=1)


def sphere_scene(material: Material, *, sky: bool = True, area: bool = True,
                 constant: tuple[float, float, float] | None = None) -> Scene:
    """A sphere (radius 0.6, smooth, UV seam turned away) on a diffuse ground, under the sky and an area light."""
    ground = rectangle(placement((6, 6, 1), 0.0, -math.pi / 2, (0, 0, 0)), Material(reflectance=(0.5, 0.5, 0.5)),
                       name="ground")
    ball = sphere((0, 0, 0), 0.6, material, subdivisions=5, smooth=True, name="sphere")
    meshes = [ground, ball.transformed(placement((1, 1, 1), math.pi, 0.0, (0, 0.6, 0)))]
    if area:
        light = Material(emission=(30.0, 26.0, 22.0), reflectance=(0.0, 0.0, 0.0))
        meshes.append(rectangle(placement((0.25, 0.15, 1), -math.radians(40), math.radians(131), (-1.3, 2.2, 1.2)),
                                light, name="area light"))
    environment = material_environment(512) if sky else (Environment(radiance=constant) if constant else None)
    return Scene(meshes, Camera((0.0, 1.3, 3.2), (0.0, 0.55, 0.0), fov=32.0), environment)


def _gold(alpha: float) -> Material:
    return Material(bsdf="conductor", alpha=alpha, eta=GOLD_ETA, k=GOLD_K, reflectance=(1.0, 1.0, 1.0))


#: Scene name -> (what it is, builder). Every builder returns our Scene.
SCENES: dict[str, tuple[str, Callable[[], Scene]]] = {
    "diffuse": ("diffuse sphere, sky + area light", lambda: sphere_scene(Material(reflectance=(0.7, 0.5, 0.3)))),
    "conductor": ("smooth gold (Mitsuba's Au), sky + area light", lambda: sphere_scene(_gold(0.0))),
    "roughconductor": ("rough gold, GGX alpha 0.2", lambda: sphere_scene(_gold(0.2))),
    "dielectric": ("smooth glass, ior 1.5", lambda: sphere_scene(Material(bsdf="dielectric", int_ior=1.5))),
    "roughdielectric": ("rough glass, GGX alpha 0.2", lambda: sphere_scene(
        Material(bsdf="dielectric", alpha=0.2, int_ior=1.5))),
    "roughplastic": ("blue rough plastic, alpha 0.1", lambda: sphere_scene(
        Material(bsdf="plastic", alpha=0.1, reflectance=(0.1, 0.27, 0.6)))),
    "bitmap": ("diffuse sphere, sRGB checker base colour", lambda: sphere_scene(
        Material(reflectance=(1.0, 1.0, 1.0), reflectance_texture=checker_texture()))),
    "normalmap": ("rough copper (0.2) with a normal map of bumps", lambda: sphere_scene(
        Material(bsdf="conductor", alpha=0.2, eta=COPPER_ETA, k=COPPER_K, reflectance=(1.0, 1.0, 1.0),
                 normal_texture=bumps_normal_map()))),
    "envmap": ("diffuse sphere lit only by the procedural sky (envmap)", lambda: sphere_scene(
        Material(reflectance=(0.75, 0.75, 0.75)), area=False)),
    "constant": ("diffuse sphere lit only by a constant environment", lambda: sphere_scene(
        Material(reflectance=(0.75, 0.75, 0.75)), sky=False, area=False, constant=(0.6, 0.7, 0.9))),
    "arealight": ("the Cornell box: one area light, no environment", cornell_box),
}


# -- rendering -------------------------------------------------------------------------------------------------------


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:160]


def render_ours(ctx: Any, scene: Scene, args: argparse.Namespace) -> dict[str, Any]:
    """``--seeds`` renders of ``--spp`` each; (K, H, W, 3) float32 and the wall ms of each render."""
    from optixasync.render import RenderOptions, RenderPipeline

    base = RenderOptions(width=args.size, height=args.size, spp=args.spp, max_depth=args.max_depth,
                         rr_depth=args.rr_depth, seed=0)
    images, wall_ms, gpu_ms, nonfinite = [], [], [], 0
    with RenderPipeline(ctx, scene, base) as pipeline:
        for seed in range(args.seeds):
            pipeline.options = dataclasses.replace(base, seed=seed)
            start = time.perf_counter()
            images.append(np.array(pipeline.render(), np.float32))
            wall_ms.append((time.perf_counter() - start) * 1e3)
            gpu_ms.append(float(pipeline.last_render_ms or float("nan")))
            nonfinite += int(pipeline.last_nonfinite)  # NaN/Inf samples the kernel dropped: a bias, if any
    return {"images": np.stack(images), "ms": statistics.median(wall_ms), "gpu_ms": statistics.median(gpu_ms),
            "nonfinite": nonfinite}


def render_mitsuba(mi: Any, scene: Scene, args: argparse.Namespace) -> dict[str, Any]:
    """The same, with Mitsuba: one untimed render first (it compiles the kernel), then ``--seeds`` timed ones."""
    import drjit as dr

    loaded = mi.load_dict(mitsuba_scene_dict(scene, width=args.size, height=args.size, spp=args.spp,
                                             max_depth=args.max_depth, rr_depth=args.rr_depth, mi=mi))
    np.array(mi.render(loaded, spp=args.spp, seed=2**31 - 1))
    images, wall_ms = [], []
    for seed in range(args.seeds):
        dr.sync_thread()
        start = time.perf_counter()
        image = np.array(mi.render(loaded, spp=args.spp, seed=seed), np.float32)  # waits for it
        wall_ms.append((time.perf_counter() - start) * 1e3)
        images.append(image[..., :3])
    return {"images": np.stack(images), "ms": statistics.median(wall_ms)}


def each_scene(names: list[str], render: Callable[[Scene], dict[str, Any]], who: str) -> dict[str, dict[str, Any]]:
    out = {}
    for name in names:
        start = time.perf_counter()
        try:
            out[name] = render(SCENES[name][1]())
        except Exception as exc:  # a scene that cannot render is reported, and the others still run
            out[name] = {"error": error_text(exc)}
        status = out[name].get("error", "ok")
        print(f"  {who:8s} {name:16s} {time.perf_counter() - start:6.1f} s  {status}", file=sys.stderr, flush=True)
    return out


# -- statistics and pictures ---------------------------------------------------------------------------------------


def compare(ours: np.ndarray, theirs: np.ndarray, spp: int) -> dict[str, Any]:
    a, b = batch_statistics(ours, spp), batch_statistics(theirs, spp)
    fraction, p_values = z_test(a.mean, a.variance, b.mean, b.variance, a.count, b.count, dof_ours=a.dof,
                                dof_ref=b.dof)
    half = ours.shape[0] // 2
    ratio = rmse_ratio(ours[:half].mean(0), ours[half:].mean(0), theirs[:half].mean(0), theirs[half:].mean(0),
                       compress=True)
    return {"pass_fraction": fraction, "passed": bool(fraction >= PASS_FRACTION), "rmse_ratio": ratio,
            "min_p": float(p_values.min()), "mean_ours": float(a.mean.mean()), "mean_mitsuba": float(b.mean.mean())}


def tonemap(linear: np.ndarray) -> np.ndarray:
    """Linear RGB to sRGB uint8, clamped at 1 (the curve of our film)."""
    c = np.clip(np.nan_to_num(linear, nan=0.0), 0.0, 1.0)
    s = np.where(c <= 0.0031308, 12.92 * c, 1.055 * np.power(c, 1 / 2.4) - 0.055)
    return (np.clip(s, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def heat(x: np.ndarray) -> np.ndarray:
    """Values in [0, 1] to a black-red-yellow-white ramp, uint8 RGB."""
    x = np.clip(x, 0.0, 1.0)[..., None]
    ramp = np.concatenate([np.clip(3 * x, 0, 1), np.clip(3 * x - 1, 0, 1), np.clip(3 * x - 2, 0, 1)], axis=-1)
    return (ramp * 255.0 + 0.5).astype(np.uint8)


def write_panel(path: Path, panels: list[tuple[str, np.ndarray]], caption: str, diff_scale: float | None) -> None:
    """Images side by side with a title over each, a caption and (with ``diff_scale``) a colour bar under them."""
    from PIL import Image, ImageDraw

    h, w = panels[0][1].shape[:2]
    lines = caption.splitlines()
    pad, title, foot = 4, 16, 24 + 12 * len(lines)
    canvas = Image.new("RGB", (len(panels) * (w + pad) + pad, h + title + foot), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    for k, (label, image) in enumerate(panels):
        x = pad + k * (w + pad)
        canvas.paste(Image.fromarray(image), (x, title))
        draw.text((x, 2), label, fill=(0, 0, 0))
    if diff_scale is not None:  # the colour bar under the difference
        x0 = pad + (len(panels) - 1) * (w + pad)
        bar = heat(np.linspace(0.0, 1.0, w)[None].repeat(8, axis=0))
        canvas.paste(Image.fromarray(bar), (x0, h + title + 2))
        draw.text((x0, h + title + 11), "0", fill=(0, 0, 0))
        draw.text((x0 + w - 40, h + title + 11), f">= {diff_scale:g}", fill=(0, 0, 0))
    for k, line in enumerate(lines):
        draw.text((pad, h + title + 24 + 12 * k), line, fill=(0, 0, 0))
    path.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(path)


def parity_picture(args: argparse.Namespace, name: str, ours: np.ndarray | None, theirs: np.ndarray | None,
                   row: dict[str, Any]) -> str:
    panels = []
    if ours is not None:
        panels.append(("optixasync", tonemap(ours.mean(0))))
    if theirs is not None:
        panels.append((f"Mitsuba {args.variant}", tonemap(theirs.mean(0))))
    if not panels:
        return ""
    scale = None
    if ours is not None and theirs is not None:
        scale = args.diff_scale
        diff = np.abs(ours.mean(0) - theirs.mean(0)).mean(axis=-1)
        panels.append((f"|difference|, 0 to {scale:g}", heat(diff / scale)))
    spp = args.spp * args.seeds
    caption = f"{name}: {SCENES[name][0]}\n{args.size}x{args.size}, {spp} spp each"
    if "pass_fraction" in row:
        caption += f"; pass {row['pass_fraction']:.2%}, RMSE ratio {row['rmse_ratio']:.3f}"
    path = Path(args.out) / f"{name}.png"
    write_panel(path, panels, caption, scale)
    return str(path)


# -- speed -----------------------------------------------------------------------------------------------------------


def filling_scene(material: Material) -> Scene:
    """A unit sphere seen from 2.2 away with a 30-degree view: every pixel sees it; the sky lights it."""
    ball = sphere((0, 0, 0), 1.0, material, subdivisions=5, smooth=True, name="sphere")
    ball = ball.transformed(placement((1, 1, 1), math.pi, 0.0, (0, 0, 0)))
    return Scene([ball], Camera((0.0, 0.0, 2.2), (0.0, 0.0, 0.0), fov=30.0), material_environment(512))


#: The BSDFs timed one by one (c); the glTF one renders in Mitsuba as its ``principled`` stand-in.
PER_BSDF: dict[str, Material] = {
    "diffuse": Material(reflectance=(0.7, 0.5, 0.3)),
    "conductor": _gold(0.0),
    "roughconductor 0.2": _gold(0.2),
    "dielectric": Material(bsdf="dielectric", int_ior=1.5),
    "roughdielectric 0.2": Material(bsdf="dielectric", alpha=0.2, int_ior=1.5),
    "roughplastic 0.1": Material(bsdf="plastic", alpha=0.1, reflectance=(0.1, 0.27, 0.6)),
    "diffuse + bitmap": Material(reflectance=(1.0, 1.0, 1.0), reflectance_texture=checker_texture()),
    "conductor + normal map": Material(bsdf="conductor", alpha=0.2, eta=COPPER_ETA, k=COPPER_K,
                                       reflectance=(1.0, 1.0, 1.0), normal_texture=bumps_normal_map()),
    "metallic_roughness": Material(bsdf="metallic_roughness", metallic=1.0, roughness=0.5,
                                   reflectance=(0.95, 0.64, 0.54)),
}


def stand_ins(scene: Scene, mi: Any) -> dict[int, dict[str, Any]]:
    """Mitsuba BSDFs of similar cost for the materials without a twin (glTF spheres, the alpha-masked leaf)."""
    from optixasync.testing import mitsuba_texture

    out = {}
    for k, mesh in enumerate(scene.meshes):
        m = mesh.material
        if m.bsdf == "metallic_roughness":
            out[k] = {"type": "principled", "base_color": {"type": "rgb", "value": list(m.reflectance)},
                      "metallic": m.metallic, "roughness": m.roughness}
        elif m.alpha_mode != "opaque" and m.reflectance_texture is not None:
            texture = m.reflectance_texture
            cut = (texture.rgba()[..., 3] >= m.alpha_cutoff * 255).astype(np.float32)
            opacity = {"type": "bitmap", "bitmap": mi.Bitmap(np.repeat(cut[..., None], 3, -1)), "raw": True,
                       "filter_type": "nearest"}
            colour = mitsuba_texture(texture, mi, m.reflectance)
            out[k] = {"type": "mask", "opacity": opacity,
                      "bsdf": {"type": "twosided", "bsdf": {"type": "diffuse", "reflectance": colour}}}
    return out


def median_ms(run: Callable[[], Any], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def guarded(out: dict[str, Any], key: str, work: Callable[[], Any]) -> None:
    """``out[key] = work()``, or ``{"error": ...}`` when it raises: one failing measurement costs only itself."""
    try:
        out[key] = work()
    except Exception as exc:
        out[key] = {"error": error_text(exc)}
    print(f"  perf {key}: {'error' if 'error' in out[key] else 'ok'}", file=sys.stderr, flush=True)


def perf_ours(ctx: Any, args: argparse.Namespace) -> dict[str, Any]:

    from optixasync.cuda import create_stream
    from optixasync.render import RenderOptions, RenderPipeline

    out: dict[str, Any] = {}
    size, spp = args.perf_size, args.perf_spp

    def offline() -> dict[str, Any]:
        stream = create_stream()
        options = RenderOptions(width=size, height=size, spp=spp, max_depth=8)
        with RenderPipeline(ctx, material_scene(), options, stream=stream) as pipeline:
            pipeline.render()  # warm-up: compaction, caches
            wall = median_ms(pipeline.render)
            return {"wall_ms": wall, "gpu_ms": float(pipeline.last_render_ms or float("nan"))}

    def progressive() -> dict[str, Any]:
        stream = create_stream()
        rows = {}
        with RenderPipeline(ctx, material_scene(), RenderOptions(width=size, height=size, spp=1, max_depth=8),
                            stream=stream) as pipeline:
            for readback in (True, False):
                pipeline.reset()
                s = run_frames(ctx, pipeline, stream, 2, args.frames, 10, readback)
                rows["readback" if readback else "no readback"] = {"fps": s.get("fps"), "gpu_busy": s["gpu_busy"],
                                                                    "gpu_ms": s["gpu_ms"]["median"]}
        return rows

    def per_bsdf() -> dict[str, Any]:
        rows = {}
        for name, material in PER_BSDF.items():
            try:
                options = RenderOptions(width=args.bsdf_size, height=args.bsdf_size, spp=args.bsdf_spp, max_depth=8)
                with RenderPipeline(ctx, filling_scene(material), options) as pipeline:
                    pipeline.render()  # warm-up
                    times = []
                    for _ in range(3):
                        pipeline.render()
                        times.append(float(pipeline.last_render_ms))
                    gpu = statistics.median(times)
                rows[name] = {"msamples_per_s": args.bsdf_size**2 * args.bsdf_spp / (gpu * 1e3), "gpu_ms": gpu}
            except Exception as exc:
                rows[name] = {"error": error_text(exc)}
        return rows

    guarded(out, "offline", offline)
    guarded(out, "progressive", progressive)
    guarded(out, "per_bsdf", per_bsdf)
    return out


def mitsuba_progressive(mi: Any, loaded: Any, frames: int, readback: bool) -> float:
    """fps of 1 spp per frame into a running sum on the device; ``readback``: the mean to the host every frame."""
    import drjit as dr

    total = None
    start = 0.0
    for k in range(10 + frames):
        if k == 10:
            dr.sync_thread()
            start = time.perf_counter()
        image = mi.render(loaded, spp=1, seed=k)
        total = image if total is None else total + image
        if readback:
            np.array(total / (k + 1))  # waits for the frame and copies it
        else:
            dr.eval(total)
    dr.sync_thread()
    return frames / (time.perf_counter() - start)


def perf_mitsuba(mi: Any, args: argparse.Namespace) -> dict[str, Any]:
    import drjit as dr

    out: dict[str, Any] = {}
    size, spp = args.perf_size, args.perf_spp
    holder: dict[str, Any] = {}

    def offline() -> dict[str, Any]:
        scene = material_scene()
        loaded = holder["scene"] = mi.load_dict(mitsuba_scene_dict(
            scene, width=size, height=size, spp=spp, max_depth=8, mi=mi, stand_ins=stand_ins(scene, mi)))

        def once() -> None:
            mi.render(loaded, spp=spp, seed=1)
            dr.sync_thread()

        once()
        return {"wall_ms": median_ms(once)}

    def progressive() -> dict[str, Any]:
        loaded = holder["scene"]
        return {("readback" if rb else "no readback"): {"fps": mitsuba_progressive(mi, loaded, args.frames, rb)}
                for rb in (True, False)}

    def per_bsdf() -> dict[str, Any]:
        rows = {}
        for name, material in PER_BSDF.items():
            try:
                scene = filling_scene(material)
                size, spp = args.bsdf_size, args.bsdf_spp
                loaded = mi.load_dict(mitsuba_scene_dict(scene, width=size, height=size, spp=spp, max_depth=8, mi=mi,
                                                         stand_ins=stand_ins(scene, mi)))

                def once(loaded: Any = loaded, spp: int = spp) -> None:
                    mi.render(loaded, spp=spp, seed=3)
                    dr.sync_thread()

                once()
                ms = median_ms(once)
                rows[name] = {"msamples_per_s": size * size * spp / (ms * 1e3), "wall_ms": ms,
                              "stand_in": material.bsdf == "metallic_roughness"}
            except Exception as exc:
                rows[name] = {"error": error_text(exc)}
        return rows

    guarded(out, "offline", offline)
    if "scene" in holder:
        guarded(out, "progressive", progressive)
    guarded(out, "per_bsdf", per_bsdf)
    return out


# -- report ----------------------------------------------------------------------------------------------------------


def parity_rows(args: argparse.Namespace, ours: dict[str, Any], theirs: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name in args.scenes:
        a, b = ours.get(name, {}), theirs.get(name, {})
        row: dict[str, Any] = {"scene": name, "spp": args.spp * args.seeds, "ours_ms": a.get("ms", "-"),
                               "mitsuba_ms": b.get("ms", "-"), "ours_nonfinite": a.get("nonfinite", "-")}
        errors = [f"{who}: {side['error']}" for who, side in (("ours", a), ("Mitsuba", b)) if "error" in side]
        if errors:
            row["criterion"] = "; ".join(errors)
        elif "images" in a and "images" in b:
            row.update(compare(a["images"], b["images"], args.spp))
            row["criterion"] = "met" if row["passed"] else "NOT met"
        row["picture"] = parity_picture(args, name, a.get("images"), b.get("images"), row)
        rows.append(row)
    return rows


def pick(side: Any, *keys: str) -> Any:
    """``side[k0][k1]...``, the error text of the first level that failed, or "-" where nothing was measured."""
    for key in keys:
        if not isinstance(side, dict):
            return "-"
        if "error" in side:
            return side["error"]
        side = side.get(key, "-")
    return side


def print_perf(report: dict[str, Any], args: argparse.Namespace) -> None:
    ours, theirs = report.get("perf_ours", {}), report.get("perf_mitsuba", {})

    print(f"\n(a) Material scene {args.perf_size}x{args.perf_size}, {args.perf_spp} spp, max depth 8 "
          "(median of 3 warm runs; Mitsuba renders stand-ins for the 4 glTF spheres and the leaf)\n")
    print(table([{"r": "optixasync (wall)", "ms": pick(ours, "offline", "wall_ms")},
                 {"r": "optixasync (GPU)", "ms": pick(ours, "offline", "gpu_ms")},
                 {"r": f"Mitsuba {args.variant} (wall)", "ms": pick(theirs, "offline", "wall_ms")}],
                [("r", "renderer", ""), ("ms", "ms", ".1f")]))
    print(f"\n(b) Progressive, 1 spp/frame at {args.perf_size}x{args.perf_size}, {args.frames} frames after 10\n")
    rows = [{"r": f"optixasync, {mode}", "fps": pick(ours, "progressive", mode, "fps"),
             "busy": pick(ours, "progressive", mode, "gpu_busy")} for mode in ("readback", "no readback")]
    rows += [{"r": f"Mitsuba, {mode}", "fps": pick(theirs, "progressive", mode, "fps"), "busy": "n/a"}
             for mode in ("readback", "no readback")]
    print(table(rows, [("r", "loop", ""), ("fps", "fps", ".1f"), ("busy", "GPU busy", ".1%")]))
    print(f"\n(c) Per BSDF: a sphere filling {args.bsdf_size}x{args.bsdf_size}, {args.bsdf_spp} spp, max depth 8 "
          "(Msamples/s)\n")
    rows = [{"bsdf": name, "ours": pick(ours, "per_bsdf", name, "msamples_per_s"),
             "theirs": pick(theirs, "per_bsdf", name, "msamples_per_s"),
             "note": "Mitsuba: principled stand-in" if PER_BSDF[name].bsdf == "metallic_roughness" else ""}
            for name in PER_BSDF]
    print(table(rows, [("bsdf", "BSDF", ""), ("ours", "optixasync (GPU time)", ".1f"),
                       ("theirs", "Mitsuba (wall)", ".1f"), ("note", "", "")]))


# -- main ------------------------------------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", default=",".join(SCENES), help=f"comma-separated, from: {', '.join(SCENES)}")
    parser.add_argument("--size", type=int, default=256, help="parity image width and height (default 256)")
    parser.add_argument("--spp", type=int, default=64, help="samples per pixel of each seed's render (default 64)")
    parser.add_argument("--seeds", type=int, default=16, help="independent renders per side (default 16, >= 2)")
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--rr-depth", type=int, default=5)
    parser.add_argument("--variant", default="cuda_ad_rgb", help="Mitsuba variant (an RGB one; default cuda_ad_rgb)")
    parser.add_argument("--out", default="docs/parity", help="folder of the parity pictures")
    parser.add_argument("--diff-scale", type=float, default=0.05, help="difference shown white (linear radiance)")
    parser.add_argument("--json", default="bench_out/compare_mitsuba.json", help="every number, as JSON")
    parser.add_argument("--no-perf", action="store_true", help="parity only")
    parser.add_argument("--perf-size", type=int, default=1024)
    parser.add_argument("--perf-spp", type=int, default=256)
    parser.add_argument("--frames", type=int, default=100, help="measured progressive frames (default 100)")
    parser.add_argument("--bsdf-size", type=int, default=512, help="image size of the per-BSDF timing (default 512)")
    parser.add_argument("--bsdf-spp", type=int, default=64, help="spp of the per-BSDF timing (default 64)")
    parser.add_argument("--only", choices=("ours", "mitsuba"), help="render with one renderer only (no statistics)")
    args = parser.parse_args(argv)
    args.scenes = [s.strip() for s in args.scenes.split(",") if s.strip()]
    unknown = [s for s in args.scenes if s not in SCENES]
    if unknown:
        parser.error(f"unknown scenes {unknown}; choose from {', '.join(SCENES)}")
    if args.seeds < 2 or args.spp < 1 or args.size < 1 or args.frames < 2:
        parser.error("--seeds must be >= 2, --frames >= 2, --spp and --size >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    start = time.perf_counter()
    report: dict[str, Any] = {"settings": vars(args)}
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    if args.only != "mitsuba":
        import optixasync
        from optixasync.testing import require_gpu

        require_gpu()
        with optixasync.Context() as ctx:
            ours = each_scene(args.scenes, lambda scene: render_ours(ctx, scene, args), "ours")
            if not args.no_perf:
                report["perf_ours"] = perf_ours(ctx, args)
    # Mitsuba after our context is closed: the two renderers never hold the GPU at the same time.
    if args.only != "ours":
        try:
            mi = import_mitsuba(args.variant)
            report["mitsuba"] = {"version": mi.__version__, "variant": args.variant}
            theirs = each_scene(args.scenes, lambda scene: render_mitsuba(mi, scene, args), "Mitsuba")
            if not args.no_perf:
                report["perf_mitsuba"] = perf_mitsuba(mi, args)
        except (MissingMitsubaError, ValueError, ImportError) as exc:
            print(f"Mitsuba unavailable: {error_text(exc)}", file=sys.stderr)
            theirs = {name: {"error": f"Mitsuba unavailable: {error_text(exc)}"} for name in args.scenes}
    rows = report["parity"] = parity_rows(args, ours, theirs)
    print(f"\n## Parity with Mitsuba 3 ({args.variant}): {args.size}x{args.size}, {args.seeds} seeds x {args.spp} spp "
          f"a side, max depth {args.max_depth}; criterion: pass fraction >= {PASS_FRACTION:.2%}\n")
    print(table(rows, [("scene", "scene", ""), ("spp", "spp", "d"), ("pass_fraction", "pass fraction", ".4%"),
                       ("criterion", "criterion", ""), ("rmse_ratio", "RMSE ratio", ".3f"),
                       ("ours_ms", "our ms / seed", ".1f"), ("mitsuba_ms", "Mitsuba ms / seed", ".1f"),
                       ("ours_nonfinite", "our NaN samples", "d")]))
    if not args.no_perf:
        print_perf(report, args)
    report["elapsed_s"] = time.perf_counter() - start
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=json_default))
    print(f"\nwrote {out} and the pictures in {args.out} ({report['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    run_main(main)
