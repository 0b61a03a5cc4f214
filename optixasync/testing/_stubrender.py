"""A render pipeline over :class:`~optixasync.testing.StubCuda`: the real pipeline, scene and scheduler, nothing compiled.

:class:`StubRender` (entered inside a ``StubCuda`` block) makes every
:class:`~optixasync.render.RenderPipeline` created meanwhile use
:class:`StubPathIntegrator`, the path integrator's own parameter packing and
launch logic over stub pipelines and shader binding tables (one per output
set, nothing compiled), and stand-ins of the CuPy kernels the render layer
launches (the tonemap, the cloth's vertex kernels), whose launches the stub
logs by name. The device scene is the real one: its tables are uploaded and
its structure built, refitted and compacted through the stub's OptiX calls.
So the pipeline's whole frame path runs on a machine without a GPU, with
every call it makes recorded:

* the CPU tests of the pipeline's frame graphs (what a slot's graph holds,
  what captures it again, what runs eagerly);
* the host cost of the pipeline's frames, eager and replayed
  (``benchmarks/bench_submit.py``).

Blocking calls
--------------
None: every CUDA and OptiX call is the stub's.
"""

from __future__ import annotations

from typing import Any

from ..program import PipelineOptions
from ..render import _pipeline, _tonemap, _updates
from ..render._outputs import output_mask
from ..render._path import PathIntegrator
from ..render._refill import ParamsRefill
from ._stubcuda import StubCuda, active_stub

__all__ = ["StubPathIntegrator", "StubRender"]


class StubPathIntegrator(PathIntegrator):
    """The path integrator over the stub: its parameters and launches, one stub pipeline and SBT per output set.

    Attributes
    ----------
    pipeline_options : PipelineOptions
        Given to every stub pipeline (``exception_flags``: a pipeline compiled with debug exceptions).
    """

    pipeline_options = PipelineOptions()

    def __init__(self, ctx: Any, scene: Any, variants: Any) -> None:  # no super().__init__(): it would compile
        cuda = active_stub()
        self.ctx = ctx
        self._refill = ParamsRefill(self.params_dtype)
        masks = sorted({output_mask(v) for v in variants} or {output_mask({"image"})})
        self.variants = {mask: (None, cuda.pipeline(ctx, pipeline_options=self.pipeline_options), cuda.sbt(ctx))
                         for mask in masks}

    def close(self) -> None:
        self._refill.clear()
        self.variants = {}


class StubRender:
    """While entered, render pipelines use :class:`StubPathIntegrator` and stub kernels (see the module).

    Parameters
    ----------
    cuda : StubCuda
        The stub the kernels' launches go to (entered already).
    pipeline_options : PipelineOptions, optional
        The stub pipelines' options (default: none, as the path tracer's).
    """

    def __init__(self, cuda: StubCuda, pipeline_options: PipelineOptions | None = None) -> None:
        self.cuda = cuda
        options = pipeline_options if pipeline_options is not None else PipelineOptions()
        self.integrator = type("StubPathIntegrator", (StubPathIntegrator,), {"pipeline_options": options})
        self._saved: list[tuple[Any, str, Any]] = []

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def __enter__(self) -> StubRender:
        cuda, integrator = self.cuda, self.integrator
        self._patch(_pipeline, "integrator_class", lambda name: integrator)
        self._patch(_tonemap, "_tonemap_kernel", lambda: cuda.kernel("tonemap_srgb8"))
        self._patch(_updates, "_kernel", lambda: cuda.kernel("cloth_positions"))
        self._patch(_updates, "_kernel_at", lambda: cuda.kernel("cloth_positions_at"))
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, value in reversed(self._saved):
            setattr(owner, name, value)
        self._saved.clear()
