"""OptiX launches and refits in CUDA graphs, pattern by pattern: does the capture succeed, does the replay compute
what the eager frame computes?

    python benchmarks/graph_patterns.py [--only NAME[,NAME]] [--replays 4] [--out bench_out/graph_patterns.json]

Every pattern runs in a child process of its own (a fresh CUDA and OptiX context: a replay that loses the context
takes only its own row down), and reports whether the capture succeeded, the captured graph's nodes (their types,
kernels by name where the driver tells), and whether each replay gave the bits of the eager frame of the same
parameters (computed after the replays, in the same process). The patterns are the ones public evidence and
earlier measurements point at:

* ``round3``: the frame scheduler's graphs as measured before (an eager warm-up launch, the parameters copied as
  the graph's first node, relaxed capture mode, eager launches between the replays): the replayed launch read
  zeroed parameters and the context was lost, on an H200 with driver R580;
* ``replay_only``: captured once with no eager launch before it, then replayed only;
* ``warmup_thread_local`` / ``warmup_global`` / ``warmup_relaxed``: one eager launch, then the capture, in each
  capture mode, with the parameters in a persistent device buffer written (copied from pinned memory, outside
  the graph) before each replay: NVIDIA's otk-pyoptix pattern, said to need R590+ drivers;
* ``warmup_params_node``: the same in thread-local mode, the parameters' copy inside the graph as its first node;
* ``refit_after_warmup`` / ``refit_replay_only``: an allocation-free acceleration-structure update (the
  structure's persistent temp and output buffers, the vertices rewritten in a persistent buffer before each
  replay) captured after one eager refit, or with none; the structure is then traced eagerly and the hits
  compared with those after an eager refit.

The steps of each pattern are plain data (:func:`steps`) run by :func:`run_pattern` over a *lab*: :class:`GpuLab`
here, a recording fake in the CPU tests (``tests/scheduler/test_graph_patterns.py``). Prints a Markdown table;
every result is in ``--out``. Without a usable GPU it prints one line and exits 1.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[1]

MODES = ("thread_local", "global", "relaxed")


@dataclass(frozen=True)
class Pattern:
    """One way to put GPU work into a CUDA graph.

    Attributes
    ----------
    name : str
    work : {"launch", "refit"}
        An ``optixLaunch`` of the busy program, or an ``optixAccelBuild`` update of a small structure.
    mode : {"thread_local", "global", "relaxed"}
        The stream-capture mode.
    warmup : bool
        One eager run of the work (and a wait for it) before the capture.
    params : {"before", "node"}
        ``before``: the persistent parameter (or vertex) buffer is written by a copy enqueued before each replay,
        outside the graph; ``node``: the copy from pinned staging is captured as the graph's first node.
    eager_between : bool
        An eager run of the work after each replay (with other parameters), as the frame scheduler's mixed
        eager and replayed frames do.
    """

    name: str
    work: str = "launch"
    mode: str = "thread_local"
    warmup: bool = True
    params: str = "before"
    eager_between: bool = False


PATTERNS = (
    Pattern("round3", mode="relaxed", params="node", eager_between=True),
    Pattern("replay_only", warmup=False),
    Pattern("warmup_thread_local"),
    Pattern("warmup_global", mode="global"),
    Pattern("warmup_relaxed", mode="relaxed"),
    Pattern("warmup_params_node", params="node"),
    Pattern("refit_after_warmup", work="refit"),
    Pattern("refit_replay_only", work="refit", warmup=False),
)
BY_NAME = {p.name: p for p in PATTERNS}


def steps(pattern: Pattern, replays: int) -> list[tuple[Any, ...]]:
    """The pattern's operations in order: what :func:`run_pattern` asks of a lab.

    ``("phase", name)`` marks where a failure is reported; ``("write", k, enqueue)`` writes frame ``k``'s
    parameters into pinned staging and, with ``enqueue``, copies them into the persistent buffer on the stream;
    ``("params_node",)`` is that copy inside the capture; ``("work",)`` the launch or refit; ``("read", "replay"
    | "eager", k)`` the output's bits after frame ``k``.
    """
    before = pattern.params == "before"
    out: list[tuple[Any, ...]] = [("phase", "setup"), ("setup", pattern.work)]
    if pattern.warmup:
        out += [("phase", "warm-up"), ("write", 0, True), ("work",), ("sync",)]
    out += [("phase", "capture"), ("settle",), ("begin_capture", pattern.mode)]
    if not before:
        out.append(("params_node",))
    out += [("work",), ("end_capture",), ("phase", "instantiate"), ("instantiate",), ("phase", "replay")]
    for k in range(1, replays + 1):
        out += [("write", k, before), ("replay",), ("sync",), ("read", "replay", k)]
        if pattern.eager_between:
            out += [("write", 100 + k, True), ("work",), ("sync",)]
    out.append(("phase", "eager reference"))
    for k in range(1, replays + 1):
        out += [("write", k, True), ("work",), ("sync",), ("read", "eager", k)]
    return out


class Lab(Protocol):
    """What a pattern needs of the machine (:class:`GpuLab`, or a test's fake)."""

    def setup(self, work: str) -> None: ...
    def write(self, k: int, enqueue: bool) -> None: ...
    def params_node(self) -> None: ...
    def work(self) -> None: ...
    def sync(self) -> None: ...
    def settle(self) -> None: ...
    def begin_capture(self, mode: str) -> None: ...
    def end_capture(self) -> list[str]: ...
    def instantiate(self) -> None: ...
    def replay(self) -> None: ...
    def read(self) -> bytes: ...
    def describe(self) -> dict[str, Any]: ...


def run_pattern(pattern: Pattern, lab: Lab, replays: int = 4) -> dict[str, Any]:
    """Run ``pattern`` over ``lab``: captured or not, the graph's nodes, replay bits against eager bits.

    A failing step ends the run: ``failed_at`` names its phase and ``error`` the exception. A capture is always
    ended once begun (also when the captured work raised), so the stream is usable for what follows.
    """
    result: dict[str, Any] = {**asdict(pattern), "captured": False, "nodes": None, "replay_matches": None,
                              "mismatched": [], "failed_at": None, "error": None}
    reads: dict[str, dict[int, bytes]] = {"replay": {}, "eager": {}}
    phase, capturing = "setup", False
    try:
        for op in steps(pattern, replays):
            name = op[0]
            if name == "phase":
                phase = op[1]
            elif name == "begin_capture":
                lab.begin_capture(op[1])
                capturing = True
            elif name == "end_capture":
                capturing = False
                result["nodes"] = lab.end_capture()
                result["captured"] = True
            elif name == "write":
                lab.write(op[1], op[2])
            elif name == "read":
                reads[op[1]][op[2]] = lab.read()
            else:
                getattr(lab, name)(*op[1:])
    except Exception as exc:
        result["failed_at"], result["error"] = phase, f"{type(exc).__name__}: {exc}"[:300]
        if capturing:
            try:
                lab.end_capture()
            except Exception:
                pass
    replayed, eager = reads["replay"], reads["eager"]
    if replayed and len(eager) == len(replayed):
        result["mismatched"] = [k for k in sorted(replayed) if replayed[k] != eager.get(k)]
        result["replay_matches"] = not result["mismatched"]
    try:
        result.update(lab.describe())
    except Exception as exc:
        result["describe_error"] = str(exc)
    return result


# -- the GPU --------------------------------------------------------------------------------------------------------


class GpuLab:
    """The patterns' operations on the GPU: raw driver capture calls, raw ``optixLaunch`` / ``optixAccelBuild``.

    The library's own capture path refuses OptiX launches and builds (``LAUNCH_NOT_REPLAYABLE``,
    ``BUILD_NOT_CAPTURABLE``); this lab calls the driver and OptiX directly so that the refusals can be
    tested against the patterns.
    """

    N = 256

    def __init__(self) -> None:
        import cupy
        from cuda.bindings import driver

        self.cupy, self.driver = cupy, driver
        self.graph = self.exec = None

    def _check(self, result: Any, what: str) -> Any:
        status = result[0] if isinstance(result, tuple) else result
        if status != self.driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"{what}: {self.driver.cuGetErrorName(status)[1].decode()}")
        return result[1] if isinstance(result, tuple) and len(result) > 1 else None

    def setup(self, work: str) -> None:
        import numpy as np

        import optixasync
        from optixasync.cuda import create_stream

        self.np, self.work_kind = np, work
        self.ctx = optixasync.Context()
        self.stream = create_stream()
        self.handle = int(self.stream.ptr)
        self.cu_stream = self.driver.CUstream(self.handle)
        if work == "launch":
            self._setup_launch()
        else:
            self._setup_refit()
        self.pinned = self.cupy.cuda.alloc_pinned_memory(self.nbytes)
        self.host = np.frombuffer(self.pinned, np.uint8, self.nbytes)
        self.sync_all()

    def _setup_launch(self) -> None:
        from optixasync.testing import BUSY_PARAMS, BusyWorkload

        self.busy = BusyWorkload(self.ctx)
        self.out = self.cupy.zeros(self.N, self.cupy.float32)
        self.params_dtype = BUSY_PARAMS
        self.nbytes = BUSY_PARAMS.itemsize
        self.target = self.cupy.zeros(self.nbytes, self.cupy.uint8)  # the persistent parameter buffer

    def _setup_refit(self) -> None:
        from optixasync import AccelOptions, GeometryAccel, TriangleInput
        from optixasync.accel import RayCaster

        np = self.np
        self.gas = GeometryAccel(self.ctx, TriangleInput(self._quad(0), np.array([[0, 1, 2], [0, 2, 3]], np.uint32)),
                                 options=AccelOptions(allow_update=True))
        self.caster = RayCaster(self.ctx)
        self.target = self.gas._device[0][self.gas.inputs[0].moving][0]  # the persistent vertex buffer
        self.nbytes = int(self.target.nbytes)

    def _quad(self, k: int) -> Any:
        z = 1.0 + 0.25 * k
        return self.np.array([[-1, -1, z], [1, -1, z], [1, 1, z], [-1, 1, z]], self.np.float32)

    def write(self, k: int, enqueue: bool) -> None:
        np = self.np
        if self.work_kind == "launch":
            params = np.zeros((), self.params_dtype)
            params["out"], params["spin_ns"], params["frame"], params["scale"] = self.out.data.ptr, 0, k, 0.5 * k
            self.host[:] = np.frombuffer(params.tobytes(), np.uint8)
        else:
            self.host[:] = np.frombuffer(self._quad(k).tobytes(), np.uint8)
        if enqueue:
            self._copy()

    def _copy(self) -> None:
        self.cupy.cuda.runtime.memcpyAsync(int(self.target.data.ptr), self.pinned.ptr, self.nbytes, 1, self.handle)

    def params_node(self) -> None:
        self._copy()

    def work(self) -> None:
        ctx = self.ctx
        if self.work_kind == "launch":
            busy = self.busy
            status = ctx.api.optixLaunch(busy.pipeline.handle, self.handle, int(self.target.data.ptr), self.nbytes,
                                         ctypes.byref(busy.sbt.struct), self.N, 1, 1)
        else:
            from optixasync._optix import types as t
            from optixasync.accel._base import aligned

            gas = self.gas
            handle = ctypes.c_uint64(gas.handle)
            status = ctx.api.optixAccelBuild(
                ctx.handle, self.handle, ctypes.byref(gas._build_options(t.BuildOperation.UPDATE)), gas._structs,
                gas._count, int(gas._temp_update.ptr), aligned(gas.buffer_sizes[2]), int(gas.buffer.ptr),
                aligned(gas.nbytes), ctypes.byref(handle), None, 0)
        if status:
            raise RuntimeError(f"{'optixLaunch' if self.work_kind == 'launch' else 'optixAccelBuild'}: "
                               f"{ctx.api.error_name(status)}")

    def sync(self) -> None:
        self.cupy.cuda.runtime.streamSynchronize(self.handle)

    def sync_all(self) -> None:
        self.cupy.cuda.runtime.deviceSynchronize()

    def settle(self) -> None:
        self.sync_all()

    def begin_capture(self, mode: str) -> None:
        modes = self.driver.CUstreamCaptureMode
        value = {"thread_local": modes.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                 "global": modes.CU_STREAM_CAPTURE_MODE_GLOBAL, "relaxed": modes.CU_STREAM_CAPTURE_MODE_RELAXED}[mode]
        self._check(self.driver.cuStreamBeginCapture(self.cu_stream, value), "cuStreamBeginCapture")

    def end_capture(self) -> list[str]:
        self.graph = self._check(self.driver.cuStreamEndCapture(self.cu_stream), "cuStreamEndCapture")
        return self._nodes(self.graph)

    def _nodes(self, graph: Any) -> list[str]:
        d = self.driver
        _, _, count = d.cuGraphGetNodes(graph, 0)
        nodes = self._check(d.cuGraphGetNodes(graph, count), "cuGraphGetNodes") if count else []
        names = []
        for node in nodes[:count]:
            kind = self._check(d.cuGraphNodeGetType(node), "cuGraphNodeGetType")
            name = kind.name.replace("CU_GRAPH_NODE_TYPE_", "").lower()
            if name == "kernel":
                try:
                    params = self._check(d.cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
                    name += ":" + self._check(d.cuFuncGetName(params.func), "cuFuncGetName").decode()
                except Exception:  # the driver may not name it (older bindings, a kernel of OptiX's own)
                    pass
            names.append(name)
        return names

    def instantiate(self) -> None:
        self.exec = self._check(self.driver.cuGraphInstantiate(self.graph, 0), "cuGraphInstantiate")

    def replay(self) -> None:
        self._check(self.driver.cuGraphLaunch(self.exec, self.cu_stream), "cuGraphLaunch")

    def read(self) -> bytes:
        np = self.np
        if self.work_kind == "launch":
            return self.cupy.asnumpy(self.out).tobytes()
        origins = np.array([[x, y, 0.0] for x in (-0.5, 0.0, 0.5) for y in (-0.5, 0.5)], np.float32)
        directions = np.tile(np.array([[0.0, 0.0, 1.0]], np.float32), (len(origins), 1))
        hits = self.caster.cast(self.gas.handle, origins, directions, stream=self.stream)
        return hits["t"].tobytes() + hits["prim"].tobytes()

    def describe(self) -> dict[str, Any]:
        version = self.cupy.cuda.runtime.driverGetVersion()
        props = self.cupy.cuda.runtime.getDeviceProperties(self.ctx.device_id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        return {"device": name, "cuda_driver": version, "optix_abi": self.ctx.abi}


# -- the parent -----------------------------------------------------------------------------------------------------


def run_child(name: str, replays: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", name, "--replays", str(replays)]
    try:
        proc = subprocess.run(cmd, env=dict(os.environ, PYTHONUNBUFFERED="1"), capture_output=True, text=True,
                              timeout=240)
    except subprocess.TimeoutExpired:
        return {**asdict(BY_NAME[name]), "failed_at": "child", "error": "timed out after 240 s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if lines:
        result = json.loads(lines[-1])
        if proc.returncode != 0:
            result["exit"] = proc.returncode
        return result
    tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
    return {**asdict(BY_NAME[name]), "failed_at": "child", "error": f"exit {proc.returncode}: {tail}"[:300]}


def table(results: list[dict[str, Any]]) -> str:
    """The results as a Markdown table."""
    lines = ["| pattern | work | mode | warm-up | params | captured | graph nodes | replay = eager bits | failed at |",
             "|" + "---|" * 9]
    for r in results:
        nodes = ", ".join(r.get("nodes") or []) or "-"
        matches = {True: "yes", False: f"no (frames {r.get('mismatched')})", None: "-"}[r.get("replay_matches")]
        failed = f"{r['failed_at']}: {r.get('error')}" if r.get("failed_at") else "-"
        lines.append(f"| {r['name']} | {r['work']} | {r['mode']} | {'yes' if r['warmup'] else 'no'} | {r['params']} | "
                     f"{'yes' if r.get('captured') else 'no'} | {nodes} | {matches} | {failed} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help=f"patterns to run, comma-separated (default all: {', '.join(BY_NAME)})")
    parser.add_argument("--replays", type=int, default=4)
    parser.add_argument("--out", default="bench_out/graph_patterns.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(run_pattern(BY_NAME[args.child], GpuLab(), args.replays)))
        return 0
    names = [n for n in args.only.split(",") if n] or list(BY_NAME)
    unknown = sorted(set(names) - set(BY_NAME))
    if unknown:
        parser.error(f"unknown pattern(s) {unknown}; known: {', '.join(BY_NAME)}")
    sys.path.insert(0, str(ROOT))
    from optixasync.testing import require_gpu

    require_gpu("graph_patterns")
    results = []
    for name in names:
        results.append(run_child(name, args.replays))
        print(json.dumps(results[-1]), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    first = next((r for r in results if r.get("device")), {})
    print(f"\n{first.get('device', '?')}, CUDA driver {first.get('cuda_driver', '?')}, OptiX ABI "
          f"{first.get('optix_abi', '?')}\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
