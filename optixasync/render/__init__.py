"""Rendering: a scene to frames through a :class:`RenderPipeline` (scene tables, an integrator, stages).

The one path from a :class:`~optixasync.scene.Scene` to images::

    with RenderPipeline(ctx, scene, RenderOptions(width=512, height=512)) as pipeline:
        linear = pipeline.render(256)                      # a still (waits for it)
        for result in pipeline.frames(64):                 # progressive frames, 2 in flight
            with result:
                show(result["image"])

:meth:`RenderPipeline.record` puts a launch into a frame of an application's
own :class:`~optixasync.FrameScheduler`. Integrators (``"path"``, the path
tracer; ``"gbuffer"``, primary hits only) are registered by name
(:func:`register_integrator`); the outputs a frame can produce are
:data:`OUTPUTS` (colour, depth, normals, ids, UV, motion, coverage, ray
counts...); a batch of :class:`Views` (pinhole intrinsics, orthographic,
cameras) and of :class:`Worlds` (copies of the scene moved by a device
array) renders in one launch, its outputs kept on the GPU
(:meth:`RenderPipeline.step` returns :class:`DeviceOutputs`, for torch, JAX
and CuPy without copies); ids map back to the scene (:func:`id_names`,
:func:`label_map`, :func:`segment`); :func:`write_dataset` renders a randomized dataset to files, resumably,
and :class:`TrainingBatches` streams randomized batches to a training loop without files.
Stages run after each launch
(:class:`Tonemap`, :class:`Readback`, :class:`WriteImages`, and the
denoiser's :class:`optixasync.denoise.Denoise`); light types are registered
in :mod:`optixasync.render.lights` like BSDF families in
:mod:`optixasync.scene` (:func:`~optixasync.render.lights.register_light_type`,
:func:`~optixasync.scene.register_bsdf`); frame updates
(:class:`ClothMotion`, :class:`NodeMotion`, :class:`CameraSwing`, or any callable) change a frame
before its launch. Importing this package loads no CUDA library.
"""

from __future__ import annotations

from . import _gbuffer, _path  # noqa: F401 (register the path and G-buffer integrators)
from ._dataset import DatasetOptions, DatasetReport, write_dataset
from ._device_outputs import DeviceOutputs
from ._device_scene import check_scene
from ._graphs import FRAME_VALUES, GraphUpdate
from ._ids import NO_ID, id_names, label_map, segment
from ._integrator import Integrator, Launch, PreparedLaunch, integrators, register_integrator
from ._options import RenderOptions
from ._outputs import OUTPUTS, Output
from ._pipeline import RenderPipeline
from ._recorder import FrameRecorder
from ._stages import FrameBuffers, Readback, Stage, Tonemap, WriteImages
from ._training import OrbitCameras, TrainingBatch, TrainingBatches
from ._updates import CameraSwing, ClothMotion, FrameUpdate, NodeMotion
from ._views import Views
from ._worlds import Worlds

__all__ = [
    "CameraSwing",
    "ClothMotion",
    "DatasetOptions",
    "DatasetReport",
    "DeviceOutputs",
    "FRAME_VALUES",
    "FrameBuffers",
    "FrameRecorder",
    "FrameUpdate",
    "GraphUpdate",
    "Integrator",
    "Launch",
    "NO_ID",
    "NodeMotion",
    "OUTPUTS",
    "OrbitCameras",
    "Output",
    "PreparedLaunch",
    "Readback",
    "RenderOptions",
    "RenderPipeline",
    "Stage",
    "Tonemap",
    "TrainingBatch",
    "TrainingBatches",
    "Views",
    "WriteImages",
    "Worlds",
    "check_scene",
    "id_names",
    "integrators",
    "label_map",
    "register_integrator",
    "segment",
    "write_dataset",
]
