"""The path tracer used by the example and ``optixasync render``.

:class:`PathTracer` renders a :class:`~optixasync.scene.Scene` with
``kernels/pathtracer.cu``: progressively inside a
:class:`~optixasync.FrameScheduler` (:meth:`PathTracer.record`) or offline
(:meth:`PathTracer.render`). Its parts: :class:`PathTracerProgram` (the
compiled kernel), :class:`DeviceScene` (the scene on the device), and the
host helpers for emitters, parameters, tonemapping and image files.
Importing this package loads no CUDA library.
"""

from __future__ import annotations

from ._device_scene import DeviceScene, check_scene, host_emitter_table
from ._emitters import EmitterTable, alias_probabilities, alias_table, build_emitter_table
from ._environment import (
    ENVIRONMENT_RECORD,
    DeviceEnvironment,
    EnvironmentTables,
    environment_record,
    environment_tables,
)
from ._layout import EMITTER_TRIANGLE, MATERIAL_RECORD, MESH_RECORD, PATH_PARAMS
from ._options import RenderOptions
from ._output import ImageWriter, check_image_path, numbered_path, write_image
from ._params import fill_params, launch_plan, material_record, mesh_records
from ._pathtracer import DenoiseInputs, PathTracer
from ._program import PathTracerProgram
from ._textures import DeviceTextures
from ._tonemap import srgb_to_linear, tonemap_device, tonemap_srgb

__all__ = [
    "alias_probabilities",
    "alias_table",
    "build_emitter_table",
    "check_image_path",
    "check_scene",
    "DenoiseInputs",
    "DeviceEnvironment",
    "DeviceScene",
    "DeviceTextures",
    "EMITTER_TRIANGLE",
    "EmitterTable",
    "ENVIRONMENT_RECORD",
    "environment_record",
    "environment_tables",
    "EnvironmentTables",
    "fill_params",
    "host_emitter_table",
    "ImageWriter",
    "launch_plan",
    "MATERIAL_RECORD",
    "material_record",
    "MESH_RECORD",
    "mesh_records",
    "numbered_path",
    "PATH_PARAMS",
    "PathTracer",
    "PathTracerProgram",
    "RenderOptions",
    "srgb_to_linear",
    "tonemap_device",
    "tonemap_srgb",
    "write_image",
]
