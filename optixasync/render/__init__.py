"""The path tracer used by the example and ``optixasync render``.

:class:`PathTracer` renders a :class:`~optixasync.scene.Scene` with
``kernels/pathtracer.cu``: progressively inside a
:class:`~optixasync.FrameScheduler` (:meth:`PathTracer.record`) or offline
(:meth:`PathTracer.render`). Importing this package loads no CUDA library.
"""

from __future__ import annotations

from ._emitters import EmitterTable, alias_probabilities, alias_table, build_emitter_table
from ._layout import EMITTER_TRIANGLE, MESH_RECORD, PATH_PARAMS
from ._options import RenderOptions
from ._output import ImageWriter, write_image
from ._pathtracer import PathTracer
from ._tonemap import srgb_to_linear, tonemap_srgb

__all__ = [
    "EMITTER_TRIANGLE",
    "EmitterTable",
    "ImageWriter",
    "MESH_RECORD",
    "PATH_PARAMS",
    "PathTracer",
    "RenderOptions",
    "alias_probabilities",
    "alias_table",
    "build_emitter_table",
    "srgb_to_linear",
    "tonemap_srgb",
    "write_image",
]
