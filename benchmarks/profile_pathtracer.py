"""Nsight Compute profile of the path tracer's launch, per tree and scene: where the time goes.

    python benchmarks/profile_pathtracer.py [--commit af8dcb6 ...] [--tree NAME=PATH ...] [--scene cornell64 ...]

Each tree (extracted as :mod:`bench_commits` does, plus the working tree as ``work``) renders each scene once
at 16 spp after 2 warm-ups, in a child of ``bench_commits`` run under ``ncu`` (``--section`` LaunchStats,
Occupancy, WarpStateStats, InstructionStats, MemoryWorkloadAnalysis_Tables). The longest kernel of the run is
the launch; the table gives its registers per thread, theoretical and achieved occupancy, local-memory
(spill) traffic, warp instructions per sample and the five largest stall reasons (cycles per issued
instruction). ``--specialize`` adds the working tree with ``OPTIXASYNC_SPECIALIZE=1`` as ``work+spec``. The raw CSV of each run is written under ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("LaunchStats", "Occupancy", "WarpStateStats", "InstructionStats", "MemoryWorkloadAnalysis_Tables")
SPP = 16


def profile(name: str, path: Path, scene: str, out: Path, asset: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(path), BENCH_COMMITS_SPP=str(SPP),
               OPTIXASYNC_CACHE_DIR=str(ROOT / "bench_out" / "commit_caches" / name),
               OPTIXASYNC_SPECIALIZE="1" if name.endswith("+spec") else "0")
    cmd = ["ncu", "--target-processes", "all", "--csv", "--page", "raw", "--launch-count", "16",
           *[a for s in SECTIONS for a in ("--section", s)],
           sys.executable, str(ROOT / "benchmarks" / "bench_commits.py"), "--child", str(path), "--runs", "1",
           "--scene", scene, "--asset", str(asset)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    raw = out / f"ncu_{name}_{scene}.csv"
    raw.write_text(proc.stdout + "\n# stderr\n" + proc.stderr[-4000:])
    rows = list(csv.reader(line for line in proc.stdout.splitlines() if line.startswith('"')))
    if len(rows) < 3:
        return {"why": (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no ncu output"]}
    header, kernels = rows[0], rows[2:]

    def num(row: list[str], key: str) -> float:
        try:
            return float(row[header.index(key)].replace(",", ""))
        except (ValueError, IndexError):
            return float("nan")

    duration = "gpu__time_duration.sum"
    launch = max(kernels, key=lambda r: num(r, duration))
    values = {k: v for k, v in zip(header, launch, strict=False)}
    samples = 1024 * 1024 * SPP
    stalls = {k.split("issue_stalled_")[1].split("_per_")[0]: num(launch, k) for k in header
              if "issue_stalled_" in k and k.endswith("_per_warp_active.pct") is False and k.endswith(".ratio")}
    top = sorted(stalls.items(), key=lambda kv: -(kv[1] if kv[1] == kv[1] else 0))[:5]

    def pick(*keys: str) -> float:
        for key in keys:
            if key in values:
                return num(launch, key)
        return float("nan")

    return {
        "kernel": values.get("Kernel Name", "?")[:40], "ms": pick(duration) / 1e6,
        "regs": pick("launch__registers_per_thread"),
        "occ_theory": pick("sm__maximum_warps_per_active_cycle_pct"),
        "occ_achieved": pick("sm__warps_active.avg.pct_of_peak_sustained_active"),
        "local_ld_MB": pick("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum") / 1e6,
        "local_st_MB": pick("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum") / 1e6,
        "inst_per_sample": pick("smsp__inst_executed.sum", "sm__inst_executed.sum") / samples,
        "stalls": ", ".join(f"{k} {v:.1f}" for k, v in top),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commit", action="append", default=[])
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--scene", action="append")
    parser.add_argument("--out", default="bench_out/profile")
    parser.add_argument("--specialize", action="store_true",
                        help="also profile the working tree with programs specialized per scene, as work+spec")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_commits import extract
    from bench_textures import write_textured_asset

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    asset = out / "textured.glb"
    write_textured_asset(asset, 1024)
    trees = {spec.partition("=")[0]: Path(spec.partition("=")[2]).resolve() for spec in args.tree}
    for commit in args.commit:
        trees[commit] = extract(commit, ROOT / ".trees")
    trees["work"] = ROOT
    if args.specialize:
        trees["work+spec"] = ROOT
    scenes = args.scene or ["cornell64", "material64"]
    keys = ("kernel", "ms", "regs", "occ_theory", "occ_achieved", "local_ld_MB", "local_st_MB", "inst_per_sample",
            "stalls")
    print("| tree | scene | " + " | ".join(keys) + " |")
    print("|" + "---|" * (len(keys) + 2))
    for name, path in trees.items():
        for scene in scenes:
            r = profile(name, path, scene, out, asset)
            cells = [f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "-")) for k in keys]
            print(f"| {name} | {scene} | " + " | ".join(cells) + " |" + (f" {r['why']}" if "why" in r else ""),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
