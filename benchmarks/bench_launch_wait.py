"""The wait inside ``optixLaunch``: which launches block the host, and when, under which configuration.

    python benchmarks/bench_launch_wait.py [--quick] [--watch] [--queue-limit 1,2,3] [--in-flight 1,2,3,4]
        [--work busy,path] [--frames N] [--out bench_out/launch_wait.json]

OptiX gives each launch a piece of a per-context ring of launch resources and records an event for it on the
launch's stream; a launch that finds the ring full waits on the host (``cuEventSynchronize``) for the oldest
piece's event. This benchmark finds where that happens. Every configuration runs in a child process of its own
(a fresh CUDA and OptiX context), and reports the host time of every ``optixLaunch`` call (the driver's entry
alone, timed with ``perf_counter``; the launch queue's waits are counted apart): p50, p99, max, and how many took longer than 100 us ("blocked").

Two kinds of configuration:

``raw``
    ``--launches`` launches of the busy program queued back to back with no host wait (each spinning
    ``spin`` on the GPU, ``width`` threads), on one stream or round-robin over several, over one or two
    pipelines, one or two OptiX contexts: ``first blocked`` is the index of the first launch that waited, the
    ring's depth in launches for that configuration.
``sched``
    The frame scheduler at 1 to 4 frames in flight, frames of the busy program (``busy``) or of the path
    tracer (``path``, the Cornell box at 512x512, 1 spp), 200 frames after 20 warm-up frames (``--frames``),
    with the scheduler's option ``optix_queue_limit`` (the queued-launch bound per OptiX context) off or at
    the value given.

``--watch`` adds syncwatch (the ``diagnostics`` extra: CUPTI) to the scheduler runs, for the stalls inside
``optixLaunch`` and the designed waits with their causes. The tables print last, then the limit the raw
table suggests (the smallest ``first blocked`` of one context: a bound at most the ring's depth leaves OptiX
nothing to wait for); every number is in ``--out``. ``--queue-limit`` takes several values (``1,2,3``) and
the word ``auto``: the suggested limit, measured by the raw rows of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BLOCKED_S = 100e-6


def raw_configs(quick: bool, limits: list[int]) -> list[dict[str, Any]]:
    base = {"kind": "raw", "spin_us": 2000, "width": 64, "streams": 1, "pipelines": 1, "contexts": 1,
            "params_bytes": 0, "launches": 48 if quick else 96, "queue_limit": 0}
    rows = [base]
    rows += [dict(base, spin_us=s) for s in (100, 10000)]
    rows += [dict(base, width=1 << 20), dict(base, streams=4), dict(base, pipelines=2), dict(base, contexts=2),
             dict(base, params_bytes=4096)]
    return rows + limit_rows(base, limits)


def limit_rows(base: dict[str, Any], limits: list[int]) -> list[dict[str, Any]]:
    """The base configuration, on one stream and on four, with the launch queue bounded at each limit."""
    return [dict(base, streams=streams, queue_limit=n) for n in limits for streams in (1, 4)]


def sched_configs(quick: bool, limits: list[int], in_flight: list[int], works: list[str],
                  frames: int | None) -> list[dict[str, Any]]:
    frames = frames or (60 if quick else 200)
    rows = []
    for work in works:
        for n in in_flight:
            for queue_limit in [0, *limits]:
                rows.append({"kind": "sched", "work": work, "in_flight": n, "spin_us": 1000, "frames": frames,
                             "queue_limit": queue_limit})
    return rows


def suggested_limit(rows: list[dict[str, Any]]) -> int | None:
    """The ring's depth the raw rows of one context measured: the smallest index of a first blocked launch."""
    depths = [r["first_blocked"] for r in rows if r["kind"] == "raw" and r.get("contexts") == 1
              and not r.get("queue_limit") and r.get("first_blocked")]
    return min(depths) if depths else None


# -- children ----------------------------------------------------------------------------------------------------------


