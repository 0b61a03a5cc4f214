"""USD loading against the prim count: stages of 10,000 to 100,000 prims, a tenth of them instances of one mesh.

    python benchmarks/bench_usd_load.py [--groups 1000 10000] [--repeats 3] [--out F]

Each stage (a ``.usdc`` written with ``pxr``) has G groups under ``/World``; a group is an ``Xform`` holding an
instanceable ``Xform`` that references a small prototype mesh (a 12-triangle box), and eight more ``Xform``
prims: 10 G prims, G instanced meshes (the shape of a robot-learning scene: many placed copies of a few assets in
a deep hierarchy). The table gives, per G, the best of ``--repeats`` runs of ``load_usd(path)`` (the whole
reader: the layer checks and prim count, USD's composition, the walk, the instances, the framing camera), and of
``Usd.Stage.Open`` alone for comparison; the process's CPU time of the load too (the wall time on a shared machine
includes other processes'). CPU only. The target is 100,000 prims with 10,000 instanced meshes in at
most 3 s; this script measures, it never fails on a time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def write_stage(path: Path, groups: int) -> None:
    from pxr import Gf, Sdf, Usd, UsdGeom, Vt

    stage = Usd.Stage.CreateNew(str(path))
    stage.CreateClassPrim("/Proto")
    box = UsdGeom.Cube.Define(stage, "/Proto/Box")
    box.CreateSizeAttr(0.5)
    layer = stage.GetRootLayer()
    UsdGeom.Xform.Define(stage, "/World")
    with Sdf.ChangeBlock():
        for g in range(groups):
            group = Sdf.CreatePrimInLayer(layer, f"/World/G{g}")
            group.specifier, group.typeName = Sdf.SpecifierDef, "Xform"
            translate = Sdf.AttributeSpec(group, "xformOp:translate", Sdf.ValueTypeNames.Double3)
            translate.default = Gf.Vec3d(g % 100, 0, g // 100)
            order = Sdf.AttributeSpec(group, "xformOpOrder", Sdf.ValueTypeNames.TokenArray)
            order.default = Vt.TokenArray(["xformOp:translate"])
            inst = Sdf.CreatePrimInLayer(layer, f"/World/G{g}/Inst")
            inst.specifier, inst.typeName, inst.instanceable = Sdf.SpecifierDef, "Xform", True
            inst.referenceList.Prepend(Sdf.Reference("", "/Proto"))
            for j in range(8):
                child = Sdf.CreatePrimInLayer(layer, f"/World/G{g}/X{j}")
                child.specifier, child.typeName = Sdf.SpecifierDef, "Xform"
    stage.Save()


def measure(path: Path, groups: int, repeats: int) -> dict[str, Any]:
    from pxr import Sdf, Usd

    from optixasync.scene import load_usd

    loads, cpus, opens = [], [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        scene = load_usd(path)
        loads.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        layer = Sdf.Layer.FindOrOpen(str(path))
        layer.Reload(True)
        start = time.perf_counter()
        Usd.Stage.Open(layer)
        opens.append(time.perf_counter() - start)
    if len(scene.meshes) != groups or len(scene.instanced) != groups:
        raise RuntimeError(f"{path}: {len(scene.meshes)} meshes, expected {groups} instances")
    return {"groups": groups, "prims": 10 * groups + 3, "load_s": min(loads), "cpu_s": min(cpus), "open_s": min(opens),
            "us_per_prim": min(loads) / (10 * groups) * 1e6}


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| prims | instanced meshes | load_usd | its CPU time | Usd.Stage.Open | per prim |",
             "|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['prims']:,} | {row['groups']:,} | {row['load_s']:.3f} s | {row['cpu_s']:.3f} s | "
                     f"{row['open_s']:.3f} s | {row['us_per_prim']:.1f} us |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for groups in args.groups:
            path = Path(folder) / f"stage_{groups}.usdc"
            write_stage(path, groups)
            rows.append(measure(path, groups, args.repeats))
    text = table(rows)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
