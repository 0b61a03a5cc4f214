"""The render pipeline's frames with ``graphs=True`` on the GPU.

Every path-tracer frame launches OptiX, and an OptiX launch replayed from a CUDA graph does not run what was
captured on the drivers measured (``LAUNCH_NOT_REPLAYABLE``): the capture is refused and each frame runs eagerly,
counted with that reason. These tests check that fallback: the frames asked to replay give the eager frames'
bits (images, accumulation, readbacks, the cloth with its million-triangle refit), nothing is lost or doubled,
validation mode says so first, and the fallback frames never stall the host.
"""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.accel._base import BUILD_NOT_CAPTURABLE
from optixasync.program._pipeline import LAUNCH_NOT_REPLAYABLE
from optixasync.render import ClothMotion, RenderOptions, RenderPipeline, Tonemap
from optixasync.scene import ClothAnimation, cornell_box
from optixasync.scheduler import FrameScheduler
from optixasync.scheduler._graphs import VALIDATION

pytestmark = pytest.mark.gpu

FRAMES = 16


def ran_eagerly(counts: dict, frames: int) -> None:
    """The frames asked for graphs ran eagerly because of their OptiX launches or refits, at least ``frames`` of them."""
    assert counts["replays"] == 0, counts
    refused = sum(counts["eager_reasons"].get(reason, 0) for reason in (LAUNCH_NOT_REPLAYABLE, BUILD_NOT_CAPTURABLE))
    assert refused >= frames, counts


def copies(results) -> list:
    """Copies of the results, each released before the next frame (one slot: a held one would be another variant)."""
    out = []
    for result in results:
        with result:
            out.append(result.copy())
    return out


def progressive(ctx, graphs: bool, frames: int = FRAMES, **pipeline):
    """``frames`` progressive 1-spp frames of the Cornell box: each frame's readbacks, the sums, the counts."""
    options = pipeline.pop("options", RenderOptions(width=96, height=64, max_depth=6))
    with RenderPipeline(ctx, cornell_box(), options, graphs=graphs, **pipeline) as p:
        out = []
        for result in p.frames(frames):
            with result:
                out.append(result.copy())
        sums = p.accumulation.get()
        counts = p.scheduler.stats.graphs.as_dict()
    return out, sums, counts


def test_progressive_frames_asked_for_graphs_equal_eager_frames(ctx):
    outputs = ("image", "radiance")
    eager, eager_sums, eager_counts = progressive(ctx, False, outputs=outputs)
    graph, sums, counts = progressive(ctx, True, outputs=outputs)
    ran_eagerly(counts, FRAMES - 4)
    assert eager_counts["replays"] == 0, eager_counts
    assert [r.index for r in graph] == list(range(FRAMES))
    for a, b in zip(eager, graph, strict=True):
        for name in outputs:
            assert a[name].tobytes() == b[name].tobytes(), (b.index, name)
    assert eager_sums.tobytes() == sums.tobytes()  # the accumulation itself
    assert not np.array_equal(graph[0]["radiance"], graph[-1]["radiance"])  # the samples did add up


def test_frames_with_the_tonemap_stage_asked_for_graphs_equal_eager_frames(ctx):
    stages = {"outputs": ("image",), "stages": [Tonemap("radiance")]}
    eager, _, _ = progressive(ctx, False, **stages)
    graph, _, counts = progressive(ctx, True, **stages)
    ran_eagerly(counts, FRAMES - 4)
    for a, b in zip(eager, graph, strict=True):
        assert a["image"].tobytes() == b["image"].tobytes()


def cloth_frames(ctx, graphs: bool, cells: int, frames: int, size: int = 128):
    cloth = ClothAnimation(cells=cells)
    with RenderPipeline(ctx, cloth.scene(), RenderOptions(width=size, height=size, max_depth=4), graphs=graphs) as p:
        out = []
        for result in p.frames(frames, update=ClothMotion(cloth)):
            with result:
                out.append(result["image"].copy())
        vertices = p.vertices(cloth.mesh_index, p.stream).get(stream=p.stream)
        p.stream.synchronize()
        accel = p.device_scene.accel
        counts = p.scheduler.stats.graphs.as_dict()
        return out, vertices, counts, accel.refits, cloth.num_triangles


def test_the_cloth_with_its_million_triangle_refit_inside_the_graph_equals_eager(ctx):
    eager, eager_vertices, _, eager_refits, triangles = cloth_frames(ctx, False, cells=708, frames=FRAMES)
    graph, vertices, counts, refits, _ = cloth_frames(ctx, True, cells=708, frames=FRAMES)
    assert triangles >= 1_000_000
    ran_eagerly(counts, FRAMES - 4)
    assert refits == eager_refits == FRAMES  # every replay refitted the structure (and counted it)
    assert eager_vertices.tobytes() == vertices.tobytes()  # the time read on the GPU: the same vertices
    for a, b in zip(eager, graph, strict=True):
        assert a.tobytes() == b.tobytes()
    assert not np.array_equal(graph[1], graph[-1])  # the cloth moved