class LaunchClock:
    """Times every ``optixLaunch`` of the contexts' OptiX function tables on the host: the driver call alone.

    The launch queue's designed wait (``optix_queue_limit``) happens before it, in ``Pipeline.launch`` or
    ``Frame.launch``, and is counted by the queue, not here: a blocked launch is a wait inside OptiX.
    """

    def __init__(self, contexts: list[Any]) -> None:
        self.seconds: list[float] = []
        apis = {id(c.api): c.api for c in contexts}
        for api in apis.values():
            original = api.optixLaunch

            def timed(*args: Any, _original: Any = original) -> int:
                start = time.perf_counter()
                status = _original(*args)
                self.seconds.append(time.perf_counter() - start)
                return status

            api.optixLaunch = timed

    def summary(self, skip: int = 0) -> dict[str, Any]:
        s = self.seconds[skip:]
        if not s:
            return {"launches": 0}
        blocked = [i for i, x in enumerate(s) if x > BLOCKED_S]
        return {"launches": len(s), "p50_us": statistics.median(s) * 1e6,
                "p99_us": sorted(s)[min(len(s) - 1, int(0.99 * len(s)))] * 1e6, "max_us": max(s) * 1e6,
                "blocked": len(blocked), "blocked_ms": sum(s[i] for i in blocked) * 1e3,
                "first_blocked": blocked[0] if blocked else None}


def child_raw(cfg: dict[str, Any]) -> dict[str, Any]:
    import cupy
    import numpy as np

    import optixasync
    from optixasync.cuda import create_stream, synchronize
    from optixasync.testing import BUSY_PARAMS, BusyWorkload

    contexts = [optixasync.Context() for _ in range(cfg["contexts"])]
    works = [BusyWorkload(contexts[k % len(contexts)]) for k in range(max(cfg["pipelines"], cfg["contexts"]))]
    streams = [create_stream() for _ in range(cfg["streams"])]
    out = cupy.zeros(cfg["width"], cupy.float32)
    params = np.zeros(1, BUSY_PARAMS)
    params["out"], params["spin_ns"], params["scale"] = out.data.ptr, cfg["spin_us"] * 1000, 1.0
    size = max(cfg.get("params_bytes") or 0, BUSY_PARAMS.itemsize)
    block = np.zeros(size, np.uint8)
    block[:BUSY_PARAMS.itemsize] = np.frombuffer(params.tobytes(), np.uint8)
    device = cupy.asarray(block)
    for w in works:  # first launches: program load, SBT readiness
        for s in streams:
            w.pipeline.launch(w.sbt, int(device.data.ptr), cfg["width"], stream=s, params_size=size)
    for s in streams:
        synchronize(s)
    if cfg.get("queue_limit"):
        for c in contexts:
            c.launch_queue.request("bench", cfg["queue_limit"])
    clock = LaunchClock(contexts)
    for k in range(cfg["launches"]):
        w = works[k % len(works)]
        w.pipeline.launch(w.sbt, int(device.data.ptr), cfg["width"], stream=streams[k % len(streams)],
                          params_size=size)
    for s in streams:
        synchronize(s)
    result = clock.summary()
    result["queue_waits"] = sum(c.launch_queue.waits for c in contexts)
    result["queue_wait_ms"] = sum(c.launch_queue.wait_ms for c in contexts)
    for c in contexts:
        c.close()
    return result


