"""glTF loading against the node count: one triangle placed by 1,000 to 100,000 nodes, read by ``load_gltf``.

    python benchmarks/bench_gltf_load.py [--nodes 1000 4000 16000 100000] [--repeats 3] [--out F]

Each file is a ``.glb`` of one triangle and N root nodes, each with its own translation (a 100-wide grid):
the shape of a CAD assembly or a scanned scene, where the nodes are the work and the geometry is small. The
table gives, per N, the best of ``--repeats`` runs of ``load_gltf(path)`` (the whole reader: the JSON, the
node graph, the instances, the scene's meshes and its framing camera), Python's ``json.loads`` of the same
document for comparison, and the time per node. CPU only; no GPU is needed. The targets the reader is held to
are 16,000 nodes in at most 0.5 s and 100,000 in at most 3 s; this script measures, it never fails on a time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from optixasync.scene import load_gltf
from optixasync.scene._gltf_json import split_glb
from optixasync.testing import node_grid_glb


def measure(path: Path, nodes: int, repeats: int) -> dict[str, Any]:
    """Best-of-``repeats`` seconds of load_gltf and of json.loads on one file."""
    loads, parses = [], []
    raw, _ = split_glb(path.read_bytes(), str(path))
    for _ in range(repeats):
        start = time.perf_counter()
        scene = load_gltf(path)
        loads.append(time.perf_counter() - start)
        start = time.perf_counter()
        json.loads(raw)
        parses.append(time.perf_counter() - start)
    if len(scene.meshes) != nodes:
        raise RuntimeError(f"{path}: {len(scene.meshes)} meshes, expected {nodes}")
    return {"nodes": nodes, "load_s": min(loads), "json_s": min(parses), "us_per_node": min(loads) / nodes * 1e6,
            "bytes": path.stat().st_size}


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| nodes | file | load_gltf | json.loads | per node |", "|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['nodes']:,} | {row['bytes'] / 2**20:.1f} MiB | {row['load_s']:.3f} s | "
                     f"{row['json_s']:.3f} s | {row['us_per_node']:.1f} us |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 4000, 16000, 100000], metavar="N")
    parser.add_argument("--repeats", type=int, default=3, metavar="K", help="runs per size; the best is shown")
    parser.add_argument("--out", default=None, metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.nodes) or args.repeats < 1:
        parser.error("--nodes and --repeats must be positive")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for nodes in args.nodes:
            rows.append(measure(node_grid_glb(Path(folder) / f"grid{nodes}.glb", nodes), nodes, args.repeats))
            print(f"{nodes:>7,} nodes: load_gltf {rows[-1]['load_s']:.3f} s", file=sys.stderr)
    print(table(rows))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
