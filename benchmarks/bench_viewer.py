"""Viewer throughput and latency: delivered fps, input-to-frame latency, encode time, and the source's own speed.

Runs a frame source alone (publishing into a sink that drops frames), then
behind a :class:`~optixasync.viewer.Viewer` with one
:class:`~optixasync.viewer.ProtocolClient` attached in another process (as a
browser tab would be) that acknowledges every frame, and prints one table.
Sources:

* ``--cpu``: the NumPy renderer (``optixasync view --cpu``);
* ``--gpu``: the path tracer on the GPU (``optixasync view``'s source), the
  Cornell box at the image size, denoised when OIDN's CUDA device is there;
* ``--synthetic``: a stand-in for the GPU path tracer's loop: each frame does
  ``--submit-ms`` of Python work (the host submit) and then waits, without the
  GIL, until ``--frame-ms`` have passed (the slot fence), and publishes one of
  two pre-rendered noisy images; this measures what the viewer costs a fast
  GPU loop and what it delivers at the image size.

Exit status: 0 done, 1 aiohttp missing, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--cpu", action="store_true", help="the NumPy CPU renderer")
    kind.add_argument("--gpu", action="store_true", help="the GPU path tracer (denoised when OIDN's CUDA device works)")
    kind.add_argument("--synthetic", action="store_true", help="a GPU-like paced loop publishing pre-rendered frames")
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each measurement (default 5)")
    parser.add_argument("--latency-samples", type=int, default=40, help="orbit messages timed (default 40)")
    parser.add_argument("--quality", type=int, default=80)
    parser.add_argument("--encoders", type=int, default=2)
    parser.add_argument("--backend", default="auto", choices=("auto", "simplejpeg", "pillow"))
    parser.add_argument("--max-fps", type=float, default=None, help="the viewer's cap on frames encoded per second")
    parser.add_argument("--frame-ms", type=float, default=0.68, help="synthetic: frame period (GPU time, default 0.68)")
    parser.add_argument("--submit-ms", type=float, default=0.14, help="synthetic: Python work per frame (default 0.14)")
    args = parser.parse_args(argv)
    if args.width < 16 or args.height < 16 or args.seconds <= 0 or args.latency_samples < 1:
        parser.error("--width/--height must be at least 16, --seconds and --latency-samples positive")
    return args


def make_source(args: argparse.Namespace) -> Any:
    from optixasync.viewer import CpuFrameSource, CpuRenderer, RenderLoop, Settings

    if args.cpu:
        return CpuFrameSource(args.width, args.height, max_samples=10**9)
    if args.gpu:
        from optixasync.scene import cornell_box
        from optixasync.viewer import PathTracerSource

        return PathTracerSource(cornell_box(), args.width, args.height)
    renderer = CpuRenderer(seed=1)
    settings = Settings(width=args.width, height=args.height, max_depth=3)
    images = []
    for _ in range(2):  # two different 1-spp images, so consecutive frames differ like a progressive render's
        renderer.add_samples(CpuRenderer.default_camera(), settings, 1)
        images.append(renderer.image())
        renderer.reset_if_changed(CpuRenderer.default_camera(), Settings(width=16, height=16))

    class PacedSource(RenderLoop):
        """Python work for ``submit_ms``, then a GIL-free wait to ``frame_ms``: the shape of a GPU render loop."""

        initial_camera = CpuRenderer.default_camera()
        initial_settings = settings

        def render(self, view: Any) -> tuple[Any, dict[str, Any]]:
            start = time.perf_counter()
            while time.perf_counter() - start < args.submit_ms / 1e3:
                pass
            remaining = args.frame_ms / 1e3 - (time.perf_counter() - start)
            if remaining > 0:
                time.sleep(remaining)
            return images[self.loops % 2], {"samples": self.loops, "frames_in_flight": 2}

    return PacedSource(name="bench-paced-source")


def loop_fps(source: Any, seconds: float) -> float:
    start, count = time.perf_counter(), source.loops
    time.sleep(seconds)
    return (source.loops - count) / (time.perf_counter() - start)


def wait_for_loops(source: Any, loops: int, timeout: float = 120.0) -> None:
    """Wait until ``source`` has run ``loops`` loops (its warm-up); RuntimeError if it does not within ``timeout``."""
    deadline = time.perf_counter() + timeout
    while source.loops < loops:
        if getattr(source, "error", None) is not None:
            raise RuntimeError("the source stopped") from source.error
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the source ran {source.loops} loops in {timeout:.0f} s; it did not start")
        time.sleep(0.05)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def client_process(url: str, seconds: float, latency_samples: int, conn: Any) -> None:
    """In a child process (like a browser tab): count delivered frames for ``seconds``, then time input."""
    conn.send(asyncio.run(_client(url, seconds, latency_samples, conn)))


async def _client(url: str, seconds: float, latency_samples: int, conn: Any) -> dict[str, float]:
    from optixasync.viewer import ProtocolClient

    async with ProtocolClient(url, keep=4) as client:
        await client.next_frame(timeout=60)
        await asyncio.sleep(0.5)  # warm-up
        conn.send("start")
        before, bytes_before, start = client.frames_received, client.bytes_received, time.perf_counter()
        await asyncio.sleep(seconds)
        elapsed, frames = time.perf_counter() - start, client.frames_received - before
        kb = (client.bytes_received - bytes_before) / max(frames, 1) / 1e3
        latencies = []
        for k in range(latency_samples):
            latencies.append(await client.input_latency(0.002 * (1 if k % 2 else -1), timeout=60))
            await asyncio.sleep(0.02)
    return {"delivered": frames / elapsed, "kb": kb, "lat_p50": statistics.median(latencies) * 1e3,
            "lat_p95": percentile(latencies, 0.95) * 1e3}


def measure_with_viewer(viewer: Any, source: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Source fps in this process while a client in another process takes frames; the client's numbers."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=client_process, args=(viewer.url, args.seconds, args.latency_samples, child))
    process.start()
    try:
        if not parent.poll(120) or parent.recv() != "start":
            raise RuntimeError("the client process did not start")
        stats_before = viewer.stats()
        source_fps = loop_fps(source, args.seconds)
        stats = viewer.stats()
        if not parent.poll(600):
            raise RuntimeError("the client process did not finish")
        result = parent.recv()
    finally:
        process.join(10)
        if process.is_alive():
            process.kill()
    result.update({
        "source": source_fps, "encode_ms": stats["encode_ms"], "encode_p95": stats["encode_ms_p95"],
        "encoder": stats["encoder"], **{k: stats[k] - stats_before[k] for k in ("published", "dropped", "encoded", "stale")},
    })
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        print("bench_viewer: the viewer needs aiohttp: pip install 'optixasync[viewer]'", file=sys.stderr)
        return 1
    from optixasync.viewer import NullSink, Viewer

    source = make_source(args)
    sink = NullSink(source.initial_camera, source.initial_settings)
    source.start(sink)
    wait_for_loops(source, 3)  # the GPU source compiles its pipeline in its first loop
    alone = loop_fps(source, args.seconds)
    source.stop()
    with Viewer(source, quality=args.quality, encoders=args.encoders, encoder_backend=args.backend,
                max_fps=args.max_fps) as viewer:
        result = measure_with_viewer(viewer, source, args)
    if args.gpu:
        source.close()
        name = f"GPU path tracer, denoise {'on' if source.initial_settings.denoise else 'off (no OIDN CUDA device)'}"
    else:
        name = "cpu" if args.cpu else f"synthetic ({args.submit_ms} ms submit, {args.frame_ms} ms frame)"
    rows = [
        ("source", f"{name}, {args.width}x{args.height}"),
        ("encoder", f"{result['encoder']}, quality {args.quality}, {args.encoders} threads, {result['kb']:.0f} kB/frame"),
        ("delivered fps (1 client process, acks every frame)", f"{result['delivered']:.1f}"
                                                               + (f" (max_fps {args.max_fps:g})" if args.max_fps else "")),
        ("input-to-frame latency ms (median / p95)", f"{result['lat_p50']:.1f} / {result['lat_p95']:.1f}"),
        ("encode ms (median / p95)", f"{result['encode_ms']:.2f} / {result['encode_p95']:.2f}"),
        ("frames published / encoded / dropped / stale", f"{result['published']} / {result['encoded']} / "
                                                          f"{result['dropped']} / {result['stale']}"),
        ("source loop fps alone", f"{alone:.1f}"),
        ("source loop fps with the viewer attached", f"{result['source']:.1f} ({result['source'] / alone:.1%} of alone)"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"| {'measure':<{width}} | result |\n|{'-' * (width + 2)}|---|")
    for key, value in rows:
        print(f"| {key:<{width}} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