def child_sched(cfg: dict[str, Any], watch: bool) -> dict[str, Any]:
    import contextlib

    import optixasync
    from optixasync.cuda import create_stream
    from optixasync.scheduler import FrameScheduler, SchedulerOptions
    from optixasync.testing import BUSY_PARAMS, BusyWorkload

    ctx = optixasync.Context()
    stream = create_stream()
    warmup, frames = 20, cfg["frames"]
    options = {"optix_queue_limit": cfg["queue_limit"]} if cfg["queue_limit"] else {}
    try:
        opts = SchedulerOptions(**options)
    except TypeError:
        if options:
            return {"why": "this tree's SchedulerOptions has no optix_queue_limit"}
        opts = SchedulerOptions()
    if cfg["work"] == "busy":
        busy = BusyWorkload(ctx)
        sched = FrameScheduler(ctx, cfg["in_flight"], params_dtype=BUSY_PARAMS, stream=stream, options=opts)

        def record(frame: Any, k: int) -> None:
            busy.record(frame, spin_ns=cfg["spin_us"] * 1000, scale=0.5 * k, n_out=64)
        closer: Any = contextlib.nullcontext()
    else:
        from optixasync.render import RenderOptions, RenderPipeline
        from optixasync.scene import cornell_box

        pipeline = RenderPipeline(ctx, cornell_box(), RenderOptions(width=512, height=512, spp=1, max_depth=8),
                                  stream=stream)
        sched = FrameScheduler(ctx, cfg["in_flight"], params_dtype=pipeline.params_dtype, stream=stream,
                               options=opts)

        def record(frame: Any, k: int) -> None:
            pipeline.record(frame, 1, readback="image")
        closer = pipeline
    clock = LaunchClock([ctx])
    report = None
    with closer:
        for k in range(warmup):
            with sched.frame() as f:
                record(f, k)
            sched.poll()
        skip = len(clock.seconds)
        import gc

        gc.collect()
        watcher: Any = contextlib.nullcontext()
        if watch:
            from optixasync.diagnostics import syncwatch

            watcher = syncwatch()
        start = time.perf_counter()
        with watcher as w:
            for k in range(warmup, warmup + frames):
                with sched.frame() as f:
                    record(f, k)
                sched.poll()
        wall = time.perf_counter() - start
        sched.drain()
        if watch:
            report = w.report
        stats = sched.stats.summary(skip=warmup)
        sched.close()
    result = clock.summary(skip)
    result.update(fps=frames / wall, waits_per_frame=stats.get("waits_per_frame"),
                  optix_waits=stats.get("optix_queue_waits"),
                  queue_wait_ms=(stats.get("queue_wait_ms") or {}).get("mean"))
    if report is not None:
        result["watch_launch_blocked"] = report.launch_stalls()
        result["watch_stalls"] = len(report.stalls)
        result["watch_designed"] = {cause: int(v["calls"]) for cause, v in report.designed_by_cause().items()}
        result["watch_headline"] = report.headline()
    ctx.close()
    return result


# -- the parent --------------------------------------------------------------------------------------------------------