def test_every_pipeline_invalidation_keeps_the_frames_equal_to_eager_ones(ctx):
    def run(graphs: bool):
        options = RenderOptions(width=64, height=48, max_depth=4)
        with RenderPipeline(ctx, cornell_box(), options, outputs=("image",), stages=[Tonemap("radiance")],
                            graphs=graphs, frames_in_flight=1) as p:
            out = copies(p.frames(4))
            out += copies(p.frames(4, stages=False))  # another program variant
            out += copies(p.frames(4, readback=("image", "radiance")))  # other readbacks
            p.device_scene.generation += 1  # a table placed anew
            out += copies(p.frames(4))
            return out, p.scheduler.stats.graphs.as_dict()

    eager, _ = run(False)
    graph, counts = run(True)
    ran_eagerly(counts, 6)
    for a, b in zip(eager, graph, strict=True):
        assert sorted(a.readbacks) == sorted(b.readbacks)
        for name in a.readbacks:
            assert a[name].tobytes() == b[name].tobytes()


def test_held_results_keep_their_own_images(ctx):
    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=32, height=32), graphs=True,
                        frames_in_flight=2) as p:
        kept = list(p.frames(12))  # every result held: the slots' variants, then handovers
        counts = p.scheduler.stats.graphs.as_dict()
        addresses = {r["image"].ctypes.data for r in kept}
        copies = [r["image"].copy() for r in kept]
    ran_eagerly(counts, 8)
    assert len(addresses) == len(kept)
    eager, _, _ = progressive(ctx, False, frames=12, options=RenderOptions(width=32, height=32))
    for a, b in zip(eager, copies, strict=True):
        assert a["image"].tobytes() == b.tobytes()


def test_validation_mode_never_captures_pipeline_frames():
    import optixasync

    with optixasync.Context(validation=True) as local:
        with RenderPipeline(local, cornell_box(), RenderOptions(width=32, height=32), graphs=True) as p:
            for result in p.frames(5):
                result.release()
            frames = p.scheduler.stats.frames
            assert [s.graph for s in frames] == ["eager"] * 5
            assert {s.graph_reason for s in frames} == {VALIDATION}


def test_an_application_scheduler_asked_for_graphs_gives_the_recorder_frames(ctx):
    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=48, height=32)) as p:
        sched = FrameScheduler(ctx, 2, params_dtype=p.params_dtype, graphs=True)
        recorder = p.recorder(readback="image")
        graph = []
        for k in range(10):
            with sched.frame() as frame:
                recorder.record(frame, k)
            graph += [r.copy() for r in sched.poll()]
        graph += [r.copy() for r in sched.drain()]
        counts = sched.stats.graphs.as_dict()
        sched.close()
    eager, _, _ = progressive(ctx, False, frames=10, options=RenderOptions(width=48, height=32))
    ran_eagerly(counts, 6)
    for a, b in zip(eager, graph, strict=True):
        assert a["image"].tobytes() == b["image"].tobytes()


@pytest.mark.parametrize("case", ["progressive", "cloth"])
def test_steady_state_frames_asked_for_graphs_have_no_stall(ctx, case):
    try:
        import cupti.cupti  # noqa: F401

        from optixasync.diagnostics import syncwatch
    except ImportError as exc:
        pytest.skip(f"cupti-python is not installed ({exc}): pip install 'optixasync[diagnostics]'")
    cloth = ClothAnimation(cells=128) if case == "cloth" else None
    scene = cloth.scene() if cloth is not None else cornell_box()
    with RenderPipeline(ctx, scene, RenderOptions(width=64, height=64, max_depth=4), graphs=True) as p:
        recorder = p.recorder(update=ClothMotion(cloth) if cloth is not None else None)

        def frame(k):
            with p.scheduler.frame() as f:
                recorder.record(f, k)
            for r in p.scheduler.poll():
                r.release()

        for k in range(20):  # the first frames, a static structure's compaction, OptiX's first launches
            frame(k)
        with syncwatch() as watch:
            for k in range(20, 60):
                frame(k)
        for r in p.scheduler.drain():
            r.release()
        report = watch.report
        report.assert_no_sync()
        launches = [c for c in report.optix_calls if c.api == "optixLaunch"]
        assert len(launches) == 40 and not any(c.blocked for c in launches), report.render()
        assert not [c for c in report.optix_calls if c.api == "cuGraphLaunch"]  # every frame ran eagerly
        ran_eagerly(p.scheduler.stats.graphs.as_dict(), 40)
