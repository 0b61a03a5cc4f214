"""Rendering: a scene to frames through a :class:`RenderPipeline` (scene tables, an integrator, stages).

The one path from a :class:`~optixasync.scene.Scene` to images::

    with RenderPipeline(ctx, scene, RenderOptions(width=512, height=512)) as pipeline:
        linear = pipeline.render(256)                      # a still (waits for it)
        for result in pipeline.frames(64):                 # progressive frames, 2 in flight
            with result:
                show(result["image"])

:meth:`RenderPipeline.record` puts a launch into a frame of an application's
own :class:`~optixasync.FrameScheduler`. Integrators (``"path"``, the path
tracer) are registered by name (:func:`register_integrator`); the outputs a
frame can produce are :data:`OUTPUTS`; stages run after each launch
(:class:`Tonemap`, :class:`Readback`, :class:`WriteImages`, and the
denoiser's :class:`optixasync.denoise.Denoise`); light types are registered
in :mod:`optixasync.render.lights` like BSDF families in
:mod:`optixasync.scene` (:func:`~optixasync.render.lights.register_light_type`,
:func:`~optixasync.scene.register_bsdf`); frame updates
(:class:`ClothMotion`, :class:`NodeMotion`, :class:`CameraSwing`, or any callable) change a frame
before its launch. Importing this package loads no CUDA library.
"""

from __future__ import annotations

from . import _path  # noqa: F401 (registers the path integrator)
from ._device_scene import check_scene
from ._graphs import FRAME_VALUES, GraphUpdate
from ._integrator import Integrator, Launch, PreparedLaunch, integrators, register_integrator
from ._options import RenderOptions
from ._outputs import OUTPUTS, Output
from ._pipeline import RenderPipeline
from ._recorder import FrameRecorder
from ._stages import FrameBuffers, Readback, Stage, Tonemap, WriteImages
from ._updates import CameraSwing, ClothMotion, FrameUpdate, NodeMotion

__all__ = [
    "CameraSwing",
    "ClothMotion",
    "FRAME_VALUES",
    "FrameBuffers",
    "FrameRecorder",
    "FrameUpdate",
    "GraphUpdate",
    "Integrator",
    "Launch",
    "NodeMotion",
    "OUTPUTS",
    "Output",
    "PreparedLaunch",
    "Readback",
    "RenderOptions",
    "RenderPipeline",
    "Stage",
    "Tonemap",
    "WriteImages",
    "check_scene",
    "integrators",
    "register_integrator",
]