def run_config(cfg: dict[str, Any], watch: bool) -> dict[str, Any]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, __file__, "--child", json.dumps(cfg), *(["--watch"] if watch else [])]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return {**cfg, "why": "timed out after 300 s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
        return {**cfg, "why": f"exit {proc.returncode}: {' | '.join(tail)}"}
    return {**cfg, **json.loads(lines[-1])}


def fmt(value: Any, spec: str = ".0f") -> str:
    if value is None:
        return "-"
    return format(value, spec) if isinstance(value, (int, float)) else str(value)


def print_tables(rows: list[dict[str, Any]]) -> None:
    raw = [r for r in rows if r["kind"] == "raw"]
    if raw:
        print("| spin us | width | streams | pipelines | contexts | params B | queue limit | launches | first blocked | "
              "blocked | blocked ms | queue waits | p50 us | max us |")
        print("|" + "---|" * 14)
        for r in raw:
            print(f"| {r['spin_us']} | {r['width']} | {r['streams']} | {r['pipelines']} | {r['contexts']} | "
                  f"{r.get('params_bytes') or 'own'} | {r.get('queue_limit') or 'off'} | {fmt(r.get('launches'))} | "
                  f"{fmt(r.get('first_blocked'))} | {fmt(r.get('blocked'))} | {fmt(r.get('blocked_ms'), '.1f')} | "
                  f"{fmt(r.get('queue_waits'))} | {fmt(r.get('p50_us'), '.1f')} | {fmt(r.get('max_us'))} |"
                  + (f" {r['why']}" if "why" in r else ""))
    sched = [r for r in rows if r["kind"] == "sched"]
    if sched:
        print("\n| work | in flight | queue limit | frames | blocked launches | blocked ms | p50 us | p99 us | "
              "fps | queue waits | syncwatch: optixLaunch blocked | stalls | designed waits |")
        print("|" + "---|" * 13)
        for r in sched:
            designed = r.get("watch_designed") or {}
            causes = ", ".join(f"{cause} {n}" for cause, n in designed.items()) or "-"
            print(f"| {r['work']} | {r['in_flight']} | {r['queue_limit'] or 'off'} | {fmt(r.get('launches'))} | "
                  f"{fmt(r.get('blocked'))} | {fmt(r.get('blocked_ms'), '.1f')} | {fmt(r.get('p50_us'), '.1f')} | "
                  f"{fmt(r.get('p99_us'), '.1f')} | {fmt(r.get('fps'), '.0f')} | {fmt(r.get('optix_waits'))} | "
                  f"{fmt(r.get('watch_launch_blocked'))} | {fmt(r.get('watch_stalls'))} | {causes} |"
                  + (f" {r['why']}" if "why" in r else ""))


def parse_list(text: str | None, default: list[Any], kind: Any = int) -> list[Any]:
    """``"1,2,3"`` -> ``[1, 2, 3]`` (``default`` when not given)."""
    if not text:
        return list(default)
    return [kind(part) if part != "auto" else part for part in text.split(",") if part]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--watch", action="store_true", help="syncwatch the scheduler runs (needs CUPTI)")
    parser.add_argument("--only", choices=("raw", "sched"), help="one kind of configuration")
    parser.add_argument("--queue-limit", default="",
                        help="also run with the launch queue bounded: SchedulerOptions(optix_queue_limit=N) for "
                             "the scheduler rows, ctx.launch_queue for the raw ones; several as 1,2,3; 'auto': "
                             "the limit this run's raw rows suggest")
    parser.add_argument("--in-flight", default="", help="frames in flight of the scheduler rows (default 1,2,3,4)")
    parser.add_argument("--work", default="", help="scheduler frames: busy, path or both (default busy,path)")
    parser.add_argument("--frames", type=int, help="scheduler frames per configuration (default 200, quick 60)")
    parser.add_argument("--out", default="bench_out/launch_wait.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        cfg = json.loads(args.child)
        result = child_raw(cfg) if cfg["kind"] == "raw" else child_sched(cfg, args.watch)
        print(json.dumps(result))
        return 0
    sys.path.insert(0, str(ROOT))
    from optixasync.testing import require_gpu

    status = require_gpu("bench_launch_wait")
    if status is not None:
        return status
    limits = parse_list(args.queue_limit, [])
    fixed = [n for n in limits if n != "auto"]
    rows: list[dict[str, Any]] = []

    def run_all(configs: list[dict[str, Any]]) -> None:
        for cfg in configs:
            rows.append(run_config(cfg, args.watch))
            print(json.dumps(rows[-1]), flush=True)

    if args.only != "sched":
        run_all(raw_configs(args.quick, fixed))
    suggested = suggested_limit(rows)
    if "auto" in limits:
        if suggested is None:
            print("queue limit 'auto': the raw rows measured no blocked launch (run them, or give a number)")
        elif suggested not in fixed:
            fixed.append(suggested)
            if args.only != "sched":
                run_all(limit_rows(raw_configs(args.quick, [])[0], [suggested]))
    if args.only != "raw":
        run_all(sched_configs(args.quick, fixed, parse_list(args.in_flight, [1, 2, 3, 4]),
                              parse_list(args.work, ["busy", "path"], str), args.frames))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "suggested_queue_limit": suggested}, indent=1))
    print()
    print_tables(rows)
    print(f"\nsuggested optix_queue_limit (the smallest first blocked launch of one context): "
          f"{suggested if suggested is not None else 'none measured'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
