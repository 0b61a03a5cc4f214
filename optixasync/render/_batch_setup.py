"""A render pipeline's batch set-up: its views and worlds checked, the variants to compile, the batch state.

Pure checks and choices for :class:`~optixasync.render.RenderPipeline`'s
constructor, in the order it needs them: :func:`check_batch` before any GPU
work (views, worlds, stages, launch size), :func:`check_batchable` (a
batch's raygens know mesh records only), :func:`batch_variants` and
:func:`lanes_compiled` (which raygens to compile), :func:`make_integrator`
(the integrator, then :func:`make_batch_state`) once the device scene exists.

Blocking calls
--------------
None here but set-up: :func:`make_integrator` compiles the integrator (NVRTC
on a PTX cache miss, then OptiX) and :func:`make_batch_state` creates the
worlds (uploads and a build on the set-up stream, see :mod:`._device_worlds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._lanes import lane_count
from ._options import MAX_LAUNCH_PIXELS, RenderOptions
from ._outputs import SINGLE_CAMERA_OUTPUTS, VIEWS, WORLDS
from ._views import Views, view_worlds
from ._worlds import WorldLayout, Worlds

if TYPE_CHECKING:
    from ..cuda import Context
    from ..scene import Scene
    from ._batch import BatchState
    from ._device_scene import DeviceScene
    from ._integrator import Integrator
    from ._stages import Stage

__all__ = ["batch_variants", "batchable", "check_batch", "check_batchable", "lanes_compiled", "make_batch_state",
           "make_integrator"]

#: What a scene that no batch renders yet has beside meshes.
_NOT_BATCHED = "spheres, curves, custom primitives or motion"


def check_batch(scene: Scene, options: RenderOptions, stages: Sequence[Stage], views: Any,
                worlds: Any) -> tuple[Views | None, WorldLayout | None]:
    """The pipeline's views (worlds without views: the scene's camera in each world) and worlds' layout, checked.

    Raises
    ------
    TypeError, ValueError
        Naming the argument: views that are not :class:`Views`, worlds that are not :class:`Worlds` or do not fit
        the scene, views' worlds out of range, a stage that takes no batch, more threads than a launch holds.
    """
    if views is not None and not isinstance(views, Views):
        raise TypeError(f"views must be an optixasync.render.Views, got {type(views).__name__}")
    if worlds is not None and not isinstance(worlds, Worlds):
        raise TypeError(f"worlds must be an optixasync.render.Worlds, got {type(worlds).__name__}")
    layout = WorldLayout.of(scene, worlds) if worlds is not None else None
    if layout is not None and views is None:
        views = Views.cameras([scene.camera] * layout.count, worlds=np.arange(layout.count))
    if views is not None:
        view_worlds(views, views.count, layout.count if layout is not None else 1)
        threads = options.width * options.height * views.count
        if threads > MAX_LAUNCH_PIXELS:
            raise ValueError(f"views: {options.width} x {options.height} pixels x {views.count} views = {threads} "
                             f"threads exceed OptiX's launch limit of 2**30")
        for stage in stages:
            if not stage.batches:
                raise ValueError(f"the stage {stage!r} takes one image, not a batch of views: with views=, use "
                                 "stages that take (views, height, width, channels) buffers (Tonemap, Readback)")
    return views, layout


def batchable(scene: Scene) -> bool:
    """Whether a batch's raygens (views, worlds, outputs beyond the colour, lanes) may render ``scene``: meshes
    alone, none of them moving. Their record ids and motion vectors know mesh records only."""
    return not scene.shapes and not scene.moving


def check_batchable(scene: Scene, options: RenderOptions, integrator: type[Integrator], written: frozenset[str],
                    views: Any, worlds: Any) -> None:
    """Refuse, before any GPU work, what needs a batch's raygens on a scene they cannot render yet
    (:func:`batchable`): ``views``, ``worlds``, a batched integrator, outputs beyond the single camera's
    (``written``: what the integrator writes) or lanes (``options.sample_lanes`` other than 1).

    Raises
    ------
    ValueError
        Naming each argument asked for and the reason.
    """
    if batchable(scene):
        return
    asked = []
    if views is not None:
        asked.append("views")
    if worlds is not None:
        asked.append("worlds")
    if integrator.batched:
        asked.append(f"integrator={integrator.name!r}")
    extra = sorted(written - SINGLE_CAMERA_OUTPUTS)
    if extra:
        asked.append(f"outputs {extra}")
    if options.sample_lanes != 1:
        asked.append(f"sample_lanes={options.sample_lanes}")
    if asked:
        verb = "is" if len(asked) == 1 else "are"
        raise ValueError(f"{' and '.join(asked)} {verb} not supported yet on scenes with {_NOT_BATCHED}: a batch's "
                         f"raygens know mesh records only (render such a scene with one camera and outputs among "
                         f"{sorted(SINGLE_CAMERA_OUTPUTS)}, sample_lanes=1)")


def lanes_compiled(options: RenderOptions, views: Views | None, batched: bool) -> bool:
    """Whether a still may use lanes: a batch's plain raygen is compiled anyway, else for images small enough."""
    if batched:
        return True
    count = views.count if views is not None else 1
    return lane_count(options.width, options.height, count, 2**31, options.sample_lanes) > 1


def batch_variants(variants: Sequence[frozenset[str]], batched: bool, worlds: bool,
                   lanes: bool) -> list[frozenset[str]]:
    """The output sets to compile: a batch's raygens (with the flags) for every set, or the single camera's and,
    for lanes, a batch's plain raygen."""
    if batched:
        flags = {VIEWS, WORLDS} if worlds else {VIEWS}
        return [v | flags for v in variants]
    return [*variants, frozenset({VIEWS})] if lanes else list(variants)


def make_batch_state(ctx: Context, device_scene: DeviceScene, views: Views | None, layout: WorldLayout | None,
                     stream: Any) -> BatchState:
    """The pipeline's :class:`~optixasync.render._batch.BatchState` (and its worlds on the device)."""
    from ._batch import BatchState
    from ._device_worlds import DeviceWorlds

    worlds = DeviceWorlds(ctx, device_scene, layout, stream) if layout is not None else None
    return BatchState(ctx, views, worlds, device_scene.tables.materials.indices, stream)


def make_integrator(ctx: Context, cls: type[Integrator], device_scene: DeviceScene, variants: Sequence[frozenset[str]],
                    views: Views | None, layout: WorldLayout | None, stream: Any) -> tuple[Integrator, BatchState]:
    """The pipeline's integrator (``cls`` compiled for ``variants``) and batch state (on the set-up ``stream``); on a
    failure, what was made is closed (the device scene too) and the error raised."""
    try:
        integrator = cls(ctx, device_scene, variants)
    except BaseException:
        device_scene.close()
        raise
    try:
        return integrator, make_batch_state(ctx, device_scene, views, layout, stream)
    except BaseException:
        integrator.close()
        device_scene.close()
        raise
