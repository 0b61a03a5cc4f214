"""A real render pipeline over the recording CUDA stand-in, for the CPU tests of its frame graphs.

:class:`~optixasync.testing.StubCuda` records every CUDA and OptiX call and collects what is enqueued on a
stream being captured into the stub's graph; :class:`~optixasync.testing.StubRender` puts the path integrator's
launch logic (nothing compiled) and stand-ins of the render layer's CuPy kernels under the real pipeline, whose
device scene, scheduler and frame graphs are the real ones.
"""

from __future__ import annotations

import contextlib

import numpy as np

from optixasync.render import ClothMotion, RenderOptions, RenderPipeline
from optixasync.scene import ClothAnimation, cornell_box
from optixasync.testing import StubCuda, StubRender

#: The calls a frame's GPU work makes on the stream, without the scheduler's own event records.
WORK_CALLS = {"memcpy", "optixLaunch", "optixAccelBuild", "optixAccelBuild(update)", "optixAccelCompact",
              "tonemap_srgb8", "cloth_positions", "cloth_positions_at"}


class Rig:
    """A pipeline over the stub (the Cornell box, or the cloth's scene), its frames and what they enqueued."""

    def __init__(self, cuda: StubCuda, *, cloth: bool = False, validation: bool = False, graphs: bool = True,
                 slots: int = 2, **pipeline) -> None:
        self.cuda = cuda
        self.ctx = cuda.context(validation=validation)
        self.cloth = ClothAnimation(cells=4) if cloth else None
        scene = self.cloth.scene() if cloth else cornell_box()
        options = pipeline.pop("options", RenderOptions(width=8, height=6))
        self.pipeline = RenderPipeline(self.ctx, scene, options, graphs=graphs, frames_in_flight=slots,
                                       scheduler_options={"completion_thread": False}, **pipeline)
        self.motion = ClothMotion(self.cloth) if cloth else None
        self.kept: list = []

    @property
    def scheduler(self):
        return self.pipeline.scheduler

    def run(self, count: int, keep: bool = False, **frames) -> list:
        """``pipeline.frames(count, ...)``: the results' copies (or the results themselves, kept, with ``keep``)."""
        if self.motion is not None:
            frames.setdefault("update", self.motion)
        out = []
        for result in self.pipeline.frames(count, **frames):
            if keep:
                self.kept.append(result)
                out.append(result)
            else:
                with result:
                    out.append(result.copy())
        return out

    @contextlib.contextmanager
    def frame(self, work=None, **options):
        """A frame of the pipeline's scheduler; the results completed by then are released after it."""
        with self.scheduler.frame(work, **options) as frame:
            yield frame
        for result in self.scheduler.poll():
            result.release()

    def modes(self) -> list[str]:
        """How each frame ran (the frames still in flight are waited for first, their results released)."""
        for result in self.scheduler.drain():
            result.release()
        return [s.graph for s in self.scheduler.stats.frames]

    def reasons(self) -> list[str]:
        self.modes()
        return [s.graph_reason for s in self.scheduler.stats.frames]

    def counts(self) -> dict:
        return self.scheduler.stats.graphs.as_dict()

    def graphs(self) -> list[list[str]]:
        """The node names of every graph captured so far, in order."""
        api = self.cuda.graph_api
        return [[node[0] for node in api.graphs[g]] for g in sorted(api.graphs)]

    def on_stream(self, start: int = 0) -> list[str]:
        """The calls enqueued (not captured) on the frames' stream since call ``start``."""
        stream = int(self.pipeline.stream.ptr)
        return [c[0] for c in self.cuda.calls[start:] if c[1] == stream]

    def close(self) -> None:
        self.pipeline.close()


def work_calls(names: list[str]) -> list[str]:
    """``names`` without the scheduler's own event records and stream waits: a frame's GPU work."""
    return [n for n in names if n in WORK_CALLS]


def params_of(frame) -> dict:
    """The per-frame fields of a frame's parameters, as the host wrote them."""
    p = frame.params
    return {name: p[name].item() for name in ("sample_offset", "spp", "accumulate", "width", "height")} | {
        "inv_total": float(np.float32(p["inv_total"])), "eye": tuple(np.asarray(p["eye"]).tolist())}


__all__ = ["Rig", "StubCuda", "StubRender", "params_of", "work_calls"]
