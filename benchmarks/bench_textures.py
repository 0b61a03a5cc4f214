"""A textured glTF asset with 4096x4096 textures: loading, upload, and progressive frames under syncwatch.

Writes an asset (``.glb``) with three 4096x4096 textures -- an sRGB base
colour, a metallic-roughness map and a normal map -- on a smooth sphere over a
ground plane, and an EXR sky; then, in one process:

1. reads it back with :func:`optixasync.scene.load_gltf` (host time);
2. creates the :class:`~optixasync.render.RenderPipeline` (host time of the
   set-up call, and the GPU time until its stream drained: the textures go
   host -> pinned staging -> device -> CUDA array on the set-up stream);
3. renders ``--frames`` progressive frames of 1 spp through a
   :class:`~optixasync.FrameScheduler` under
   :func:`optixasync.diagnostics.syncwatch` after a warm-up, and prints the
   stalls it found (the steady state should have none) and the frame rate.

Usage::

    python benchmarks/bench_textures.py [--size 4096] [--frames 200] [--out bench_out/textured]

The asset stays in ``--out``: ``optixasync render --scene bench_out/textured/textured.glb
--env bench_out/textured/sky.exr`` renders it.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def procedural_textures(size: int) -> dict[str, np.ndarray]:
    """Three size x size RGB(A) uint8 images: base colour (sRGB tiles), metallic-roughness, a normal map of bumps."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    tiles = ((np.floor(x * 16) + np.floor(y * 16)) % 2).astype(np.float32)
    base = np.stack([0.25 + 0.6 * tiles, 0.3 + 0.3 * x, 0.35 + 0.4 * (1 - tiles) * y], axis=-1)
    # glTF: green = roughness, blue = metallic (metal tiles, rough stripes)
    rough = 0.15 + 0.6 * (np.sin(x * 80) * 0.5 + 0.5)
    mr = np.stack([np.zeros_like(x), rough, tiles], axis=-1)
    # bumps: the gradient of a sum of sines, as a tangent-space normal
    phase = 2 * np.pi * 24
    dx, dy = 0.35 * np.cos(x * phase) * np.sin(y * phase), 0.35 * np.sin(x * phase) * np.cos(y * phase)
    n = np.stack([-dx, -dy, np.ones_like(x)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return {"base": (base * 255).astype(np.uint8), "mr": (mr * 255).astype(np.uint8),
            "normal": ((n * 0.5 + 0.5) * 255).astype(np.uint8)}


def png_bytes(image: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def write_textured_asset(path: Path, size: int) -> None:
    """A .glb: a UV sphere with the three textures (metallic-roughness material) over a grey ground quad."""
    import pygltflib as g

    from optixasync.scene import sphere

    # Half a turn about +y: the seam of the latitude-longitude UVs faces away from the camera.
    ball = sphere((0.0, 0.0, 0.0), 1.0, subdivisions=6, smooth=True).transformed(
        [[-1, 0, 0, 0], [0, 1, 0, 1], [0, 0, -1, 0]])
    ground_v = np.array([[-4, 0, -4], [4, 0, -4], [4, 0, 4], [-4, 0, 4]], np.float32)
    ground_i = np.array([[0, 3, 2], [0, 2, 1]], np.uint32)  # front side +y
    blobs: list[bytes] = []
    views, accessors = [], []

    def add(data: np.ndarray, component: int, kind: str, target: int | None = None, bounds: bool = False) -> int:
        offset = sum(len(b) for b in blobs)
        raw = np.ascontiguousarray(data).tobytes()
        blobs.append(raw + b"\0" * (-len(raw) % 4))
        views.append(g.BufferView(buffer=0, byteOffset=offset, byteLength=len(raw), target=target))
        count = data.shape[0] if data.ndim > 1 else data.size
        extra = {"min": data.min(axis=0).tolist(), "max": data.max(axis=0).tolist()} if bounds else {}
        accessors.append(g.Accessor(bufferView=len(views) - 1, componentType=component, count=count, type=kind,
                                    **extra))
        return len(accessors) - 1

    def image(data: np.ndarray) -> int:
        add_png = png_bytes(data)
        offset = sum(len(b) for b in blobs)
        blobs.append(add_png + b"\0" * (-len(add_png) % 4))
        views.append(g.BufferView(buffer=0, byteOffset=offset, byteLength=len(add_png)))
        return len(views) - 1

    f32, u32 = g.FLOAT, g.UNSIGNED_INT
    sphere_prim = g.Primitive(attributes=g.Attributes(
        POSITION=add(ball.vertices, f32, g.VEC3, g.ARRAY_BUFFER, True), NORMAL=add(ball.normals, f32, g.VEC3),
        TEXCOORD_0=add(ball.uvs, f32, g.VEC2)), indices=add(ball.indices.astype(np.uint32).reshape(-1), u32, g.SCALAR),
        material=0)
    ground_prim = g.Primitive(attributes=g.Attributes(POSITION=add(ground_v, f32, g.VEC3, g.ARRAY_BUFFER, True)),
                              indices=add(ground_i.reshape(-1), u32, g.SCALAR), material=1)
    textures = procedural_textures(size)
    images = [g.Image(bufferView=image(textures[k]), mimeType="image/png") for k in ("base", "mr", "normal")]
    gltf = g.GLTF2(
        scene=0, scenes=[g.Scene(nodes=[0, 1, 2])],
        nodes=[g.Node(mesh=0), g.Node(mesh=1),
               g.Node(camera=0, translation=[0.0, 1.6, 4.2], rotation=[-0.0871557, 0.0, 0.0, 0.9961947])],
        meshes=[g.Mesh(primitives=[sphere_prim]), g.Mesh(primitives=[ground_prim])],
        cameras=[g.Camera(type="perspective", perspective=g.Perspective(yfov=0.75, znear=0.01, aspectRatio=1.0))],
        materials=[g.Material(pbrMetallicRoughness=g.PbrMetallicRoughness(
                       baseColorTexture=g.TextureInfo(index=0), metallicRoughnessTexture=g.TextureInfo(index=1)),
                       normalTexture=g.NormalMaterialTexture(index=2)),
                   g.Material(pbrMetallicRoughness=g.PbrMetallicRoughness(baseColorFactor=[0.5, 0.5, 0.5, 1.0],
                                                                          metallicFactor=0.0, roughnessFactor=1.0))],
        textures=[g.Texture(source=k, sampler=0) for k in range(3)],
        samplers=[g.Sampler(magFilter=g.LINEAR, minFilter=g.LINEAR, wrapS=g.REPEAT, wrapT=g.REPEAT)],
        images=images, bufferViews=views, accessors=accessors,
    )
    data = b"".join(blobs)
    gltf.buffers = [g.Buffer(byteLength=len(data))]
    gltf.set_binary_blob(data)
    gltf.save_binary(str(path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=4096, help="texture width and height (default 4096)")
    parser.add_argument("--frames", type=int, default=200, help="measured progressive frames (default 200)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--out", default="bench_out/textured", help="folder of the asset, the sky and the report")
    args = parser.parse_args(argv)

    from optixasync.testing import require_gpu

    status = require_gpu("bench_textures")
    if status is not None:
        return status
    from optixasync import Context
    from optixasync.cuda import create_stream, synchronize
    from optixasync.diagnostics import syncwatch
    from optixasync.io import write_image
    from optixasync.render import RenderOptions, RenderPipeline
    from optixasync.render._textures import DeviceTextures  # the upload alone has no public door
    from optixasync.scene import load_environment, load_gltf
    from optixasync.scene.demo import material_environment
    from optixasync.scheduler import FrameScheduler

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    asset, sky = out / "textured.glb", out / "sky.exr"
    start = time.perf_counter()
    write_textured_asset(asset, args.size)
    write_image(sky, material_environment(1024).image)
    report: dict[str, Any] = {"write_s": time.perf_counter() - start, "asset_mb": asset.stat().st_size / 2**20}

    start = time.perf_counter()
    scene = load_gltf(asset)
    scene.environment = load_environment(sky)
    report["load_s"] = time.perf_counter() - start
    texels = sum(t.nbytes for m in {m.material for m in scene.meshes} for t in m.textures.values())
    report["texture_mb"] = texels / 2**20

    options = RenderOptions(width=args.width, height=args.width, spp=1, max_depth=8)
    with Context() as ctx:
        stream = create_stream()
        # The upload alone: the host's share (pinned staging, enqueueing) and the GPU's (until the stream drained).
        textures = [t for m in {m.material for m in scene.meshes} for t in m.textures.values()]
        DeviceTextures(ctx, textures[:1], stream).close()  # CUDA array and texture-object set-up paid once
        synchronize(stream)
        start = time.perf_counter()
        uploaded = DeviceTextures(ctx, textures, stream)
        report["upload_call_ms"] = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        synchronize(stream)
        report["upload_drain_ms"] = (time.perf_counter() - start) * 1e3
        uploaded.close()
        start = time.perf_counter()
        pipeline = RenderPipeline(ctx, scene, options, stream=stream)
        report["setup_call_ms"] = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        synchronize(stream)
        report["setup_drain_ms"] = (time.perf_counter() - start) * 1e3
        with pipeline, FrameScheduler(ctx, 2, params_dtype=pipeline.params_dtype, stream=stream) as sched:
            def frames(count: int) -> int:
                delivered = 0
                for _ in range(count):
                    with sched.frame() as frame:
                        pipeline.record(frame, 1, readback="image")
                    delivered += len(sched.poll())
                return delivered

            frames(args.warmup)
            sched.drain()
            start = time.perf_counter()
            with syncwatch(max_stack=8) as watch:
                delivered = frames(args.frames)
            delivered += len(sched.drain())
            report["fps"] = args.frames / (time.perf_counter() - start)
            report["delivered"] = delivered
            report["stalls"] = len(watch.report.stalls)
            report["stall_ms"] = watch.report.stall_ms
            report["designed_waits"] = len(watch.report.designed)
            report["syncwatch"] = str(watch.report)
            report["gpu_busy"] = sched.stats.summary(skip=args.warmup).get("gpu_busy")
    print(f"asset {asset} ({report['asset_mb']:.1f} MB), textures {report['texture_mb']:.0f} MB of texels")
    print(f"write {report['write_s']:.1f} s, load {report['load_s']:.1f} s; texture upload alone: "
          f"{report['upload_call_ms']:.0f} ms in the call, the stream drained {report['upload_drain_ms']:.0f} ms later; "
          f"RenderPipeline() {report['setup_call_ms']:.0f} ms (kernel compiled or read from the cache), "
          f"stream drained {report['setup_drain_ms']:.0f} ms later")
    print(f"{args.frames} frames at {args.width}x{args.width}, 1 spp: {report['fps']:.1f} fps, "
          f"{report['delivered']} delivered, GPU busy {report['gpu_busy']}")
    print(f"syncwatch over the measured frames: {report['stalls']} stall(s), {report['stall_ms']:.3f} ms; "
          f"{report['designed_waits']} designed wait(s) (the frame slots' fences)")
    print(report["syncwatch"])
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
