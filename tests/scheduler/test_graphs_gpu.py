"""Frame graphs on the GPU: replayed frames compute what eager frames compute, bit for bit; every invalidation
captures again and stays correct; validation mode runs eagerly and still serializes; no stall in steady state.

Frames of CUDA work (kernels, parameter uploads, readbacks) replay: those tests check that graphs were really
used (``stats.graphs.replays``), so none passes by running eagerly. A frame with an OptiX launch cannot be
replayed on the drivers measured (``LAUNCH_NOT_REPLAYABLE``): its tests check that it runs eagerly with that
reason and still gives the eager frames' bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from optixasync import AccelOptions, GeometryAccel, TriangleInput, struct_dtype
from optixasync.accel._base import BUILD_NOT_CAPTURABLE
from optixasync.program._pipeline import LAUNCH_NOT_REPLAYABLE
from optixasync.scheduler import FrameScheduler
from optixasync.scheduler._graphs import VALIDATION
from optixasync.testing import (
    BUSY_PARAMS,
    HELLO_PARAMS,
    BusyWorkload,
    HelloRenderer,
    KernelBusyWorkload,
    RippleAnimator,
    expected_busy_output,
    grid_mesh,
)

pytestmark = pytest.mark.gpu

N_OUT = 64
FRAMES = 40

#: The hello renderer's parameters, then the frame's time for the ripple kernel (read on the GPU).
CLOTH_PARAMS = struct_dtype([("image", "ptr"), ("width", "uint"), ("height", "uint"), ("handle", "handle"),
                             ("view_min", "float2"), ("view_max", "float2"), ("eye_z", "float"), ("t", "float")])


@pytest.fixture(scope="module")
def busy(ctx):
    return BusyWorkload(ctx)


def ran_eagerly(counts: dict, frames: int) -> None:
    """At least ``frames`` frames asked for graphs ran eagerly because of their OptiX launches or refits; none replayed."""
    assert counts["replays"] == 0, counts
    refused = sum(counts["eager_reasons"].get(reason, 0) for reason in (LAUNCH_NOT_REPLAYABLE, BUILD_NOT_CAPTURABLE))
    assert refused >= frames, counts


def busy_frames(ctx, busy, graphs: bool, frames: int = FRAMES, slots: int = 2, spin_ns: int = 20_000,
                optix: bool = False):
    """Busy frames (the values written and read back in the work, parameters in the with block): result copies.

    ``optix``: the values come from the busy OptiX program's launch; otherwise from a CUDA kernel.
    """
    sched = FrameScheduler(ctx, slots, params_dtype=BUSY_PARAMS, graphs=graphs,
                           options={"max_queued_results": frames})
    kernel = KernelBusyWorkload()

    def work(f):
        if optix:
            f.launch(busy.pipeline, busy.sbt, N_OUT)
            f.readback(f.buffer("out", (N_OUT,), np.float32), "out")
        else:
            kernel.record(f, N_OUT)

    out = []
    for k in range(frames):
        with sched.frame(work) as f:
            f.params["out"] = f.buffer("out", (N_OUT,), np.float32).data.ptr
            f.params["spin_ns"] = spin_ns
            f.params["frame"] = k
            f.params["scale"] = 0.25 * k
        for result in sched.poll():
            with result:
                out.append(result.copy())
    for result in sched.drain():
        with result:
            out.append(result.copy())
    counts = sched.stats.graphs.as_dict()
    sched.close()
    return out, counts


def test_replayed_busy_frames_equal_eager_frames_and_the_expected_values(ctx, busy):
    eager, eager_counts = busy_frames(ctx, busy, graphs=False)
    graph, counts = busy_frames(ctx, busy, graphs=True)
    assert counts["replays"] >= FRAMES - 4 and eager_counts["replays"] == 0
    assert [r.index for r in graph] == list(range(FRAMES))
    for a, b in zip(eager, graph, strict=True):
        np.testing.assert_array_equal(b["out"], expected_busy_output(b.index, 0.25 * b.index, N_OUT))
        assert a["out"].tobytes() == b["out"].tobytes()


def test_frames_with_optix_launches_run_eagerly_with_the_reason_and_stay_right(ctx, busy):
    graph, counts = busy_frames(ctx, busy, graphs=True, optix=True)
    ran_eagerly(counts, FRAMES - 2)  # each slot's first frame runs eagerly as every first frame does
    assert [r.index for r in graph] == list(range(FRAMES))
    for b in graph:
        np.testing.assert_array_equal(b["out"], expected_busy_output(b.index, 0.25 * b.index, N_OUT))
    after, counts = busy_frames(ctx, busy, graphs=True, frames=8)  # the refused captures left the context sound
    assert counts["replays"] >= 4
    for b in after:
        np.testing.assert_array_equal(b["out"], expected_busy_output(b.index, 0.25 * b.index, N_OUT))


_ACCUMULATE = r"""
extern "C" __global__ void accumulate(float* sums, int n, const unsigned int* frame, const float* scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) sums[i] += *scale * (float)(*frame) + 0.001f * (float)i;
}
"""
ACC_PARAMS = struct_dtype([("frame", "uint"), ("scale", "float")])


def accumulation(ctx, graphs: bool, frames: int = FRAMES):
    """A user program that accumulates across frames (one buffer shared by all slots), read back every frame."""
    import cupy

    kernel = cupy.RawKernel(_ACCUMULATE, "accumulate")
    sched = FrameScheduler(ctx, 3, params_dtype=ACC_PARAMS, graphs=graphs, options={"max_queued_results": frames})
    sums = ctx.memory.empty((4096,), np.float32, sched.stream)
    zero = ctx.upload(np.zeros(4096, np.float32), sched.stream)
    cupy.cuda.runtime.memcpyAsync(sums.data.ptr, zero.data.ptr, sums.nbytes, 3, sched.stream.ptr)

    def work(f):
        kernel((16,), (256,), (sums, np.int32(4096), np.uint64(f.param_address("frame")),
                               np.uint64(f.param_address("scale"))), stream=f.stream)
        f.readback(sums, "sums")

    images = []
    for k in range(frames):
        with sched.frame(work) as f:
            f.params["frame"], f.params["scale"] = k, 0.5
        for r in sched.poll():
            with r:
                images.append(r["sums"].copy())
    images += [r["sums"].copy() for r in sched.drain()]
    replays = sched.stats.graphs.replays
    sched.close()
    return images, replays


def test_accumulation_across_replayed_frames_equals_eager_frames(ctx):
    eager, _ = accumulation(ctx, graphs=False)
    graph, replays = accumulation(ctx, graphs=True)
    assert replays >= FRAMES - 6
    assert len(graph) == FRAMES
    for a, b in zip(eager, graph, strict=True):
        assert a.tobytes() == b.tobytes()
    expected = sum(0.5 * k for k in range(FRAMES))
    assert abs(float(graph[-1][0]) - expected) < 1e-3


class ClothRig:
    """A rippling grid of about a million triangles: a kernel moves it (its time read on the GPU), a refit, a trace."""

    def __init__(self, ctx, cells: int = 708, size: int = 128) -> None:
        rest, indices = grid_mesh(cells)
        self.ctx = ctx
        self.size = size
        self.ripple = RippleAnimator(ctx, rest, amplitude=0.05)
        self.gas = GeometryAccel(ctx, TriangleInput(rest, indices), options=AccelOptions(allow_update=True))
        self.vertices = ctx.memory.empty(rest.shape, np.float32, ctx.stream)
        self.renderer = HelloRenderer(ctx)
        self.triangles = len(indices)

    def work(self, f) -> None:
        self.ripple.at(self.vertices, f.param_address("t"), f)
        self.gas.refit(self.vertices, stream=f)
        f.launch(self.renderer.pipeline, self.renderer.sbt, self.size, self.size, params_size=HELLO_PARAMS.itemsize)
        f.readback(f.buffer("image", (self.size, self.size, 4), np.float32), "image")

    def run(self, graphs: bool, frames: int = 24):
        sched = FrameScheduler(self.ctx, 2, params_dtype=CLOTH_PARAMS, graphs=graphs,
                               options={"max_queued_results": frames})
        images = []
        refits = self.gas.refits
        for k in range(frames):
            with sched.frame(self.work) as f:
                image = f.buffer("image", (self.size, self.size, 4), np.float32)
                p = f.params
                p["image"], p["width"], p["height"], p["handle"] = image.data.ptr, self.size, self.size, self.gas.handle
                p["view_min"], p["view_max"], p["eye_z"], p["t"] = (-0.8, -0.8), (0.8, 0.8), -1.0, 0.05 * k
            images += [r["image"].copy() for r in sched.poll()]
        images += [r["image"].copy() for r in sched.drain()]
        counts = sched.stats.graphs.as_dict()
        sched.close()
        return images, counts, self.gas.refits - refits


def test_the_cloth_with_its_million_triangle_refit_inside_the_graph_equals_eager(ctx):
    rig = ClothRig(ctx)
    assert rig.triangles >= 1_000_000
    eager, _, eager_refits = rig.run(graphs=False)
    graph, counts, refits = rig.run(graphs=True)
    ran_eagerly(counts, 20)  # the frame launches OptiX: it runs eagerly, refit included
    assert refits == eager_refits == 24
    for a, b in zip(eager, graph, strict=True):
        assert a.tobytes() == b.tobytes()
    assert not np.array_equal(graph[0][..., 3], graph[-1][..., 3])  # the mesh moved: the hit distances differ


def test_every_invalidation_captures_again_and_stays_correct(ctx, busy):
    sched = FrameScheduler(ctx, 1, params_dtype=BUSY_PARAMS, graphs=True, options={"max_queued_results": 64})
    n = [N_OUT]
    kernel = KernelBusyWorkload()

    def work(f):
        kernel.record(f, n[0])

    held = []

    def frame(k, key=None, keep=False):
        with sched.frame(work, key=key) as f:
            f.params["out"] = f.buffer("out", (n[0],), np.float32).data.ptr
            f.params["spin_ns"], f.params["frame"], f.params["scale"] = 0, k, 1.5
        result = f.handle.result(timeout=10)
        np.testing.assert_array_equal(result["out"], expected_busy_output(k, 1.5, n[0]))
        if keep:
            held.append((k, result))
        else:
            result.release()

    k = 0
    for _ in range(4):
        frame(k, key={"outputs": "out"})
        k += 1
    for _ in range(3):  # a new key
        frame(k, key={"outputs": "out+"})
        k += 1
    n[0] = 2 * N_OUT  # a reallocated buffer
    for _ in range(3):
        frame(k, key={"outputs": "out+"})
        k += 1
    frame(k, key={"outputs": "out+"}, keep=True)  # a result held as its slot comes round
    k += 1
    for _ in range(3):
        frame(k, key={"outputs": "out+"})
        k += 1
    reasons = sched.stats.graphs.capture_reasons
    assert reasons["key changed: outputs"] == 1 and reasons["buffer 'out' reallocated"] == 1
    assert reasons["readbacks still held: another set of destinations"] == 1
    for index, result in held:  # the held result kept its own values
        np.testing.assert_array_equal(result["out"], expected_busy_output(index, 1.5, n[0]))
    assert sched.stats.graphs.replays >= 5
    sched.close()


def test_the_rebuild_policy_captures_again_and_the_frames_stay_equal_to_eager_ones(ctx):
    rest, indices = grid_mesh(64)

    def run(graphs: bool):
        rig = ClothRig(ctx, cells=64, size=32)
        rig.gas.close()
        rig.gas = GeometryAccel(ctx, TriangleInput(rest, indices), options=AccelOptions(allow_update=True,
                                                                                         rebuild_every=6))
        images, counts, _refits = rig.run(graphs=graphs, frames=30)
        return images, counts, rig.gas.rebuilds

    eager, _, eager_rebuilds = run(False)
    graph, counts, rebuilds = run(True)
    assert rebuilds == eager_rebuilds >= 3  # the policy's rebuilds happen with graphs asked for too
    ran_eagerly(counts, 20)
    for a, b in zip(eager, graph, strict=True):
        np.testing.assert_array_equal(a[..., 3], b[..., 3])  # the hit distances (the image's alpha)


def test_a_structure_compacted_between_frames_captures_again(ctx):
    rest, indices = grid_mesh(64)
    rig = ClothRig(ctx, cells=64, size=32)
    rig.gas.close()
    rig.gas = GeometryAccel(ctx, TriangleInput(rest, indices),
                            options=AccelOptions(allow_update=True, allow_compaction=True))
    sched = FrameScheduler(ctx, 1, params_dtype=CLOTH_PARAMS, graphs=True, options={"max_queued_results": 64})

    def frame(k):
        with sched.frame(rig.work) as f:
            image = f.buffer("image", (32, 32, 4), np.float32)
            p = f.params
            p["image"], p["width"], p["height"], p["handle"] = image.data.ptr, 32, 32, rig.gas.handle
            p["view_min"], p["view_max"], p["eye_z"], p["t"] = (-0.8, -0.8), (0.8, 0.8), -1.0, 0.1 * k
        return f.handle.result(timeout=10)["image"].copy()

    for k in range(4):
        frame(k)
    assert rig.gas.compact(wait=True, stream=sched.stream)  # outside any frame: new buffers, a new handle
    images = [frame(k) for k in range(4, 8)]
    assert [s.graph for s in sched.stats.frames] == ["eager"] * 8
    assert [s.graph_reason for s in sched.stats.frames[1:]] == [BUILD_NOT_CAPTURABLE] * 7  # the refit comes first
    assert all(np.isfinite(image).all() for image in images)
    sched.close()


def test_validation_mode_runs_eagerly_and_its_launches_still_wait():
    import optixasync
    from optixasync.cuda import spin_gpu

    local = optixasync.Context(validation=True)
    busy = BusyWorkload(local)
    sched = FrameScheduler(local, 2, params_dtype=BUSY_PARAMS, graphs=True)

    def work(f):
        f.launch(busy.pipeline, busy.sbt, N_OUT)
        f.readback(f.buffer("out", (N_OUT,), np.float32), "out")

    launch_ms = []
    for k in range(6):
        with sched.frame(work) as f:
            f.params["out"] = f.buffer("out", (N_OUT,), np.float32).data.ptr
            f.params["spin_ns"], f.params["frame"], f.params["scale"] = 0, k, 1.0
            if k >= 2:
                spin_gpu(20_000_000, f)  # 20 ms queued ahead of the launch
        sched.drain()
        launch_ms.append(sched.stats.frames[-1].launch_ms)
    assert [s.graph for s in sched.stats.frames] == ["eager"] * 6
    assert {s.graph_reason for s in sched.stats.frames} == {VALIDATION}
    assert min(launch_ms[2:]) >= 10.0, launch_ms  # optixLaunch waited for the queued work: the host serializes
    sched.close()
    local.close()


def test_steady_state_graph_frames_have_no_stall(ctx, busy):
    try:
        import cupti.cupti  # noqa: F401

        from optixasync.diagnostics import syncwatch
    except ImportError as exc:
        pytest.skip(f"cupti-python is not installed ({exc}): pip install 'optixasync[diagnostics]'")
    sched = FrameScheduler(ctx, 2, params_dtype=BUSY_PARAMS, graphs=True)
    kernel = KernelBusyWorkload()

    def work(f):
        kernel.record(f, N_OUT)

    def frame(k):
        with sched.frame(work) as f:
            f.params["out"] = f.buffer("out", (N_OUT,), np.float32).data.ptr
            f.params["spin_ns"], f.params["frame"], f.params["scale"] = 1_000_000, k, 0.5
        for r in sched.poll():
            r.release()

    for k in range(20):  # the eager frames, the captures and their variants, the driver's first launches
        frame(k)
    with syncwatch() as watch:
        for k in range(20, 70):
            frame(k)
    sched.drain()
    report = watch.report
    report.assert_no_sync()
    launches = [c for c in report.optix_calls if c.api == "cuGraphLaunch"]
    assert len(launches) == 50 and not any(c.blocked for c in launches), report.render()
    assert sched.stats.graphs.replays >= 50  # the frames watched were replays
    assert "slot fence" in [r.designed for r in report.designed]
    sched.close()
