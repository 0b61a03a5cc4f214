"""Static figures of the path tracer's raygen, without a GPU: registers (ptxas) and PTX instructions, per tree.

    python benchmarks/kernel_static.py [--commit af8dcb6 ...] [--tree NAME=PATH ...] [--out bench_out/static.json]

For each tree (``--commit`` extracted under ``.trees/`` as :mod:`bench_commits` does, ``--tree NAME=PATH``, and the
working tree as ``work``) a child process with that tree first on ``sys.path`` writes the program's source: the
tree's generated one (``optixasync.render._source.pathtracer_source``) for the image variant, generic and, where the
tree has it, specialized for the Cornell box and the material scene (``optixasync/render/_features.py``); a tree
from before the generated source compiles its ``kernels/pathtracer.cu`` as it is. Every source is compiled the same
way, by the CUDA toolkit's ``nvcc -ptx`` (fast math, compute_75 as the package's NVRTC targets) and then
``ptxas -arch=sm_90 -O3 -v``, after the OptiX intrinsics (inline ``call _optix_*``) are given stub bodies that
load and store volatile memory, so that their results stay opaque to the optimiser.

This is a proxy: OptiX compiles the PTX itself, with traversal inlined on GPUs without RT cores, so its register
counts differ; what the proxy shows is what the shading code asks for, tree by tree, on the same compiler. The
working tree also gets an ablation: the Cornell box's specialization with one switch turned back on at a time.

Needs ``nvcc`` and ``ptxas`` on ``PATH`` (the CUDA toolkit); without them it prints one line and exits with
status 1.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: The ablation's switches (fields of ProgramFeatures) turned back on one at a time over the Cornell box's.
ABLATION = ("families", "light_types", "textures", "environment", "any_hit", "normals", "uvs", "colors", "tangents",
            "instances")


# -- the child: one tree's sources ---------------------------------------------------------------------------------

def child_sources(tree: Path) -> dict[str, str]:
    """The program texts of the tree at ``tree`` (run with it first on sys.path), by row name."""
    if not (tree / "optixasync" / "render" / "_source.py").is_file():
        return {"generic": (tree / "kernels" / "pathtracer.cu").read_text()}
    from optixasync.render._source import pathtracer_source

    texts = {"generic": pathtracer_source([1]).text}
    try:
        import dataclasses

        from optixasync.render._features import GENERIC, scene_features
    except ImportError:
        return texts
    from optixasync.scene import cornell_box
    from optixasync.scene._materials_scene import material_scene

    cornell = scene_features(cornell_box(), instanced=False)
    texts["cornell spec"] = pathtracer_source([1], features=cornell).text
    texts["material spec"] = pathtracer_source([1], features=scene_features(material_scene(subdivisions=1),
                                                                            instanced=False)).text
    for name in ABLATION:
        on = dataclasses.replace(cornell, **{name: getattr(GENERIC, name)})
        texts[f"cornell spec, {name} on"] = pathtracer_source([1], features=on).text
    return texts


# -- the parent: compile, measure, print ---------------------------------------------------------------------------

def _reg_type(register: str) -> str:
    register = register.strip()
    for prefix, kind in (("%rd", "u64"), ("%fd", "f64"), ("%f", "f32"), ("%r", "u32")):
        if register.startswith(prefix):
            return kind
    return "u32"


def stub_intrinsics(ptx: str) -> str:
    """``ptx`` with a body for every ``_optix_*`` function it calls: volatile stores of the inputs, loads of the
    outputs (so that ptxas can compile it as a whole program without OptiX)."""
    signatures: dict[str, tuple[list[str], list[str]]] = {}
    for outs, name, ins in re.findall(r"call\s*(\([^)]*\))?\s*,?\s*(_optix_\w+)\s*,\s*\(([^)]*)\)", ptx):
        o = [x for x in outs.strip("()").split(",") if x.strip()] if outs else []
        signatures[name] = ([_reg_type(x) for x in o], [_reg_type(x) for x in ins.split(",") if x.strip()])
    stubs = [".global .align 8 .b8 _oa_sink[65536];"]
    for n, (name, (outs, ins)) in enumerate(signatures.items()):
        body = [f"st.volatile.global.{t} [_oa_sink+{n * 512 + 8 * k}], i{k};" for k, t in enumerate(ins)]
        body += [f"ld.volatile.global.{t} o{k}, [_oa_sink+{32768 + n * 512 + 8 * k}];" for k, t in enumerate(outs)]
        params_in = ", ".join(f".reg .{'b' + t[1:] if t[0] == 'u' else t} i{k}" for k, t in enumerate(ins))
        params_out = ", ".join(f".reg .{'b' + t[1:] if t[0] == 'u' else t} o{k}" for k, t in enumerate(outs))
        head = f".func ({params_out}) {name} ({params_in})" if outs else f".func {name} ({params_in})"
        stubs.append(head + " {\n" + "\n".join(body) + "\nret;\n}")
    head, sep, rest = ptx.partition(".address_size 64")
    return re.sub(r"\.target sm_\d+", ".target sm_90", head) + sep + "\n" + "\n".join(stubs) + "\n" + rest


def raygen_figures(source: str, kernels: Path, work: Path) -> dict[str, Any]:
    """Registers and PTX instructions of the first raygen of ``source`` (compiled against ``kernels``)."""
    cu = work / "program.cu"
    cu.write_text(source)
    ptx_path = work / "program.ptx"
    run = subprocess.run(["nvcc", "-ptx", "-arch=compute_75", "--use_fast_math", "-std=c++17", f"-I{kernels}",
                          str(cu), "-o", str(ptx_path)], capture_output=True, text=True)
    if run.returncode != 0:
        return {"error": run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"nvcc exit {run.returncode}"}
    ptx = ptx_path.read_text()
    entry = re.search(r"\.entry\s+(__raygen__\w+)", ptx).group(1)
    body = ptx.split(f".entry {entry}", 1)[1].split(".entry", 1)[0]
    instructions = sum(1 for line in body.splitlines()
                       if re.match(r"\s+[a-z@]", line) and not line.strip().startswith((".", "//")))
    local = sum(int(b) for b in re.findall(r"\.local \.align \d+ \.b8 \w+\[(\d+)\]", body))
    stubbed = work / "stubbed.ptx"
    stubbed.write_text(stub_intrinsics(ptx))
    run = subprocess.run(["ptxas", "-arch=sm_90", "-O3", "-v", str(stubbed), "-o", str(work / "program.cubin")],
                         capture_output=True, text=True)
    found = re.search(rf"entry function '{entry}'.*?Used (\d+) registers", run.stderr, re.S)
    if run.returncode != 0 or found is None:
        return {"error": f"ptxas: {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else run.returncode}"}
    return {"entry": entry, "registers": int(found.group(1)), "ptx_instructions": instructions, "local_bytes": local}


def tree_rows(name: str, tree: Path) -> dict[str, Any]:
    """Every row of one tree: its sources from a child process, each compiled and measured."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]);"
            "from kernel_static import child_sources; from pathlib import Path;"
            "print(json.dumps(child_sources(Path(sys.argv[1]))))")
    child = subprocess.run([sys.executable, "-c", code, str(tree), str(Path(__file__).resolve().parent)],
                           capture_output=True, text=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    if child.returncode != 0:
        return {"error": child.stderr.strip().splitlines()[-1]}
    rows = {}
    for row, text in json.loads(child.stdout.strip().splitlines()[-1]).items():
        with tempfile.TemporaryDirectory() as work:
            rows[row] = raygen_figures(text, tree / "kernels", Path(work))
        print(f"{name:>10} {row:<34} {rows[row]}", flush=True)
    return rows


def print_table(results: dict[str, dict[str, Any]]) -> None:
    print("\n| tree | program | registers | PTX instructions | local bytes |\n|---|---|---|---|---|")
    for tree, rows in results.items():
        for row, r in rows.items() if "error" not in rows else [("-", rows)]:
            if "error" in r:
                print(f"| {tree} | {row} | - ({r['error'][:60]}) | | |")
            else:
                print(f"| {tree} | {row} | {r['registers']} | {r['ptx_instructions']} | {r['local_bytes']} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commit", action="append", default=[], help="a commit to extract and measure (repeatable)")
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a tree on disk (repeatable)")
    parser.add_argument("--trees-dir", default=str(ROOT / ".trees"))
    parser.add_argument("--out", default="bench_out/static.json")
    args = parser.parse_args(argv)
    missing = [tool for tool in ("nvcc", "ptxas") if shutil.which(tool) is None]
    if missing:
        print(f"kernel_static: {' and '.join(missing)} not found (the CUDA toolkit's compilers are needed)")
        return 1
    from bench_commits import extract

    trees = {name: Path(path).resolve() for name, _, path in (spec.partition("=") for spec in args.tree)}
    for commit in args.commit:
        trees[commit] = extract(commit, Path(args.trees_dir))
    trees["work"] = ROOT
    results = {name: tree_rows(name, tree) for name, tree in trees.items()}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
