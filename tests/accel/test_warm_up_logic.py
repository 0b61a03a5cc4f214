"""The first operations of a fresh process never block the host, once ``Context(warm_up=True)`` has run.

OptiX loads the code of an acceleration-structure operation the first time a process uses it, and that load waits
for all work queued on the device (measured on an H200: the first refit behind 50 ms of GPU work blocked the host for
50.7 ms). The warm-up that a new context runs pays for those loads while the context is created; it is a set-up step
the accel layer registers when it is imported. A fresh interpreter is needed to see whether it is registered by the
imports a program makes (another test importing ``optixasync.accel._warmup`` itself would register it), so the
sequence of ``benchmarks/bench_accel.py`` part 3 runs over :class:`~optixasync.testing.StubCuda` in a child process,
with an OptiX stand-in whose first use of each operation waits for the queued work, as the driver's does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

#: What the benchmark times, in its order (each behind queued GPU work, the stream drained after each).
STEPS = ("GAS build", "GAS compact", "GAS refit", "second GAS refit", "refit from other device vertices",
         "IAS build", "IAS refit")


def first_use_sequence() -> dict[str, list[str]]:
    """The blocking calls made inside each step, after the context's set-up steps (run in a fresh process)."""
    import numpy as np

    import optixasync  # what a program imports, and nothing more: the layers register their set-up steps here
    from optixasync.accel import AccelOptions, GeometryAccel, Instance, InstanceAccel, TriangleInput
    from optixasync.testing import StubCuda, _stubcuda
    from optixasync.testing._stubdevice import StubOptixApi

    assert Path(optixasync.__file__).resolve().is_relative_to(REPO_ROOT), optixasync.__file__  # this tree's package
    blocking: list[str] = []

    class FirstUseLoadingApi(StubOptixApi):
        """OptiX's lazy loading: the first use of an operation in the process waits for every queued GPU operation."""

        loaded: set = set()

        def _first_use(self, key: tuple) -> None:
            if key not in self.loaded:
                self.loaded.add(key)
                blocking.append(f"OptiX first-use load of {key} (waits for the queued GPU work)")
                self._cuda.complete_all()

        def optixAccelBuild(self, ctx, stream, options, inputs, count, *rest):
            self._first_use(("build", int(options._obj.operation), int(inputs[0].type)))
            return super().optixAccelBuild(ctx, stream, options, inputs, count, *rest)

        def optixAccelCompact(self, *args):
            self._first_use(("compact",))
            return super().optixAccelCompact(*args)

    def logged_wait(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def wait(self, *args):
            blocking.append(f"{cls.__name__}.{name}")
            return original(self, *args)

        setattr(cls, name, wait)

    for cls in (_stubcuda.StubEvent, _stubcuda.StubStream, _stubcuda._StubDevice):
        logged_wait(cls, "synchronize")

    found: dict[str, list[str]] = {}
    with StubCuda(record=True) as cuda:
        ctx = cuda.context()
        ctx.api = FirstUseLoadingApi(cuda)
        ctx.warm_up = True
        ctx._run_setup_steps()  # what Context(warm_up=True) runs once the device context exists
        assert optixasync.Context is type(ctx)
        stream = ctx.stream
        vertices = np.random.default_rng(0).random((30, 3), dtype=np.float32)
        indices = np.arange(30, dtype=np.int32).reshape(10, 3)
        dv, di, moved = ctx.upload(vertices, stream), ctx.upload(indices, stream), ctx.upload(vertices + 1, stream)
        options = AccelOptions(allow_update=True, allow_compaction=True)
        objects: dict = {}
        steps = {
            "GAS build": lambda: objects.setdefault("gas", GeometryAccel(ctx, TriangleInput(dv, di), options,
                                                                         stream=stream)),
            "GAS compact": lambda: objects["gas"].compact(stream=stream),  # deferred: the size has arrived
            "GAS refit": lambda: objects["gas"].refit(dv, stream=stream),
            "second GAS refit": lambda: objects["gas"].refit(dv, stream=stream),
            "refit from other device vertices": lambda: objects["gas"].refit(moved, stream=stream),
            "IAS build": lambda: objects.setdefault("ias", InstanceAccel(ctx, [Instance(objects["gas"])], options,
                                                                         stream=stream)),
            "IAS refit": lambda: objects["ias"].refit(stream=stream),
        }
        for name in STEPS:
            cuda.pause()  # the GPU is busy with earlier work: nothing recorded from now on has passed
            blocking.clear()
            steps[name]()
            found[name] = list(blocking)
            cuda.resume()  # the benchmark's stream.synchronize() between steps
        assert objects["gas"].compacted, "the compaction was deferred to a later call: the sequence is not the one timed"
    return found


def test_no_operation_after_a_warmed_up_context_waits_for_the_gpu():
    """Build, deferred compaction, the refit after it (and the rest of the benchmark's first uses): no host wait."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    result = subprocess.run([sys.executable, __file__], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert list(found) == list(STEPS)
    assert found["GAS refit"] == [], "the first refit after a deferred compaction blocked the host"
    assert {name: calls for name, calls in found.items() if calls} == {}


if __name__ == "__main__":
    print(json.dumps(first_use_sequence()))
